// @ts-check
/**
 * The trajectory chart's wiring: made with the view's callbacks (a layer picked on the chart
 * moves the row; a first interaction asks for the detail sections), placed beside the heatmap or
 * below it (`placeChart`), and fed the column in focus, its rows level with the heatmap's
 * (`drawTrajectory`).
 */

import { computeLayout, GEOMETRY } from "../../shared/layout.js";
import { chartColumn } from "../trajectory.js";
import { chartBeside } from "../trajectory_layout.js";
import { TrajectoryView } from "../trajectory_view.js";
import { lensTitle } from "./controls.js";
import { setLayer } from "./navigation.js";
import { requestDetails } from "./details_request.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../payload.js").LensData} LensData
 */

/**
 * The chart in its panel, wired to the view.
 * @param {LensView} view
 * @param {string} id the widget's element-id prefix
 */
export function makeTrajectory(view, id) {
  return new TrajectoryView(view.ui.trajPanel, id, {
    onLayer: (row) => {
      setLayer(view, row, "throttled");
      view.syncLayer.flush();
    },
    onInteract: () => {
      if (view.detailsRequested) return;
      requestDetails(view);
      view.requestDraw();
    },
  });
}

/**
 * Puts the chart beside the heatmap when there is room for both, else below it. Decided on the
 * longest prompt, so that moving the prompt slider does not move the chart.
 * @param {LensView} view
 * @param {number} charW
 */
export function placeChart(view, charW) {
  const { ui, painter } = view;
  const data = /** @type {LensData} */ (view.data);
  const available = ui.main.clientWidth || view.el.clientWidth || 800;
  const key = `${available}|${charW}`;
  if (key === view.chartPlaceKey) return;
  view.chartPlaceKey = key;
  const longest = Math.max(...data.lengths);
  // Cells as wide as ten characters (the most a cell shows): any layer's top-1 fits.
  const natural = computeLayout({ nLayers: data.L, nPositions: longest, width: 0, labelW: painter.labelWidth(data), charW, maxChars: 10 }).contentW;
  const beside = chartBeside(available, natural);
  ui.main.classList.toggle("murano-side", beside);
  ui.main.classList.toggle("murano-stacked", !beside);
  // Beside: the heatmap takes no more than its widest cells need, so the chart sits next to it.
  const widest = painter.labelWidth(data) + longest * GEOMETRY.maxCellW + GEOMETRY.rightPad;
  ui.left.style.maxWidth = beside ? `${widest}px` : "";
}

/**
 * The trajectory chart for the column in focus, its rows level with the heatmap's.
 * @param {LensView} view
 */
export function drawTrajectory(view) {
  const { data, layout } = view;
  if (!data || !layout) return;
  const s = view.state;
  const column = chartColumn({ hover: view.chartHover, focus: s.focus, focused: s.focused, selected: s.selected, prompt: s.prompt }, data.lengths[s.prompt]);
  view.trajectory.update({
    data,
    metric: s.view === "components" ? "" : view.shownMetric,
    others: view.lenses.filter((lens) => lens !== data).map((lens) => ({ name: lens.lensName, title: lensTitle(lens), data: lens })),
    prompt: s.prompt,
    position: column.position,
    source: column.source,
    row: s.layer,
    rowH: layout.rowH,
    // Under a caption (two grids), the heatmap's rows start that much lower.
    heatY: layout.heatY + view.ui.canvas.offsetTop,
    // Beside the heatmap, as tall as it; below it, only room for the axis title.
    heightBelow: view.ui.main.classList.contains("murano-side") ? layout.height - layout.heatY - layout.heatH : 0,
    detailsRequested: view.detailsRequested,
    detailsLate: view.detailsLate,
  });
  // A line on the chart waits for a detail section (a column other than the last, pinned from
  // Python, say): ask for it, so that "loading" in its legend is true.
  if (view.trajectory.waiting && !view.detailsRequested) {
    requestDetails(view);
    if (view.detailsRequested) drawTrajectory(view); // once more: its note says "loading" now
  }
}
