import assert from "node:assert/strict";
import { test } from "node:test";

import { createLocalModel } from "../src/shared/local_model.js";
import {
  cellIndex,
  decodePayload,
  isFinalMissing,
  isSettled,
  rowOfModelLayer,
  sectionMax,
  settleRow,
} from "../src/heatmap/payload.js";
import { golden, lensPayload, widenedLensPayload } from "./golden.mjs";
import { encode } from "./helpers.mjs";

// Payloads are the golden files Python writes (tests/golden_payloads.py): lens_plain has layers
// 0..2 and prompts of 3 and 2 tokens over the table ["a", " b", "\n", "<script>", "\u200f"]; cell
// (row i, column c) predicts token (i + c) mod 5 with probability (i + 1) / 3, and the final
// prediction at column c is (2 + c) mod 5 (so the last row settles).

test("decodePayload decodes every section and the cell index follows [layer][flattened position]", () => {
  const { meta, sections } = lensPayload("lens_plain", { byteOffset: 1 });
  const data = decodePayload(meta, sections);
  assert.equal(data.L, 3);
  assert.equal(data.T, 5);
  assert.equal(data.P, 2);
  assert.equal(data.topK, 3);
  // prompt 1, layer index 2, position 1 -> 2 * 5 + 3 + 1
  assert.equal(cellIndex(data, 1, 2, 1), 14);
  assert.equal(data.arrays.predicted_tokens[14], (2 + 4) % 5);
  assert.ok(Math.abs(data.arrays.max_probs[14] * data.scales.max_probs - 1) < 1e-9);
  assert.equal(data.arrays.topk_tokens.length, 3 * 5 * 2);
  assert.equal(data.lensKind, "logit");
  assert.deepEqual(data.metrics.map((m) => m.name), golden("lens_plain").expected.metrics);
  // Python's rule: one less than the power of ten above the largest rank (14).
  assert.deepEqual(data.metrics[3].domain, [0, 99]);
  assert.equal(data.metrics[3].finalBased, true);
});

test("decodePayload uses uint32 token indices when the table is large", () => {
  const { meta, sections } = widenedLensPayload("lens_plain", { byteOffset: 2 });
  const data = decodePayload(meta, sections);
  assert.ok(data.arrays.predicted_tokens instanceof Uint32Array);
  assert.equal(data.arrays.final_tokens[4], (2 + 4) % 5);
});

test("decodePayload without detail sections: topK is 1 and metrics are not loaded", () => {
  const { meta, sections } = lensPayload("lens_plain", { details: false });
  const data = decodePayload(meta, sections);
  assert.equal(data.topK, 1);
  assert.equal(data.arrays.entropy, undefined);
});

test("decodePayload skips detail sections described in _meta but not yet in _sections", () => {
  const { meta, sections } = lensPayload("lens_plain");
  delete sections.kl_to_final;
  const data = decodePayload(meta, sections);
  assert.equal(data.arrays.kl_to_final, undefined);
  assert.ok(data.arrays.entropy);
});

test("decodePayload names what is wrong with an inconsistent payload", () => {
  // Malformed on purpose: a golden payload, then one thing broken.
  const bad = (mutate, pattern) => {
    const { meta, sections } = lensPayload("lens_plain");
    mutate(meta, sections);
    assert.throws(() => decodePayload(meta, sections), pattern);
  };
  bad((m) => { m.version = 1; }, /version 1 \(expected 2 or 3\)/);
  bad((m) => { m.offsets = [0, 2]; }, /offsets\[1\] is 2, expected 3/);
  bad((m) => { m.total = 9; }, /total is 9/);
  bad((m) => { m.layers = [0, 2, 1]; }, /ascending/);
  bad((m) => { m.sections.max_probs.shape = [3, 4]; }, /max_probs: shape/);
  bad((m) => { m.sections.entropy.shape = [3, 4]; }, /entropy: shape/);
  bad((m, s) => { delete s.predicted_tokens; }, /lacks the predicted_tokens section/);
  bad((m, s) => { delete s.max_probs; }, /lacks the max_probs section/);
  bad((m) => { m.tokens = ["a"]; }, /token index \d+ is outside the table of 1 strings/);
  bad((m, s) => { s.max_probs = encode([1, 2], "uint16"); }, /section max_probs: expected 15 uint16 values \(30 bytes\), got 4 bytes/);
  bad((m) => { m.metrics = []; }, /_meta.metrics must list the metrics/);
  bad((m) => { m.metrics[0] = { label: "x" }; }, /metrics\[0\] must be an object with a name and a field/);
  assert.throws(() => decodePayload(null, {}), /_meta is empty/);
  assert.throws(() => decodePayload({}, {}), /_meta is empty/);
});

test("settled cells: top-1 equals the final prediction; the last row always settles", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_plain")));
  for (let j = 0; j < 3; j++) assert.ok(isSettled(data, 0, 2, j));
  assert.ok(!isSettled(data, 0, 1, 0));
  assert.equal(settleRow(data, 0, 0), 2);
});

test("missing cells are never settled and sectionMax is cached", () => {
  // lens_missing: layer 2 of prompt 0 is not finite (cells 10, 11, 12).
  const data = decodePayload(...Object.values(lensPayload("lens_missing")));
  assert.ok(!isSettled(data, 0, 2, 0));
  assert.equal(settleRow(data, 0, 0), -1);
  // Python scales a bits section to its largest value: the largest raw value is the top step.
  assert.equal(sectionMax(data, "kl_to_final"), 65535);
  assert.equal(data.maxima.kl_to_final, 65535);
  assert.equal(sectionMax(data, "nope"), 0);
});

test("a position whose final distribution is missing settles nowhere", () => {
  // lens_final_missing: the model's own output at column 1 was not finite.
  const data = decodePayload(...Object.values(lensPayload("lens_final_missing")));
  assert.ok(isFinalMissing(data, 1) && !isFinalMissing(data, 0));
  assert.ok(!isSettled(data, 0, 2, 1));
  assert.ok(isSettled(data, 0, 2, 0));
  assert.equal(settleRow(data, 0, 1), -1);
});

test("without the model's final prediction nothing is settled", () => {
  // lens_no_final: layers 0..2 of a 5-layer model.
  const data = decodePayload(...Object.values(lensPayload("lens_no_final")));
  assert.equal(data.arrays.final_tokens, undefined);
  assert.ok(!isSettled(data, 0, 2, 0));
  assert.equal(data.metrics[2].available, false);
  assert.match(data.metrics[2].unavailableReason, /^needs the model's final layer \(4\), which this result does not hold$/);
});

test("the layer trait is a model layer: rows by model layer, the nearest when absent", () => {
  const layers = [0, 4, 8, 11];
  assert.equal(rowOfModelLayer(layers, 8), 2);
  assert.equal(rowOfModelLayer(layers, 11), 3);
  assert.equal(rowOfModelLayer(layers, 5), 1);
  assert.equal(rowOfModelLayer(layers, 99), 3);
  assert.equal(rowOfModelLayer(layers, -3), 0);
  assert.equal(rowOfModelLayer(layers, null), 0);
  assert.equal(rowOfModelLayer(layers, "x"), 0);
});

test("createLocalModel: DataViews from base64 or buffers, change events, off", () => {
  const model = createLocalModel({ _meta: { version: 2 }, _sections: { a: "AQID", b: new Uint8Array([4, 5]).buffer }, layer: 2 });
  const a = model.get("_sections").a;
  assert.ok(a instanceof DataView);
  assert.deepEqual([a.getUint8(0), a.getUint8(2)], [1, 3]);
  assert.equal(model.get("_sections").b.getUint8(1), 5);
  assert.equal(model.get("prompt"), 0);
  assert.equal(model.get("layer"), 2);
  let calls = 0;
  const fn = () => { calls += 1; };
  model.on("change:layer", fn);
  model.set("layer", 3);
  model.set("layer", 3); // unchanged: no event
  assert.equal(calls, 1);
  model.off("change:layer", fn);
  model.set("layer", 4);
  assert.equal(calls, 1);
  model.save_changes();
  // No kernel behind it: no `send` (the live lens widget reads that as "no kernel").
  assert.equal(model.send, undefined);
});
