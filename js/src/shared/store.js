// @ts-check
/**
 * A view's state as one plain object, and the one way it changes: `set(patch)` assigns the keys
 * whose values differ and tells each subscriber which keys those were. The object is changed in
 * place, so whoever holds `store.state` reads the current values. Pure: no DOM, no model. The
 * one view pattern of every widget (`js/README.md`): the heatmap's state (`heatmap/view/store.js`)
 * and the diff's (`diff/view.js`).
 */

/**
 * @template {object} S
 * @typedef {object} Store
 * @property {S} state the current state (one object for the store's life)
 * @property {(patch: Partial<S>) => (keyof S)[]} set assigns what differs (`Object.is`), then
 *   notifies the subscribers once with those keys; returns them ([] when nothing changed: no one
 *   is told)
 * @property {(fn: (changed: (keyof S)[], state: Readonly<S>) => void) => () => void} subscribe
 *   returns the function that unsubscribes
 */

/**
 * @template {object} S
 * @param {S} state the object the store holds and changes
 * @returns {Store<S>}
 */
export function createStore(state) {
  /** @type {Set<(changed: (keyof S)[], state: Readonly<S>) => void>} */
  const subscribers = new Set();
  return {
    state,
    set(patch) {
      /** @type {(keyof S)[]} */
      const changed = [];
      for (const key of /** @type {(keyof S)[]} */ (Object.keys(patch))) {
        const value = patch[key];
        if (value === undefined || Object.is(state[key], value)) continue;
        state[key] = /** @type {S[keyof S]} */ (value);
        changed.push(key);
      }
      if (changed.length) for (const fn of [...subscribers]) fn(changed, state);
      return changed;
    },
    subscribe(fn) {
      subscribers.add(fn);
      return () => {
        subscribers.delete(fn);
      };
    },
  };
}

/**
 * The same grid cell (or both none).
 * @param {{layerIndex: number, position: number} | null} a
 * @param {{layerIndex: number, position: number} | null} b
 */
export function sameCell(a, b) {
  return a === b || Boolean(a && b && a.layerIndex === b.layerIndex && a.position === b.position);
}
