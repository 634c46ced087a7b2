// @ts-check
/**
 * The data-set widget front end (`murano_widgets/static/lens_dataset.js`, built by
 * `npm run build`): the per-layer curves of a `LensDataset` with their intervals, the values of
 * a hovered layer, the prompts behind a chosen layer, and a way to open a prompt's heatmap.
 * Nothing touches the DOM at import time.
 */

import { kernelFreeModel } from "../shared/local_model.js";
import { decodeBase64 } from "../shared/codec.js";
import { DatasetView } from "./view.js";

export { bandPath, datasetCurveGeometry, labelColumns, linePath } from "./chart.js";
export { datasetSeriesLook, decodeDataset, findSet, formatInterval, layerReadout, promptOrder } from "./data.js";

/** @typedef {import("../shared/local_model.js").WidgetModel} WidgetModel */

/**
 * anywidget entry point: draws the widget into `el`; returns the cleanup function. Reached only
 * through the default export: anywidget 0.9+ takes a module that also exports `render` by name
 * for its old API and logs a deprecation warning for every widget.
 * @param {{model: WidgetModel, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  const view = new DatasetView(model, el);
  return () => view.destroy();
}

/**
 * Renders the widget with no kernel (a saved notebook's state, a test page), from a plain state
 * object: `{_meta, _data, layer?, answer_set?, lens_name?, order?, metric?, status?}`, where `_data` values
 * may be base64 text (as a notebook saves buffers) or binary. Choosing a prompt then only says
 * that a kernel is needed to open its heatmap.
 * @param {HTMLElement} el
 * @param {Record<string, any>} state
 * @returns {{model: WidgetModel, destroy: () => void}}
 */
export function renderStandalone(el, state) {
  /** @type {Record<string, unknown>} */
  const data = {};
  for (const [name, value] of Object.entries(state._data || {})) {
    data[name] = typeof value === "string" ? decodeBase64(value) : value;
  }
  /** @type {Record<string, any>} */
  const values = { layer: null, answer_set: "", lens_name: "", order: "best", metric: "answer_prob", status: "", open_request: null, ...state, _data: data };
  values._meta = { ...values._meta, can_open: false, cannot_open_reason: "Cannot open a heatmap here: this page has no Python kernel to run the lens." };
  const model = kernelFreeModel(values);
  return { model, destroy: render({ model, el }) };
}

export default { render };
