import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeDiff, diffIndex, tokenAt } from "../src/diff/payload.js";
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
    assert.equal(tokenAt(diff, "input_a", 0), "The");
  }
});

test("token entries index the table directly, and a no_token_ mask marks no token", () => {
  const { meta, sections } = diffPayload("diff_prefix");
  const diff = decodeDiff(meta, sections);
  assert.equal(meta.version, 2);
  assert.equal(diff.arrays.input_a[0], meta.tokens.indexOf("The"));
  assert.equal(diff.arrays.token[0], meta.tokens.indexOf(" Paris"));
  assert.equal(tokenAt(diff, "token", 0), " Paris");
  // Position 2 has no partner in b: its input_b entry is 0 and marked, not the table's first string.
  assert.equal(diff.arrays.input_b[2], 0);
  assert.equal(diff.arrays.no_token_input_b?.[2], 1);
  assert.equal(tokenAt(diff, "input_b", 2), null);
  assert.equal(tokenAt(diff, "input_b", 0), "The");
  assert.equal(tokenAt(diff, "no_such_section", 0), null);
  // Malformed on purpose: an index outside the table, and a mask of the wrong size.
  const outside = { ...diff, arrays: { ...diff.arrays, token: new Uint16Array([99, 99, 99]) } };
  assert.equal(tokenAt(outside, "token", 0), null);
  assert.throws(() => decodeDiff(meta, { ...sections, no_token_input_b: new Uint8Array(5) }), /no_token_input_b/);
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
