// @ts-check
/** Colour scales: interpolation, lookup tables, text contrast, and a prompt's colour image. */

import { COLOUR_STOPS } from "./colour_stops.js";
import { metricDomain, metricLayout, metricSpec } from "./metrics.js";
import { promptHasNoValue } from "./payload.js";

export { COLOUR_STOPS };

/**
 * The one diverging scale (the lens diff's change in probability, a component's part of a
 * logit): blue (negative) – near-white (0) – orange (positive), after ColorBrewer's Blues and
 * Oranges; blue and orange stay apart for every common colour-vision deficiency. The middle stop
 * is the colour of 0.
 */
export const DIVERGING_STOPS = Object.freeze(["#08519c", "#3182bd", "#6baed6", "#c6dbef", "#f4f4f2", "#fdd0a2", "#fd8d3c", "#e6550d", "#a63603"]);

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {[number, number, number]} Rgb
 */

/**
 * Parses "#rrggbb" into [r, g, b].
 * @param {string} hex
 * @returns {Rgb}
 */
export function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/**
 * The colour at `t` in [0, 1] of a scale given by evenly spaced stops (linear interpolation in
 * sRGB; `t` is clamped, NaN gives the first stop).
 * @param {readonly string[]} stops
 * @param {number} t
 * @returns {Rgb}
 */
export function interpolateStops(stops, t) {
  const x = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  const pos = x * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(pos));
  const f = pos - i;
  const a = hexToRgb(stops[i]);
  const b = hexToRgb(stops[i + 1]);
  /** @param {number} k */
  const mix = (k) => Math.round(a[k] + (b[k] - a[k]) * f);
  return [mix(0), mix(1), mix(2)];
}

/**
 * The colour of `t` on a named scale.
 * @param {string} name
 * @param {number} t
 * @param {boolean} [reverse]
 * @returns {Rgb}
 */
export function scaleColour(name, t, reverse = false) {
  const stops = COLOUR_STOPS[name];
  if (!stops) throw new Error(`unknown colour scale ${name}`);
  return interpolateStops(stops, reverse ? 1 - t : t);
}

/** @type {Map<string, Uint8Array>} */
const lutCache = new Map();

/**
 * A 256-entry lookup table of a scale: `lut[3*k .. 3*k+2]` is the colour of t = k/255.
 * @param {string} name
 * @param {boolean} [reverse]
 * @returns {Uint8Array}
 */
export function colourLut(name, reverse = false) {
  const key = `${name}|${reverse}`;
  let lut = lutCache.get(key);
  if (!lut) {
    lut = new Uint8Array(256 * 3);
    for (let k = 0; k < 256; k++) lut.set(scaleColour(name, k / 255, reverse), 3 * k);
    lutCache.set(key, lut);
  }
  return lut;
}

/**
 * WCAG relative luminance of an sRGB colour.
 * @param {readonly number[]} rgb
 */
export function relativeLuminance([r, g, b]) {
  /** @param {number} c */
  const lin = (c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/**
 * Black or white, whichever reads better on `rgb` (by WCAG contrast).
 * @param {readonly number[]} rgb
 * @returns {"#000000" | "#ffffff"}
 */
export function textColourOn(rgb) {
  const l = relativeLuminance(rgb);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
}

/**
 * Fills an RGBA image of one prompt's cells: width = the prompt's length, height = L, the final
 * layer in row 0 (the top). Missing cells (the whole cell, or, for a metric measured against the
 * final prediction, a position whose final distribution was not finite; every cell of a prompt
 * the metric has no value for, such as a prompt without an answer) and cells of a metric not
 * loaded yet stay transparent, so whatever is drawn below (a hatch pattern) shows through.
 * @param {LensData} lensData
 * @param {string} metric
 * @param {number} prompt
 * @param {Uint8ClampedArray<ArrayBuffer>} [out] a buffer to reuse when it has the right size
 * @param {number} [target] for a per-target metric, the tracked token's index
 * @param {{min: number, max: number, log: boolean} | null} [scaleDomain] the colour scale's
 *   domain, when it is not the metric's own (two lenses side by side share one)
 * @returns {{width: number, height: number, data: Uint8ClampedArray<ArrayBuffer>}}
 */
export function colourImage(lensData, metric, prompt, out, target = 0, scaleDomain = null) {
  const n = lensData.lengths[prompt];
  const L = lensData.L;
  const data = out && out.length === n * L * 4 ? out : new Uint8ClampedArray(n * L * 4);
  data.fill(0);
  const spec = metricSpec(lensData, metric);
  const array = spec && lensData.arrays[spec.field];
  if (!spec || !array || promptHasNoValue(lensData, spec.field, prompt)) return { width: n, height: L, data };
  // A per-target metric's values: one tracked token's of each cell's n_targets.
  const { stride, offset: at } = metricLayout(lensData, spec, target);
  if (stride === 0) return { width: n, height: L, data };
  const scale = lensData.scales[spec.field] ?? 1;
  const domain = scaleDomain ?? metricDomain(lensData, metric);
  const lut = colourLut(spec.scale, spec.reverse);
  const missing = lensData.arrays.missing;
  const offset = lensData.offsets[prompt];
  const finalMissing = spec.finalBased ? lensData.arrays.final_missing : undefined;
  const logDen = domain.log ? Math.log1p(domain.max - domain.min) : 0;
  const span = domain.max - domain.min;
  for (let i = 0; i < L; i++) {
    const row = L - 1 - i;
    const base = i * lensData.T + offset;
    for (let j = 0; j < n; j++) {
      const idx = base + j;
      if (missing && missing[idx]) continue;
      if (finalMissing && finalMissing[offset + j]) continue;
      const v = array[idx * stride + at] * scale - domain.min;
      let t = domain.log ? Math.log1p(v > 0 ? v : 0) / logDen : v / span;
      t = t < 0 ? 0 : t > 1 ? 1 : t;
      const k = Math.round(t * 255) * 3;
      const o = (row * n + j) * 4;
      data[o] = lut[k];
      data[o + 1] = lut[k + 1];
      data[o + 2] = lut[k + 2];
      data[o + 3] = 255;
    }
  }
  return { width: n, height: L, data };
}
