// @ts-check
/**
 * The data-set chart's geometry, as pure functions: where layer columns and values fall in the
 * SVG, which layer a pointer position is nearest, and the path strings of lines and bands
 * (missing values break a line or a band rather than bridging the gap), and the value axis of a
 * metric (`chartScale`: a fraction runs 0 to 1; bits and ranks 0 to a round number above the data).
 */

import { formatBits, niceCeil } from "../shared/format.js";

/**
 * @typedef {object} Geometry
 * @property {number} width
 * @property {number} height
 * @property {number} left plot area's left edge
 * @property {number} right plot area's right edge
 * @property {number} top
 * @property {number} bottom
 * @property {(index: number) => number} x the x of layer column `index`
 * @property {(value: number) => number} y the y of a value in [0, top] (clamped)
 * @property {(px: number) => number} layerAt the column nearest to x = `px` (clamped)
 */

/**
 * The data-set chart's geometry: layers are evenly spaced columns along x (one layer sits in the
 * middle), a fraction in [0, 1] runs up y, inside a fixed SVG box with margins for the axes. Not
 * the trajectory chart's `trajectoryRowsGeometry` (`trajectory_layout.js`), whose layers are rows
 * level with the heatmap's and whose values run along x.
 * @param {number} width SVG user units
 * @param {number} height
 * @param {number} nLayers
 * @param {{left?: number, right?: number, top?: number, bottom?: number}} [margin]
 * @param {number} [high] the value at the top of the plot area (a fraction's is 1)
 * @returns {Geometry}
 */
export function datasetCurveGeometry(width, height, nLayers, margin = {}, high = 1) {
  const left = margin.left ?? 48;
  const right = width - (margin.right ?? 16);
  const top = margin.top ?? 12;
  const bottom = height - (margin.bottom ?? 34);
  const step = nLayers > 1 ? (right - left) / (nLayers - 1) : 0;
  const x = (/** @type {number} */ index) => (nLayers > 1 ? left + index * step : (left + right) / 2);
  const y = (/** @type {number} */ value) => bottom - Math.min(Math.max(value / high, 0), 1) * (bottom - top);
  const layerAt = (/** @type {number} */ px) => {
    if (nLayers <= 1) return 0;
    return Math.min(nLayers - 1, Math.max(0, Math.round((px - left) / step)));
  };
  return { width, height, left, right, top, bottom, x, y, layerAt };
}

/**
 * @param {number | null | undefined} v
 * @returns {v is number}
 */
function finite(v) {
  return v !== null && v !== undefined && Number.isFinite(v);
}

/**
 * A polyline through the finite points; a missing value starts a new piece.
 * @param {Geometry} g
 * @param {(number | null)[]} values
 * @returns {string} SVG path data ("" when no value)
 */
export function linePath(g, values) {
  let d = "";
  let pen = false;
  values.forEach((v, i) => {
    if (!finite(v)) {
      pen = false;
      return;
    }
    d += `${pen ? "L" : "M"}${g.x(i).toFixed(2)},${g.y(v).toFixed(2)}`;
    pen = true;
  });
  return d;
}

/**
 * The shaded band between `low` and `high`: one closed polygon per run of columns where both
 * are finite (a single column gets a thin vertical bar).
 * @param {Geometry} g
 * @param {(number | null)[]} low
 * @param {(number | null)[]} high
 * @returns {string} SVG path data
 */
export function bandPath(g, low, high) {
  /** @type {number[][]} */
  const runs = [];
  /** @type {number[]} */
  let run = [];
  for (let i = 0; i < low.length; i++) {
    if (finite(low[i]) && finite(high[i])) run.push(i);
    else if (run.length) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length) runs.push(run);
  return runs
    .map((r) => {
      const up = r.map((i) => `${g.x(i).toFixed(2)},${g.y(/** @type {number} */ (high[i])).toFixed(2)}`);
      const down = [...r].reverse().map((i) => `${g.x(i).toFixed(2)},${g.y(/** @type {number} */ (low[i])).toFixed(2)}`);
      if (r.length === 1) {
        const x = g.x(r[0]);
        return `M${(x - 1).toFixed(2)},${g.y(/** @type {number} */ (high[r[0]])).toFixed(2)}H${(x + 1).toFixed(2)}V${g.y(/** @type {number} */ (low[r[0]])).toFixed(2)}H${(x - 1).toFixed(2)}Z`;
      }
      return `M${up.join("L")}L${down.join("L")}Z`;
    })
    .join("");
}

/**
 * Which layer labels to write under the axis: all when they fit, else every k-th (and the last).
 * @param {number} nLayers
 * @param {number} maxLabels
 * @returns {number[]} column indices
 */
export function labelColumns(nLayers, maxLabels) {
  if (nLayers <= maxLabels) return Array.from({ length: nLayers }, (_, i) => i);
  const every = Math.ceil(nLayers / maxLabels);
  const columns = [];
  for (let i = 0; i < nLayers; i += every) columns.push(i);
  if (columns[columns.length - 1] !== nLayers - 1) {
    if (nLayers - 1 - columns[columns.length - 1] < every / 2) columns.pop();
    columns.push(nLayers - 1);
  }
  return columns;
}

/**
 * @typedef {object} ChartScale
 * @property {number} high the value at the top of the plot area
 * @property {number[]} ticks the values with a grid line and a label
 * @property {(value: number) => string} label a tick's text
 */

/**
 * The value axis of a metric, by its unit: a probability or a share from 0 to 100 %; bits and
 * ranks from 0 to the smallest round number (1, 2 or 5 times a power of ten) at or above every
 * value and interval end the series hold for it, so that switching metrics never clips a band.
 * @param {{unit: string, field: string, interval: [string, string] | null}} metric
 * @param {Record<string, (number | null)[]>[]} summaries each series' summary columns
 * @returns {ChartScale}
 */
export function chartScale(metric, summaries) {
  if (metric.unit === "probability" || metric.unit === "share") {
    return { high: 1, ticks: [0, 0.25, 0.5, 0.75, 1], label: (v) => `${Math.round(v * 100)}%` };
  }
  let top = 0;
  for (const summary of summaries) {
    for (const column of [metric.field, ...(metric.interval || [])]) {
      for (const v of summary[column] || []) if (finite(v) && v > top) top = v;
    }
  }
  const high = top > 0 ? niceCeil(top) : 1;
  // Round ticks: fifths of a top of 5 × 10^k (100, 200, ...), quarters of 1 or 2 × 10^k.
  const parts = Math.round(high / 10 ** Math.floor(Math.log10(high))) === 5 ? 5 : 4;
  const ticks = Array.from({ length: parts + 1 }, (_, k) => (k * high) / parts);
  if (metric.unit === "bits") return { high, ticks, label: (v) => formatBits(v, true) };
  return { high, ticks, label: (v) => String(Number(v.toFixed(1))) };
}
