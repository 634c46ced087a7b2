// @ts-check
/**
 * The logit-lens widget front end: a canvas heatmap (rows = layers, final layer at the top;
 * columns = the prompt's real tokens) with prompt and layer sliders, a metric switch, a tooltip
 * and a pinned cell that Python can read back.
 *
 * The entry of the bundle (`murano_widgets/static/logit_lens.js`, built by `npm run build`):
 * anywidget's `render`, `renderStandalone` for the HTML export, `createLocalModel`, and the pure
 * functions that tests and the render benchmark call in a page. Nothing touches the DOM at
 * import time.
 *
 * Modules: payload.js (decoding), metrics.js (the registry from Python), colour.js (scales),
 * format.js (numbers), tokens.js (token display), layout.js (geometry), details.js (tooltip and
 * readout content), painter.js (canvas drawing), state.js, throttle.js, local_model.js,
 * view/ (the DOM, events, tooltip box and the view's state), and live/ (with a kernel: the
 * requests to it, the token picker, a patch shown by the lens diff's view).
 */

import { createLocalModel } from "../shared/local_model.js";
import { LensView } from "./view/view.js";

export { cellIndex, decodePayload } from "./payload.js";
export { toBytes } from "../shared/codec.js";
export { metricAvailable, metricDomain, metricValue, unitValue } from "./metrics.js";
export { scaleColour } from "../shared/colour.js";
export { colourImage } from "./colour_image.js";
export { displayToken } from "../shared/tokens.js";
export { createLocalModel };

/** @typedef {import("../shared/local_model.js").WidgetModel} WidgetModel */

/**
 * anywidget entry point: draws the widget into `el`; returns the cleanup function. Reached only
 * through the default export: anywidget 0.9+ takes a module that also exports `render` by name
 * for its old API and logs a deprecation warning for every widget.
 * @param {{model: WidgetModel, el: HTMLElement}} context
 * @returns {() => void}
 */
function render({ model, el }) {
  const view = new LensView(model, el);
  return () => view.destroy();
}

/**
 * Renders the full interactive widget with no kernel, from a plain state object
 * (`{_meta, _sections, prompt?, layer?, metric?, selected?, hide_template?, live?, patch?,
 * _patch_meta?, _patch_sections?}`; sections may be base64 text). Its model has no `send`: a
 * live widget's page says that editing needs a kernel, and shows a saved patch.
 * @param {HTMLElement} el
 * @param {Record<string, any>} state
 * @returns {{model: WidgetModel, destroy: () => void}}
 */
export function renderStandalone(el, state) {
  const model = createLocalModel(state);
  const destroy = render({ model, el });
  return { model, destroy };
}

export default { render };
