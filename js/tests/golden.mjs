// The golden payloads: each widget's payload for a few small results, written by Python
// (tests/golden_payloads.py, checked by tests/test_golden_payloads.py) into tests/golden/*.json as
// {meta, sections (base64), expected}. The JS tests read them instead of building payloads by
// hand, so a payload the front end reads is one the encoders really write.
//
// Every call parses the file afresh: a test may change what it gets.

import { readdirSync, readFileSync } from "node:fs";

const DIR = new URL("./golden/", import.meta.url);

/**
 * One golden file, parsed.
 * @param {string} name the file's name without `.json`, e.g. "lens_plain"
 * @returns {{meta: any, sections: Record<string, string>, expected: any}}
 */
export function golden(name) {
  return JSON.parse(readFileSync(new URL(`${name}.json`, DIR), "utf8"));
}

/**
 * The golden files' names (without `.json`) that start with `prefix`.
 * @param {string} prefix "lens_", "diff_" or "dataset_"
 */
export function goldenNames(prefix) {
  return readdirSync(DIR)
    .filter((f) => f.startsWith(prefix) && f.endsWith(".json"))
    .map((f) => f.slice(0, -".json".length))
    .sort();
}

/**
 * Base64 text as a DataView at `byteOffset` inside a larger buffer, as anywidget hands sections
 * over (an odd offset makes the decoder copy unaligned data).
 * @param {string} text
 * @param {number} byteOffset
 */
export function viewOf(text, byteOffset = 0) {
  const bytes = Buffer.from(text, "base64");
  const buffer = new ArrayBuffer(byteOffset + bytes.length + 3);
  new Uint8Array(buffer, byteOffset, bytes.length).set(bytes);
  return new DataView(buffer, byteOffset, bytes.length);
}

/**
 * @param {Record<string, string>} sections
 * @param {number | null} byteOffset null: keep the base64 text (as the HTML export sends it)
 * @param {(name: string) => boolean} [keep]
 */
function sectionsOf(sections, byteOffset, keep = () => true) {
  const out = {};
  for (const [name, text] of Object.entries(sections)) {
    if (keep(name)) out[name] = byteOffset === null ? text : viewOf(text, byteOffset);
  }
  return out;
}

/**
 * A lens payload: `{meta, sections}` as the widget syncs `_meta` and `_sections`.
 * @param {string} name a `lens_*` golden file
 * @param {{details?: boolean, byteOffset?: number | null}} [options] `details: false` keeps the
 *   base sections only (what the widget sends before the front end asks for the rest)
 */
export function lensPayload(name, { details = true, byteOffset = 0 } = {}) {
  const { meta, sections } = golden(name);
  const detail = new Set(meta.detail_sections);
  // Lens i's sections side by side are "i/name": a detail section under any prefix.
  const bare = (/** @type {string} */ n) => n.slice(n.indexOf("/") + 1);
  return { meta, sections: sectionsOf(sections, byteOffset, (n) => details || !detail.has(bare(n))) };
}

/**
 * A lens payload with uint32 token indices. Python switches to uint32 only for a table of more
 * than 65,535 strings, too big for a golden file; so this one widening is made here, by hand:
 * the same payload, its token sections rewritten as uint32.
 * @param {string} name
 * @param {{byteOffset?: number}} [options]
 */
export function widenedLensPayload(name, { byteOffset = 0 } = {}) {
  const { meta, sections } = golden(name);
  for (const section of ["input_ids", "final_tokens", "predicted_tokens", "topk_tokens"]) {
    const spec = meta.sections[section];
    if (!spec || !(section in sections)) continue;
    const bytes = Buffer.from(sections[section], "base64");
    const values = Array.from({ length: bytes.length / 2 }, (_, i) => bytes.readUInt16LE(i * 2));
    const wide = Buffer.alloc(values.length * 4);
    values.forEach((v, i) => wide.writeUInt32LE(v, i * 4));
    sections[section] = wide.toString("base64");
    spec.dtype = "uint32";
  }
  return { meta, sections: sectionsOf(sections, byteOffset) };
}

/**
 * A lens-diff payload: `{meta, sections}`.
 * @param {string} name a `diff_*` golden file
 * @param {{byteOffset?: number | null}} [options]
 */
export function diffPayload(name, { byteOffset = 0 } = {}) {
  const { meta, sections } = golden(name);
  return { meta, sections: sectionsOf(sections, byteOffset) };
}

/**
 * A data set's chart payload: `{meta, data}` as the widget syncs `_meta` and `_data`.
 * @param {string} name a `dataset_*` golden file
 * @param {{byteOffset?: number}} [options]
 */
export function datasetPayload(name, { byteOffset = 0 } = {}) {
  const { meta, sections } = golden(name);
  return { meta, data: sectionsOf(sections, byteOffset) };
}

/**
 * The largest error the payload's quantiser allows for a value stored as `raw * scale` (rounded
 * to the nearest step): half a step, and a little for the float arithmetic.
 * @param {number} scale the section's `scale` (one step)
 */
export function tolerance(scale) {
  return scale / 2 + 1e-12;
}

/**
 * Whether `actual` is what the quantiser makes of `expected`: within half a step of it, except
 * that a non-zero value within half a step of 0 reads as one step of its sign (a stored 0 is an
 * exact 0: `murano_widgets/payload/codec.py`).
 * @param {number} actual
 * @param {number} expected
 * @param {number} scale
 */
export function quantised(actual, expected, scale) {
  if (expected !== 0 && Math.abs(expected) < scale / 2) return actual === Math.sign(expected) * scale;
  return Math.abs(actual - expected) <= tolerance(scale);
}
