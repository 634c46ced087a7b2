// @ts-check
/** A prompt's colour image: the heatmap's cells as pixels, one per cell, on the metric's scale. */

import { colourLut } from "../shared/colour.js";
import { metricDomain, metricLayout, metricSpec } from "./metrics.js";
import { promptHasNoValue } from "./payload.js";

/** @typedef {import("./payload.js").LensData} LensData */

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
