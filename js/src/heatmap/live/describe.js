// @ts-check
/**
 * "Describe this cell": on a live widget showing a Patchscope lens, the pinned cell's state
 * patched into the lens's target prompt and a few tokens generated from it greedily
 * (`PatchscopeLens.describe`, SelfIE-style), asked of the kernel as a live request
 * (`describe_patchscope`, `protocol.js`) and shown as text (`textContent`: the model's words are data).
 *
 * Offered only where it can run: the lens shown is a Patchscope, the widget is live (a kernel
 * with the model answers), and the pinned cell is on a block-output row. The text shown belongs
 * to one cell: pinning another clears it.
 */

import { h } from "../../shared/dom.js";
import { patchTarget } from "./patch.js";

/** The live request's action (Python: `LiveController._describe_patchscope`). */
export const DESCRIBE_ACTION = "describe_patchscope";

/**
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../../shared/state.js").Selected} Selected
 *
 * @typedef {{ok: true, prompt: number, layer: number, position: number, label: string}
 *   | {ok: false, reason: string}} DescribeTarget
 *
 * @typedef {object} DescribeUi
 * @property {HTMLDivElement} row
 * @property {HTMLSpanElement} where
 * @property {HTMLButtonElement} button
 * @property {HTMLOutputElement} text
 *
 * @typedef {import("./store.js").Described} Described
 */

/**
 * The cell "Describe this cell" describes: the pinned cell, when the lens shown is a Patchscope
 * and the cell's row is a block's output (the state the Patchscope reads).
 * @param {LensData | null} data
 * @param {Selected | null} selected
 * @returns {DescribeTarget}
 */
export function describeTarget(data, selected) {
  if (!data || data.lensKind !== "patchscope") return { ok: false, reason: "The lens shown is not a Patchscope." };
  const target = patchTarget(data, selected);
  if (!target.ok) return { ok: false, reason: target.reason.replace(/patch(es)? it/, "describe it").replace("A patch overwrites", "A Patchscope reads") };
  return { ok: true, prompt: target.prompt, layer: target.layer, position: target.position, label: target.label };
}

/** @returns {DescribeUi} */
export function buildDescribe() {
  const row = h("div", "murano-live-row murano-describe", { hidden: "" });
  const where = h("span", "murano-patch-where murano-describe-where");
  const button = h("button", "murano-live-button murano-describe-run", { type: "button", title: "Patch this cell's state into the Patchscope's target prompt and generate a few tokens from it, greedily" }, "Describe");
  const text = h("output", "murano-describe-text murano-token", { "aria-live": "polite" });
  row.append(h("span", "murano-label", {}, "Describe this cell"), where, button, text);
  return { row, where, button, text };
}

/**
 * What a message from the kernel makes of the description: the reply to the request in flight
 * carries it (an error shows on the status line, as every request's does).
 * @param {Described} described
 * @param {unknown} msg
 * @returns {Described} `described` itself when the message is not its reply
 */
export function describeReply(described, msg) {
  if (!msg || typeof msg !== "object" || described.pending < 0) return described;
  const { action, id, message } = /** @type {Record<string, unknown>} */ (msg);
  if (id !== described.pending) return described;
  if (action !== "done" && action !== "error" && action !== "superseded") return described;
  return { pending: -1, cell: described.cell, text: action === "done" && typeof message === "string" ? message : described.text };
}

/**
 * Shows or hides the row for the pinned cell.
 * @param {DescribeUi} ui
 * @param {Described} described
 * @param {boolean} offered the live controls are offered (a kernel is there)
 * @param {LensData | null} data
 * @param {Selected | null} selected
 * @returns {Described} what is described now: the text is about one cell, and another pinned cell
 *   (or none to describe) clears it
 */
export function showDescribe(ui, described, offered, data, selected) {
  const { row, where, button, text } = ui;
  const target = describeTarget(data, selected);
  const patchscope = !!data && data.lensKind === "patchscope";
  let now = described;
  if (!target.ok || cellKey(target) !== described.cell) {
    const cell = !target.ok || described.pending < 0 ? "" : described.cell;
    if (cell !== described.cell || described.text) now = { pending: described.pending, cell, text: "" };
  }
  row.hidden = !offered || !patchscope || !selected;
  if (row.hidden) return described;
  where.textContent = target.ok ? target.label : target.reason;
  button.disabled = !target.ok;
  if (text.textContent !== now.text) text.textContent = now.text;
  return now;
}

/**
 * @param {DescribeTarget} target
 * @returns {string}
 */
export function cellKey(target) {
  return target.ok ? `${target.prompt}|${target.layer}|${target.position}` : "";
}
