// @ts-check
/**
 * The second grid: another lens drawn under the first, in the same scroller (its columns under
 * the first's, scrolled together), by its own painter, with the same prompt, highlighted row,
 * metric, colour scale and cursor: hovering, focusing or pinning a cell in either grid marks the
 * same cell in both, and the layer slider moves both. `setBeside` (the "beside" menu and the
 * `lens_beside` trait) chooses the lens; what it shows is worked out by `../side_by_side.js`.
 */

import { hitTest, positionAt } from "../../shared/layout.js";
import { h } from "../../shared/dom.js";
import { besideLens, besideMetric, besideOptions, gridCaption, sharedDomain } from "../side_by_side.js";
import { lensTitle } from "./controls.js";
import { heatmapGrid } from "./grid.js";
import { send } from "./sync.js";
import { setHover } from "./selection.js";
import { updateTooltip } from "./cell_tip.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../../shared/layout.js").Layout} Layout
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../../shared/grid_events.js").Grid} Grid
 * @typedef {import("../side_by_side.js").Domain} Domain
 */

/**
 * Works out the lens beside from the state and shows it: the menu, both captions, its painter.
 * Called when the payload, the lens shown or the lens beside changes.
 * @param {LensView} view
 */
export function showBeside(view) {
  const { ui, data } = view;
  const s = view.state;
  const beside = data ? besideLens(view.lenses, data.lensName, s.lens_beside) : null;
  if (beside !== view.beside) {
    view.beside = beside;
    if (beside) view.besidePainter.setData(beside);
    view.layoutKey = null;
  }
  ui.besideLabel.hidden = view.lenses.length < 2;
  const options = data ? besideOptions(view.lenses, data.lensName, lensTitle) : [];
  const key = options.map((o) => `${o.value}\u0000${o.label}`).join("\u0001");
  if (ui.besideSelect.dataset.key !== key) {
    ui.besideSelect.replaceChildren(...options.map((o) => h("option", "", { value: o.value }, o.label)));
    ui.besideSelect.dataset.key = key;
  }
  ui.besideSelect.value = beside ? beside.lensName : "";
  ui.root.classList.toggle("murano-two-grids", Boolean(beside));
  ui.gridCaption.hidden = !beside;
  ui.besideCaption.hidden = !beside;
  ui.besideCanvas.hidden = !beside;
  showCaptions(view);
}

/**
 * The two captions: each grid's lens, and why the second has no colours when its lens lacks
 * the metric shown.
 * @param {LensView} view
 */
export function showCaptions(view) {
  const { ui, data, beside } = view;
  if (!data || !beside) return;
  ui.gridCaption.textContent = gridCaption(data, lensTitle(data), true);
  ui.besideCaption.textContent = gridCaption(beside, lensTitle(beside), besideMetric(beside, view.shownMetric) !== null);
  ui.besideCanvas.setAttribute("aria-label", `${lensTitle(beside)} heatmap, beside the ${lensTitle(data)}: the same cells, the same cursor`);
}

/**
 * The lens beside the lens shown: from the menu (`sync`: tell Python) or the `lens_beside`
 * trait. "" (or the lens shown) shows one grid.
 * @param {LensView} view
 * @param {unknown} value
 * @param {boolean} sync
 */
export function setBeside(view, value, sync) {
  const name = typeof value === "string" && (value === "" || view.lenses.some((lens) => lens.lensName === value)) ? value : view.state.lens_beside;
  if (sync && name === value) send(view, "lens_beside", name);
  view.store.set({ lens_beside: name });
  showBeside(view);
  view.refreshMetric();
  view.relayout();
  updateTooltip(view);
}

/**
 * The colour scale the grids share: both lenses' domains of the metric shown (null with one grid:
 * the metric's own).
 * @param {LensView} view
 * @returns {Domain | null}
 */
export function gridDomain(view) {
  const { data, beside } = view;
  if (!data || !beside) return null;
  return sharedDomain(data, beside, view.shownMetric);
}

/**
 * The second grid's layout: the first's columns and rows (the same label width, column width
 * and row height), for its lens's rows.
 * @param {Layout} layout the first grid's
 * @param {LensData} beside
 * @param {(options: any) => Layout} compute `computeLayout`
 * @returns {Layout}
 */
export function besideLayout(layout, beside, compute) {
  if (beside.L === layout.nLayers) return layout;
  return compute({ nLayers: beside.L, nPositions: layout.nPositions, width: layout.width, labelW: layout.labelW, charW: layout.charW, maxChars: layout.cellChars, columns: layout.columns, cellW: layout.cellW, rowH: layout.rowH });
}

/**
 * Draws the second grid (after the first, with the same scene but its own metric and the shared
 * scale).
 * @param {LensView} view
 * @param {import("../painter.js").Scene} scene the first grid's
 * @param {number} scroll
 */
export function drawBeside(view, scene, scroll) {
  const { beside, besideLayoutShown } = view;
  if (!beside || !besideLayoutShown) return;
  const metric = besideMetric(beside, scene.metric);
  view.besidePainter.draw(besideLayoutShown, { ...scene, metric: metric ?? scene.metric, loading: scene.loading || metric === null }, scroll);
}

/**
 * The cell under a pointer on the second grid.
 * @param {LensView} view
 * @param {MouseEvent} event
 * @returns {Cell | null}
 */
function besideEventCell(view, event) {
  const layout = view.besideLayoutShown;
  if (!layout) return null;
  const rect = view.ui.besideCanvas.getBoundingClientRect();
  const hit = hitTest(layout, event.clientX - rect.left, event.clientY - rect.top, view.scrollLeft(), view.state.layer);
  return hit && hit.area !== "input" ? { layerIndex: hit.layerIndex, position: positionAt(layout, hit.position) } : null;
}

/**
 * The second grid for the shared pointer handlers: the first grid's state (one cursor), its own
 * hit test, and a hover that says which grid it is in (the tooltip then reads that lens).
 * @param {LensView} view
 * @returns {Grid}
 */
export function besideGrid(view) {
  const grid = heatmapGrid(view);
  return Object.defineProperties(grid, {
    cellAt: { value: (/** @type {MouseEvent} */ event) => besideEventCell(view, event) },
    setHover: {
      value: (/** @type {Cell | null} */ cell) => {
        const moved = view.hoverGrid !== 1;
        view.hoverGrid = 1;
        setHover(view, cell);
        if (moved) updateTooltip(view);
      },
    },
  });
}
