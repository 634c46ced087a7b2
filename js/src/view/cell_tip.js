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
import { lensTitle } from "./controls.js";
import { TooltipView } from "./tooltip.js";
import { requestTopkBlock } from "./topk_blocks.js";

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
 * The grid the tooltip is about: the one beside while the pointer hovers it, else the first
 * (the keyboard's focus is the first grid's).
 * @param {LensView} view
 * @returns {{data: import("../payload.js").LensData, layout: import("../layout.js").Layout | null, canvas: HTMLCanvasElement}}
 */
export function tipGrid(view) {
  if (view.beside && view.hoverGrid === 1 && view.state.hover) return { data: view.beside, layout: view.besideLayoutShown, canvas: view.ui.besideCanvas };
  return { data: /** @type {import("../payload.js").LensData} */ (view.data), layout: view.layout, canvas: view.ui.canvas };
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
  // The cell under the pointer in the grid beside: its lens's details.
  const lens = tipGrid(view).data;
  requestTopkBlock(view, lens, lens.offsets[s.prompt] + cell.position);
  const details = cellDetails(lens, s.prompt, cell.layerIndex, cell.position, view.targetIndex());
  const content = tooltipModel(details, { late: view.detailsLate });
  // Two grids: the title says which lens's cell this is.
  if (view.beside) content.title = `${lensTitle(lens)} · ${content.title}`;
  tooltip.show(content, isSelected(s.selected, s.prompt, cell.layerIndex, cell.position));
  placeTooltip(view, cell);
}

/**
 * Places the tooltip beside a heatmap cell (after a scroll or a redraw too).
 * @param {LensView} view
 * @param {Cell} cell
 */
export function placeTooltip(view, cell) {
  const { tooltip } = view;
  const { layout, canvas } = tipGrid(view);
  if (tooltip.hidden || !layout || view.state.view === "components") return;
  const column = columnOf(layout, cell.position);
  if (column < 0) return;
  const r = cellRect(layout, cell.layerIndex, column, view.scrollLeft());
  const box = canvas.getBoundingClientRect();
  tooltip.place({ x: box.left + r.x, y: box.top + r.y, w: r.w, h: r.h });
}
