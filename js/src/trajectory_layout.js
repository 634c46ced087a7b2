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
 * @property {string} dash SVG stroke-dasharray ("" = solid; the caps are butt, so the dashes
 *   and gaps are as long as written, whatever the width)
 * @property {number} opacity of the stroke and the marker (the top-1's band is pale)
 * @property {"circle" | "square" | "triangle" | "diamond" | "cross"} marker
 * @property {number} markerScale the marker's size relative to the others' (larger under
 *   narrower lines' markers, so that coinciding markers all show)
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
 * The trajectory chart's line styles: the one table the lines, their markers and the legend's
 * swatches are drawn from. Every line differs from every other in colour and dash; lines that
 * often meet differ in width too, the wider drawn first, so that where they coincide each still
 * shows (the top-1 and the final prediction coincide wherever a layer's top-1 is the final token,
 * the last layer at least; the final prediction and the answer wherever the model is right):
 * - top-1: a wide, pale, solid band in the neutral colour, under everything. No token's
 *   probability exceeds the top-1's, so it is the ceiling of every other line, and a line that
 *   runs inside the band is that layer's top-1 there;
 * - final prediction: the palette's first colour, dashed, narrower than the band;
 * - answers: solid, narrower again (the palette's second and fourth colours), so the final
 *   prediction's dashes show on both sides of an answer it coincides with;
 * - targets: thin and dashed, but never like the final prediction, in the palette from its third
 *   colour on (six colours), one dash pattern for each round of six.
 * - the answer under another lens (several lenses side by side): as wide as the answer, in short
 *   dashes of the palette's fifth, sixth and third colours (none an answer's or the final
 *   prediction's), drawn over the shown lens's solid answer line, which shows through the gaps
 *   where the lenses agree.
 * Colours are the theme's series palette (theme.css), so the lines follow the host's theme.
 */
export const LINE_STYLES = Object.freeze({
  top1: Object.freeze({ colour: "var(--murano-traj-top1)", width: 9, dash: "", opacity: 0.3, marker: "circle", markerScale: 1.7 }),
  final: Object.freeze({ colour: SERIES_COLOURS[0], width: 4, dash: "8 4", opacity: 1, marker: "square", markerScale: 1.2 }),
  answer: Object.freeze({ colours: [SERIES_COLOURS[1], SERIES_COLOURS[3]], width: 2, dash: "", opacity: 1, marker: "diamond", markerScale: 1 }),
  lens: Object.freeze({ colours: [SERIES_COLOURS[4], SERIES_COLOURS[5], SERIES_COLOURS[2]], width: 2, dashes: ["3 2", "1 2", "6 2 1 2"], opacity: 1, marker: "circle", markerScale: 1 }),
  target: Object.freeze({
    width: 1.5,
    dashes: ["5 3", "1.5 3", "9 3 1.5 3", "14 4"],
    opacity: 1,
    markers: /** @type {SeriesStyle["marker"][]} */ (["triangle", "cross", "square", "diamond"]),
    markerScale: 1,
  }),
});

/**
 * How a series is drawn (see `LINE_STYLES`).
 * @param {Pick<Series, "kind" | "index">} series
 * @returns {SeriesStyle}
 */
export function seriesStyle(series) {
  switch (series.kind) {
    case "top1":
      return { ...LINE_STYLES.top1 };
    case "final":
    case "metric":
      return { ...LINE_STYLES.final };
    case "answer": {
      const { colours, ...rest } = LINE_STYLES.answer;
      return { ...rest, colour: colours[series.index % colours.length] };
    }
    case "group":
    case "group_sum": {
      // Solid, like an answer (a group is what the chart is for), in the palette from its third
      // colour; their sum in the neutral top-1 colour, dashed.
      if (series.kind === "group_sum") return { colour: "var(--murano-traj-top1)", width: 2, dash: "4 3", opacity: 1, marker: "circle", markerScale: 1 };
      const t = LINE_STYLES.target;
      const j = series.index;
      return { colour: SERIES_COLOURS[(2 + j) % SERIES_COLOURS.length], width: 2, dash: "", opacity: 1, marker: t.markers[j % t.markers.length], markerScale: 1 };
    }
    case "lens": {
      const { colours, dashes, ...rest } = LINE_STYLES.lens;
      const k = series.index;
      // Three colours, then the next dash pattern: the first nine lenses all differ.
      return { ...rest, colour: colours[k % colours.length], dash: dashes[Math.floor(k / colours.length) % dashes.length] };
    }
    default: {
      const t = LINE_STYLES.target;
      const j = series.index;
      const n = SERIES_COLOURS.length;
      return {
        colour: SERIES_COLOURS[(2 + j) % n],
        width: t.width,
        dash: t.dashes[Math.floor(j / n) % t.dashes.length],
        opacity: t.opacity,
        marker: t.markers[j % t.markers.length],
        markerScale: t.markerScale,
      };
    }
  }
}

/**
 * The stroke of a line in `style`, for the chart's polylines and the legend's swatches alike (so
 * a swatch shows its line's width and dash).
 * @param {SeriesStyle} style
 * @returns {{"stroke-width": number, "stroke-dasharray": string, "stroke-opacity": number}}
 */
export function strokeAttributes(style) {
  return { "stroke-width": style.width, "stroke-dasharray": style.dash || "none", "stroke-opacity": style.opacity };
}

/**
 * The legend's swatch of a line: a short stretch of it, with its stroke (width and dash).
 * @param {SeriesStyle} style
 */
export function swatchLine(style) {
  return { x1: 1, x2: 25, y1: 6, y2: 6, ...strokeAttributes(style) };
}

/**
 * The order to draw lines and markers in: the widest first, so a narrower line running along a
 * wider one stays on top of it (ties keep their legend order).
 * @param {SeriesStyle[]} styles
 * @returns {number[]} indices into `styles`
 */
export function drawOrder(styles) {
  return styles.map((_, k) => k).sort((a, b) => styles[b].width - styles[a].width || a - b);
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
