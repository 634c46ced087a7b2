// @ts-check
/**
 * Colours of the diff view, by each metric's `scale` in `meta.metrics` (no metric is named here):
 * a diverging blue–white–orange scale centred on zero for a change (the chosen token's
 * probability, or any heatmap metric's; blue and orange stay apart for every common
 * colour-vision deficiency), a sequential scale for KL, and two colours for "top-1 differs".
 * Missing cells get no colour.
 */

import { DIVERGING_STOPS, interpolateStops } from "../shared/colour.js";
import { COLOUR_STOPS } from "../shared/colour_stops.js";
import { diffIndex, diffMetric } from "./payload.js";

/**
 * @typedef {import("./payload.js").Diff} Diff
 * @typedef {[number, number, number]} Rgb
 */

/**
 * Blue (less probability under b) – near-white (no change) – orange (more): the shared diverging
 * scale (`colour.js`). The middle stop is the colour of 0.
 */
export const DIVERGING = DIVERGING_STOPS;

/**
 * The same scale for a dark page: its centre (no change, most of a patch's cells) is a dark grey
 * near the page's background, and a change grows brighter with its size (light blue for less
 * probability under b, light orange for more), so a diff of small changes is not a white block on
 * a dark page. The same hues as `DIVERGING`, read outward from the centre.
 */
export const DIVERGING_DARK = Object.freeze(["#b3d5ef", "#6baed6", "#3182bd", "#1d4e7e", "#2b2d31", "#7a3a10", "#c0510c", "#f08a3a", "#fdc28c"]);

/** Top-1 the same / different. */
export const SAME_COLOUR = /** @type {Rgb} */ ([214, 220, 228]);
export const SAME_COLOUR_DARK = /** @type {Rgb} */ ([52, 56, 62]);
export const DIFFERS_COLOUR = /** @type {Rgb} */ ([230, 85, 13]);

/**
 * @typedef {object} DiffPalette
 * @property {readonly string[]} diverging the change scale's stops, from -max to +max
 * @property {readonly string[]} kl the KL scale's stops, from 0 (no difference: the page's end) up
 * @property {Rgb} same top-1 the same
 * @property {Rgb} differs top-1 different
 */

/**
 * The diff's colours on a light page or a dark one: on either, "no difference" is the colour
 * nearest the page (near-white on light, dark grey on dark) and a larger difference stands out
 * more.
 * @param {boolean} dark
 * @returns {DiffPalette}
 */
export function diffPalette(dark) {
  const magma = COLOUR_STOPS.magma;
  return dark
    ? { diverging: DIVERGING_DARK, kl: [...magma], same: SAME_COLOUR_DARK, differs: DIFFERS_COLOUR }
    : { diverging: DIVERGING, kl: [...magma].reverse(), same: SAME_COLOUR, differs: DIFFERS_COLOUR };
}

/**
 * The colour of a change `value` on a symmetric domain [-max, max]: 0 is the centre stop,
 * negative values blue, positive orange; clamped beyond the domain. With `log` (a rank's change,
 * the metric's `log`), placed by sign · log1p(|value|) / log1p(max): a change of a few ranks stays
 * visible beside one of thousands.
 * @param {number} value
 * @param {number} max
 * @param {readonly string[]} [stops] the scale (`DIVERGING`, or `DIVERGING_DARK` on a dark page)
 * @param {boolean} [log] a symmetric log scale
 * @returns {Rgb}
 */
export function divergingColour(value, max, stops = DIVERGING, log = false) {
  const m = max > 0 ? max : 1;
  const ratio = log ? Math.sign(value) * (Math.log1p(Math.abs(value)) / Math.log1p(m)) : value / m;
  const t = Number.isFinite(value) ? 0.5 + 0.5 * Math.max(-1, Math.min(1, ratio)) : 0.5;
  return interpolateStops(stops, t);
}

/**
 * The colour of a KL value on [0, max]: 0 (no difference) at the page's end of magma, light on a
 * light page (magma reversed), dark on a dark one.
 * @param {number} value
 * @param {number} max
 * @param {boolean} [dark]
 * @returns {Rgb}
 */
export function klColour(value, max, dark = false) {
  const t = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  return interpolateStops(COLOUR_STOPS.magma, dark ? t : 1 - t);
}

/**
 * A change metric's values at a cell (its entry's `change` names the sections: `delta_prob`'s
 * the chosen token's probabilities, a heatmap metric's `<field>_a` and `<field>_b`): a's value,
 * b's value and the change `b − a` (its own section), each with the step it was stored in; null
 * where the cell has none (not aligned, or either side without a value), or for a metric that is
 * not a change.
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} index a flat cell index (see `diffIndex`)
 * @returns {{a: number, b: number, delta: number, steps: {a: number, b: number, delta: number}} | null}
 */
export function changeAt(diff, metric, index) {
  const arrays = diff.arrays;
  const spec = diffMetric(diff, metric);
  const change = spec?.change;
  if (!spec || !change || !arrays.aligned[index]) return null;
  const known = arrays[change.known];
  const delta = arrays[spec.field];
  if (!known || !delta || !known[index]) return null;
  /** @param {string} name */
  const step = (name) => diff.scales[name] ?? 1;
  /** @param {string} name */
  const read = (name) => (arrays[name] ? arrays[name][index] * step(name) : Number.NaN);
  return {
    a: read(change.a),
    b: read(change.b),
    delta: read(spec.field),
    steps: { a: step(change.a), b: step(change.b), delta: step(spec.field) },
  };
}

/**
 * The value of a metric in a cell, or null where the cell has none (no partner, the change
 * unknown, or no KL). Read from the sections its entry in `meta.metrics` names: a change's
 * (`changeAt`), else the section `field` (KL, top-1 differs).
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} index a flat cell index (see `diffIndex`)
 * @returns {number | null}
 */
export function metricValueAt(diff, metric, index) {
  const a = diff.arrays;
  if (!a.aligned[index]) return null;
  const spec = diffMetric(diff, metric);
  if (!spec) return null;
  if (spec.change) return changeAt(diff, metric, index)?.delta ?? null;
  const section = a[spec.field];
  return section ? section[index] * (diff.scales[spec.field] ?? 1) : null;
}

/**
 * The colour of a cell under a metric, or null for a missing cell: by the metric's `scale`, a
 * change on the diverging scale (symmetric about 0 over its `domain`; on a log scale for a
 * metric with `log`), KL on the sequential one, top-1 differs in two colours.
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} index
 * @param {boolean} [dark] on a dark page (`diffPalette`)
 * @returns {Rgb | null}
 */
export function cellColour(diff, metric, index, dark = false) {
  const value = metricValueAt(diff, metric, index);
  if (value === null) return null;
  const spec = diffMetric(diff, metric);
  const max = spec ? spec.domain[1] : 1;
  const palette = diffPalette(dark);
  if (spec?.scale === "diverging") return divergingColour(value, max, palette.diverging, Boolean(spec.log));
  if (spec?.scale === "sequential") return klColour(value, max, dark);
  return value ? palette.differs : palette.same;
}

/**
 * An RGBA image of one prompt's cells (width = its length, height = L, the deepest row on
 * top); missing cells stay transparent, so the hatching drawn below shows through.
 * @param {Diff} diff
 * @param {string} metric
 * @param {number} prompt
 * @param {boolean} [dark] on a dark page
 * @returns {{width: number, height: number, data: Uint8ClampedArray}}
 */
export function diffImage(diff, metric, prompt, dark = false) {
  const n = diff.lengths[prompt];
  const data = new Uint8ClampedArray(n * diff.L * 4);
  for (let i = 0; i < diff.L; i++) {
    const row = diff.L - 1 - i;
    for (let j = 0; j < n; j++) {
      const rgb = cellColour(diff, metric, diffIndex(diff, i, prompt, j), dark);
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
