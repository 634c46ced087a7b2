// @ts-check
/**
 * The cells the user points at: the pinned cell (`setSelected`, `togglePin`; the `selected`
 * trait), the hovered cell, the keyboard's focus cell and its readout, and the columns shown
 * (the chat template's own tokens hidden or not: `setHideTemplate`, the `hide_template` trait).
 */

import { cellDetails, readoutText } from "../details.js";
import { columnOf, positionAt, revealColumn } from "../../shared/layout.js";
import { clampIndex, isSelected, toggleSelection } from "../../shared/state.js";
import { nearestShown, shownPositions } from "../token_marks.js";
import { showControls, showPin } from "./controls.js";
import { sameCell } from "./store.js";
import { send } from "./sync.js";
import { requestDetails } from "./details_request.js";
import { updateTooltip } from "./cell_tip.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../../shared/state.js").Selected} Selected
 */

/**
 * A cell inside a prompt of the data: its row and position clamped, a hidden position (a template
 * token) given way to the nearest shown one.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number[] | null} columns the positions shown, or null for all of them
 * @param {Cell} cell
 * @returns {Cell}
 */
export function clampCellTo(data, prompt, columns, cell) {
  const position = clampIndex(cell.position, data.lengths[prompt]);
  return { layerIndex: clampIndex(cell.layerIndex, data.L), position: nearestShown(columns, position) };
}

/**
 * @param {LensView} view
 * @param {Cell} cell
 * @returns {Cell}
 */
export function clampCell(view, cell) {
  return clampCellTo(/** @type {LensData} */ (view.data), view.state.prompt, shownColumns(view), cell);
}

/**
 * The positions shown as columns for the current prompt, or null for all of them.
 * @param {LensView} view
 */
export function shownColumns(view) {
  const data = view.data;
  return data ? shownPositions(data, view.state.prompt, view.state.hide_template) : null;
}

/**
 * The cell the keyboard focus starts at: the pinned cell, else the highlighted row at the first
 * visible column (`firstPosition`).
 * @param {{prompt: number, layer: number, selected: Selected | null}} s
 * @param {number} firstPosition
 * @returns {Cell}
 */
export function keyboardStart(s, firstPosition) {
  const sel = s.selected;
  return sel && sel.prompt === s.prompt ? { layerIndex: sel.layer_index, position: sel.position } : { layerIndex: s.layer, position: firstPosition };
}

/**
 * @param {LensView} view
 * @param {Selected | null} value
 * @param {boolean} sync
 */
export function setSelected(view, value, sync) {
  view.store.set({ selected: value });
  if (sync) send(view, "selected", value);
  showPin(view.ui, view.data, value);
  updateTooltip(view);
  view.updateWhy();
  view.requestDraw();
}

/**
 * @param {LensView} view
 * @param {Cell | null} cell
 */
export function setHover(view, cell) {
  if (sameCell(view.state.hover, cell)) return;
  view.store.set({ hover: cell });
  if (cell) {
    view.chartHover = cell;
    view.whyHover = cell;
    requestDetails(view);
  }
  updateTooltip(view);
  view.updateWhy();
  view.requestDraw();
}

/**
 * @param {LensView} view
 * @param {Cell} cell
 * @param {boolean} [announceIt]
 */
export function setFocus(view, cell, announceIt = true) {
  // A key press is the latest thing the user did: the tooltip and the chart follow the focus,
  // not a cell the pointer happens to rest on or left behind on its way to the chart.
  view.store.set({ focus: cell, hover: null });
  view.chartHover = null;
  view.whyHover = null;
  const { layout, ui } = view;
  if (layout) {
    const scroll = revealColumn(layout, ui.scroller.scrollLeft, Math.max(0, columnOf(layout, cell.position)));
    if (scroll !== ui.scroller.scrollLeft) ui.scroller.scrollLeft = scroll;
  }
  if (announceIt) announce(view, cell);
  updateTooltip(view);
  view.requestDraw();
}

/**
 * The readout (for screen readers) says what the cell holds.
 * @param {LensView} view
 * @param {Cell} cell
 */
export function announce(view, cell) {
  if (!view.data) return;
  const s = view.state;
  const details = cellDetails(view.data, s.prompt, cell.layerIndex, cell.position, view.targetIndex());
  view.ui.readout.textContent = readoutText(details, { pinned: isSelected(s.selected, s.prompt, cell.layerIndex, cell.position), metric: view.shownMetric });
}

/**
 * @param {LensView} view
 * @param {Cell} cell
 */
export function togglePin(view, cell) {
  if (!view.data) return;
  const s = view.state;
  const next = toggleSelection(s.selected, s.prompt, cell.layerIndex, cell.position);
  setSelected(view, next, true);
  view.ui.readout.textContent = next
    ? readoutText(cellDetails(view.data, s.prompt, cell.layerIndex, cell.position, view.targetIndex()), { pinned: true, metric: view.shownMetric })
    : "Unpinned.";
}

/**
 * Shows the focus cell (keyboard navigation) with its tooltip and readout.
 * @param {LensView} view
 */
export function showKeyboardFocus(view) {
  const s = view.state;
  const layout = view.layout;
  if (!view.data || !layout) return;
  view.store.set({ focused: true });
  requestDetails(view);
  if (!s.focus) {
    // Start at the pinned cell, else on the highlighted row at the first visible column.
    const first = Math.min(layout.nPositions - 1, Math.ceil(view.scrollLeft() / layout.cellW));
    view.store.set({ focus: clampCell(view, keyboardStart(s, positionAt(layout, first))) });
  }
  setFocus(view, /** @type {Cell} */ (s.focus));
}

/**
 * Hides or shows the chat template's own tokens: their columns collapse, every other column
 * keeps its true position. The `hide_template` trait holds the choice, so Python can read and
 * set it and it is saved with the notebook.
 * @param {LensView} view
 * @param {boolean} hide
 * @param {boolean} sync tell Python (the user toggled the control)
 */
export function setHideTemplate(view, hide, sync) {
  const s = view.state;
  if (sync) send(view, "hide_template", hide);
  view.ui.hideTemplate.checked = hide;
  if (s.hide_template === hide) return;
  // The component view's values are laid out again (the store's subscriber, `view.js`).
  view.store.set({ hide_template: hide, hover: null });
  view.chartHover = null;
  if (s.focus) view.store.set({ focus: clampCell(view, s.focus) });
  if (view.data) showControls(view.ui, view.data, s); // the prompt's text loses or regains them
  view.layoutKey = null;
  view.relayout();
  updateTooltip(view);
}

/**
 * The readout follows the token shown: the keyboard focus cell is read again with its values.
 * @param {LensView} view
 * @returns {() => void} unsubscribes
 */
export function readoutFollowsTarget(view) {
  return view.store.subscribe((changed, s) => {
    if (changed.includes("target") && s.focused && s.focus) announce(view, clampCell(view, s.focus));
  });
}
