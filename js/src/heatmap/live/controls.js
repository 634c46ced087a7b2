// @ts-check
/**
 * The live controls' parts, each a function of the live view that shows what its keys hold (the
 * subscriptions are `view.js`'s): the status line, the remove button, the chips, the pinned
 * cell's top-k, "Patch this cell" and the token picker. Texts from the model are data: only
 * `textContent`.
 */

import { cellDetails } from "../details.js";
import { formatProb, promptName } from "../../shared/format.js";
import { rowLabel } from "../rows.js";
import { h } from "../../shared/dom.js";
import { displayToken, truncateText } from "../../shared/tokens.js";
import { patchSources, patchTarget } from "./patch.js";
import { pickerColumn, pickerTokens } from "./picker.js";
import { controlsShown, statusLine } from "./protocol.js";
import { requestDetails } from "../view/details_request.js";

/** @typedef {import("./view.js").LiveView} LiveView */

/** The picker lists at most this many tokens. */
export const PICKER_LIMIT = 30;

/**
 * A string list trait, or null when the value is not one.
 * @param {unknown} value
 * @returns {string[] | null}
 */
function stringList(value) {
  return Array.isArray(value) && value.every((v) => typeof v === "string") ? value : null;
}

/**
 * The prompts' texts: the `prompts` trait when it matches the payload, else the payload's.
 * @param {LiveView} live
 * @returns {string[]}
 */
export function promptTexts(live) {
  const data = live.lens.data;
  const trait = stringList(live.store.state.prompts);
  if (data && trait && trait.length === data.P) return trait;
  return data ? data.prompts : [];
}

/**
 * The tracked tokens: the payload's (what the chart draws), else the `targets` trait.
 * @param {LiveView} live
 * @returns {string[]}
 */
export function trackedTokens(live) {
  const data = live.lens.data;
  return data ? data.targets : stringList(live.store.state.targets) || [];
}

/**
 * The live panel and its status line (the latest request: running, its error, its time-out), or
 * the no-kernel line.
 * @param {LiveView} live
 */
export function showStatus(live) {
  const { ui } = live;
  const { conn, live_status } = live.store.state;
  const offered = controlsOffered(live);
  const line = statusLine(conn, live_status);
  ui.panel.hidden = conn.kernel === "off";
  ui.panel.dataset.kernel = conn.kernel;
  ui.panel.dataset.status = line.kind;
  ui.controls.hidden = !offered;
  ui.noKernel.hidden = line.kind !== "no-kernel";
  ui.noKernel.textContent = line.kind === "no-kernel" ? line.text : "";
  const progress = line.kind === "progress";
  ui.status.classList.toggle("murano-running", progress);
  ui.line.hidden = !offered;
  ui.statusText.textContent = progress || line.kind === "done" || line.kind === "note" ? line.text : "";
  ui.error.hidden = line.kind !== "error";
  if (line.kind === "error" && ui.errorText.textContent !== line.text) ui.errorText.textContent = line.text;
}

/**
 * The controls are offered (a kernel answered).
 * @param {LiveView} live
 */
export function controlsOffered(live) {
  return controlsShown(live.store.state.conn);
}

/** The remove button names the prompt shown. @param {LiveView} live */
export function showPromptControls(live) {
  const data = live.lens.data;
  const { removeButton } = live.ui;
  const P = data ? data.P : 0;
  const prompt = live.lens.state.prompt;
  // A focused button that becomes disabled drops the focus to the page (in JupyterLab: to
  // the notebook, whose keys then run and move cells): hand it to the prompt box instead.
  const hadFocus = removeButton.ownerDocument.activeElement === removeButton;
  removeButton.disabled = P < 2;
  if (hadFocus && removeButton.disabled) live.ui.promptInput.focus();
  removeButton.setAttribute("aria-label", P < 2 ? "Remove this prompt (the last prompt stays)" : `Remove ${promptName(prompt)}`);
  removeButton.title = P < 2 ? "The last prompt cannot be removed" : `Remove ${promptName(prompt)} from the widget`;
}

/** The tracked tokens as chips (× untracks). @param {LiveView} live */
export function showChips(live) {
  const items = trackedTokens(live).map((target) => {
    const shown = displayToken(target);
    const chip = h("li", "murano-chip");
    chip.append(
      h("span", "murano-chip-text murano-token", { title: target }, truncateText(shown, 24)),
      h("button", "murano-chip-remove", { type: "button", "aria-label": `Stop tracking ${shown}`, title: "Stop tracking", "data-token": target }, "×"),
    );
    return chip;
  });
  // A chip's × that had the focus goes with its chip: the focus moves to the chip now in its
  // place (or the last one), else to the track box, never to the page.
  const { chips } = live.ui;
  const focused = [...chips.querySelectorAll("button.murano-chip-remove")].indexOf(
    /** @type {HTMLButtonElement} */ (chips.ownerDocument.activeElement),
  );
  chips.replaceChildren(...items);
  chips.hidden = items.length === 0;
  if (focused >= 0) {
    const buttons = chips.querySelectorAll("button.murano-chip-remove");
    const next = /** @type {HTMLButtonElement | undefined} */ (buttons[Math.min(focused, buttons.length - 1)]);
    (next || live.ui.trackInput).focus();
  }
}

/** The pinned cell's top-k, as buttons that track. @param {LiveView} live */
export function showPinTokens(live) {
  const data = live.lens.data;
  const sel = live.lens.state.selected;
  const { pinRow, pinTokens } = live.ui;
  if (!data || !sel || !(sel.prompt >= 0 && sel.prompt < data.P)) {
    pinRow.hidden = true;
    pinTokens.replaceChildren();
    return;
  }
  requestDetails(live.lens); // the top-k beyond the top-1
  const d = cellDetails(data, sel.prompt, Math.min(sel.layer_index, data.L - 1), Math.min(sel.position, data.lengths[sel.prompt] - 1));
  const tracked = new Set(trackedTokens(live));
  pinTokens.replaceChildren(
    ...d.top.map((entry) => {
      const shown = displayToken(entry.token);
      const button = h(
        "button",
        "murano-pin-token",
        { type: "button", "data-token": entry.token, "aria-label": `Track ${shown} (${formatProb(entry.prob, entry.step)} at the pinned cell)` },
      );
      button.append(h("span", "murano-token", {}, truncateText(shown, 16)), h("span", "murano-pin-token-prob", {}, formatProb(entry.prob, entry.step)));
      button.disabled = tracked.has(entry.token);
      if (button.disabled) button.title = "Already tracked";
      return button;
    }),
  );
  pinRow.hidden = d.top.length === 0;
}

/** "Patch this cell" for the pinned cell: where, with what. @param {LiveView} live */
export function showPatchControl(live) {
  const { patchRow, patchWhere, patchSource, patchRun, patchReason } = live.ui;
  const sel = live.lens.state.selected;
  if (!sel) {
    patchRow.hidden = true;
    return;
  }
  patchRow.hidden = false;
  const target = patchTarget(live.lens.data, sel);
  patchWhere.textContent = target.ok ? target.label : "";
  patchReason.hidden = target.ok;
  patchReason.textContent = target.ok ? "" : target.reason;
  patchSource.hidden = !target.ok;
  patchRun.hidden = !target.ok;
  if (!target.ok) return;
  const options = patchSources(promptTexts(live), target.prompt);
  const key = options.map((o) => `${o.value}=${o.label}`).join("\n");
  if (patchSource.dataset.key !== key) {
    const previous = patchSource.value;
    patchSource.replaceChildren(...options.map((o) => h("option", "", { value: o.value }, o.label)));
    patchSource.dataset.key = key;
    if (options.some((o) => o.value === previous)) patchSource.value = previous;
  }
  patchRun.setAttribute("aria-label", `Run the patch of ${target.label}`);
}

/**
 * The picker's box, open or closed (the `pickerOpen` key), and its list when open.
 * @param {LiveView} live
 */
export function showPickerBox(live) {
  const open = live.store.state.pickerOpen;
  live.ui.pickerButton.setAttribute("aria-expanded", String(open));
  live.ui.picker.hidden = !open;
  if (open) showPicker(live);
}

/**
 * The picker's list for the column in focus (the focused or pinned cell's, else the last).
 * @param {LiveView} live
 */
export function showPicker(live) {
  const data = live.lens.data;
  const { pickerHead, pickerList } = live.ui;
  if (!data) return;
  const s = live.lens.state;
  const column = pickerColumn(s, data.lengths[s.prompt]);
  const picked = pickerTokens(data, s.prompt, column.position);
  const tracked = new Set(trackedTokens(live));
  const input = cellDetails(data, s.prompt, 0, column.position).input;
  const why = { focus: "focused", pinned: "pinned", last: "last position" }[column.source];
  pickerHead.textContent =
    `Position ${column.position} (${displayToken(input)}, ${why}): every token in the top-k at any layer, by its best probability over the layers` +
    (picked.complete ? "." : " (top-1 only until the top-k arrives).");
  const shown = picked.tokens.slice(0, PICKER_LIMIT);
  const items = shown.map((entry) => {
    const text = displayToken(entry.token);
    const where = rowLabel(data, entry.row);
    const li = h("li", "murano-picker-entry");
    const button = h("button", "murano-picker-item", {
      type: "button",
      "data-token": entry.token,
      "aria-label": `Track ${text}: best ${formatProb(entry.prob)} at ${rowLabel(data, entry.row, "long")}`,
    });
    button.append(h("span", "murano-token", {}, truncateText(text, 20)), h("span", "murano-picker-prob", {}, formatProb(entry.prob)), h("span", "murano-picker-layer", {}, where));
    if (tracked.has(entry.token)) {
      button.disabled = true;
      button.title = "Already tracked";
    }
    li.append(button);
    return li;
  });
  if (picked.tokens.length > shown.length) items.push(h("li", "murano-picker-more", {}, `… and ${picked.tokens.length - shown.length} more`));
  pickerList.replaceChildren(...items);
}
