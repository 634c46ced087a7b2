// @ts-check
/**
 * `LiveView`: the live controls of the lens widget, shown when the `live` trait is true and a
 * kernel answers: a text box that adds a prompt, a button that removes the prompt shown, a text
 * box that tracks a token, the tracked tokens as removable chips, the token picker, the pinned
 * cell's top-k as buttons that track, "Patch this cell", and the status line. Every request goes
 * to the kernel as a custom message (`protocol.js`); what Python computes comes back as the
 * widget's traits, which the heatmap already redraws from. A patch is shown by the lens diff's
 * own view (`../diff/view.js`) over `patchModel` (`patch.js`).
 *
 * Nothing here blocks the heatmap: a request in flight changes only the status line (a CSS
 * animation), and nothing here runs when the heatmap redraws.
 */

import { cellDetails } from "../details.js";
import { DiffView } from "../diff/view.js";
import { formatProb, promptName } from "../format.js";
import { rowLabel } from "../rows.js";
import { h } from "../shared/dom.js";
import { displayToken, truncateText } from "../tokens.js";
import { DescribeControl } from "./describe.js";
import { isPatch, patchModel, patchSources, patchSummary, patchTarget, sourceOf } from "./patch.js";
import { pickerColumn, pickerTokens } from "./picker.js";
import { controlsShown, dismiss, hello, initialState, nextDeadline, noKernel, receive, request, statusLine, tick } from "./protocol.js";

/**
 * @typedef {import("../view/view.js").LensView} LensView
 * @typedef {import("./protocol.js").LiveState} LiveState
 * @typedef {import("./protocol.js").Message} Message
 * @typedef {import("./protocol.js").StatusLine} StatusLine
 *
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
  pinPanel.append(pinRow, patchRow);

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
    patchPanel, patchTitle, patchAnswer, patchClear, patchDiff,
  };
}

/**
 * A string list trait, or null when the value is not one.
 * @param {unknown} value
 * @returns {string[] | null}
 */
function stringList(value) {
  return Array.isArray(value) && value.every((v) => typeof v === "string") ? value : null;
}

export class LiveView {
  /**
   * @param {LensView} lens the heatmap's view
   * @param {LiveUi} ui
   * @param {{now?: () => number}} [options]
   */
  constructor(lens, ui, { now = () => Date.now() } = {}) {
    this.lens = lens;
    this.model = lens.model;
    this.ui = ui;
    this.now = now;
    /** @type {{hello?: number, reply?: number}} time-outs in ms (tests shorten them through the debug hook) */
    this.timeouts = {};
    /** @type {LiveState} */
    this.state = this.initial();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** @type {{id: number, box: HTMLInputElement, text: string}[]} texts sent from a box: emptied from it once done */
    this.sentTexts = [];
    /** @type {string[] | null} the targets last seen (the chart's switched lines follow them by text) */
    this.lastTargets = null;
    this.pickerOpen = false;
    /** @type {StatusLine} */
    this.shown = { kind: "none", text: "", id: -1 };
    /** @type {(WidgetModelWithReady) | null} */
    this.patchModel = null;
    /** @type {DiffView | null} */
    this.diff = null;
    this.abort = new AbortController();
    this.describe = new DescribeControl(this, ui.pinPanel);
    this.bind();
    this.startHello();
    this.render();
  }

  /** @returns {LiveState} */
  initial() {
    return initialState({
      live: this.model.get("live") === true,
      canSend: typeof this.model.send === "function",
      firstId: 1 + Math.floor(Math.random() * 2 ** 30),
    });
  }

  destroy() {
    this.abort.abort();
    for (const [event, fn] of this.handlers) this.model.off(event, fn);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.closePatch();
  }

  // ---- Talking to the kernel -----------------------------------------------------------------

  /**
   * Sends a message; a model that cannot send (a front end with no kernel connection may throw)
   * leaves the widget without a kernel.
   * @param {Message} message
   */
  post(message) {
    try {
      this.model.send?.(message);
    } catch {
      this.state = noKernel(this.state);
    }
  }

  startHello() {
    const { state, message } = hello(this.state, this.now());
    this.state = state;
    if (message) this.post(message);
    this.schedule();
  }

  /**
   * Sends a request; the status line shows it until its reply.
   * @param {string} action
   * @param {Record<string, unknown>} fields
   * @returns {number} its id (-1: nothing sent)
   */
  ask(action, fields) {
    const { state, message } = request(this.state, action, fields, this.now());
    this.state = state;
    if (message) this.post(message);
    this.schedule();
    this.render();
    return message ? message.id : -1;
  }

  /** @param {unknown} msg a custom message from the kernel */
  onMessage(msg) {
    const before = this.state;
    this.state = receive(before, msg);
    if (this.state === before) return;
    const reply = /** @type {{action?: unknown, id?: unknown}} */ (msg);
    // A text sent from a box leaves it once done (unless edited meanwhile); after an error it
    // stays, to be corrected.
    for (const sent of this.sentTexts) {
      if (sent.id === reply.id && reply.action === "done" && sent.box.value === sent.text) sent.box.value = "";
    }
    this.sentTexts = this.sentTexts.filter((sent) => sent.id !== reply.id);
    this.describe.onMessage(msg);
    this.schedule();
    this.render();
  }

  /** Sets a timer for the next time-out (hello, or the latest request's reply). */
  schedule() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const timeouts = this.timeoutOptions();
    const deadline = nextDeadline(this.state, timeouts);
    if (deadline === null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.state = tick(this.state, this.now(), timeouts);
      this.schedule();
      this.render();
    }, Math.max(0, deadline - this.now()) + 1);
  }

  timeoutOptions() {
    return this.timeouts;
  }

  // ---- Requests from the controls ------------------------------------------------------------

  addPrompt() {
    const text = this.ui.promptInput.value;
    if (!text.trim()) return;
    const id = this.ask("add_prompt", { text });
    if (id >= 0) this.sentTexts.push({ id, box: this.ui.promptInput, text });
  }

  removePrompt() {
    const data = this.lens.data;
    if (!data || data.P < 2) return;
    this.ask("remove_prompt", { index: this.lens.state.prompt });
  }

  /**
   * Tracks a token and asks Python to show it (`show`): Python sets the `target` and `metric`
   * traits with the new payload, and the heatmap, its token menu and the chart's line follow
   * them as they follow any change of those traits.
   * @param {string} text
   * @returns {number} the request's id (-1: nothing sent)
   */
  track(text) {
    if (!text) return -1;
    return this.ask("track", { text, show: true });
  }

  /** @param {string} text */
  untrack(text) {
    this.ask("untrack", { text });
  }

  runPatch() {
    const target = patchTarget(this.lens.data, this.lens.state.selected);
    if (!target.ok || !this.ui.patchSource.value) return;
    this.ask("patch", { prompt: target.prompt, layer: target.layer, position: target.position, source: sourceOf(this.ui.patchSource.value) });
  }

  // ---- Following what Python sends -----------------------------------------------------------

  /** The prompts' texts: the `prompts` trait when it matches the payload, else the payload's. */
  promptTexts() {
    const data = this.lens.data;
    const trait = stringList(this.model.get("prompts"));
    if (data && trait && trait.length === data.P) return trait;
    return data ? data.prompts : [];
  }

  /** The tracked tokens: the payload's (what the chart draws), else the `targets` trait. */
  targets() {
    const data = this.lens.data;
    return data ? data.targets : stringList(this.model.get("targets")) || [];
  }

  /** New data (a payload from Python, another lens): everything that lists prompts or tokens. */
  dataChanged() {
    this.keepChartLines();
    this.render();
  }

  /**
   * The trajectory chart names a target's line by its index (`target:<j>`): when Python adds or
   * removes targets, the lines the user switched on or off keep their choice by token.
   */
  keepChartLines() {
    const data = this.lens.data;
    if (!data) return;
    const before = this.lastTargets;
    this.lastTargets = [...data.targets];
    if (!before || before.join("\u0000") === data.targets.join("\u0000")) return;
    const toggled = this.lens.trajectory.toggled;
    /** @type {[string, boolean][]} */
    const moved = [];
    for (const [key, shown] of toggled) {
      if (!key.startsWith("target:")) continue;
      toggled.delete(key);
      const j = data.targets.indexOf(before[Number(key.slice("target:".length))]);
      if (j >= 0) moved.push([`target:${j}`, shown]);
    }
    for (const [key, shown] of moved) toggled.set(key, shown);
    this.lens.trajectory.rerender();
  }

  /** The pinned cell changed: the patch control and the pinned top-k follow. */
  selectionChanged() {
    this.render();
  }

  /** Another prompt is shown: the remove button names it, the picker lists its column. */
  promptChanged() {
    if (!controlsShown(this.state)) return;
    this.showPromptControls();
    this.columnChanged();
  }

  /** The column the picker lists may have moved (prompt, keyboard focus). */
  columnChanged() {
    if (this.pickerOpen) this.showPicker();
  }

  // ---- Drawing -------------------------------------------------------------------------------

  render() {
    const { ui, state } = this;
    const offered = controlsShown(state);
    const line = statusLine(state, this.model.get("live_status"));
    this.shown = line;
    ui.panel.hidden = state.kernel === "off";
    ui.panel.dataset.kernel = state.kernel;
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
    if (offered) {
      this.showPromptControls();
      this.showChips();
      this.showPinTokens();
      this.showPatchControl();
      if (this.pickerOpen) this.showPicker();
    }
    this.describe.render(offered, this.lens.data, this.lens.state.selected);
    ui.pinPanel.hidden = !offered || (ui.pinRow.hidden && ui.patchRow.hidden && this.describe.ui.row.hidden);
    this.showPatch(offered);
  }

  showPromptControls() {
    const data = this.lens.data;
    const { removeButton } = this.ui;
    const P = data ? data.P : 0;
    const prompt = this.lens.state.prompt;
    // A focused button that becomes disabled drops the focus to the page (in JupyterLab: to
    // the notebook, whose keys then run and move cells): hand it to the prompt box instead.
    const hadFocus = removeButton.ownerDocument.activeElement === removeButton;
    removeButton.disabled = P < 2;
    if (hadFocus && removeButton.disabled) this.ui.promptInput.focus();
    removeButton.setAttribute("aria-label", P < 2 ? "Remove this prompt (the last prompt stays)" : `Remove ${promptName(prompt)}`);
    removeButton.title = P < 2 ? "The last prompt cannot be removed" : `Remove ${promptName(prompt)} from the widget`;
  }

  showChips() {
    const items = this.targets().map((target) => {
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
    const { chips } = this.ui;
    const focused = [...chips.querySelectorAll("button.murano-chip-remove")].indexOf(
      /** @type {HTMLButtonElement} */ (chips.ownerDocument.activeElement),
    );
    chips.replaceChildren(...items);
    chips.hidden = items.length === 0;
    if (focused >= 0) {
      const buttons = chips.querySelectorAll("button.murano-chip-remove");
      const next = /** @type {HTMLButtonElement | undefined} */ (buttons[Math.min(focused, buttons.length - 1)]);
      (next || this.ui.trackInput).focus();
    }
  }

  showPinTokens() {
    const data = this.lens.data;
    const sel = this.lens.state.selected;
    const { pinRow, pinTokens } = this.ui;
    if (!data || !sel || !(sel.prompt >= 0 && sel.prompt < data.P)) {
      pinRow.hidden = true;
      pinTokens.replaceChildren();
      return;
    }
    this.lens.requestDetails(); // the top-k beyond the top-1
    const d = cellDetails(data, sel.prompt, Math.min(sel.layer_index, data.L - 1), Math.min(sel.position, data.lengths[sel.prompt] - 1));
    const tracked = new Set(this.targets());
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

  showPatchControl() {
    const { patchRow, patchWhere, patchSource, patchRun, patchReason } = this.ui;
    const sel = this.lens.state.selected;
    if (!sel) {
      patchRow.hidden = true;
      return;
    }
    patchRow.hidden = false;
    const target = patchTarget(this.lens.data, sel);
    patchWhere.textContent = target.ok ? target.label : "";
    patchReason.hidden = target.ok;
    patchReason.textContent = target.ok ? "" : target.reason;
    patchSource.hidden = !target.ok;
    patchRun.hidden = !target.ok;
    if (!target.ok) return;
    const options = patchSources(this.promptTexts(), target.prompt);
    const key = options.map((o) => `${o.value}=${o.label}`).join("\n");
    if (patchSource.dataset.key !== key) {
      const previous = patchSource.value;
      patchSource.replaceChildren(...options.map((o) => h("option", "", { value: o.value }, o.label)));
      patchSource.dataset.key = key;
      if (options.some((o) => o.value === previous)) patchSource.value = previous;
    }
    patchRun.setAttribute("aria-label", `Run the patch of ${target.label}`);
  }

  /** Opens or closes the token picker. */
  togglePicker() {
    this.pickerOpen = !this.pickerOpen;
    this.ui.pickerButton.setAttribute("aria-expanded", String(this.pickerOpen));
    this.ui.picker.hidden = !this.pickerOpen;
    if (this.pickerOpen) {
      this.lens.requestDetails();
      this.showPicker();
    }
  }

  /** The picker's list for the column in focus (the focused or pinned cell's, else the last). */
  showPicker() {
    const data = this.lens.data;
    const { pickerHead, pickerList } = this.ui;
    if (!data) return;
    const s = this.lens.state;
    const column = pickerColumn(s, data.lengths[s.prompt]);
    const picked = pickerTokens(data, s.prompt, column.position);
    const tracked = new Set(this.targets());
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

  /**
   * The patch panel: shown when the `patch` trait names a patch and its diff payload decodes; the
   * "Clear patch" button only with a kernel.
   * @param {boolean} offered the live controls are offered
   */
  showPatch(offered) {
    const patch = this.model.get("patch");
    const ui = this.ui;
    if (!isPatch(patch)) {
      this.closePatch();
      return;
    }
    if (!this.patchModel) this.patchModel = patchModel(this.model);
    if (!this.patchModel.ready()) {
      this.closePatch();
      return;
    }
    if (!this.diff) {
      // Its columns under the heatmap's (same width, same label column), its own header left
      // out: the panel's title says what was patched.
      const lens = this.lens;
      this.diff = new DiffView(this.patchModel, ui.patchDiff, {
        embedded: true,
        columns: () =>
          lens.layout && !lens.layout.columns && lens.ui.scroller.isConnected
            ? { cellW: lens.layout.cellW, left: lens.ui.scroller.getBoundingClientRect().left + lens.layout.labelW }
            : null,
      });
    }
    const data = this.lens.data;
    const token = data && patch.prompt < data.P && patch.position < data.lengths[patch.prompt] ? cellDetails(data, patch.prompt, 0, patch.position).input : null;
    const summary = patchSummary(patch, this.promptTexts(), token);
    ui.patchTitle.textContent = summary.title;
    ui.patchAnswer.textContent = summary.answer;
    ui.patchAnswer.hidden = !summary.answer;
    ui.patchClear.hidden = !offered;
    ui.patchPanel.hidden = false;
  }

  closePatch() {
    if (this.diff) this.diff.destroy();
    this.diff = null;
    if (this.patchModel) this.patchModel.dispose();
    this.patchModel = null;
    this.ui.patchPanel.hidden = true;
  }

  // ---- Events --------------------------------------------------------------------------------

  bind() {
    const { ui, model } = this;
    const signal = this.abort.signal;
    /** @type {(target: EventTarget, type: string, fn: (event: any) => void) => void} */
    const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
    on(ui.promptInput, "keydown", (/** @type {KeyboardEvent} */ event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      this.addPrompt();
    });
    on(ui.trackInput, "keydown", (/** @type {KeyboardEvent} */ event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      const text = ui.trackInput.value;
      const id = this.track(text);
      if (id >= 0) this.sentTexts.push({ id, box: ui.trackInput, text });
    });
    on(ui.groupInput, "keydown", (/** @type {KeyboardEvent} */ event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      const text = ui.groupInput.value;
      if (!text.trim()) return;
      const id = this.ask("group", { text });
      if (id >= 0) this.sentTexts.push({ id, box: ui.groupInput, text });
    });
    on(ui.removeButton, "click", () => this.removePrompt());
    on(ui.pickerButton, "click", () => this.togglePicker());
    on(ui.chips, "click", (event) => {
      const button = tokenButton(event, "button.murano-chip-remove");
      if (button) this.untrack(button.dataset.token || "");
    });
    on(ui.pickerList, "click", (event) => {
      const button = tokenButton(event, "button.murano-picker-item");
      if (button) this.track(button.dataset.token || "");
    });
    on(ui.pinTokens, "click", (event) => {
      const button = tokenButton(event, "button.murano-pin-token");
      if (button) this.track(button.dataset.token || "");
    });
    on(ui.patchRun, "click", () => this.runPatch());
    on(this.describe.ui.button, "click", () => this.describe.run());
    on(ui.patchClear, "click", () => this.ask("clear_patch", {}));
    on(ui.dismissButton, "click", () => {
      this.state = dismiss(this.state);
      this.render();
    });
    /** @type {[string, (...args: any[]) => void][]} */
    this.handlers = [
      ["msg:custom", (msg) => this.onMessage(msg)],
      [
        "change:live",
        () => {
          this.state = this.initial();
          this.startHello();
          this.render();
        },
      ],
      ["change:live_status", () => this.render()],
      ["change:prompts", () => this.render()],
      ["change:targets", () => this.render()],
      ["change:patch", () => this.render()],
      ["change:_patch_meta", () => this.render()],
      ["change:_patch_sections", () => this.render()],
    ];
    for (const [event, fn] of this.handlers) model.on(event, fn);
  }

  /** The test hook's part (`__muranoDebug.live`). */
  debugApi() {
    const live = this;
    return {
      get state() {
        const s = live.state;
        return { kernel: s.kernel, latest: s.latest, open: [...s.open], status: live.shown, pickerOpen: live.pickerOpen };
      },
      /** @param {{hello?: number, reply?: number}} timeouts */
      setTimeouts(timeouts) {
        Object.assign(live.timeouts, timeouts);
        live.schedule();
      },
      get diff() {
        return live.diff ? live.ui.patchDiff : null;
      },
    };
  }
}

/**
 * @typedef {ReturnType<typeof patchModel>} WidgetModelWithReady
 */

/**
 * The button matching `selector` that an event reached, or null.
 * @param {Event} event
 * @param {string} selector
 * @returns {HTMLElement | null}
 */
function tokenButton(event, selector) {
  const target = /** @type {Element | null} */ (event.target);
  const button = target && target.closest ? target.closest(selector) : null;
  return button instanceof HTMLElement && !(button instanceof HTMLButtonElement && button.disabled) ? button : null;
}
