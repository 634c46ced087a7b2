// @ts-check
/**
 * The pointer and keyboard on a grid of cells (the heatmap's canvas, the diff's), one behaviour
 * for both widgets: hovering shows a cell, a click pins it (again: unpins), pointing hides the
 * keyboard focus; keyboard focus (`:focus-visible`) shows the focus cell, arrows, Home/End and
 * PageUp/PageDown move it (`moveFocus` in `state.js`), Enter or Space pins it, Escape unpins.
 * Each widget describes its state as a `Grid`.
 */

import { moveFocus } from "./state.js";

/**
 * @typedef {{layerIndex: number, position: number}} Cell
 *
 * @typedef {object} Grid What the shared handlers read and change in a widget.
 * @property {boolean} ready the widget has data to show
 * @property {Cell | null} focus the focus cell
 * @property {boolean} focused the focus cell is shown (keyboard focus)
 * @property {boolean} pinned some cell is pinned (Escape has something to unpin)
 * @property {(event: MouseEvent) => Cell | null} cellAt the cell under a pointer
 * @property {(cell: Cell | null) => void} setHover
 * @property {(cell: Cell) => void} setFocus moves the focus cell (scrolls to it, reads it out)
 * @property {(cell: Cell, key: string) => Cell | null} move the cell a navigation key moves to
 * @property {(cell: Cell) => void} togglePin
 * @property {() => void} unpin unpins (Escape) and says so
 * @property {() => void} showKeyboardFocus shows the focus cell (chosen when there is none)
 * @property {() => void} blurred the grid lost focus (`focused` is already false): redraw
 */

/**
 * A key press on the grid. Keys it handles are kept from the page (and from notebook shortcuts
 * such as arrows between cells); others, and any with Alt, Ctrl or Meta, pass through.
 * @param {Grid} grid
 * @param {KeyboardEvent} event
 */
export function onGridKey(grid, event) {
  if (!grid.ready || event.altKey || event.ctrlKey || event.metaKey) return;
  const key = event.key;
  const pinKey = key === "Enter" || key === " ";
  const navigation = moveFocus({ layerIndex: 0, position: 0 }, key, 1, 1) !== null;
  if (!pinKey && !navigation && !(key === "Escape" && grid.pinned)) return;
  event.preventDefault();
  event.stopPropagation();
  if (key === "Escape") {
    grid.unpin();
    return;
  }
  // The first key after a mouse click shows the focus cell where the click was.
  if (!grid.focused) grid.showKeyboardFocus();
  const focus = grid.focus;
  if (!focus) return;
  if (pinKey) grid.togglePin(focus);
  else {
    const next = grid.move(focus, key);
    if (next) grid.setFocus(next);
  }
}

/**
 * Listens to the pointer, focus and keys on `target` until `signal` aborts.
 * @param {HTMLElement} target the grid's element (a focusable canvas)
 * @param {Grid} grid
 * @param {AbortSignal} signal
 */
export function bindGrid(target, grid, signal) {
  /** @type {(type: string, fn: (event: any) => void) => void} */
  const on = (type, fn) => target.addEventListener(type, fn, { signal });
  on("pointermove", (event) => grid.setHover(grid.cellAt(event)));
  on("pointerleave", () => grid.setHover(null));
  on("click", (event) => {
    const cell = grid.cellAt(event);
    if (!cell) return;
    grid.focus = cell;
    grid.togglePin(cell);
  });
  on("pointerdown", () => {
    grid.focused = false;
  });
  on("keydown", (event) => onGridKey(grid, event));
  on("focus", () => {
    if (!grid.ready) return;
    let keyboard = true;
    try {
      keyboard = target.matches(":focus-visible");
    } catch {
      // Browsers without :focus-visible: treat every focus as keyboard focus.
    }
    // A mouse click focuses the grid too; it pins instead, and shows no focus cell.
    if (keyboard) grid.showKeyboardFocus();
  });
  on("blur", () => {
    grid.focused = false;
    grid.blurred();
  });
}
