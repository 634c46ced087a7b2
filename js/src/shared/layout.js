// @ts-check
/** Layout maths of the heatmap and lens-diff canvases and of the tooltip: pure functions of sizes. */

import { niceCeil } from "./format.js";

/** Fixed sizes of the heatmap canvas, in CSS pixels. */
export const GEOMETRY = Object.freeze({
  axisH: 16, // position numbers above the cells
  gap: 6, // between the cells and the token strips
  stripH: 22, // the input-token strip and the chosen layer's predictions strip
  bottomPad: 4,
  rightPad: 8,
  minRowH: 5,
  maxRowH: 22,
  minCellW: 34,
  maxCellW: 120,
  textMinRowH: 13, // cell text is drawn only in rows at least this tall
});

/**
 * @typedef {object} Layout The grid geometry for one prompt (CSS pixels): the heatmap's, or the
 *   lens diff's.
 * @property {number} nLayers
 * @property {number} nPositions
 * @property {number} width visible width of the canvas
 * @property {number} height
 * @property {number} labelW width of the row labels at the left
 * @property {number} rowH
 * @property {number} cellW
 * @property {number} heatY top of the cells
 * @property {number} heatH
 * @property {number} inputY top of the input-token strip
 * @property {number} predY top of the predictions strip (the diff: b's input tokens), the strip
 *   after the input-token strip
 * @property {number} stripH
 * @property {number} contentW width of the whole prompt (scrolls when wider than `width`)
 * @property {number} maxScroll
 * @property {number} charW
 * @property {number} cellChars characters of text that fit in a cell
 * @property {boolean} showCellText
 * @property {number[] | null} columns the position each column shows, when some positions are
 *   hidden (chat template tokens); null when column j shows position j. Everything here counts
 *   columns; `columnOf` and `positionAt` translate.
 *
 * @typedef {{x: number, y: number, w: number, h: number}} Rect
 * @typedef {{layerIndex: number, position: number}} Cell
 */

/**
 * The column width for a prompt: wide enough for `maxChars` characters of `charW` pixels (within
 * limits), stretched to fill `available` pixels when the prompt is short.
 * @param {{maxChars: number, charW: number, n: number, available: number}} options
 */
export function chooseCellWidth({ maxChars, charW, n, available }) {
  const want = Math.min(GEOMETRY.maxCellW, Math.max(GEOMETRY.minCellW, Math.ceil(maxChars * charW + 12)));
  const fill = n > 0 ? Math.floor(available / n) : want;
  if (fill > want) return Math.min(GEOMETRY.maxCellW, fill);
  return want;
}

/**
 * Row height: the rows share `maxHeight` pixels, within limits.
 * @param {number} nLayers
 * @param {number} [maxHeight]
 */
export function chooseRowHeight(nLayers, maxHeight = 460) {
  return Math.max(GEOMETRY.minRowH, Math.min(GEOMETRY.maxRowH, Math.floor(maxHeight / Math.max(1, nLayers))));
}

/**
 * The grid geometry for one prompt: the heatmap's, and the lens diff's (`diff/view.js`) through
 * the optional sizes, whose defaults are the heatmap's (`GEOMETRY`).
 * @param {{nLayers: number, nPositions: number, width: number, labelW: number, charW: number,
 *   maxChars: number, maxHeight?: number, columns?: number[] | null, cellW?: number,
 *   rowH?: number, axisH?: number, gap?: number, stripH?: number, strips?: number,
 *   bottomPad?: number, rightPad?: number}} options `nPositions` is the number of columns shown
 *   (`columns.length` when some positions are hidden). `cellW` and `rowH` fix the column width and
 *   row height (by default chosen by `chooseCellWidth` and `chooseRowHeight`); `axisH` is the
 *   space above the cells, `gap` between the cells and the strips, `strips` how many token strips
 *   of `stripH` pixels lie under the cells (the heatmap: 2, input tokens and predictions);
 *   `bottomPad` and `rightPad` pad the canvas and the scrolled content.
 * @returns {Layout}
 */
export function computeLayout({
  nLayers,
  nPositions,
  width,
  labelW,
  charW,
  maxChars,
  maxHeight = 460,
  columns = null,
  cellW: fixedCellW,
  rowH: fixedRowH,
  axisH = GEOMETRY.axisH,
  gap = GEOMETRY.gap,
  stripH = GEOMETRY.stripH,
  strips = 2,
  bottomPad = GEOMETRY.bottomPad,
  rightPad = GEOMETRY.rightPad,
}) {
  const g = GEOMETRY;
  const viewW = Math.max(labelW + g.minCellW, Math.floor(width));
  const rowH = fixedRowH ?? chooseRowHeight(nLayers, maxHeight);
  const cellW = fixedCellW ?? chooseCellWidth({ maxChars, charW, n: nPositions, available: viewW - labelW - rightPad });
  const heatY = axisH;
  const heatH = nLayers * rowH;
  const inputY = heatY + heatH + gap;
  const predY = inputY + stripH;
  const height = inputY + strips * stripH + bottomPad;
  const contentW = labelW + nPositions * cellW + rightPad;
  return {
    nLayers,
    nPositions,
    width: viewW,
    height,
    labelW,
    rowH,
    cellW,
    heatY,
    heatH,
    inputY,
    predY,
    stripH,
    contentW,
    maxScroll: Math.max(0, contentW - viewW),
    charW,
    cellChars: Math.max(0, Math.floor((cellW - 6) / charW)),
    showCellText: rowH >= g.textMinRowH && cellW - 6 >= 2 * charW,
    columns,
  };
}

/**
 * The column showing `position` (a position among the prompt's real tokens), or -1 when hidden.
 * @param {Layout} layout
 * @param {number} position
 */
export function columnOf(layout, position) {
  return columnOfPosition(layout.columns, position);
}

/**
 * The position that column `column` shows.
 * @param {Layout} layout
 * @param {number} column
 */
export function positionAt(layout, column) {
  return positionOfColumn(layout.columns, column);
}

/**
 * Clamps a scroll offset to the layout's range.
 * @param {Layout} layout
 * @param {number} scrollLeft
 */
export function clampScroll(layout, scrollLeft) {
  return Math.min(layout.maxScroll, Math.max(0, Math.round(scrollLeft) || 0));
}

/**
 * The half-open range [first, last) of columns at least partly visible.
 * @param {Layout} layout
 * @param {number} scrollLeft
 * @returns {[number, number]}
 */
export function visibleColumns(layout, scrollLeft) {
  const viewCells = layout.width - layout.labelW;
  const first = Math.max(0, Math.floor(scrollLeft / layout.cellW));
  const last = Math.min(layout.nPositions, Math.ceil((scrollLeft + viewCells) / layout.cellW));
  return [first, Math.max(first, last)];
}

/**
 * Screen row (0 = top) of a layer index: the final layer is at the top.
 * @param {Layout} layout
 * @param {number} layerIndex
 */
export function rowOfLayer(layout, layerIndex) {
  return layout.nLayers - 1 - layerIndex;
}

/**
 * x of the left edge of column `position` on the canvas.
 * @param {Layout} layout
 * @param {number} position
 * @param {number} scrollLeft
 */
export function columnX(layout, position, scrollLeft) {
  return layout.labelW + position * layout.cellW - scrollLeft;
}

/**
 * The rectangle of a heatmap cell on the canvas, in CSS pixels.
 * @param {Layout} layout
 * @param {number} layerIndex
 * @param {number} position
 * @param {number} scrollLeft
 * @returns {Rect}
 */
export function cellRect(layout, layerIndex, position, scrollLeft) {
  return {
    x: columnX(layout, position, scrollLeft),
    y: layout.heatY + rowOfLayer(layout, layerIndex) * layout.rowH,
    w: layout.cellW,
    h: layout.rowH,
  };
}

/**
 * What is under canvas point (x, y): a heatmap cell, a column of the predictions strip (which
 * stands for the highlighted layer's cell), or nothing.
 * @param {Layout} layout
 * @param {number} x
 * @param {number} y
 * @param {number} scrollLeft
 * @param {number} highlightedLayer the highlighted row
 * @returns {{layerIndex: number, position: number, area: "cells"|"predictions"|"input"} | null}
 */
export function hitTest(layout, x, y, scrollLeft, highlightedLayer) {
  if (x < layout.labelW || x >= layout.width) return null;
  const position = Math.floor((x - layout.labelW + scrollLeft) / layout.cellW);
  if (position < 0 || position >= layout.nPositions) return null;
  if (y >= layout.heatY && y < layout.heatY + layout.heatH) {
    const row = Math.floor((y - layout.heatY) / layout.rowH);
    return { layerIndex: layout.nLayers - 1 - row, position, area: "cells" };
  }
  if (y >= layout.predY && y < layout.predY + layout.stripH) {
    return { layerIndex: highlightedLayer, position, area: "predictions" };
  }
  if (y >= layout.inputY && y < layout.inputY + layout.stripH) {
    return { layerIndex: highlightedLayer, position, area: "input" };
  }
  return null;
}

/**
 * The scroll offset that brings column `position` fully into view (unchanged if it is).
 * @param {Layout} layout
 * @param {number} scrollLeft
 * @param {number} position
 */
export function revealColumn(layout, scrollLeft, position) {
  const left = position * layout.cellW;
  const viewCells = layout.width - layout.labelW;
  let next = scrollLeft;
  if (left < scrollLeft) next = left;
  else if (left + layout.cellW > scrollLeft + viewCells) next = left + layout.cellW - viewCells;
  return clampScroll(layout, next);
}

/**
 * Every how many rows a layer label fits (1, 2, 5, 10, …).
 * @param {number} rowH
 * @param {number} [minSpacing]
 */
export function labelStride(rowH, minSpacing = 12) {
  if (rowH >= minSpacing) return 1;
  return niceCeil(minSpacing / rowH);
}

// The tooltip's placement is shared with the diff view (shared/tooltip.js).
export { overlapArea, placeTooltip } from "./tooltip.js";

/**
 * The column showing `position`, or -1 when it is hidden (`columns` null: every position).
 * @param {number[] | null} columns
 * @param {number} position
 */
export function columnOfPosition(columns, position) {
  if (!columns) return position;
  let lo = 0;
  let hi = columns.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (columns[mid] === position) return mid;
    if (columns[mid] < position) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * The position column `column` shows.
 * @param {number[] | null} columns
 * @param {number} column
 */
export function positionOfColumn(columns, column) {
  return columns ? columns[column] : column;
}
