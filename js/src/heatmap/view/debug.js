// @ts-check
/**
 * The heatmap's test hook (`el.__muranoDebug`, put there by `../shared/debug.js`): the view's
 * state and geometry for browser tests.
 */

import { cellDetails } from "../details.js";
import { cellRect, columnOf } from "../../shared/layout.js";
import { besideMetric } from "../side_by_side.js";
import { gridDomain } from "./beside.js";
import { setHideTemplate } from "./selection.js";
import { firstPosition } from "./overview.js";

/** @typedef {import("./view.js").LensView} LensView */

/**
 * A cell's rectangle on a grid's canvas, in viewport (client) coordinates.
 * @param {import("../../shared/layout.js").Layout | null} layout
 * @param {HTMLCanvasElement} canvas
 * @param {number} layerIndex
 * @param {number} position
 * @param {number} scroll the heatmap's scroll (both grids share it)
 */
function clientRect(layout, canvas, layerIndex, position, scroll) {
  if (!layout) return null;
  const column = columnOf(layout, position);
  if (column < 0) return null; // a hidden template token
  const r = cellRect(layout, layerIndex, column, scroll);
  const c = canvas.getBoundingClientRect();
  return { x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h };
}

/**
 * The test hook's table (`__muranoDebug`): one short entry per thing a browser test reads or
 * does. Over 100 lines on purpose: a flat table of one-liners, not a procedure.
 * @param {LensView} view
 */
export function debugApi(view) {
  return {
    get state() {
      const s = view.state;
      const layers = view.data ? view.data.layers : [];
      return {
        prompt: s.prompt,
        layer: s.layer,
        modelLayer: layers[s.layer],
        metric: s.metric,
        shownMetric: view.shownMetric,
        target: s.target,
        group: s.group,
        selected: s.selected,
        hover: s.hover,
        focus: s.focus,
        focused: s.focused,
        hideTemplate: s.hide_template,
        lens: s.lens,
        lenses: view.lenses.map((lens) => lens.lensName),
        beside: view.beside ? view.beside.lensName : "",
        hoverGrid: view.hoverGrid,
        view: s.view,
        explain: s.explain,
        heads: s.heads,
      };
    },
    /** The long-trace bar: shown, the pooling, pooled images made, the first position shown. */
    get overview() {
      const o = view.overview;
      return { shown: !o.box.hidden, mode: o.mode, pooled: o.pooled, firstPosition: firstPosition(view), hits: o.hits.length, hitIndex: o.hitIndex, marks: o.image ? o.image.marks.map((m) => ({ column: m.column, kind: m.kind })) : [] };
    },
    /** The live controls: the kernel's state, the latest request, the status line shown. */
    get live() {
      return view.live ? view.live.debugApi() : null;
    },
    /** What the "why" panel shows: the cell it explains and its content (bars, total), or null. */
    get why() {
      return view.whyShown;
    },
    /** The component view: its state, geometry and values. */
    components: {
      get state() {
        const c = view.components;
        return { shown: c.shown, hover: c.hover, focus: c.focus, focused: c.focused };
      },
      get layout() {
        const c = view.components;
        return c.layout && { ...c.layout, scrollLeft: c.scrollLeft() };
      },
      get units() {
        const grid = view.components.grid;
        return grid ? grid.units.map((u) => u.label) : [];
      },
      /** Unit `u`'s part at position `j` (null: none), and the scale's half-width. */
      value(/** @type {number} */ u, /** @type {number} */ j) {
        const grid = view.components.grid;
        if (!grid) return null;
        const v = grid.values[u * grid.n + j];
        return Number.isFinite(v) ? v : null;
      },
      get max() {
        return view.components.grid ? view.components.grid.max : null;
      },
      cellClientRect: (/** @type {number} */ u, /** @type {number} */ j) => view.components.cellClientRect(u, j),
    },
    get layout() {
      return view.layout && { ...view.layout, scrollLeft: view.scrollLeft() };
    },
    /** The grid beside, as a grid of cells (its layout and cell rectangles; null layout: none). */
    besideGrid: {
      get layout() {
        return view.beside && view.besideLayoutShown && { ...view.besideLayoutShown, scrollLeft: view.scrollLeft() };
      },
      cellClientRect: (/** @type {number} */ i, /** @type {number} */ j) => (view.beside ? clientRect(view.besideLayoutShown, view.ui.besideCanvas, i, j, view.scrollLeft()) : null),
    },
    get frames() {
      return view.debug.frames;
    },
    get lastDrawMs() {
      return view.debug.lastDrawMs;
    },
    get visibleColumns() {
      return view.debug.visible;
    },
    /** What the trajectory chart drew last: its column, mode, row, geometry and every line. */
    get trajectory() {
      return view.trajectory.debug;
    },
    /**
     * A cell's rectangle in viewport (client) coordinates.
     * @param {number} layerIndex
     * @param {number} position
     */
    cellClientRect(layerIndex, position) {
      return clientRect(view.layout, view.ui.canvas, layerIndex, position, view.scrollLeft());
    },
    /**
     * A cell's rectangle in the grid beside (null without one).
     * @param {number} layerIndex
     * @param {number} position
     */
    besideCellClientRect(layerIndex, position) {
      return view.beside ? clientRect(view.besideLayoutShown, view.ui.besideCanvas, layerIndex, position, view.scrollLeft()) : null;
    },
    /**
     * The colour the cell should have under the shown metric ([r, g, b, a]; a = 0: missing), on
     * the scale the grids share.
     * @param {number} layerIndex
     * @param {number} position
     */
    cellColour(layerIndex, position) {
      if (!view.data) return null;
      const image = view.painter.colourCanvas(view.state.prompt, view.shownMetric, null, view.itemIndex(view.shownMetric), gridDomain(view));
      const o = ((view.data.L - 1 - layerIndex) * image.width + position) * 4;
      return Array.from(image.data.slice(o, o + 4));
    },
    /**
     * The same in the grid beside (null without one, or when its lens lacks the metric).
     * @param {number} layerIndex
     * @param {number} position
     */
    besideCellColour(layerIndex, position) {
      const beside = view.beside;
      const metric = beside && besideMetric(beside, view.shownMetric);
      if (!beside || !metric) return null;
      const image = view.besidePainter.colourCanvas(view.state.prompt, metric, null, view.itemIndex(metric), gridDomain(view));
      const o = ((beside.L - 1 - layerIndex) * image.width + position) * 4;
      return Array.from(image.data.slice(o, o + 4));
    },
    /**
     * @param {number} layerIndex
     * @param {number} position
     */
    cellDetails: (layerIndex, position) => (view.data ? cellDetails(view.data, view.state.prompt, layerIndex, position, view.targetIndex()) : null),
    drawNow: () => view.relayout(),
    /** @param {boolean} hide as the control does: the `hide_template` trait follows */
    setHideTemplate: (hide) => setHideTemplate(view, hide, true),
    /** @returns {Promise<number>} the duration of the next draw */
    nextDraw: () => new Promise((resolve) => view.debug.drawListeners.push(resolve)),
  };
}
