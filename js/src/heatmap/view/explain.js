// @ts-check
/**
 * Direct logit attribution in the view: which view is shown (`setView`: the heatmap of layers or
 * the component view; the `view` trait), what is explained (`setExplain`, the `explain` trait),
 * heads split or summed (`setHeads`), and the "why" panel's cell (`whyCell`, `whyCellOf`, pure)
 * and content (`updateWhy`).
 */

import { explainOptions, explainValue, hasAttribution, hasHeads, nothingExplained, parseExplain, whyModel } from "../attribution.js";
import { waitingNote } from "../details.js";
import { displayToken } from "../../shared/tokens.js";
import { LAYER_HINT } from "./dom.js";
import { showExplainMenu, showWhy } from "./why.js";
import { send } from "./sync.js";
import { requestDetails } from "./details_request.js";
import { updateTooltip } from "./cell_tip.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("./store.js").ViewState} ViewState
 *
 * @typedef {object} WhyCell The cell the "why" panel explains.
 * @property {number} row
 * @property {number} position
 * @property {number} unit the component view's hovered or focused unit, else -1
 * @property {string} source "hover", "focus", "pinned" or "default" (the highlighted row at the
 *   prompt's last position)
 *
 * @typedef {object} PointedCells What the pointer and the keyboard point at, beside the state.
 * @property {Cell | null} whyHover the heatmap cell the panel keeps after a hover
 * @property {{hover: Cell | null, focus: Cell | null, focused: boolean}} components the component
 *   view's hovered and focus cells (a unit as `layerIndex`)
 */

/**
 * The cell the "why" panel explains: the hovered cell (the component view's: its position in the
 * highlighted row), else the keyboard focus, else the pinned cell, else the highlighted row at
 * the prompt's last position.
 * @param {LensData} data
 * @param {ViewState} s
 * @param {PointedCells} pointed
 * @returns {WhyCell}
 */
export function whyCellOf(data, s, pointed) {
  if (s.view === "components") {
    const c = pointed.components;
    const cell = c.hover || (c.focused ? c.focus : null);
    if (cell) return { row: s.layer, position: cell.position, unit: cell.layerIndex, source: c.hover ? "hover" : "focus" };
  } else {
    const hover = s.hover || pointed.whyHover;
    if (hover) return { row: hover.layerIndex, position: hover.position, unit: -1, source: "hover" };
    if (s.focused && s.focus) return { row: s.focus.layerIndex, position: s.focus.position, unit: -1, source: "focus" };
  }
  const sel = s.selected;
  if (sel && sel.prompt === s.prompt && sel.layer_index < data.L && sel.position < data.lengths[s.prompt]) {
    return { row: sel.layer_index, position: sel.position, unit: -1, source: "pinned" };
  }
  return { row: s.layer, position: data.lengths[s.prompt] - 1, unit: -1, source: "default" };
}

/**
 * @param {LensView} view
 * @returns {WhyCell | null}
 */
export function whyCell(view) {
  return view.data ? whyCellOf(view.data, view.state, { whyHover: view.whyHover, components: view.components }) : null;
}

/**
 * What the panel and the component view explain, read for the data shown.
 * @param {LensView} view
 */
export function explainChoice(view) {
  return view.data ? parseExplain(view.data, view.state.explain) : /** @type {const} */ ({ kind: "top1" });
}

/**
 * The attribution's controls (the view menu, the panel's menu and heads box) and the view shown,
 * for the data shown: without attribution, the heatmap alone.
 * @param {LensView} view
 */
export function showAttribution(view) {
  const { data, ui, store } = view;
  if (!data) return;
  const s = store.state;
  const offered = hasAttribution(data);
  store.set({
    view: offered ? s.view : "layers",
    explain: explainValue(data, parseExplain(data, s.explain)),
    heads: hasHeads(data.components) ? s.heads : false,
  });
  ui.viewLabel.hidden = !offered;
  ui.viewSelect.value = s.view;
  ui.why.panel.hidden = !offered;
  ui.why.headsLabel.hidden = !hasHeads(data.components);
  ui.why.heads.checked = s.heads;
  showExplainMenu(ui.why, explainOptions(data, (t) => displayToken(t)), s.explain);
  view.components.invalidate();
  applyView(view);
  updateWhy(view);
}

/**
 * Shows the heatmap and its chart, or the component view, and the legend that goes with it.
 * @param {LensView} view
 */
function applyView(view) {
  const { ui } = view;
  const components = view.state.view === "components";
  ui.body.hidden = components;
  ui.trajPanel.hidden = components;
  ui.comp.box.hidden = !components;
  ui.root.classList.toggle("murano-components-view", components);
  ui.compKey.hidden = !components;
  ui.layerUi.extra.textContent = components ? "the row whose logits the components are read at" : LAYER_HINT;
  view.refreshMetric();
}

/**
 * Shows the heatmap of layers or the component view (the view menu, or the `view` trait).
 * @param {LensView} view
 * @param {unknown} value
 * @param {boolean} sync tell Python (the user chose it in the menu)
 */
export function setView(view, value, sync) {
  const data = view.data;
  if (!data) return;
  const shown = value === "components" && hasAttribution(data) ? "components" : "layers";
  if (sync) send(view, "view", shown);
  view.ui.viewSelect.value = shown;
  if (shown === view.state.view) return;
  view.store.set({ view: shown, hover: null });
  view.components.hover = null;
  view.components.revealPending = true;
  applyView(view);
  view.relayout();
  updateTooltip(view);
}

/**
 * What the panel and the component view explain (the panel's menu, or the `explain` trait).
 * @param {LensView} view
 * @param {unknown} value
 * @param {boolean} sync
 */
export function setExplain(view, value, sync) {
  const data = view.data;
  if (!data) return;
  const explain = explainValue(data, parseExplain(data, value));
  if (sync) send(view, "explain", explain);
  view.ui.why.explainSelect.value = explain;
  if (explain === view.state.explain) return;
  // The component view's values are laid out again (the store's subscriber, `view.js`).
  view.store.set({ explain });
  relayoutComponents(view);
  updateWhy(view);
  updateTooltip(view);
}

/**
 * Splits each layer's attention into its heads, or sums them (the panel's box).
 * @param {LensView} view
 * @param {boolean} heads
 */
export function setHeads(view, heads) {
  view.ui.why.heads.checked = heads;
  if (heads === view.state.heads) return;
  view.store.set({ heads });
  view.components.hover = null;
  view.components.focus = null;
  relayoutComponents(view);
  updateWhy(view);
}

/**
 * The component view's values changed (row, prompt, explained logit): lay it out again.
 * @param {LensView} view
 */
export function relayoutComponents(view) {
  if (view.components.shown) view.components.relayout();
}

/**
 * The component view's hovered or focused cell changed: the tooltip and the panel follow.
 * @param {LensView} view
 * @param {Cell | null} cell
 */
export function componentCellChanged(view, cell) {
  if (cell) requestDetails(view);
  updateTooltip(view);
  updateWhy(view);
}

/**
 * Fills the "why" panel for the cell it explains.
 * @param {LensView} view
 */
export function updateWhy(view) {
  const { data, ui } = view;
  if (!data || !hasAttribution(data) || ui.why.panel.hidden) {
    view.whyShown = { cell: null, model: null };
    return;
  }
  const cell = whyCell(view);
  const s = view.state;
  const explain = explainChoice(view);
  const model =
    cell && data.arrays.contributions
      ? whyModel(data, { explain, prompt: s.prompt, row: cell.row, position: cell.position, heads: s.heads, show: (t) => displayToken(t) })
      : null;
  let message = "";
  if (!data.arrays.contributions) message = waitingNote("the attribution", view.detailsLate);
  else if (!model && cell) message = `Nothing to explain: ${nothingExplained(data, explain, s.prompt, cell.position)}.`;
  showWhy(ui.why, model, { message, current: cell ? cell.unit : -1 });
  view.whyShown = { cell, model };
}
