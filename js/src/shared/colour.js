// @ts-check
/**
 * Colour scales, as every widget uses them: interpolation, lookup tables, text contrast, the
 * diverging scale (a prompt's colour image, the heatmap's own, is `heatmap/colour_image.js`).
 */

import { COLOUR_STOPS } from "./colour_stops.js";

export { COLOUR_STOPS };

/**
 * The one diverging scale (the lens diff's change in probability, a component's part of a
 * logit): blue (negative) – near-white (0) – orange (positive), after ColorBrewer's Blues and
 * Oranges; blue and orange stay apart for every common colour-vision deficiency. The middle stop
 * is the colour of 0.
 */
export const DIVERGING_STOPS = Object.freeze(["#08519c", "#3182bd", "#6baed6", "#c6dbef", "#f4f4f2", "#fdd0a2", "#fd8d3c", "#e6550d", "#a63603"]);

/** @typedef {[number, number, number]} Rgb */

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
