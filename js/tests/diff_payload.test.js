import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeDiff, diffIndex, tokenOf } from "../src/diff/payload.js";
import { diffPayload } from "./golden.mjs";

// diff_prefix (tests/golden/diff_prefix.json, written by tests/golden_payloads.py): "The city<b>x</b>"
// (a, 2 layers) against "The city" (b), positions paired over the shared prefix, so position 2 has
// no partner; the chosen token is a's final prediction, " Paris", everywhere.

test("decodes every section, at any byte offset (unaligned ones are copied)", () => {
  for (const offset of [0, 1, 3, null]) {
    const { meta, sections } = diffPayload("diff_prefix", { byteOffset: offset });
    const diff = decodeDiff(meta, sections);
    assert.equal(diff.L, 2);
    assert.equal(diff.T, 3);
    assert.equal(diff.K, 2);
    assert.ok(diff.arrays.delta_prob instanceof Int16Array);
    assert.ok(Math.abs(diff.arrays.delta_prob[diffIndex(diff, 0, 0, 0)] * diff.scales.delta_prob + 0.5) < 1e-4);
    assert.equal(Math.round(diff.arrays.delta_prob[diffIndex(diff, 1, 0, 1)] * diff.scales.delta_prob * 1000) / 1000, 0.5);
    assert.equal(diff.arrays.position_b[2], 0);
    assert.equal(tokenOf(diff, diff.arrays.input_a[0]), "The");
  }
});

test("token entries are index + 1, and 0 means no token", () => {
  const { meta, sections } = diffPayload("diff_prefix");
  const diff = decodeDiff(meta, sections);
  assert.equal(tokenOf(diff, 0), null);
  assert.equal(tokenOf(diff, 1), meta.tokens[0]);
  assert.equal(tokenOf(diff, meta.tokens.indexOf(" Paris") + 1), " Paris");
  assert.equal(tokenOf(diff, diff.arrays.token[0]), " Paris");
  assert.equal(tokenOf(diff, 99), null);
});

test("rejects a payload of another format, version or size, naming the problem", () => {
  // Malformed on purpose: the golden payload, then one thing broken.
  const { meta, sections } = diffPayload("diff_prefix");
  assert.throws(() => decodeDiff({ ...meta, format: "logit_lens" }, sections), /not a lens-diff payload/);
  assert.throws(() => decodeDiff({ ...meta, version: 9 }, sections), /version 9/);
  const { aligned: _dropped, ...rest } = sections;
  assert.throws(() => decodeDiff(meta, rest), /lacks the aligned section/);
  assert.throws(() => decodeDiff(meta, { ...sections, aligned: new Uint8Array(5) }), /section aligned: expected \d+ uint8 values \(\d+ bytes\), got 5 bytes/);
  const wrong = { ...meta, sections: { ...meta.sections, aligned: { ...meta.sections.aligned, dtype: "float64" } } };
  assert.throws(() => decodeDiff(wrong, sections), /section aligned: unsupported dtype/);
});
