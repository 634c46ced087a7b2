// @ts-check
/** Throttling the sync to the kernel while a slider is dragged. */

/**
 * @template {unknown[]} A
 * @typedef {((...args: A) => void) & {flush: () => void, cancel: () => void}} Throttled
 */

/**
 * Calls `fn` at most once every `ms`: the first call runs at once, later calls inside the window
 * collapse into one trailing call with the latest arguments. `flush()` runs a pending call now,
 * `cancel()` drops it. The clock and timers can be injected for tests.
 * @template {unknown[]} A
 * @param {(...args: A) => void} fn
 * @param {number} ms
 * @param {{now?: () => number, setTimer?: (fn: () => void, ms: number) => any, clearTimer?: (id: any) => void}} [clock]
 * @returns {Throttled<A>}
 */
export function throttle(fn, ms, { now = () => Date.now(), setTimer = setTimeout, clearTimer = clearTimeout } = {}) {
  let last = -Infinity;
  /** @type {any} */
  let timer = null;
  /** @type {A | null} */
  let pending = null;
  const run = () => {
    timer = null;
    last = now();
    const args = pending;
    pending = null;
    if (args) fn(...args);
  };
  /** @param {A} args */
  const call = (...args) => {
    pending = args;
    const wait = last + ms - now();
    if (wait <= 0 && timer === null) run();
    else if (timer === null) timer = setTimer(run, Math.max(0, wait));
  };
  call.flush = () => {
    if (timer !== null) clearTimer(timer);
    timer = null;
    if (pending) run();
  };
  call.cancel = () => {
    if (timer !== null) clearTimer(timer);
    timer = null;
    pending = null;
  };
  return call;
}
