// @ts-check
/** The widget's DOM, built once: header, sliders, the scrolling canvas, footer, tooltip. */

import { h } from "../../shared/dom.js";
import { buildLive } from "../live/dom.js";
import { buildComponents } from "./components.js";
import { buildWhy } from "./why.js";
import { groupMenu } from "./group.js";

/**
 * @typedef {object} SliderUi
 * @property {HTMLDivElement} row
 * @property {HTMLLabelElement} label
 * @property {HTMLInputElement} input
 * @property {HTMLOutputElement} output
 * @property {HTMLSpanElement} extra
 *
 * @typedef {object} Ui
 * @property {HTMLDivElement} root
 * @property {HTMLSpanElement} titleEl
 * @property {HTMLSpanElement} modelEl
 * @property {HTMLSpanElement} dimsEl
 * @property {HTMLLabelElement} lensLabel the lens menu's label (hidden with one lens)
 * @property {HTMLSelectElement} lensSelect the lens menu
 * @property {HTMLLabelElement} besideLabel the "beside" menu's label (hidden with one lens)
 * @property {HTMLSelectElement} besideSelect the lens drawn as a second grid, or none
 * @property {HTMLSelectElement} metricSelect
 * @property {HTMLLabelElement} targetLabel the tracked-token menu's label (shown with a per-target
 *   metric)
 * @property {HTMLSelectElement} targetSelect which tracked token a per-target metric shows
 * @property {HTMLLabelElement} groupLabel the token-group menu's label (shown with a per-group
 *   metric)
 * @property {HTMLSelectElement} groupSelect which token group a per-group metric shows
 * @property {HTMLLabelElement} viewLabel the view menu's label (hidden without attribution)
 * @property {HTMLSelectElement} viewSelect the heatmap of layers, or of components
 * @property {import("./components.js").ComponentUi} comp the component view's elements
 * @property {import("./why.js").WhyUi} why the "why" panel's elements
 * @property {HTMLSpanElement} compKey the component view's key (its hatch: no part)
 * @property {SliderUi} promptUi
 * @property {SliderUi} layerUi
 * @property {HTMLDivElement} main the heatmap and the trajectory chart, side by side or stacked
 * @property {HTMLDivElement} left the heatmap (or the component view) and, under it, its footer
 * @property {HTMLDivElement} body
 * @property {HTMLDivElement} trajPanel the trajectory chart's box (filled by `TrajectoryView`)
 * @property {HTMLDivElement} scroller
 * @property {HTMLDivElement} track
 * @property {HTMLCanvasElement} canvas
 * @property {HTMLDivElement} gridCaption the first grid's lens, over it (with two grids)
 * @property {HTMLDivElement} besideCaption the second grid's lens
 * @property {HTMLCanvasElement} besideCanvas the second grid (hidden with one)
 * @property {HTMLDivElement} tooltip
 * @property {HTMLSpanElement} legendTitle
 * @property {HTMLCanvasElement} legendBar
 * @property {HTMLSpanElement} legendTicks
 * @property {HTMLSpanElement} legendChange says that a new payload changed the colour scale
 * @property {HTMLSpanElement} missingKey
 * @property {HTMLSpanElement} settledKey
 * @property {HTMLSpanElement} answerKey
 * @property {HTMLSpanElement} generatedKey
 * @property {HTMLSpanElement} roleKeys the chat roles' colour keys
 * @property {HTMLLabelElement} hideTemplateLabel
 * @property {HTMLInputElement} hideTemplate the "hide chat-template tokens" checkbox
 * @property {HTMLSpanElement} pinEl
 * @property {HTMLSpanElement} pinText
 * @property {HTMLButtonElement} unpinButton
 * @property {HTMLDivElement} readout
 * @property {HTMLDivElement} errorEl
 * @property {import("../live/dom.js").LiveUi} live the live controls and the patch panel
 */

/** The layer slider's hint. */
export const LAYER_HINT = "highlighted row; its predictions appear under the tokens";

/** The readout's text before any cell is hovered or focused. */
export const READOUT_HINT = "Hover or focus a cell for details; click or Enter pins it. Arrow keys move inside the heatmap.";

/**
 * Builds the widget's elements (nothing from the data yet) and appends them to `el`.
 * Over 100 lines on purpose: the widget's element tree written top to bottom in the order it
 * shows, one statement per control, so the page can be read from here as it is laid out.
 * @param {HTMLElement} el
 * @param {string} id a page-unique prefix for element ids
 * @returns {Ui}
 */
export function buildDom(el, id) {
  const root = h("div", "murano-root", { role: "group", "aria-label": "Logit lens" });

  const header = h("div", "murano-header");
  const titleEl = h("span", "murano-title", {}, "Logit lens");
  const modelEl = h("span", "murano-model");
  const dimsEl = h("span", "murano-dims");
  const metricLabel = h("label", "murano-metric");
  metricLabel.append(h("span", "murano-label", {}, "Colour"));
  const metricSelect = h("select", "murano-select", { "aria-label": "Colour cells by" });
  metricLabel.append(metricSelect);
  // A per-target metric (a tracked token's probability): which token, right after the colour
  // menu. Hidden for the other metrics.
  const targetLabel = h("label", "murano-target", { hidden: "" });
  targetLabel.append(h("span", "murano-label", {}, "Token"));
  const targetSelect = h("select", "murano-target-select", { "aria-label": "Tracked token shown" });
  targetLabel.append(targetSelect);
  // Several lenses side by side: which one the heatmap shows (the title says which, too). After
  // the colour menu, which stays the header's first menu (`.murano-select`) with one lens or many.
  const lensLabel = h("label", "murano-lens", { hidden: "" });
  lensLabel.append(h("span", "murano-label", {}, "Lens"));
  const lensSelect = h("select", "murano-lens-select", { "aria-label": "Lens shown" });
  lensLabel.append(lensSelect);
  // Two lenses as two grids, one under the other: the second grid's lens, or none.
  const besideLabel = h("label", "murano-beside", { hidden: "" });
  besideLabel.append(h("span", "murano-label", {}, "beside"));
  const besideSelect = h("select", "murano-beside-select", { "aria-label": "Lens drawn as a second grid" });
  besideLabel.append(besideSelect);
  // With direct logit attribution: the heatmap of layers, or the component view.
  const viewLabel = h("label", "murano-view", { hidden: "" });
  viewLabel.append(h("span", "murano-label", {}, "View"));
  const viewSelect = h("select", "murano-view-select", { "aria-label": "View" });
  viewSelect.append(
    h("option", "", { value: "layers", title: "The heatmap: rows are layers" }, "layers"),
    h("option", "", { value: "components", title: "Rows are the model's components, colour each one's direct part of the explained logit" }, "components"),
  );
  viewLabel.append(viewSelect);
  // The colour menu and the token menu share one box that takes the header's free width: the
  // token menu, shown once a token is tracked, narrows the colour menu rather than wrapping the
  // header onto another line (which would move the heatmap under the pointer).
  const colourGroup = h("div", "murano-colour");
  const { groupLabel, groupSelect } = groupMenu();
  colourGroup.append(metricLabel, targetLabel, groupLabel);
  header.append(titleEl, modelEl, dimsEl, colourGroup, viewLabel, lensLabel, besideLabel);

  const controls = h("div", "murano-controls");
  /** @type {(name: string, label: string, accessibleName: string) => SliderUi} */
  const slider = (name, label, accessibleName) => {
    const row = h("div", `murano-control murano-${name}-control`);
    const labelEl = h("label", "murano-label", { for: `${id}-${name}` }, label);
    // Its own accessible name: the visible label is hidden with one prompt, and a name read
    // from a <label> alone is lost where a host re-parents the widget.
    const input = h("input", "murano-slider", { type: "range", id: `${id}-${name}`, min: 0, max: 0, step: 1, value: 0, "aria-label": accessibleName });
    const output = h("output", "murano-value", { for: `${id}-${name}` });
    const extra = h("span", `murano-${name}-text`);
    row.append(labelEl, input, output, extra);
    controls.append(row);
    return { row, label: labelEl, input, output, extra };
  };
  const promptUi = slider("prompt", "Prompt", "Prompt shown");
  // Chats: hide the template's own tokens (their columns collapse; positions keep their numbers).
  const hideTemplateLabel = h("label", "murano-hide-template", { hidden: "" });
  const hideTemplate = h("input", "murano-hide-template-box", { type: "checkbox" });
  hideTemplateLabel.append(hideTemplate, h("span", "", {}, "hide chat-template tokens"));
  const layerUi = slider("layer", "Layer", "Layer highlighted");
  layerUi.extra.textContent = LAYER_HINT;
  controls.append(hideTemplateLabel);

  const body = h("div", "murano-heatmap");
  const scroller = h("div", "murano-scroll");
  const track = h("div", "murano-track");
  const canvas = h("canvas", "murano-canvas", {
    tabindex: 0,
    role: "application",
    "aria-roledescription": "heatmap",
    "aria-describedby": `${id}-readout`,
  });
  // With a lens beside: each grid's caption over it, the second grid under the first (its columns
  // under the first's, scrolled with them).
  const gridCaption = h("div", "murano-grid-caption", { hidden: "" });
  const besideCaption = h("div", "murano-grid-caption", { hidden: "" });
  const besideCanvas = h("canvas", "murano-canvas-beside", { role: "img", hidden: "" });
  track.append(gridCaption, canvas, besideCaption, besideCanvas);
  scroller.append(track);
  body.append(scroller);
  const trajPanel = h("div", "murano-trajectory", { role: "group", "aria-label": "Trajectory across layers of the chosen column" });
  const comp = buildComponents(id);
  const main = h("div", "murano-main");
  // The heatmap's column holds its footer (legend, pin, readout) right under it: beside a chart
  // taller than the heatmap, the footer fills the height there rather than leaving an empty band.
  const left = h("div", "murano-left");
  main.append(left, trajPanel);
  const why = buildWhy();
  const tooltip = h("div", "murano-tooltip", { role: "tooltip", id: `${id}-tooltip`, hidden: "" });

  const footer = h("div", "murano-footer");
  const legend = h("div", "murano-legend");
  const legendTitle = h("span", "murano-legend-title");
  const scale = h("span", "murano-legend-scale");
  const legendBar = h("canvas", "murano-legend-bar", { width: 256, height: 1, "aria-hidden": "true" });
  const legendTicks = h("span", "murano-legend-ticks", { "aria-hidden": "true" });
  scale.append(legendBar, legendTicks);
  const legendChange = h("span", "murano-legend-change", { role: "status", hidden: "" });
  const settledKey = h("span", "murano-key murano-key-settled");
  settledKey.append(h("span", "murano-key-dot", { "aria-hidden": "true" }), h("span", "", {}, "top-1 = final prediction"));
  const missingKey = h("span", "murano-key murano-key-missing", { hidden: "" });
  missingKey.append(h("span", "murano-key-hatch", { "aria-hidden": "true" }), h("span", "", {}, "no value (not finite)"));
  const answerKey = h("span", "murano-key murano-key-answer", { hidden: "" });
  answerKey.append(h("span", "murano-key-corner", { "aria-hidden": "true" }), h("span", "", {}, "top-1 = the answer"));
  const generatedKey = h("span", "murano-key murano-key-generated", { hidden: "" });
  generatedKey.append(h("span", "murano-key-rule", { "aria-hidden": "true" }), h("span", "", {}, "generated from here (italic tokens)"));
  const roleKeys = h("span", "murano-role-keys", { hidden: "" });
  const compKey = h("span", "murano-key murano-key-comp", { hidden: "" });
  compKey.append(h("span", "murano-key-hatch", { "aria-hidden": "true" }), h("span", "", {}, "no part (after the row read), or nothing explained"));
  legend.append(legendTitle, scale, legendChange, settledKey, answerKey, missingKey, generatedKey, roleKeys, compKey);

  const pinEl = h("span", "murano-pin", { hidden: "" });
  const pinText = h("span", "murano-pin-text");
  const unpinButton = h("button", "murano-unpin", { type: "button", "aria-label": "Unpin the cell", title: "Unpin" }, "×");
  pinEl.append(pinText, unpinButton);
  const readout = h("div", "murano-readout", { id: `${id}-readout`, role: "status", "aria-live": "polite" }, READOUT_HINT);
  footer.append(legend, pinEl, readout);
  left.append(body, comp.box, footer);

  const errorEl = h("div", "murano-error", { role: "alert", hidden: "" });
  // The live controls (with a kernel) under the sliders; a patch's diff under the heatmap.
  const live = buildLive(id);
  root.append(header, controls, live.panel, main, live.pinPanel, live.patchPanel, why.panel, errorEl, tooltip);
  el.append(root);
  return {
    root, titleEl, modelEl, dimsEl, lensLabel, lensSelect, besideLabel, besideSelect, gridCaption, besideCaption, besideCanvas, metricSelect, targetLabel, targetSelect, groupLabel, groupSelect, viewLabel, viewSelect, comp, why, compKey, promptUi, layerUi, main, left, body, trajPanel, scroller, track, canvas, tooltip,
    legendTitle, legendBar, legendTicks, legendChange, missingKey, settledKey, answerKey, generatedKey, roleKeys, hideTemplateLabel, hideTemplate,
    pinEl, pinText, unpinButton, readout, errorEl, live,
  };
}
