// @ts-check
/**
 * Which cell the tooltip shows and where (`TooltipView`, `tooltip.js`, is its DOM): the hovered
 * heatmap cell, else the keyboard's focus cell; in the component view, that view's. Made
 * (`makeTooltip`) with what it must not cover: the pinned-cell chip, the "why" panel's bars and
 * the trajectory chart.
 */

import { cellDetails, tooltipModel } from "../details.js";
import { cellRect, columnOf } from "../layout.js";
import { isSelected } from "../state.js";
import { TooltipView } from "./tooltip.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../layout.js").Cell} Cell
 */

/**
 * The tooltip in the view's root. It covers neither the pinned-cell chip nor the trajectory
 * chart (which follows the hovered column) when it can help it.
 * @param {LensView} view
 */
export function makeTooltip(view) {
  const ui = view.ui;
  return new TooltipView(ui.tooltip, ui.root, () => [
    ...(ui.pinEl.hidden ? [] : [rectOf(ui.pinEl.getBoundingClientRect())]),
    // The "why" panel follows the hovered cell: it is read beside the tooltip.
    ...(ui.why.panel.hidden ? [] : [rectOf(ui.why.bars.getBoundingClientRect())]),
    view.trajectory.keepVisibleRect(),
  ]);
}

/**
 * A plain rectangle from a DOMRect.
 * @param {DOMRect} r
 */
function rectOf(r) {
  return { x: r.left, y: r.top, w: r.width, h: r.height };
}

/**
 * The cell whose tooltip shows: the hovered one, else the keyboard focus cell.
 * @param {LensView} view
 */
export function tooltipCell(view) {
  const s = view.state;
  return s.hover || (s.focused ? s.focus : null);
}

/**
 * Shows the tooltip of the cell it follows (or hides it).
 * @param {LensView} view
 */
export function updateTooltip(view) {
  const { data, tooltip } = view;
  const s = view.state;
  if (s.view === "components") {
    const c = view.components;
    const cell = data && c.grid ? c.hover || (c.focused ? c.focus : null) : null;
    const rect = cell && c.cellClientRect(cell.layerIndex, cell.position);
    if (!cell || !rect) {
      tooltip.hide();
      return;
    }
    tooltip.show(c.tooltipContent(cell), isSelected(s.selected, s.prompt, s.layer, cell.position));
    tooltip.place(rect);
    return;
  }
  const cell = data && view.layout ? tooltipCell(view) : null;
  if (!cell || !data) {
    tooltip.hide();
    return;
  }
  const details = cellDetails(data, s.prompt, cell.layerIndex, cell.position, view.targetIndex());
  tooltip.show(tooltipModel(details, { late: view.detailsLate }), isSelected(s.selected, s.prompt, cell.layerIndex, cell.position));
  placeTooltip(view, cell);
}

/**
 * Places the tooltip beside a heatmap cell (after a scroll or a redraw too).
 * @param {LensView} view
 * @param {Cell} cell
 */
export function placeTooltip(view, cell) {
  const { layout, tooltip } = view;
  if (tooltip.hidden || !layout || view.state.view === "components") return;
  const column = columnOf(layout, cell.position);
  if (column < 0) return;
  const r = cellRect(layout, cell.layerIndex, column, view.scrollLeft());
  const box = view.ui.canvas.getBoundingClientRect();
  tooltip.place({ x: box.left + r.x, y: box.top + r.y, w: r.w, h: r.h });
}
