// "Describe this cell" (src/live/describe.js): offered for a Patchscope's pinned block-output cell
// only, the request it sends, and the reply's text shown as text, for the cell it is about.
import assert from "node:assert/strict";
import { test } from "node:test";

import { describeTarget, DESCRIBE_ACTION } from "../src/live/describe.js";
import { decodePayload } from "../src/payload.js";
import { lensPayload } from "./golden.mjs";

test("the cell described: the pinned one, its model layer, for a Patchscope on a block-output row", () => {
  const plain = lensPayload("lens_plain");
  const data = decodePayload(plain.meta, plain.sections);
  const cell = { prompt: 1, layer_index: 2, position: 1 };
  // The logit lens shown: nothing to describe.
  assert.deepEqual(describeTarget(data, cell), { ok: false, reason: "The lens shown is not a Patchscope." });
  const patchscope = { ...data, lensKind: "patchscope" };
  assert.deepEqual(describeTarget(patchscope, cell), { ok: true, prompt: 1, layer: 2, position: 1, label: "prompt 1 · L2 · pos 1" });
  assert.deepEqual(describeTarget(patchscope, null), { ok: false, reason: "Pin a cell to describe it." });
  const sub = lensPayload("lens_sublayers");
  const subData = { ...decodePayload(sub.meta, sub.sections), lensKind: "patchscope" };
  const mid = subData.sites.indexOf("resid_mid");
  const refused = describeTarget(subData, { prompt: 0, layer_index: mid, position: 0 });
  assert.equal(refused.ok, false);
  assert.match(refused.ok ? "" : refused.reason, /^A Patchscope reads a block's output/);
  assert.equal(DESCRIBE_ACTION, "describe_patchscope");
});
