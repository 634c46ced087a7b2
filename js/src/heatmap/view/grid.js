// @ts-check
/**
 * The heatmap as a grid of cells (`../../shared/grid_events.js`'s `Grid`): the cell under a
 * pointer, hover, focus, moves between the columns shown, pins, the keyboard.
 */

import { columnOf, hitTest, positionAt } from "../../shared/layout.js";
import { moveFocus } from "../../shared/state.js";
import { onGridKey } from "../../shared/grid_events.js";
import { setFocus, setHover, setSelected, showKeyboardFocus, togglePin } from "./selection.js";
import { updateTooltip } from "./cell_tip.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../../shared/grid_events.js").Grid} Grid
 */

/**
 * The heatmap cell under a pointer event (the predictions strip stands for the highlighted row).
 * @param {LensView} view
 * @param {MouseEvent} event
 * @returns {Cell | null}
 */
export function eventCell(view, event) {
  if (!view.layout) return null;
  const rect = view.ui.canvas.getBoundingClientRect();
  const hit = hitTest(view.layout, event.clientX - rect.left, event.clientY - rect.top, view.scrollLeft(), view.state.layer);
  // The hit's column shows a true position (columns of hidden template tokens are skipped).
  return hit && hit.area !== "input" ? { layerIndex: hit.layerIndex, position: positionAt(view.layout, hit.position) } : null;
}

/**
 * The heatmap as the shared grid handlers see it (`../shared/grid_events.js`): its columns skip
 * hidden template tokens, so a move goes between the columns shown.
 * @param {LensView} view
 * @returns {Grid}
 */
export function heatmapGrid(view) {
  return {
    get ready() {
      return Boolean(view.data);
    },
    get focus() {
      return view.state.focus;
    },
    set focus(cell) {
      view.store.set({ focus: cell });
    },
    get focused() {
      return view.state.focused;
    },
    set focused(value) {
      view.store.set({ focused: value });
    },
    get pinned() {
      return Boolean(view.state.selected);
    },
    cellAt: (event) => eventCell(view, event),
    setHover: (cell) => {
      // The pointer came from the grid beside: the tooltip reads this grid's lens again.
      const moved = view.hoverGrid !== 0;
      view.hoverGrid = 0;
      setHover(view, cell);
      if (moved) updateTooltip(view);
    },
    setFocus: (cell) => setFocus(view, cell),
    move: (cell, key) => {
      const layout = view.layout;
      if (!layout || !view.data) return null;
      const column = Math.max(0, columnOf(layout, cell.position));
      const next = moveFocus({ layerIndex: cell.layerIndex, position: column }, key, view.data.L, layout.nPositions);
      return next && { layerIndex: next.layerIndex, position: positionAt(layout, next.position) };
    },
    togglePin: (cell) => togglePin(view, cell),
    unpin: () => {
      setSelected(view, null, true);
      view.ui.readout.textContent = "Unpinned.";
    },
    showKeyboardFocus: () => showKeyboardFocus(view),
    blurred: () => {
      updateTooltip(view);
      view.requestDraw();
    },
  };
}

/**
 * A key press on the heatmap: arrows, Home/End and PageUp/PageDown move the focus cell,
 * Enter or Space pins it, Escape unpins (`onGridKey`).
 * @param {LensView} view
 * @param {KeyboardEvent} event
 */
export function onKeyDown(view, event) {
  onGridKey(heatmapGrid(view), event);
}
