// @ts-check
/**
 * Colours of the diff view: a diverging blue–white–orange scale centred on zero for the change
 * in probability (blue and orange stay apart for every common colour-vision deficiency), a
 * sequential scale for KL, and two colours for "top-1 differs". Missing cells get no colour.
 */

import { DIVERGING_STOPS, interpolateStops } from "../colour.js";
import { COLOUR_STOPS } from "../colour_stops.js";
import { diffIndex } from "./payload.js";

/**
 * @typedef {import("./payload.js").Diff} Diff
 * @typedef {[number, number, number]} Rgb
 */

/**
 * Blue (less probability under b) – near-white (no change) – orange (more): the shared diverging
 * scale (`colour.js`). The middle stop is the colour of 0.
 */
export const DIVERGING = DIVERGING_STOPS;

/** Top-1 the same / different. */
export const SAME_COLOUR = /** @type {Rgb} */ ([214, 220, 228]);
export const DIFFERS_COLOUR = /** @type {Rgb} */ ([230, 85, 13]);

/**
 * The colour of a change `value` on a symmetric domain [-max, max]: 0 is the centre stop,
 * negative values blue, positive orange; clamped beyond the domain.
 * @param {number} value
 * @param {number} max
 * @returns {Rgb}
 */
export function divergingColour(value, max) {
  const m = max > 0 ? max : 1;
  const t = Number.isFinite(value) ? 0.5 + 0.5 * Math.max(-1, Math.min(1, value / m)) : 0.5;
  return interpolateStops(DIVERGING, t);
}

/**
 * The colour of a KL value on [0, max]: magma reversed, so 0 (no difference) is light.
 * @param {number} value
 * @param {number} max
 * @returns {Rgb}
 */
export function klColour(value, max) {
  const t = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  return interpolateStops(COLOUR_STOPS.magma, 1 - t);
}

/**
 * The value of a metric in a cell, or null where the cell has none (no partner, or the chosen
 * token's probability unknown, or no KL).
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} index a flat cell index (see `diffIndex`)
 * @returns {number | null}
 */
export function metricValueAt(diff, metric, index) {
  const a = diff.arrays;
  if (!a.aligned[index]) return null;
  if (metric === "delta_prob") return a.delta_known[index] ? a.delta_prob[index] * diff.scales.delta_prob : null;
  if (metric === "kl") return a.kl_a_to_b ? a.kl_a_to_b[index] * diff.scales.kl_a_to_b : null;
  if (metric === "top1_differs") return a.top1_differs[index];
  return null;
}

/**
 * The colour of a cell under a metric, or null for a missing cell.
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} index
 * @returns {Rgb | null}
 */
export function cellColour(diff, metric, index) {
  const value = metricValueAt(diff, metric, index);
  if (value === null) return null;
  const spec = diff.metrics.find((m) => m.name === metric);
  const max = spec ? spec.domain[1] : 1;
  if (metric === "delta_prob") return divergingColour(value, max);
  if (metric === "kl") return klColour(value, max);
  return value ? DIFFERS_COLOUR : SAME_COLOUR;
}

/**
 * An RGBA image of one prompt's cells (width = its length, height = L, the deepest row on
 * top); missing cells stay transparent, so the hatching drawn below shows through.
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} prompt
 * @returns {{width: number, height: number, data: Uint8ClampedArray}}
 */
export function diffImage(diff, metric, prompt) {
  const n = diff.lengths[prompt];
  const data = new Uint8ClampedArray(n * diff.L * 4);
  for (let i = 0; i < diff.L; i++) {
    const row = diff.L - 1 - i;
    for (let j = 0; j < n; j++) {
      const rgb = cellColour(diff, metric, diffIndex(diff, i, prompt, j));
      if (!rgb) continue;
      const o = (row * n + j) * 4;
      data[o] = rgb[0];
      data[o + 1] = rgb[1];
      data[o + 2] = rgb[2];
      data[o + 3] = 255;
    }
  }
  return { width: n, height: diff.L, data };
}
