// @ts-check
/**
 * The component view: a canvas heatmap whose rows are the model's components (the embeddings at
 * the bottom, then each layer's attention and MLP, the last at the top, as the heatmap puts the
 * final layer on top) and whose columns are the prompt's positions; a cell's colour is the
 * component's direct part of the explained logit there (`../attribution.js`: componentGrid), on a
 * diverging scale. It reads the row the layer slider highlights. The pointer and the keyboard work
 * as on the heatmap (`../shared/grid_events.js`): hovering or focusing a cell shows it in the
 * tooltip, the readout and the "why" panel; a click, Enter or Space pins the position (the
 * highlighted row's cell, so both views and Python share one pinned cell); Escape unpins.
 */

import { answerAttribution, componentGrid, componentImage, formatLogit, nothingExplained, partColour } from "../attribution.js";
import { textColourOn } from "../../shared/colour.js";
import { niceCeil, promptName } from "../../shared/format.js";
import { cellRect, clampScroll, columnOf, columnX, computeLayout, hitTest, labelStride, positionAt, revealColumn, visibleColumns } from "../../shared/layout.js";
import { context2d } from "../painter.js";
import { rowLabel } from "../rows.js";
import { hatchPattern } from "../../shared/hatch.js";
import { bindGrid } from "../../shared/grid_events.js";
import { moveFocus } from "../../shared/state.js";
import { displayToken, isolateLtr, truncateText } from "../../shared/tokens.js";
import { setSelected, shownColumns, togglePin } from "./selection.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../../shared/layout.js").Layout} Layout
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../attribution.js").ComponentGrid} ComponentGrid
 * @typedef {import("../../shared/grid_events.js").Grid} Grid
 *
 * @typedef {object} ComponentUi
 * @property {HTMLDivElement} box
 * @property {HTMLDivElement} caption
 * @property {HTMLDivElement} scroller
 * @property {HTMLDivElement} track
 * @property {HTMLCanvasElement} canvas
 */

/** The most characters a cell's part takes ("−12.3"). */
const VALUE_CHARS = 5;

/**
 * Builds the view's elements (hidden).
 * @param {string} id the widget's element-id prefix
 * @returns {ComponentUi}
 */
export function buildComponents(id) {
  const box = document.createElement("div");
  box.className = "murano-components";
  box.hidden = true;
  const caption = document.createElement("div");
  caption.className = "murano-comp-caption";
  const scroller = document.createElement("div");
  scroller.className = "murano-scroll";
  const track = document.createElement("div");
  track.className = "murano-track";
  const canvas = document.createElement("canvas");
  canvas.className = "murano-comp-canvas";
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute("aria-roledescription", "component heatmap");
  canvas.setAttribute("aria-describedby", `${id}-readout`);
  track.append(canvas);
  scroller.append(track);
  box.append(caption, scroller);
  return { box, caption, scroller, track, canvas };
}

/**
 * What the caption says the view shows.
 * @param {import("../payload.js").LensData} data
 * @param {import("../attribution.js").Explain} explain
 * @param {number} row
 */
export function componentCaption(data, explain, row) {
  const what =
    explain.kind === "answer"
      ? `the answer${data.foils ? " (minus the foil's)" : ""}${answerAttribution(data) === "last" ? ", at the last position" : " as each position's next token"}`
      : explain.kind === "target"
        ? `target ${displayToken(data.targets[explain.index])}`
        : "each position's top-1 token";
  const cap = data.logitSoftcap !== null ? " before the soft-cap" : "";
  return `Each component's direct part of the logit${cap} of ${what}, read at ${rowLabel(data, row)} (the layer slider). Orange raises it, blue lowers it.`;
}

export class ComponentView {
  /**
   * @param {ComponentUi} ui
   * @param {LensView} view
   * @param {AbortSignal} signal
   */
  constructor(ui, view, signal) {
    this.ui = ui;
    this.view = view;
    /** @type {ComponentGrid | null} */
    this.grid = null;
    /** @type {Layout | null} */
    this.layout = null;
    this.key = "";
    /** @type {HTMLCanvasElement | null} one pixel per unit and shown position */
    this.image = null;
    /** @type {Cell | null} a unit (as `layerIndex`) and a position */
    this.hover = null;
    /** @type {Cell | null} */
    this.focus = null;
    this.focused = false;
    this.revealPending = true;
    bindGrid(ui.canvas, this.gridApi(), signal);
    ui.scroller.addEventListener(
      "scroll",
      () => {
        if (this.hover) this.setHover(null);
        this.draw();
      },
      { signal, passive: true },
    );
  }

  get shown() {
    return !this.ui.box.hidden;
  }

  /** Recomputes the values (what is explained, the prompt, the row or the heads changed). */
  invalidate() {
    this.key = "";
  }

  /** The grid for the view's current state (cached by what it depends on). */
  currentGrid() {
    const view = this.view;
    const data = view.data;
    if (!data) return null;
    const s = view.state;
    const explain = view.explainChoice();
    const key = `${data.lensName}|${s.prompt}|${s.layer}|${JSON.stringify(explain)}|${s.heads}|${Boolean(data.arrays.contributions)}|${s.hide_template}`;
    if (key !== this.key || !this.grid) {
      this.grid = componentGrid(data, { explain, prompt: s.prompt, row: s.layer, heads: s.heads });
      this.key = key;
      this.layout = null;
      const columns = shownColumns(view);
      const image = componentImage(this.grid, columns);
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, image.width);
      canvas.height = Math.max(1, image.height);
      if (image.width > 0 && image.height > 0) context2d(canvas).putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
      this.image = canvas;
      this.ui.caption.textContent = componentCaption(data, explain, s.layer);
      if (this.hover) this.hover = this.clamp(this.hover);
      if (this.focus) this.focus = this.clamp(this.focus);
    }
    return this.grid;
  }

  /**
   * @param {Cell} cell
   * @returns {Cell}
   */
  clamp(cell) {
    const grid = /** @type {ComponentGrid} */ (this.grid);
    const columns = shownColumns(this.view);
    const last = grid.n - 1;
    let position = Math.max(0, Math.min(last, cell.position));
    if (columns && !columns.includes(position)) position = columns[columns.length - 1] ?? 0;
    return { layerIndex: Math.max(0, Math.min(grid.units.length - 1, cell.layerIndex)), position };
  }

  /** Lays the view out for the current width, then draws it. */
  relayout() {
    const view = this.view;
    const data = view.data;
    const grid = this.currentGrid();
    if (!this.shown || !data || !grid) return;
    const theme = view.painter.readTheme();
    const ctx = context2d(this.ui.canvas);
    ctx.font = theme.labelFont;
    const labelW = Math.ceil(Math.max(ctx.measureText("component").width, ...grid.units.map((u) => ctx.measureText(u.label).width))) + 16;
    const columns = shownColumns(view);
    const n = columns ? columns.length : grid.n;
    const width = this.ui.scroller.clientWidth || view.el.clientWidth || 800;
    let maxChars = VALUE_CHARS;
    const offset = data.offsets[view.state.prompt];
    for (let j = 0; j < n && maxChars < 10; j++) {
      maxChars = Math.max(maxChars, [...view.painter.tokenText(data.arrays.input_ids[offset + (columns ? columns[j] : j)])].length);
    }
    this.layout = computeLayout({ nLayers: grid.units.length, nPositions: n, width, labelW, charW: theme.charW, maxChars: Math.min(10, maxChars), columns, strips: 1 });
    this.ui.track.style.width = `${this.layout.contentW}px`;
    this.ui.track.style.height = `${this.layout.height}px`;
    const prompt = view.state.prompt;
    this.ui.canvas.setAttribute(
      "aria-label",
      `Component view: ${grid.units.length} components (the embeddings at the bottom, the last layer's MLP at the top) by ${n} tokens of ${promptName(prompt)}, ` +
        `colour the direct part of the logit read at ${rowLabel(data, view.state.layer)}. Arrow keys move between cells, Enter pins the position, Escape unpins.`,
    );
    if (this.revealPending && this.ui.scroller.clientWidth > 0) {
      const sel = view.state.selected;
      const position = sel && sel.prompt === prompt ? sel.position : data.lengths[prompt] - 1;
      this.ui.scroller.scrollLeft = revealColumn(this.layout, 0, Math.max(0, columnOf(this.layout, position)));
      this.revealPending = false;
    }
    this.draw();
  }

  scrollLeft() {
    return this.layout ? clampScroll(this.layout, this.ui.scroller.scrollLeft) : 0;
  }

  /** Draws the visible columns, their labels, the input tokens and the marks. */
  draw() {
    const view = this.view;
    const data = view.data;
    const grid = this.grid;
    const layout = this.layout;
    if (!this.shown || !data || !grid || !layout || !this.image) return;
    const theme = view.painter.readTheme();
    const canvas = this.ui.canvas;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(layout.width * dpr) || canvas.height !== Math.round(layout.height * dpr)) {
      canvas.width = Math.round(layout.width * dpr);
      canvas.height = Math.round(layout.height * dpr);
      canvas.style.width = `${layout.width}px`;
      canvas.style.height = `${layout.height}px`;
    }
    const ctx = context2d(canvas);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, layout.width, layout.height);
    ctx.direction = "ltr";
    const scroll = this.scrollLeft();
    const [c0, c1] = visibleColumns(layout, scroll);
    const { cellW, rowH, heatY, heatH, labelW, inputY, stripH } = layout;
    const U = grid.units.length;
    const x0 = columnX(layout, c0, scroll);
    const span = (c1 - c0) * cellW;
    const columns = layout.columns;
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, 0, layout.width - labelW, layout.height);
    ctx.clip();
    const hatch = hatchPattern(ctx, theme.hatch);
    if (hatch) {
      ctx.fillStyle = hatch;
      ctx.fillRect(x0, heatY, span, heatH);
    }
    if (c1 > c0) {
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(this.image, c0, 0, c1 - c0, U, x0, heatY, span, heatH);
    }
    ctx.fillStyle = theme.grid;
    if (cellW >= 10) for (let j = c0; j <= c1; j++) ctx.fillRect(columnX(layout, j, scroll) - 0.5, heatY, 1, heatH);
    if (rowH >= 9) for (let r = 1; r < U; r++) ctx.fillRect(x0, heatY + r * rowH - 0.5, span, 1);
    // Each cell's part, in black or white by its colour, where the cells are big enough.
    if (layout.showCellText) {
      ctx.font = theme.cellFont;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      for (let u = 0; u < U; u++) {
        const y = heatY + (U - 1 - u) * rowH;
        for (let j = c0; j < c1; j++) {
          const p = columns ? columns[j] : j;
          const v = grid.values[u * grid.n + p];
          if (!Number.isFinite(v)) continue;
          ctx.fillStyle = textColourOn(partColour(v, grid.max));
          ctx.fillText(cellValue(v), columnX(layout, j, scroll) + cellW / 2, y + rowH / 2 + 0.5);
        }
      }
    }
    // The input tokens under the cells, and position numbers above them.
    ctx.fillStyle = theme.stripBg;
    ctx.fillRect(x0, inputY, span, stripH);
    ctx.font = theme.cellFont;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillStyle = theme.fg;
    const offset = data.offsets[view.state.prompt];
    for (let j = c0; j < c1; j++) {
      const p = columns ? columns[j] : j;
      const text = isolateLtr(truncateText(view.painter.tokenText(data.arrays.input_ids[offset + p]), layout.cellChars));
      ctx.fillText(text, columnX(layout, j, scroll) + cellW / 2, inputY + stripH / 2 + 0.5);
    }
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    const stride = niceCeil(Math.max(1, 28 / cellW));
    for (let j = c0 - (c0 % stride); j < c1; j += stride) {
      ctx.fillText(String(columns ? columns[j] : j), columnX(layout, j, scroll) + cellW / 2, heatY - 4);
    }
    this.drawMarks(ctx, layout, scroll, c0, c1);
    ctx.restore();
    // Row labels at the left: every unit, or every few when the rows are thin.
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.font = theme.labelFont;
    ctx.fillStyle = theme.muted;
    const every = labelStride(rowH, 12);
    for (let u = 0; u < U; u++) {
      if (every > 1 && u % every !== 0) continue;
      ctx.fillText(grid.units[u].label, labelW - 8, heatY + (U - 1 - u) * rowH + rowH / 2 + 0.5);
    }
    ctx.fillText("input", labelW - 8, inputY + stripH / 2 + 0.5);
    ctx.font = theme.axisFont;
    ctx.textBaseline = "alphabetic";
    ctx.fillText("component", labelW - 8, heatY - 4);
  }

  /**
   * The pinned position's column, the hovered and the focused cell.
   * @param {CanvasRenderingContext2D} ctx
   * @param {Layout} layout
   * @param {number} scroll
   * @param {number} c0
   * @param {number} c1
   */
  drawMarks(ctx, layout, scroll, c0, c1) {
    const theme = this.view.painter.readTheme();
    const s = this.view.state;
    /** @type {(column: number, y: number, h: number, style: string, width: number, dash?: number[]) => void} */
    const box = (column, y, h, style, width, dash = []) => {
      if (column < c0 || column >= c1) return;
      const x = columnX(layout, column, scroll);
      ctx.strokeStyle = style;
      ctx.lineWidth = width;
      ctx.setLineDash(dash);
      ctx.strokeRect(x + width / 2, y + width / 2, layout.cellW - width, h - width);
      ctx.setLineDash([]);
    };
    const sel = s.selected;
    if (sel && sel.prompt === s.prompt && sel.layer_index === s.layer) {
      const column = columnOf(layout, sel.position);
      box(column, layout.heatY, layout.heatH, theme.bg, 4);
      box(column, layout.heatY, layout.heatH, theme.fg, 2);
    }
    /** @type {(cell: Cell | null, style: string, width: number, dash?: number[]) => void} */
    const outline = (cell, style, width, dash) => {
      if (!cell) return;
      const r = cellRect(layout, cell.layerIndex, columnOf(layout, cell.position), scroll);
      box(columnOf(layout, cell.position), r.y, r.h, style, width, dash);
    };
    outline(this.hover, theme.fg, 1);
    outline(this.focused ? this.focus : null, theme.focus, 2, [3, 2]);
  }

  /**
   * The cell under a pointer event.
   * @param {MouseEvent} event
   * @returns {Cell | null}
   */
  cellAt(event) {
    if (!this.layout) return null;
    const rect = this.ui.canvas.getBoundingClientRect();
    const hit = hitTest(this.layout, event.clientX - rect.left, event.clientY - rect.top, this.scrollLeft(), 0);
    return hit && hit.area === "cells" ? { layerIndex: hit.layerIndex, position: positionAt(this.layout, hit.position) } : null;
  }

  /** @param {Cell | null} cell */
  setHover(cell) {
    const old = this.hover;
    if (old === cell || (old && cell && old.layerIndex === cell.layerIndex && old.position === cell.position)) return;
    this.hover = cell;
    this.view.componentCellChanged(cell);
    this.draw();
  }

  /** @param {Cell} cell */
  setFocus(cell) {
    this.focus = cell;
    this.hover = null;
    if (this.layout) {
      const scroll = revealColumn(this.layout, this.ui.scroller.scrollLeft, Math.max(0, columnOf(this.layout, cell.position)));
      if (scroll !== this.ui.scroller.scrollLeft) this.ui.scroller.scrollLeft = scroll;
    }
    this.view.ui.readout.textContent = this.readout(cell);
    this.view.componentCellChanged(cell);
    this.draw();
  }

  /**
   * One sentence about a cell for the aria-live readout.
   * @param {Cell} cell
   */
  readout(cell) {
    const view = this.view;
    const data = view.data;
    const grid = this.grid;
    if (!data || !grid) return "";
    const unit = grid.units[cell.layerIndex];
    const v = grid.values[cell.layerIndex * grid.n + cell.position];
    const input = displayToken(data.tokens[data.arrays.input_ids[data.offsets[view.state.prompt] + cell.position]] ?? "");
    const token = grid.tokens[cell.position];
    const row = rowLabel(data, view.state.layer);
    // The answer against a foil: a difference of two logits.
    const foil = view.explainChoice().kind === "answer" && data.foils ? data.foils[view.state.prompt] : null;
    const logit = `the logit of ${displayToken(token)}${foil !== null ? ` minus that of ${displayToken(foil)}` : ""}`;
    const value = Number.isFinite(v) ? `${formatLogit(v)} to ${logit} at ${row}` : `no part at ${row}`;
    return `${unit.long[0].toUpperCase()}${unit.long.slice(1)}, position ${cell.position}, input ${input}: ${value}.`;
  }

  /**
   * The cell's tooltip as `TooltipView` takes it.
   * @param {Cell} cell
   * @returns {import("../details.js").TooltipContent}
   */
  tooltipContent(cell) {
    const view = this.view;
    const data = /** @type {import("../payload.js").LensData} */ (view.data);
    const grid = /** @type {ComponentGrid} */ (this.grid);
    const unit = grid.units[cell.layerIndex];
    const v = grid.values[cell.layerIndex * grid.n + cell.position];
    const input = data.tokens[data.arrays.input_ids[data.offsets[view.state.prompt] + cell.position]] ?? "";
    const token = grid.tokens[cell.position];
    const rows = [{ label: "input", value: displayToken(input), token: true }];
    if (token) rows.push({ label: "explained", value: displayToken(token), token: true });
    rows.push({ label: "read at", value: rowLabel(data, view.state.layer), token: false });
    rows.push({ label: "part of the logit", value: formatLogit(v), token: false });
    const note = Number.isFinite(v)
      ? ""
      : token
        ? `No part: ${unit.label} comes after ${rowLabel(data, view.state.layer)}.`
        : `Nothing explained here: ${nothingExplained(data, view.explainChoice(), view.state.prompt, cell.position)}.`;
    return { title: `${unit.label} · position ${cell.position}`, badge: "", rows, top: [], note };
  }

  /**
   * The rectangle (viewport coordinates) of a cell, for the tooltip and the tests.
   * @param {number} unit
   * @param {number} position
   */
  cellClientRect(unit, position) {
    if (!this.layout) return null;
    const column = columnOf(this.layout, position);
    if (column < 0) return null;
    const r = cellRect(this.layout, unit, column, this.scrollLeft());
    const c = this.ui.canvas.getBoundingClientRect();
    return { x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h };
  }

  /** @returns {Grid} */
  gridApi() {
    const self = this;
    const view = this.view;
    return {
      get ready() {
        return Boolean(view.data && self.grid && self.layout);
      },
      get focus() {
        return self.focus;
      },
      set focus(cell) {
        self.focus = cell;
      },
      get focused() {
        return self.focused;
      },
      set focused(value) {
        self.focused = value;
      },
      get pinned() {
        return Boolean(view.state.selected);
      },
      cellAt: (event) => self.cellAt(event),
      setHover: (cell) => self.setHover(cell),
      setFocus: (cell) => self.setFocus(cell),
      move: (cell, key) => {
        const layout = self.layout;
        if (!layout) return null;
        const column = Math.max(0, columnOf(layout, cell.position));
        const next = moveFocus({ layerIndex: cell.layerIndex, position: column }, key, layout.nLayers, layout.nPositions);
        return next && { layerIndex: next.layerIndex, position: positionAt(layout, next.position) };
      },
      togglePin: (cell) => togglePin(view, { layerIndex: view.state.layer, position: cell.position }),
      unpin: () => {
        setSelected(view, null, true);
        view.ui.readout.textContent = "Unpinned.";
      },
      showKeyboardFocus: () => {
        if (!self.layout || !self.grid) return;
        self.focused = true;
        if (!self.focus) {
          const s = view.state;
          const sel = s.selected;
          const position = sel && sel.prompt === s.prompt ? sel.position : (view.data?.lengths[s.prompt] ?? 1) - 1;
          self.focus = self.clamp({ layerIndex: self.grid.units.length - 1, position });
        }
        self.setFocus(self.focus);
      },
      blurred: () => {
        view.componentCellChanged(null);
        self.draw();
      },
    };
  }
}

/**
 * A part as a cell shows it: one decimal, signed ("+1.2", "−0.4").
 * @param {number} v
 */
export function cellValue(v) {
  const text = Math.abs(v).toFixed(1);
  if (Number(text) === 0) return "0.0";
  return `${v < 0 ? "−" : "+"}${text}`;
}
