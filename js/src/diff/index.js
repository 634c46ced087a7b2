// @ts-check
/**
 * The lens-diff widget's front end (bundled into `murano_widgets/static/lens_diff.js`): two lenses
 * compared cell by cell, coloured by a change b − a (in a chosen token's probability or in any of
 * the heatmap's per-cell metrics Python sends: a diverging scale centred on zero), KL or whether
 * the top-1 token differs. Nothing touches the DOM at import time.
 *
 * Modules: payload.js (decoding), colour.js (scales), details.js (tooltip and readout content),
 * view.js (DOM, canvas, events). Shared with the main widget, read-only: ../colour.js,
 * ../format.js, ../tokens.js, ../state.js, ../shared/codec.js (the byte reader), ../local_model.js (the
 * kernel-free model behind `renderStandalone`, which the HTML export calls).
 */

import { createLocalModel } from "../shared/local_model.js";
import { DiffView } from "./view.js";

export { decodeDiff, diffIndex } from "./payload.js";
export { cellColour, divergingColour, DIVERGING } from "./colour.js";
export { diffCell, formatDelta, tooltipContent } from "./details.js";
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
  const view = new DiffView(model, el);
  return () => view.destroy();
}

/**
 * Renders the full interactive diff with no kernel (the HTML export of
 * `LensDiffWidget.save_html`, a test page), from a plain state object:
 * `{_meta, _sections, prompt?, metric?, selected?}`, where sections may be base64 text.
 * Pinning a cell works in the page; nothing is sent anywhere.
 * @param {HTMLElement} el
 * @param {Record<string, any>} state
 * @returns {{model: WidgetModel, destroy: () => void}}
 */
export function renderStandalone(el, state) {
  const model = createLocalModel({ metric: "delta_prob", ...state });
  const destroy = render({ model, el });
  return { model, destroy };
}

export default { render };
