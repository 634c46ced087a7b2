// @ts-check
/**
 * The live controls' DOM (`buildLive`): the prompt and track boxes, the chips, the picker, the
 * status line's slot and the no-kernel line (under the sliders); the pinned cell's rows (its top-k,
 * "Patch this cell", "Describe this cell") and the patch panel (under the heatmap). Built once,
 * hidden and empty; `view.js` fills them from its store.
 */

import { h } from "../../shared/dom.js";
import { buildDescribe } from "./describe.js";

/**
 * @typedef {object} LiveUi
 * @property {HTMLElement} panel the live controls' box (under the sliders)
 * @property {HTMLDivElement} controls everything but the no-kernel line
 * @property {HTMLInputElement} promptInput
 * @property {HTMLButtonElement} removeButton
 * @property {HTMLInputElement} trackInput
 * @property {HTMLInputElement} groupInput a word to track as a token group
 * @property {HTMLButtonElement} pickerButton
 * @property {HTMLUListElement} chips
 * @property {HTMLDivElement} picker
 * @property {HTMLDivElement} pickerHead
 * @property {HTMLUListElement} pickerList
 * @property {HTMLDivElement} pinPanel the pinned cell's rows (its top-k, its patch), under the heatmap
 * @property {HTMLDivElement} pinRow the pinned cell's top-k, as buttons that track
 * @property {HTMLDivElement} pinTokens
 * @property {HTMLDivElement} patchRow
 * @property {HTMLSpanElement} patchWhere
 * @property {HTMLSelectElement} patchSource
 * @property {HTMLButtonElement} patchRun
 * @property {HTMLSpanElement} patchReason
 * @property {HTMLDivElement} line the status line's slot: the status, or the error over it
 * @property {HTMLDivElement} status
 * @property {HTMLSpanElement} statusText
 * @property {HTMLDivElement} error
 * @property {HTMLSpanElement} errorText
 * @property {HTMLButtonElement} dismissButton
 * @property {HTMLDivElement} noKernel
 * @property {HTMLElement} patchPanel the patch shown: its summary and the diff (under the heatmap)
 * @property {HTMLDivElement} patchTitle
 * @property {HTMLDivElement} patchAnswer
 * @property {HTMLButtonElement} patchClear
 * @property {HTMLDivElement} patchDiff the diff view's element
 * @property {import("./describe.js").DescribeUi} describe the "Describe this cell" row (in `pinPanel`)
 */

/** The picker lists at most this many tokens. */
export const PICKER_LIMIT = 30;

/**
 * Builds the live controls and the patch panel (hidden, empty).
 * @param {string} id a page-unique prefix for element ids
 * @returns {LiveUi}
 */
export function buildLive(id) {
  const panel = h("section", "murano-live", { hidden: "", "aria-label": "Live: ask the kernel" });
  const controls = h("div", "murano-live-controls");

  /** A text box whose placeholder is its accessible name. */
  const textBox = (/** @type {string} */ className, /** @type {string} */ label, /** @type {Record<string, string>} */ attrs = {}) =>
    h("input", `murano-live-input ${className}`, { type: "text", placeholder: label, "aria-label": label, autocomplete: "off", spellcheck: "false", ...attrs });

  const promptRow = h("div", "murano-live-row");
  const promptInput = textBox("murano-live-prompt", "Type a prompt and press Enter");
  const removeButton = h("button", "murano-live-button murano-live-remove", { type: "button" }, "Remove this prompt");
  promptRow.append(promptInput, removeButton);

  const trackRow = h("div", "murano-live-row");
  const trackInput = textBox("murano-live-track", "Track a token", {
    title: "A token's text, spaces included: ' Paris' (with its leading space) is not 'Paris'",
  });
  const pickerId = `${id}-picker`;
  const pickerButton = h("button", "murano-live-button murano-picker-toggle", { type: "button", "aria-expanded": "false", "aria-controls": pickerId }, "Pick a token…");
  const chips = h("ul", "murano-chips", { "aria-label": "Tracked tokens" });
  // A word as a token group (Python's TokenGroup.word: every token that is a prefix of it, with
  // and without its leading space), shown at once by the group metric.
  const groupInput = textBox("murano-live-group", "Track a word", {
    title: "A word: every token that starts it, with and without a leading space, summed into one group",
  });
  trackRow.append(trackInput, pickerButton, chips, groupInput);

  const picker = h("div", "murano-picker", { id: pickerId, hidden: "" });
  const pickerHead = h("div", "murano-picker-head");
  const pickerList = h("ul", "murano-picker-list", { "aria-label": "Tokens in the top-k at any layer, by their best probability" });
  picker.append(pickerHead, pickerList);

  const pinRow = h("div", "murano-live-row murano-pin-topk", { hidden: "" });
  const pinTokens = h("div", "murano-pin-tokens", { role: "group", "aria-label": "The pinned cell's top-k: press one to track it" });
  pinRow.append(h("span", "murano-label", {}, "Pinned top-k"), pinTokens);

  const patchRow = h("div", "murano-live-row murano-patch-control", { hidden: "" });
  const patchWhere = h("span", "murano-patch-where");
  const patchSourceLabel = h("label", "murano-patch-source-label");
  const patchSource = h("select", "murano-patch-source", { "aria-label": "Patch the pinned cell with" });
  patchSourceLabel.append(h("span", "murano-label", {}, "with"), patchSource);
  const patchRun = h("button", "murano-live-button murano-patch-run", { type: "button" }, "Run");
  const patchReason = h("span", "murano-patch-reason", { hidden: "" });
  patchRow.append(h("span", "murano-label", {}, "Patch this cell"), patchWhere, patchSourceLabel, patchRun, patchReason);

  const status = h("div", "murano-live-status", { role: "status", "aria-live": "polite" });
  const statusText = h("span", "murano-live-status-text");
  status.append(h("span", "murano-live-spinner", { "aria-hidden": "true" }), statusText);
  const error = h("div", "murano-live-error", { role: "alert", hidden: "" });
  const errorText = h("span", "murano-live-error-text");
  const dismissButton = h("button", "murano-live-dismiss", { type: "button", "aria-label": "Dismiss the message", title: "Dismiss" }, "×");
  error.append(errorText, dismissButton);

  controls.append(promptRow, trackRow, picker);
  const noKernel = h("div", "murano-live-nokernel", { role: "note", hidden: "" });
  // One slot of a fixed height, shown whenever the controls are: a status that comes and goes
  // (or an error, laid over it) never moves the heatmap under the pointer.
  const line = h("div", "murano-live-line");
  line.append(status, error);
  panel.append(controls, line, noKernel);
  // What pinning a cell adds goes under the heatmap: a pin never moves the cell just clicked.
  const pinPanel = h("div", "murano-live murano-live-pinned", { hidden: "", role: "group", "aria-label": "The pinned cell: track its tokens, patch it" });
  const describe = buildDescribe();
  pinPanel.append(pinRow, patchRow, describe.row);

  const patchPanel = h("section", "murano-patch", { hidden: "", "aria-label": "The patch: patched lens minus clean lens" });
  const patchHead = h("div", "murano-patch-head");
  const patchTitle = h("div", "murano-patch-title");
  const patchAnswer = h("div", "murano-patch-answer");
  const patchClear = h("button", "murano-live-button murano-patch-clear", { type: "button" }, "Clear patch");
  const patchText = h("div", "murano-patch-text");
  patchText.append(patchTitle, patchAnswer);
  patchHead.append(patchText, patchClear);
  const patchDiff = h("div", "murano-patch-diff");
  patchPanel.append(patchHead, patchDiff);

  return {
    panel, controls, promptInput, removeButton, trackInput, groupInput, pickerButton, chips, picker, pickerHead, pickerList, pinPanel, pinRow, pinTokens,
    patchRow, patchWhere, patchSource, patchRun, patchReason, line, status, statusText, error, errorText, dismissButton, noKernel,
    patchPanel, patchTitle, patchAnswer, patchClear, patchDiff, describe,
  };
}
