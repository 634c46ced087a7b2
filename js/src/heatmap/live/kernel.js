// @ts-check
/**
 * The live lens's side of the conversation with the kernel: `hello`, requests, replies and
 * time-outs, as `protocol.js`'s pure functions applied to the store's `conn` (the status line and
 * the controls follow that key). A request's answer comes back as the widget's traits.
 */

import { describeReply } from "./describe.js";
import { hello, nextDeadline, noKernel, receive, request, tick } from "./protocol.js";

/**
 * @typedef {import("./view.js").LiveView} LiveView
 * @typedef {import("./protocol.js").LiveState} LiveState
 * @typedef {import("./protocol.js").Message} Message
 */

/**
 * Sends a message; a model that cannot send (a front end with no kernel connection may throw)
 * leaves the widget without a kernel.
 * @param {LiveView} live
 * @param {LiveState} conn the conversation once the message is sent
 * @param {Message | null} message
 * @returns {LiveState}
 */
function post(live, conn, message) {
  if (!message) return conn;
  try {
    live.model.send?.(message);
    return conn;
  } catch {
    return noKernel(conn);
  }
}

/**
 * Says hello (a new view, or the `live` trait changed).
 * @param {LiveView} live
 */
export function startHello(live) {
  const { state, message } = hello(live.store.state.conn, live.now());
  live.store.set({ conn: post(live, state, message) });
  schedule(live);
}

/**
 * Sends a request; the status line shows it until its reply.
 * @param {LiveView} live
 * @param {string} action
 * @param {Record<string, unknown>} fields
 * @returns {number} its id (-1: nothing sent)
 */
export function ask(live, action, fields) {
  const { state, message } = request(live.store.state.conn, action, fields, live.now());
  live.store.set({ conn: post(live, state, message) });
  schedule(live);
  return message ? message.id : -1;
}

/**
 * Sends a request for a text typed in a box, which empties once the request is done.
 * @param {LiveView} live
 * @param {HTMLInputElement} box
 * @param {string} action
 * @param {Record<string, unknown>} fields
 */
export function askFromBox(live, box, action, fields) {
  const text = box.value;
  const id = ask(live, action, fields);
  if (id >= 0) live.store.set({ sent: [...live.store.state.sent, { id, box, text }] });
}

/**
 * A custom message from the kernel.
 * @param {LiveView} live
 * @param {unknown} msg
 */
export function onMessage(live, msg) {
  const s = live.store.state;
  const conn = receive(s.conn, msg);
  if (conn === s.conn) return;
  const reply = /** @type {{action?: unknown, id?: unknown}} */ (msg);
  // A text sent from a box leaves it once done (unless edited meanwhile); after an error it
  // stays, to be corrected.
  for (const sent of s.sent) {
    if (sent.id === reply.id && reply.action === "done" && sent.box.value === sent.text) sent.box.value = "";
  }
  const sent = s.sent.some((x) => x.id === reply.id) ? s.sent.filter((x) => x.id !== reply.id) : s.sent;
  live.store.set({ conn, sent, describe: describeReply(s.describe, msg) });
  schedule(live);
}

/**
 * Sets a timer for the next time-out (hello, or the latest request's reply).
 * @param {LiveView} live
 */
export function schedule(live) {
  if (live.timer) clearTimeout(live.timer);
  live.timer = null;
  const timeouts = live.timeouts;
  const deadline = nextDeadline(live.store.state.conn, timeouts);
  if (deadline === null) return;
  live.timer = setTimeout(() => {
    live.timer = null;
    live.store.set({ conn: tick(live.store.state.conn, live.now(), timeouts) });
    schedule(live);
  }, Math.max(0, deadline - live.now()) + 1);
}
