// The data-set widget's pure functions: decoding what Python sends, ordering the prompts behind
// a layer, and the readout of a hovered layer.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeDataset, formatInterval, layerReadout, promptOrder, readArray } from "../src/dataset/data.js";

/** Little-endian bytes of float32 or int32 values, at `offset` inside a larger buffer. */
function encode(values, kind, offset = 0) {
  const buffer = new ArrayBuffer(offset + values.length * 4 + 3);
  const view = new DataView(buffer, offset, values.length * 4);
  values.forEach((v, i) => (kind === "float32" ? view.setFloat32(i * 4, v, true) : view.setInt32(i * 4, v, true)));
  return view;
}

const summary = (n) => ({
  mean: Array(n).fill(0.5), low: Array(n).fill(0.4), high: Array(n).fill(0.6),
  top1: Array(n).fill(0.25), top1_low: Array(n).fill(0.1), top1_high: Array(n).fill(0.4),
  rank_median: Array(n).fill(2), entropy_mean: Array(n).fill(1.5), kl_mean: Array(n).fill(null),
});

// 4 prompts x 2 layers; prompt 2 has no answer; prompt 3's rank at layer column 1 is missing.
const ranks = [5, 0, 1, 0, -1, -1, 0, -1];
const probs = [0.1, 0.9, 0.3, 0.6, NaN, NaN, 0.5, NaN];
const meta = {
  layers: [3, 7],
  prompts: ["a", "b", "<img src=x onerror=alert(1)>", "d"],
  title: "toy-world: 4 prompts",
  ci: 0.9,
  can_open: false,
  cannot_open_reason: "no model",
  sets: [{ name: "capital", answers: [" Paris", " Rome", null, " Oslo"], n_prompts: 3, summary: summary(2) }],
};

test("readArray reads little-endian float32 and int32 at any byte offset, and checks the length", () => {
  assert.deepEqual(Array.from(readArray(encode([1.5, -2, 0.25], "float32", 3), "float32", 3)), [1.5, -2, 0.25]);
  assert.deepEqual(Array.from(readArray(encode([7, -1, 65536], "int32", 1), "int32", 3)), [7, -1, 65536]);
  assert.throws(() => readArray(encode([1, 2], "int32"), "int32", 3), /expected 3 int32 values/);
});

test("decodeDataset reads the sets' arrays and the meta", () => {
  const d = decodeDataset(meta, { prob_0: encode(probs, "float32", 2), rank_0: encode(ranks, "int32", 1) });
  assert.deepEqual(d.layers, [3, 7]);
  assert.equal(d.sets.length, 1);
  assert.equal(d.sets[0].name, "capital");
  assert.deepEqual(Array.from(d.sets[0].ranks), ranks);
  assert.ok(Number.isNaN(d.sets[0].probs[4]));
  assert.equal(d.canOpen, false);
  assert.equal(d.reason, "no model");
  assert.equal(d.ci, 0.9);
});

test("promptOrder: best rank first, ties by probability, no-answer prompts out, missing ranks last", () => {
  const d = decodeDataset(meta, { prob_0: encode(probs, "float32"), rank_0: encode(ranks, "int32") });
  const set = d.sets[0];
  // Layer column 0: ranks 5, 1, (none), 0 -> prompts 3, 1, 0.
  assert.deepEqual(promptOrder(set, 0, 2), [3, 1, 0]);
  assert.deepEqual(promptOrder(set, 0, 2, true), [0, 1, 3]);
  // Layer column 1: ranks 0 (p 0.9), 0 (p 0.6), (none), -1 -> 0, 1, then 3 (missing) last.
  assert.deepEqual(promptOrder(set, 1, 2), [0, 1, 3]);
  assert.deepEqual(promptOrder(set, 1, 2, true), [1, 0, 3], "worst first: lower probability first among ties; missing still last");
});

test("formatInterval and layerReadout write values as a person reads them", () => {
  assert.equal(formatInterval(0.421, 0.38, 0.463), "42.1% [38%, 46.3%]");
  assert.equal(formatInterval(null, 0.1, 0.2), "–");
  assert.equal(formatInterval(0.5, null, 0.6), "50%");
  const d = decodeDataset(meta, { prob_0: encode(probs, "float32"), rank_0: encode(ranks, "int32") });
  const readout = layerReadout(d, 1);
  assert.equal(readout.layer, 7);
  assert.equal(readout.rows[0].set, "capital");
  const cells = Object.fromEntries(readout.rows[0].cells);
  assert.equal(cells["answer probability (mean, 90% interval)"], "50% [40%, 60%]");
  assert.equal(cells["top-1 accuracy (90% interval)"], "25% [10%, 40%]");
  assert.equal(cells["median rank (0 = top-1)"], "2");
  assert.equal(cells["KL to final (mean)"], "–");
  assert.equal(cells.prompts, "3");
});
