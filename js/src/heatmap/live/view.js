// @ts-check
/**
 * `LiveView`: the live controls of the lens widget, shown when the `live` trait is true and a
 * kernel answers: a text box that adds a prompt, a button that removes the prompt shown, a text
 * box that tracks a token, the tracked tokens as removable chips, the token picker, the pinned
 * cell's top-k as buttons that track, "Patch this cell", and the status line. Every request goes
 * to the kernel as a custom message (`kernel.js`, `protocol.js`); what Python computes comes back
 * as the widget's traits, which the heatmap already redraws from. A patch is shown by the lens
 * diff's own view (`patch_panel.js`).
 *
 * The one view pattern (`js/README.md`): the live lens's state is a store (`store.js`); each part
 * of its DOM (`dom.js`, drawn by `controls.js`, `patch_panel.js`, `describe.js`) follows the keys
 * it shows, of its own store and of the heatmap's (`prompt`, `selected`, `focus`, `dataVersion`),
 * to which it subscribes: the heatmap's setters know nothing of it.
 *
 * Nothing here blocks the heatmap: a request in flight changes only the status line (a CSS
 * animation), and nothing here runs when the heatmap redraws.
 */

import { closePatch, showPatch } from "./patch_panel.js";
import { controlsOffered, showChips, showPatchControl, showPickerBox, showPinTokens, showPromptControls, showStatus } from "./controls.js";
import { DESCRIBE_ACTION, cellKey, describeTarget, showDescribe } from "./describe.js";
import { ask, askFromBox, onMessage, schedule, startHello } from "./kernel.js";
import { sourceOf, patchTarget } from "./patch.js";
import { dismiss, initialState, statusLine } from "./protocol.js";
import { createLiveStore } from "./store.js";
import { requestDetails } from "../view/details_request.js";

export { buildLive } from "./dom.js";
export { PICKER_LIMIT } from "./controls.js";

/**
 * @typedef {import("../view/view.js").LensView} LensView
 * @typedef {import("./dom.js").LiveUi} LiveUi
 * @typedef {import("./protocol.js").LiveState} LiveState
 * @typedef {import("./store.js").LiveKey} LiveKey
 * @typedef {import("../view/store.js").StateKey} StateKey
 * @typedef {ReturnType<typeof import("./patch.js").patchModel>} WidgetModelWithReady
 */

/**
 * Each part of the live DOM and the keys it follows (its own store's and the heatmap's). The
 * parts that need the kernel are drawn only while the controls are offered; a change of `conn`
 * (a request, a reply, the kernel's answer to `hello`) redraws them all.
 * @type {[Set<LiveKey | StateKey>, (live: LiveView, offered: boolean) => void][]}
 */
const PARTS = [
  [new Set(["dataVersion"]), (live) => keepChartLines(live)],
  [new Set(["conn", "live_status"]), (live) => showStatus(live)],
  [new Set(["conn", "prompt", "dataVersion"]), (live, offered) => offered && showPromptControls(live)],
  [new Set(["conn", "targets", "dataVersion"]), (live, offered) => offered && showChips(live)],
  [new Set(["conn", "selected", "targets", "dataVersion"]), (live, offered) => offered && showPinTokens(live)],
  [new Set(["conn", "selected", "prompts", "dataVersion"]), (live, offered) => offered && showPatchControl(live)],
  [
    new Set(["conn", "pickerOpen", "prompt", "focus", "focused", "selected", "targets", "dataVersion"]),
    (live, offered) => offered && showPickerBox(live),
  ],
  [new Set(["conn", "selected", "describe", "dataVersion"]), (live, offered) => followDescribe(live, offered)],
  [new Set(["conn", "patch", "patchVersion", "prompts", "dataVersion"]), (live, offered) => showPatch(live, offered)],
];

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
    this.store = createLiveStore(this.initial(), this.model);
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** @type {string[] | null} the targets last seen (the chart's switched lines follow them by text) */
    this.lastTargets = null;
    /** @type {WidgetModelWithReady | null} */
    this.patchModel = null;
    /** @type {import("../../diff/view.js").DiffView | null} */
    this.diff = null;
    this.abort = new AbortController();
    const follow = (/** @type {(LiveKey | StateKey)[]} */ changed) => this.follow(changed);
    this.unsubscribe = [this.store.subscribe(follow), lens.store.subscribe(follow)];
    this.bind();
    startHello(this);
    this.follow(["conn"]);
  }

  /** @returns {LiveState} */
  initial() {
    return initialState({
      live: this.model.get("live") === true,
      canSend: typeof this.model.send === "function",
      firstId: 1 + Math.floor(Math.random() * 2 ** 30),
    });
  }

  /**
   * Draws the parts that follow any of the keys that changed.
   * @param {(LiveKey | StateKey)[]} changed
   */
  follow(changed) {
    const offered = controlsOffered(this);
    let drawn = false;
    for (const [keys, draw] of PARTS) {
      if (!changed.some((key) => keys.has(key))) continue;
      draw(this, offered);
      drawn = true;
    }
    if (!drawn) return;
    const { ui } = this;
    ui.pinPanel.hidden = !offered || (ui.pinRow.hidden && ui.patchRow.hidden && ui.describe.row.hidden);
  }

  destroy() {
    this.abort.abort();
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    for (const [event, fn] of this.handlers) this.model.off(event, fn);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    closePatch(this);
  }

  // ---- Requests from the controls ------------------------------------------------------------

  removePrompt() {
    const data = this.lens.data;
    if (!data || data.P < 2) return;
    ask(this, "remove_prompt", { index: this.lens.state.prompt });
  }

  /**
   * Tracks a token and asks Python to show it (`show`): Python sets the `target` and `metric`
   * traits with the new payload, and the heatmap, its token menu and the chart's line follow
   * them as they follow any change of those traits.
   * @param {string} text
   */
  track(text) {
    if (text) ask(this, "track", { text, show: true });
  }

  runPatch() {
    const target = patchTarget(this.lens.data, this.lens.state.selected);
    if (!target.ok || !this.ui.patchSource.value) return;
    ask(this, "patch", { prompt: target.prompt, layer: target.layer, position: target.position, source: sourceOf(this.ui.patchSource.value) });
  }

  /** Asks the kernel to describe the pinned cell. */
  runDescribe() {
    const target = describeTarget(this.lens.data, this.lens.state.selected);
    if (!target.ok) return;
    const cell = cellKey(target);
    this.store.set({ describe: { pending: -1, cell, text: "" } });
    const pending = ask(this, DESCRIBE_ACTION, { prompt: target.prompt, layer: target.layer, position: target.position });
    this.store.set({ describe: { pending, cell, text: "" } });
  }

  /** Opens or closes the token picker. */
  togglePicker() {
    const open = !this.store.state.pickerOpen;
    if (open) requestDetails(this.lens);
    this.store.set({ pickerOpen: open });
  }

  // ---- Events --------------------------------------------------------------------------------

  bind() {
    const { ui, model } = this;
    const signal = this.abort.signal;
    /** @type {(target: EventTarget, type: string, fn: (event: any) => void) => void} */
    const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
    /** A text box that sends its text on Enter. */
    const onEnter = (/** @type {HTMLInputElement} */ box, /** @type {(text: string) => void} */ send) =>
      on(box, "keydown", (/** @type {KeyboardEvent} */ event) => {
        if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
        event.preventDefault();
        send(box.value);
      });
    onEnter(ui.promptInput, (text) => text.trim() && askFromBox(this, ui.promptInput, "add_prompt", { text }));
    onEnter(ui.trackInput, (text) => text && askFromBox(this, ui.trackInput, "track", { text, show: true }));
    onEnter(ui.groupInput, (text) => text.trim() && askFromBox(this, ui.groupInput, "group", { text }));
    on(ui.removeButton, "click", () => this.removePrompt());
    on(ui.pickerButton, "click", () => this.togglePicker());
    /** Buttons in a list that each name a token. */
    const onToken = (/** @type {HTMLElement} */ list, /** @type {string} */ selector, /** @type {(token: string) => void} */ fn) =>
      on(list, "click", (event) => {
        const button = tokenButton(event, selector);
        if (button) fn(button.dataset.token || "");
      });
    onToken(ui.chips, "button.murano-chip-remove", (text) => ask(this, "untrack", { text }));
    onToken(ui.pickerList, "button.murano-picker-item", (text) => this.track(text));
    onToken(ui.pinTokens, "button.murano-pin-token", (text) => this.track(text));
    on(ui.patchRun, "click", () => this.runPatch());
    on(ui.describe.button, "click", () => this.runDescribe());
    on(ui.patchClear, "click", () => ask(this, "clear_patch", {}));
    on(ui.dismissButton, "click", () => this.store.set({ conn: dismiss(this.store.state.conn) }));
    // Python's traits the controls show, into the store (the parts follow their keys).
    const trait = (/** @type {"prompts" | "targets" | "live_status" | "patch"} */ name) => () => this.store.set({ [name]: model.get(name) });
    const patchPayload = () => this.store.set({ patchVersion: this.store.state.patchVersion + 1 });
    /** @type {[string, (...args: any[]) => void][]} */
    this.handlers = [
      ["msg:custom", (msg) => onMessage(this, msg)],
      [
        "change:live",
        () => {
          this.store.set({ conn: this.initial() });
          startHello(this);
        },
      ],
      ["change:live_status", trait("live_status")],
      ["change:prompts", trait("prompts")],
      ["change:targets", trait("targets")],
      ["change:patch", trait("patch")],
      ["change:_patch_meta", patchPayload],
      ["change:_patch_sections", patchPayload],
    ];
    for (const [event, fn] of this.handlers) model.on(event, fn);
  }

  /** The test hook's part (`__muranoDebug.live`). */
  debugApi() {
    const live = this;
    return {
      get state() {
        const s = live.store.state;
        const c = s.conn;
        return { kernel: c.kernel, latest: c.latest, open: [...c.open], status: statusLine(c, s.live_status), pickerOpen: s.pickerOpen };
      },
      /** @param {{hello?: number, reply?: number}} timeouts */
      setTimeouts(timeouts) {
        Object.assign(live.timeouts, timeouts);
        schedule(live);
      },
      get diff() {
        return live.diff ? live.ui.patchDiff : null;
      },
    };
  }
}

/**
 * "Describe this cell" follows the pinned cell: its text belongs to one cell.
 * @param {LiveView} live
 * @param {boolean} offered
 */
function followDescribe(live, offered) {
  const s = live.store.state;
  const now = showDescribe(live.ui.describe, s.describe, offered, live.lens.data, live.lens.state.selected);
  if (now !== s.describe) live.store.set({ describe: now });
}

/**
 * The trajectory chart names a target's line by its index (`target:<j>`): when Python adds or
 * removes targets, the lines the user switched on or off keep their choice by token.
 * @param {LiveView} live
 */
function keepChartLines(live) {
  const data = live.lens.data;
  if (!data) return;
  const before = live.lastTargets;
  live.lastTargets = [...data.targets];
  if (!before || before.join("\u0000") === data.targets.join("\u0000")) return;
  const toggled = live.lens.trajectory.toggled;
  /** @type {[string, boolean][]} */
  const moved = [];
  for (const [key, shown] of toggled) {
    if (!key.startsWith("target:")) continue;
    toggled.delete(key);
    const j = data.targets.indexOf(before[Number(key.slice("target:".length))]);
    if (j >= 0) moved.push([`target:${j}`, shown]);
  }
  for (const [key, shown] of moved) toggled.set(key, shown);
  live.lens.trajectory.rerender();
}

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
