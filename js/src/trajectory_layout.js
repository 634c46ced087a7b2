// @ts-check
/**
 * The trajectory chart's geometry: pure functions of sizes. Layers run down the chart exactly as
 * the heatmap's rows do (the final layer at the top, the same row height and the same top), so
 * beside the heatmap each layer's point sits level with its row; values run across, with "more
 * likely" to the right in both modes.
 */

import { labelStride } from "./layout.js";
import { SERIES_COLOURS } from "./theme.js";

/**
 * @typedef {import("./trajectory.js").Series} Series
 * @typedef {import("./trajectory.js").ValueScale} ValueScale
 *
 * @typedef {object} ChartGeometry (CSS pixels, in the chart's own box)
 * @property {number} width
 * @property {number} height as tall as the heatmap's canvas
 * @property {number} nLayers
 * @property {number} rowH the heatmap's row height
 * @property {number} plotX left edge of the plot
 * @property {number} plotW
 * @property {number} plotY top of the plot (= the heatmap's first row)
 * @property {number} plotH
 * @property {number} labelX right edge of the layer labels
 * @property {number} labelStride every how many layers a label is written
 *
 * @typedef {object} SeriesStyle
 * @property {string} colour a CSS colour (a theme property: the series palette, or the top-1's)
 * @property {number} width stroke width
 * @property {string} dash SVG stroke-dasharray ("" = solid)
 * @property {"circle" | "square" | "triangle" | "diamond" | "cross"} marker
 */

/** The chart's margins and sizes. */
export const CHART = Object.freeze({
  labelW: 34, // layer numbers at the left
  rightPad: 12,
  minWidth: 200,
  bottomPad: 24, // under the plot: the axis title
});

/** The chart's width beside the heatmap, and the gap between them (CSS pixels). */
export const SIDE = Object.freeze({ chartW: 300, gap: 14, minHeatmapW: 600, minTotal: 760 });

/**
 * Whether the chart goes beside the heatmap: when the output is wide enough and the heatmap keeps
 * the room it needs (its natural width, or at least `SIDE.minHeatmapW` for prompts that would
 * scroll anyway); otherwise it goes below.
 * @param {number} available the content width of the widget
 * @param {number} heatmapNatural the heatmap's width with no scrolling, for its longest prompt
 */
export function chartBeside(available, heatmapNatural) {
  if (available < SIDE.minTotal) return false;
  return available - SIDE.chartW - SIDE.gap >= Math.min(heatmapNatural, SIDE.minHeatmapW);
}

/**
 * The trajectory chart's geometry: layers are rows (the final layer on top), level with the
 * heatmap's (`heatY`, `rowH`), and a value runs along x. Not the data-set chart's
 * `datasetCurveGeometry` (`dataset/chart.js`), where layers are evenly spaced columns along x in
 * a fixed SVG box and a fraction runs up y: the two axes are swapped and this one's rows are
 * sized by the heatmap, so they share no code.
 * @param {{width: number, nLayers: number, rowH: number, heatY: number, heightBelow?: number}} options
 *   `heightBelow`: the room the heatmap has under its rows (so both are as tall)
 * @returns {ChartGeometry}
 */
export function trajectoryRowsGeometry({ width, nLayers, rowH, heatY, heightBelow = CHART.bottomPad }) {
  const w = Math.max(CHART.minWidth, Math.floor(width));
  const plotX = CHART.labelW + 6;
  const plotH = nLayers * rowH;
  return {
    width: w,
    height: heatY + plotH + Math.max(CHART.bottomPad, heightBelow),
    nLayers,
    rowH,
    plotX,
    plotW: Math.max(40, w - plotX - CHART.rightPad),
    plotY: heatY,
    plotH,
    labelX: CHART.labelW,
    labelStride: labelStride(rowH, 12),
  };
}

/**
 * y of row `layerIndex`'s centre (the final layer at the top, as in the heatmap).
 * @param {ChartGeometry} g
 * @param {number} layerIndex
 */
export function rowCentreY(g, layerIndex) {
  return g.plotY + (g.nLayers - 1 - layerIndex) * g.rowH + g.rowH / 2;
}

/**
 * The row under y, or -1 outside the plot.
 * @param {ChartGeometry} g
 * @param {number} y
 */
export function rowAtY(g, y) {
  if (y < g.plotY || y >= g.plotY + g.plotH) return -1;
  return g.nLayers - 1 - Math.floor((y - g.plotY) / g.rowH);
}

/**
 * x of a position `t` in [0, 1] across the plot.
 * @param {ChartGeometry} g
 * @param {number} t
 */
export function valueX(g, t) {
  return g.plotX + t * g.plotW;
}

/**
 * The polyline pieces of a series: one per run of rows with values (a row without a value
 * breaks the line). Points go from the first layer (bottom) up.
 * @param {Series} series
 * @param {ValueScale} scale
 * @param {ChartGeometry} g
 * @returns {[number, number][][]}
 */
export function seriesSegments(series, scale, g) {
  /** @type {[number, number][][]} */
  const segments = [];
  /** @type {[number, number][]} */
  let current = [];
  series.values.forEach((v, i) => {
    if (v === null) {
      if (current.length) segments.push(current);
      current = [];
      return;
    }
    current.push([round2(valueX(g, scale.toUnit(v))), round2(rowCentreY(g, i))]);
  });
  if (current.length) segments.push(current);
  return segments;
}

/**
 * @param {number} v
 */
function round2(v) {
  return Math.round(v * 100) / 100;
}

/**
 * Line colours per kind: the theme's series palette (theme.css), the final prediction first, the
 * answers second and fourth, the targets from the third on; the top-1 is neutral.
 */
const ANSWER_COLOURS = [SERIES_COLOURS[1], SERIES_COLOURS[3]];
const TARGET_COLOURS = [2, 3, 4, 5, 0, 1].map((k) => SERIES_COLOURS[k]);
const TARGET_DASHES = ["", "6 3", "2 3", "8 3 2 3"];
/** @type {SeriesStyle["marker"][]} */
const TARGET_MARKERS = ["square", "triangle", "diamond", "cross"];

/**
 * How a series is drawn. Each kind differs in colour, dash and marker shape, so lines stay
 * apart for colour-blind readers and in grey print: top-1 dotted, final dashed, answer thick and
 * solid, targets in six colours × four dashes and shapes.
 * @param {Series} series
 * @returns {SeriesStyle}
 */
export function seriesStyle(series) {
  switch (series.kind) {
    case "top1":
      return { colour: "var(--murano-traj-top1)", width: 1.5, dash: "1.5 3", marker: "circle" };
    case "final":
      return { colour: SERIES_COLOURS[0], width: 1.75, dash: "7 3", marker: "square" };
    case "answer":
      return { colour: ANSWER_COLOURS[series.index % 2], width: 3, dash: series.index % 2 ? "10 3" : "", marker: "diamond" };
    default: {
      const j = series.index;
      return {
        colour: TARGET_COLOURS[j % TARGET_COLOURS.length],
        width: 1.75,
        dash: TARGET_DASHES[Math.floor(j / TARGET_COLOURS.length) % TARGET_DASHES.length],
        marker: TARGET_MARKERS[j % TARGET_MARKERS.length],
      };
    }
  }
}

/**
 * An SVG path (`d`) of a marker shape centred at (x, y) with radius r.
 * @param {SeriesStyle["marker"]} shape
 * @param {number} x
 * @param {number} y
 * @param {number} r
 */
export function markerPath(shape, x, y, r) {
  const f = (/** @type {number} */ v) => round2(v);
  switch (shape) {
    case "square":
      return `M${f(x - r)},${f(y - r)}h${f(2 * r)}v${f(2 * r)}h${f(-2 * r)}Z`;
    case "triangle":
      return `M${f(x)},${f(y - r * 1.15)}L${f(x + r * 1.1)},${f(y + r * 0.85)}L${f(x - r * 1.1)},${f(y + r * 0.85)}Z`;
    case "diamond":
      return `M${f(x)},${f(y - r * 1.3)}L${f(x + r * 1.3)},${f(y)}L${f(x)},${f(y + r * 1.3)}L${f(x - r * 1.3)},${f(y)}Z`;
    case "cross":
      return `M${f(x - r)},${f(y - r)}L${f(x + r)},${f(y + r)}M${f(x + r)},${f(y - r)}L${f(x - r)},${f(y + r)}`;
    default:
      return `M${f(x - r)},${f(y)}a${f(r)},${f(r)} 0 1,0 ${f(2 * r)},0a${f(r)},${f(r)} 0 1,0 ${f(-2 * r)},0Z`;
  }
}

/**
 * The corner mark of a heatmap cell whose top-1 is the answer: a triangle in the cell's top-left
 * corner (the settled dot sits top-right), sized to the cell. Returns its three points.
 * @param {{x: number, y: number, w: number, h: number}} cell
 * @returns {[number, number][]}
 */
export function answerMarkTriangle(cell) {
  const s = Math.max(4, Math.min(9, Math.min(cell.h * 0.6, cell.w * 0.3)));
  return [
    [cell.x + 1, cell.y + 1],
    [cell.x + 1 + s, cell.y + 1],
    [cell.x + 1, cell.y + 1 + s],
  ];
}
