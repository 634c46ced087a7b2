// @ts-check
/**
 * The diff view's payload: `_meta` (JSON) and `_sections` (name → binary buffer) as typed arrays,
 * checked against each other. Written by `murano_widgets/payload/diff.py` (format "lens_diff",
 * version 2): token sections index `meta.tokens` directly, as the lens payload's do; an entry with no
 * token is marked 1 in the section's `no_token_<section>` mask (sent only when some entry is).
 */

import { readSection } from "../shared/codec.js";

/** The format version this front end reads. */
export const DIFF_VERSION = 2;

/** Sections the view cannot draw without. */
export const REQUIRED = Object.freeze(["input_a", "aligned", "delta_prob", "delta_known", "top1_differs", "topk_tokens_a", "topk_probs_a", "topk_tokens_b", "topk_probs_b"]);

/** The dtypes the diff's encoder writes. */
export const DIFF_DTYPES = Object.freeze(["uint8", "int16", "uint16", "uint32", "int32"]);

/**
 * @typedef {Uint8Array | Int16Array | Uint16Array | Uint32Array | Int32Array} DiffArray
 *
 * @typedef {object} DiffChange The sections of a change metric: a's values, b's (at the partner
 *   cell) and the mask of cells whose change is known (1).
 * @property {string} a
 * @property {string} b
 * @property {string} known
 *
 * @typedef {object} DiffMetric One entry of `meta.metrics` (Python's `DIFF_METRICS`).
 * @property {string} name
 * @property {string} field its section
 * @property {string} label
 * @property {string} short
 * @property {string} unit "delta" (the chosen token's probability), "probability", "bits",
 *   "rank" or "boolean"
 * @property {string} scale "diverging" (a change: its domain symmetric about 0), "sequential" or
 *   "binary"
 * @property {boolean} [log] placed on a symmetric log scale (a rank's change)
 * @property {string} description
 * @property {[number, number]} domain
 * @property {boolean} available
 * @property {string | null} unavailable_reason
 * @property {DiffChange | null} [change] a change `b − a`: the sections of both sides' values
 *
 * @typedef {object} Diff A decoded diff payload.
 * @property {Record<string, any>} meta
 * @property {number} L rows (a's layers)
 * @property {number} T positions of all of a's prompts laid end to end
 * @property {number} P prompts
 * @property {number} K top tokens per cell
 * @property {number[]} layers a's model layer of each row
 * @property {number[]} bLayers b's model layer paired with each row
 * @property {boolean[]} bHasRow whether b computed that layer
 * @property {number} depthA
 * @property {number} depthB
 * @property {number[]} lengths
 * @property {number[]} offsets
 * @property {string[]} tokens
 * @property {[string, string]} labels
 * @property {DiffMetric[]} metrics
 * @property {Record<string, DiffArray>} arrays
 * @property {Record<string, number>} scales
 */

/**
 * Decodes and checks a diff payload.
 * @param {Record<string, any>} meta
 * @param {Record<string, unknown>} sections
 * @returns {Diff}
 */
export function decodeDiff(meta, sections) {
  if (!meta || meta.format !== "lens_diff") throw new Error("this is not a lens-diff payload (meta.format is not 'lens_diff')");
  if (meta.version !== DIFF_VERSION) throw new Error(`lens-diff payload version ${meta.version}; this front end reads version ${DIFF_VERSION}`);
  const L = meta.layers.length;
  const T = meta.total;
  const P = meta.lengths.length;
  const K = meta.top_k;
  /** @type {Record<string, DiffArray>} */
  const arrays = {};
  /** @type {Record<string, number>} */
  const scales = {};
  for (const [name, spec] of Object.entries(/** @type {Record<string, {dtype: string, shape: number[], scale?: number}>} */ (meta.sections || {}))) {
    if (!(name in (sections || {}))) continue;
    const length = spec.shape.reduce((x, y) => x * y, 1);
    arrays[name] = /** @type {DiffArray} */ (readSection(sections[name], spec.dtype, length, name, DIFF_DTYPES));
    scales[name] = spec.scale ?? 1;
  }
  for (const name of REQUIRED) if (!arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  const expect = /** @type {Record<string, number>} */ ({ input_a: T, aligned: L * T, delta_prob: L * T, topk_tokens_a: L * T * K, topk_tokens_b: L * T * K });
  for (const name of TOKEN_SECTIONS) {
    const mask = arrays[`no_token_${name}`];
    if (mask && arrays[name] && mask.length !== arrays[name].length) throw new Error(`section no_token_${name} has ${mask.length} values, expected ${arrays[name].length}`);
  }
  for (const [name, n] of Object.entries(expect)) {
    if (arrays[name].length !== n) throw new Error(`section ${name} has ${arrays[name].length} values, expected ${n}`);
  }
  return {
    meta,
    L,
    T,
    P,
    K,
    layers: meta.layers,
    bLayers: meta.b_layers,
    bHasRow: meta.b_has_row,
    depthA: meta.depth_a,
    depthB: meta.depth_b,
    lengths: meta.lengths,
    offsets: meta.offsets,
    tokens: meta.tokens,
    labels: meta.labels,
    metrics: meta.metrics,
    arrays,
    scales,
  };
}

/**
 * The flat index of a cell (row `layerIndex` of a, prompt `prompt`, position `position`).
 * @param {Diff} diff
 * @param {number} layerIndex
 * @param {number} prompt
 * @param {number} position
 */
export function diffIndex(diff, layerIndex, prompt, position) {
  return layerIndex * diff.T + diff.offsets[prompt] + position;
}

/** The token sections: indices into `meta.tokens`, each with its `no_token_<name>` mask. */
export const TOKEN_SECTIONS = Object.freeze(["input_a", "input_b", "token", "topk_tokens_a", "topk_tokens_b"]);

/**
 * The text of entry `i` of token section `name`, or null where it has no token (marked in
 * `no_token_<name>`, or the section is absent, or the index is outside the table).
 * @param {Diff} diff
 * @param {string} name
 * @param {number} i
 * @returns {string | null}
 */
export function tokenAt(diff, name, i) {
  const none = diff.arrays[`no_token_${name}`];
  const section = diff.arrays[name];
  if (!section || (none && none[i])) return null;
  const entry = section[i];
  return entry < diff.tokens.length ? diff.tokens[entry] : null;
}

/**
 * A metric's entry, or undefined.
 * @param {Diff} diff
 * @param {string} name
 */
export function diffMetric(diff, name) {
  return diff.metrics.find((m) => m.name === name);
}
