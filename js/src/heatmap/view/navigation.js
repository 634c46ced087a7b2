// @ts-check
/**
 * The prompt and the row shown (the sliders; the `prompt` and `layer` traits); how the view tells
 * Python is `sync.js`'s.
 */

import { rowOfModelLayer } from "../payload.js";
import { clampIndex } from "../../shared/state.js";
import { showControls, showPin } from "./controls.js";
import { clampCell } from "./selection.js";
import { updateTooltip } from "./cell_tip.js";

/** @typedef {import("./view.js").LensView} LensView */

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
  if (s.focus) store.set({ focus: clampCell(view, s.focus) });
  showControls(ui, data, s);
  showPin(ui, data, s.selected);
  view.revealPending = true;
  view.relayout();
  updateTooltip(view);
  view.updateWhy();
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
