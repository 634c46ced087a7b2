// @ts-check
/**
 * The live widget's conversation with the kernel, as pure functions of a plain state: the `hello`
 * handshake, requests with increasing ids, their replies, supersede and time-outs, and the one
 * status line the widget shows. No DOM, no timers: the view (`view.js`) calls these with the
 * clock's time and schedules a timer for `nextDeadline`.
 *
 * The contract with Python (the `live` traits and the messages; js/README.md's "Live"): every
 * message from the front end has an `id` (an int, increasing within one view) and an `action`;
 * Python answers `hello` at once with `{action: "hello", id, live}` and every other request,
 * once finished, failed or superseded, with `{action: "done" | "error" | "superseded", id,
 * message}`, and keeps the `live_status` trait current.
 *
 * What the widget shows is the latest request's state only: a reply to an older request is
 * ignored (the kernel superseded it, or it ran before the latest in order), a reply never leaves
 * a spinner behind, and a request with no reply after `REPLY_TIMEOUT_MS` says so.
 */

import { promptName } from "../format.js";
import { quoteToken } from "../tokens.js";

/** How long `hello` may take before the widget says there is no kernel. */
export const HELLO_TIMEOUT_MS = 3000;

/** How long a request may go without a reply before the widget says so. */
export const REPLY_TIMEOUT_MS = 60000;

/** The line shown where the live controls would be, when no kernel answers. */
export const NO_KERNEL_TEXT = "Editing needs a running kernel: run the notebook to type prompts, track tokens or patch.";

/** The requests the front end sends (besides `hello`). */
export const ACTIONS = Object.freeze(["add_prompt", "remove_prompt", "track", "untrack", "patch", "clear_patch", "describe_patchscope", "group"]);

/** The replies that end a request. */
export const REPLIES = Object.freeze(["done", "error", "superseded"]);

/**
 * @typedef {"off" | "waiting" | "ready" | "none"} KernelState
 *   `off`: the widget is not live (no controls, nothing said); `waiting`: `hello` sent, no reply
 *   yet (the controls work: a request sent now is answered when the kernel is there); `ready`:
 *   the kernel answered that it is live; `none`: no kernel (the model cannot send, or `hello` got
 *   no reply in time)
 *
 * @typedef {"running" | "done" | "error" | "superseded" | "timeout"} Phase
 *
 * @typedef {object} Request The latest request, as the widget shows it.
 * @property {number} id
 * @property {string} action
 * @property {Record<string, unknown>} fields what was sent besides `id` and `action`
 * @property {number} sentAt
 * @property {Phase} phase
 * @property {string} message the reply's message (an error's one line)
 * @property {number} waited how long it went without a reply, once timed out (ms; else 0)
 *
 * @typedef {object} LiveState
 * @property {KernelState} kernel
 * @property {number} nextId the id the next message takes
 * @property {number} helloId the id of the `hello` sent (-1: none)
 * @property {number} helloAt when it was sent
 * @property {Request | null} latest
 * @property {number[]} open ids sent and not answered yet (oldest first)
 * @property {boolean} dismissed the latest request's error line was dismissed
 *
 * @typedef {{action: string, id: number, [field: string]: unknown}} Message a message to the kernel
 *
 * @typedef {object} LiveStatus The `live_status` trait (Python keeps it current).
 * @property {"idle" | "running" | "error"} state
 * @property {number} request the front end's id it concerns (-1: a Python call)
 * @property {string} action
 * @property {string} message
 *
 * @typedef {object} StatusLine What the status line shows.
 * @property {"none" | "progress" | "done" | "note" | "error" | "no-kernel"} kind `progress`:
 *   a request runs (non-blocking); `error`: one line, dismissable (role=alert); `no-kernel`: the
 *   line that replaces the controls
 * @property {string} text
 * @property {number} id the request it is about (-1: none, or a Python call)
 */

/**
 * The state of a view that has just been drawn.
 * @param {{live: boolean, canSend: boolean, firstId?: number}} options `live`: the `live` trait;
 *   `canSend`: the model has a `send` (the standalone export's has none); `firstId`: the first
 *   message's id
 * @returns {LiveState}
 */
export function initialState({ live, canSend, firstId = 1 }) {
  return {
    kernel: !live ? "off" : canSend ? "waiting" : "none",
    nextId: firstId,
    helloId: -1,
    helloAt: 0,
    latest: null,
    open: [],
    dismissed: false,
  };
}

/**
 * Sends `hello` (only while waiting for the kernel).
 * @param {LiveState} state
 * @param {number} now
 * @returns {{state: LiveState, message: Message | null}}
 */
export function hello(state, now) {
  if (state.kernel !== "waiting") return { state, message: null };
  const id = state.nextId;
  return { state: { ...state, nextId: id + 1, helloId: id, helloAt: now }, message: { action: "hello", id } };
}

/**
 * A request to the kernel: its message, and the state in which it is the latest (its state is
 * the one shown; an earlier request's reply no longer changes what is shown). Nothing is sent
 * when the widget is not live or has no kernel.
 * @param {LiveState} state
 * @param {string} action one of `ACTIONS`
 * @param {Record<string, unknown>} fields
 * @param {number} now
 * @returns {{state: LiveState, message: Message | null}}
 */
export function request(state, action, fields, now) {
  if (!ACTIONS.includes(action)) throw new Error(`unknown action ${JSON.stringify(action)}`);
  if (state.kernel === "off" || state.kernel === "none") return { state, message: null };
  const id = state.nextId;
  /** @type {Request} */
  const latest = { id, action, fields: { ...fields }, sentAt: now, phase: "running", message: "", waited: 0 };
  return {
    state: { ...state, nextId: id + 1, latest, open: [...state.open, id], dismissed: false },
    message: { ...fields, action, id },
  };
}

/**
 * A message from the kernel (anywidget's `msg:custom`). A `hello` reply to this view's `hello`
 * says whether the widget is live; a reply to a request ends it, and changes what is shown only
 * when it is the latest's. Any reply means a kernel is there. Other messages change nothing.
 * @param {LiveState} state
 * @param {unknown} msg
 * @returns {LiveState}
 */
export function receive(state, msg) {
  if (!msg || typeof msg !== "object") return state;
  const { action, id, message, live } = /** @type {Record<string, unknown>} */ (msg);
  if (typeof id !== "number") return state;
  if (action === "hello") {
    if (id !== state.helloId || state.kernel === "off") return state;
    return { ...state, kernel: live === true ? "ready" : "off" };
  }
  if (typeof action !== "string" || !REPLIES.includes(action) || !state.open.includes(id)) return state;
  const next = { ...state, open: state.open.filter((open) => open !== id) };
  // A reply after hello timed out: the kernel is there after all.
  if (next.kernel === "none" || next.kernel === "waiting") next.kernel = "ready";
  const latest = state.latest;
  if (latest && latest.id === id) {
    next.latest = { ...latest, phase: /** @type {Phase} */ (action), message: typeof message === "string" ? message : "" };
    next.dismissed = false;
  }
  return next;
}

/**
 * The state after the clock reached `now`: `hello` unanswered after `HELLO_TIMEOUT_MS` means no
 * kernel; the latest request unanswered after `REPLY_TIMEOUT_MS` is shown as timed out (a late
 * reply still ends it).
 * @param {LiveState} state
 * @param {number} now
 * @param {{hello?: number, reply?: number}} [timeouts]
 * @returns {LiveState}
 */
export function tick(state, now, { hello: helloMs = HELLO_TIMEOUT_MS, reply = REPLY_TIMEOUT_MS } = {}) {
  let next = state;
  if (state.kernel === "waiting" && state.helloId >= 0 && now - state.helloAt >= helloMs) next = { ...next, kernel: "none" };
  const latest = next.latest;
  if (latest && latest.phase === "running" && now - latest.sentAt >= reply) {
    next = { ...next, latest: { ...latest, phase: "timeout", waited: reply }, dismissed: false };
  }
  return next;
}

/**
 * When `tick` would next change something, or null.
 * @param {LiveState} state
 * @param {{hello?: number, reply?: number}} [timeouts]
 * @returns {number | null}
 */
export function nextDeadline(state, { hello: helloMs = HELLO_TIMEOUT_MS, reply = REPLY_TIMEOUT_MS } = {}) {
  const times = [];
  if (state.kernel === "waiting" && state.helloId >= 0) times.push(state.helloAt + helloMs);
  if (state.latest && state.latest.phase === "running") times.push(state.latest.sentAt + reply);
  return times.length ? Math.min(...times) : null;
}

/**
 * No kernel after all: the model could not send (the live widget's page then says that editing
 * needs a kernel).
 * @param {LiveState} state
 * @returns {LiveState}
 */
export function noKernel(state) {
  return state.kernel === "off" ? state : { ...state, kernel: "none" };
}

/**
 * The error line (an error or a time-out) dismissed by the user.
 * @param {LiveState} state
 * @returns {LiveState}
 */
export function dismiss(state) {
  return { ...state, dismissed: true };
}

/**
 * Whether the controls are offered (live, and a kernel answers or may still answer).
 * @param {LiveState} state
 */
export function controlsShown(state) {
  return state.kernel === "waiting" || state.kernel === "ready";
}

/**
 * A short description of a request, for the status line.
 * @param {string} action
 * @param {Record<string, unknown>} fields
 * @param {"running" | "done"} phase
 */
export function describeRequest(action, fields, phase) {
  const text = typeof fields.text === "string" ? fields.text : "";
  const quoted = quoteToken(text, { spaces: action === "track" || action === "untrack" });
  const running = phase === "running";
  switch (action) {
    case "add_prompt":
      return running ? `Running the lens on ${quoted}…` : `Added ${quoted}.`;
    case "remove_prompt":
      return running ? `Removing ${promptName(Number(fields.index))}…` : `Removed ${promptName(Number(fields.index))}.`;
    case "track":
      return running ? `Tracking ${quoted}…` : `Tracking ${quoted}.`;
    case "untrack":
      return running ? `No longer tracking ${quoted}…` : `No longer tracking ${quoted}.`;
    case "patch":
      return running ? `Patching ${promptName(Number(fields.prompt))}: block ${fields.layer}'s output at position ${fields.position}, with ${patchWith(fields.source)}…` : "Patched.";
    case "clear_patch":
      return running ? "Clearing the patch…" : "Patch cleared.";
    case "describe_patchscope":
      return running ? `Describing ${promptName(Number(fields.prompt))}: block ${fields.layer}'s output at position ${fields.position}…` : "Described.";
    case "group":
      return running ? `Tracking the word ${quoted} as a group…` : `Tracking the word ${quoted} as a group.`;
    default:
      return running ? "Working…" : "Done.";
  }
}

/**
 * What a patch writes, in a status line: "prompt 1's output", "zero", "the mean".
 * @param {unknown} source
 */
function patchWith(source) {
  if (typeof source === "number" && Number.isInteger(source)) return `${promptName(source)}'s output`;
  if (source === "zero") return "zero";
  if (source === "mean") return "the mean";
  return quoteToken(String(source));
}

/**
 * Whether a value is a `live_status` as Python writes it.
 * @param {unknown} value
 * @returns {value is LiveStatus}
 */
function isLiveStatus(value) {
  if (!value || typeof value !== "object") return false;
  const v = /** @type {Record<string, unknown>} */ (value);
  return typeof v.state === "string" && typeof v.request === "number";
}

/**
 * The status line: the latest request's state (running: Python's description from
 * `live_status` where it is about that request; error: its one line, until dismissed), else a
 * Python call running (`live_status.request` -1), else nothing. With no kernel: the no-kernel
 * line; not live: nothing.
 * @param {LiveState} state
 * @param {unknown} liveStatus the `live_status` trait
 * @returns {StatusLine}
 */
export function statusLine(state, liveStatus) {
  if (state.kernel === "off") return { kind: "none", text: "", id: -1 };
  if (state.kernel === "none") return { kind: "no-kernel", text: NO_KERNEL_TEXT, id: -1 };
  const status = isLiveStatus(liveStatus) ? liveStatus : null;
  const latest = state.latest;
  if (latest) {
    const about = status && status.request === latest.id ? status : null;
    const message = (about && typeof about.message === "string" && about.message) || "";
    switch (latest.phase) {
      case "running":
        // Python may say it failed before its reply arrives.
        if (about && about.state === "error") {
          return state.dismissed ? { kind: "none", text: "", id: latest.id } : { kind: "error", text: message || "The kernel reported an error.", id: latest.id };
        }
        return { kind: "progress", text: message || describeRequest(latest.action, latest.fields, "running"), id: latest.id };
      case "error":
        if (state.dismissed) break;
        return { kind: "error", text: latest.message || message || "The kernel reported an error.", id: latest.id };
      case "timeout":
        if (state.dismissed) break;
        return {
          kind: "error",
          text: `No reply from the kernel after ${formatWait(latest.waited)} (${lowerFirst(describeRequest(latest.action, latest.fields, "running").replace(/…$/, ""))}): it may still be working, or the kernel stopped.`,
          id: latest.id,
        };
      case "superseded":
        return { kind: "note", text: "Superseded: a newer request took its place.", id: latest.id };
      case "done":
        if (status && status.request === -1 && status.state === "running") break;
        return { kind: "done", text: describeRequest(latest.action, latest.fields, "done"), id: latest.id };
    }
  }
  if (status && status.request === -1 && status.state === "running") {
    return { kind: "progress", text: status.message || "Python is running a request…", id: -1 };
  }
  return { kind: "none", text: "", id: -1 };
}

/**
 * A wait as text: "60 s", "0.5 s".
 * @param {number} ms
 */
function formatWait(ms) {
  const seconds = ms / 1000;
  return `${seconds >= 10 ? Math.round(seconds) : Number(seconds.toPrecision(2))} s`;
}

/** @param {string} text */
function lowerFirst(text) {
  return text.charAt(0).toLowerCase() + text.slice(1);
}
