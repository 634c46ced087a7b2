// @ts-check
/**
 * The prompt and the row shown (the sliders; the `prompt` and `layer` traits) and how the view
 * tells Python: `send` sets a trait, `syncers` throttle a slider's changes while it is dragged.
 */

import { rowOfModelLayer } from "../payload.js";
import { clampIndex } from "../../shared/state.js";
import { throttle } from "../throttle.js";
import { showControls, showPin } from "./controls.js";

/** @typedef {import("./view.js").LensView} LensView */

/** Sync to Python at most this often while a slider is dragged. */
export const SYNC_INTERVAL_MS = 100;

/**
 * Sets a trait (unless it holds the value already) and saves it.
 * @param {import("../../shared/local_model.js").WidgetModel} model
 * @param {string} name
 * @param {unknown} value
 */
export function send(model, name, value) {
  if (model.get(name) === value) return;
  model.set(name, value);
  model.save_changes();
}

/**
 * The sliders' throttled syncs: the prompt, and the row (Python hears the row's model layer).
 * @param {LensView} view
 */
export function syncers(view) {
  return {
    syncPrompt: throttle((/** @type {number} */ v) => view.send("prompt", v), SYNC_INTERVAL_MS),
    syncLayer: throttle((/** @type {number} */ row) => {
      if (view.data) view.send("layer", view.data.layers[row]);
    }, SYNC_INTERVAL_MS),
  };
}

/**
 * @param {LensView} view
 * @param {unknown} value
 * @param {"throttled" | boolean} sync
 */
export function setPrompt(view, value, sync) {
  const { data, ui, store, components } = view;
  if (!data) return;
  const prompt = clampIndex(value, data.P);
  if (sync === "throttled") view.syncPrompt(prompt);
  if (prompt === store.state.prompt) {
    ui.promptUi.input.value = String(prompt);
    return;
  }
  // The component view's values are laid out again (the store's subscriber, `view.js`).
  store.set({ prompt, hover: null });
  view.chartHover = null;
  view.whyHover = null;
  components.hover = null;
  components.focus = null;
  components.revealPending = true;
  const s = store.state;
  if (s.focus) store.set({ focus: view.clampCell(s.focus) });
  showControls(ui, data, s);
  showPin(ui, data, s.selected);
  view.revealPending = true;
  view.relayout();
  view.updateTooltip();
  view.updateWhy();
  view.live?.promptChanged();
}

/**
 * Highlights a row (the slider moves rows; Python hears the row's model layer).
 * @param {LensView} view
 * @param {unknown} value a row index
 * @param {"throttled" | boolean} sync
 */
export function setLayer(view, value, sync) {
  const { data, ui, store } = view;
  if (!data) return;
  const row = clampIndex(value, data.L);
  if (sync === "throttled") view.syncLayer(row);
  if (row === store.state.layer) {
    ui.layerUi.input.value = String(row);
    return;
  }
  store.set({ layer: row });
  showControls(ui, data, store.state);
  view.relayoutComponents();
  view.updateWhy();
  view.requestDraw();
}

/**
 * The `layer` trait changed in Python: a model layer, shown as its row.
 * @param {LensView} view
 * @param {unknown} layer
 */
export function setModelLayer(view, layer) {
  if (view.data) setLayer(view, rowOfModelLayer(view.data.layers, layer), false);
}
