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

import { h } from "../shared/dom.js";
import { patchTarget } from "./patch.js";

/** The live request's action (Python: `LiveController._describe_patchscope`). */
export const DESCRIBE_ACTION = "describe_patchscope";

/**
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../state.js").Selected} Selected
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
 * @typedef {object} LiveAsker what the control needs of the live view
 * @property {(action: string, fields: Record<string, unknown>) => number} ask sends a request (its id; -1: none sent)
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

export class DescribeControl {
  /**
   * @param {LiveAsker} live
   * @param {HTMLElement} parent where the row goes (the pinned cell's panel)
   */
  constructor(live, parent) {
    this.live = live;
    this.ui = buildDescribe();
    parent.append(this.ui.row);
    /** @type {number} the request in flight (-1: none) */
    this.pending = -1;
    /** @type {string} the cell the text is about ("" : none) */
    this.describedCell = "";
    /** @type {DescribeTarget} */
    this.target = { ok: false, reason: "" };
  }

  /** Asks the kernel to describe the pinned cell. */
  run() {
    const target = this.target;
    if (!target.ok) return;
    this.ui.text.textContent = "";
    this.describedCell = cellKey(target);
    this.pending = this.live.ask(DESCRIBE_ACTION, { prompt: target.prompt, layer: target.layer, position: target.position });
  }

  /**
   * A message from the kernel: the reply to the request in flight carries the description.
   * @param {unknown} msg
   */
  onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    const { action, id, message } = /** @type {Record<string, unknown>} */ (msg);
    if (id !== this.pending || this.pending < 0) return;
    if (action !== "done" && action !== "error" && action !== "superseded") return;
    this.pending = -1;
    // An error shows on the status line, as every request's does.
    if (action === "done" && typeof message === "string") this.ui.text.textContent = message;
  }

  /**
   * Shows or hides the row for the pinned cell.
   * @param {boolean} offered the live controls are offered (a kernel is there)
   * @param {LensData | null} data
   * @param {Selected | null} selected
   */
  render(offered, data, selected) {
    const { row, where, button, text } = this.ui;
    const target = describeTarget(data, selected);
    this.target = target;
    const patchscope = !!data && data.lensKind === "patchscope";
    row.hidden = !offered || !patchscope || !selected;
    if (row.hidden) return;
    where.textContent = target.ok ? target.label : target.reason;
    button.disabled = !target.ok;
    // The text is about one cell: another pinned cell (or none to describe) clears it.
    if (!target.ok || cellKey(target) !== this.describedCell) {
      if (text.textContent) text.textContent = "";
      if (!target.ok || this.pending < 0) this.describedCell = "";
    }
  }
}

/**
 * @param {DescribeTarget} target
 * @returns {string}
 */
function cellKey(target) {
  return target.ok ? `${target.prompt}|${target.layer}|${target.position}` : "";
}
