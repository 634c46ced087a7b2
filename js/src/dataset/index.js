// @ts-check
/**
 * The data-set widget front end (`murano_widgets/static/lens_dataset.js`, built by
 * `npm run build`): the per-layer curves of a `LensDataset` with their intervals, the values of
 * a hovered layer, the prompts behind a chosen layer, and a way to open a prompt's heatmap.
 * Nothing touches the DOM at import time.
 */

import { DatasetView } from "./view.js";

export { bandPath, chartGeometry, labelColumns, linePath } from "./chart.js";
export { decodeDataset, formatInterval, layerReadout, promptOrder, readArray } from "./data.js";

/**
 * anywidget entry point: draws the widget into `el`; returns the cleanup function.
 * @param {{model: import("../local_model.js").WidgetModel, el: HTMLElement}} context
 * @returns {() => void}
 */
export function render({ model, el }) {
  const view = new DatasetView(model, el);
  /** @type {any} */ (el).__muranoDataset = view;
  return () => view.destroy();
}

export default { render };
