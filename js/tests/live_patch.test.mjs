// Patching from the widget (src/live/patch.js): the cell patched, the sources offered, the words
// for a patch shown, and the adapter that serves the lens diff's view from the lens widget's
// `_patch_meta` / `_patch_sections` (payloads Python wrote: tests/golden/diff_*.json, lens_*.json).
import assert from "node:assert/strict";
import { test } from "node:test";

import { createLocalModel } from "../src/shared/local_model.js";
import { decodeDiff } from "../src/diff/payload.js";
import { decodePayload } from "../src/heatmap/payload.js";
import { isPatch, patchModel, patchSources, patchSummary, patchTarget, sourceOf } from "../src/heatmap/live/patch.js";
import { diffPayload, lensPayload } from "./golden.mjs";

test("the cell patched: the pinned one, its model layer, on a block-output row only", () => {
  const plain = lensPayload("lens_plain");
  const data = decodePayload(plain.meta, plain.sections);
  assert.deepEqual(patchTarget(data, null), { ok: false, reason: "Pin a cell to patch it." });
  assert.deepEqual(patchTarget(data, { prompt: 1, layer_index: 2, position: 1 }), { ok: true, prompt: 1, row: 2, layer: 2, position: 1, label: "prompt 1 · L2 · pos 1" }); // prompt 1 is `prompt: 1`: counted as Python indexes
  assert.equal(patchTarget(data, { prompt: 5, layer_index: 0, position: 0 }).ok, false);
  // Rows after each attention (resid_mid) are no block output: a patch cannot be put there.
  const sub = lensPayload("lens_sublayers");
  const subData = decodePayload(sub.meta, sub.sections);
  const mid = patchTarget(subData, { prompt: 0, layer_index: 2, position: 1 });
  assert.equal(mid.ok, false);
  assert.match(/** @type {any} */ (mid).reason, /block-output row/);
  const post = patchTarget(subData, { prompt: 0, layer_index: 3, position: 1 });
  assert.deepEqual(post, { ok: true, prompt: 0, row: 3, layer: 1, position: 1, label: "prompt 0 · L1 · pos 1" });
});

test("sources: every other prompt, zero, the mean; the message's source", () => {
  const sources = patchSources(["The capital of France is", "Rome is in", "a\nb"], 1);
  assert.deepEqual(sources.map((s) => s.value), ["0", "2", "zero", "mean"]);
  assert.equal(sources[0].label, "prompt 0: The capital of France is");
  assert.equal(sources[1].label, "prompt 2: a↵b", "token text made visible, as everywhere");
  assert.deepEqual(patchSources(["only"], 0).map((s) => s.value), ["zero", "mean"]);
  assert.equal(sourceOf("2"), 2);
  assert.equal(sourceOf("zero"), "zero");
  assert.equal(sourceOf("mean"), "mean");
});

test("the patch shown, in words, with the answer's probability before → after", () => {
  const patch = { prompt: 0, layer: 3, position: 4, source: 1, answer: " Paris", answer_prob_clean: 0.8123, answer_prob_patched: 0.0421 };
  assert.ok(isPatch(patch));
  assert.deepEqual(patchSummary(patch, ["The capital of France is", "The capital of Italy is"]), {
    title: "Prompt 0: block 3's output at position 4 replaced by prompt 1's (The capital of Italy is).",
    answer: "Answer ␣Paris: 81.2% → 4.21%",
  });
  assert.deepEqual(patchSummary({ prompt: 0, layer: 1, position: 0, source: "zero", answer: null }, ["x"]), {
    title: "Block 1's output at position 0 set to zero.",
    answer: "",
  });
  // A tracked token: its probability before and after, with the answer's or alone.
  const tracked = { prompt: 1, layer: 0, position: 3, source: 0, answer: null, target: " Rome", target_prob_clean: 0.0012, target_prob_patched: 0.78 };
  assert.equal(patchSummary(tracked, ["a", "b"]).answer, "Tracked ␣Rome: 0.12% → 78%");
  assert.equal(patchSummary({ ...patch, target: " Rome", target_prob_clean: 0.0012, target_prob_patched: 0.78 }, ["a", "b"]).answer, "Answer ␣Paris: 81.2% → 4.21% · Tracked ␣Rome: 0.12% → 78%");
  assert.equal(patchSummary({ ...tracked, target_prob_clean: null }, ["a", "b"]).answer, "", "no last layer among the rows: nothing to say");
  assert.equal(patchSummary({ prompt: 0, layer: 1, position: 0, source: "mean" }, ["x", "y"]).title, "Prompt 0: block 1's output at position 0 set to its mean.");
  // The patched position's token, named once in the panel's one title line.
  assert.equal(patchSummary({ prompt: 0, layer: 2, position: 3, source: "zero" }, ["x", "y"], " France").title, "Prompt 0: block 2's output at position 3 (\u2423France) set to zero.");
  for (const value of [null, {}, { prompt: 0, layer: 1, position: 0, source: "half" }, { prompt: 0, layer: "1", position: 0, source: 0 }]) {
    assert.equal(isPatch(value), false, JSON.stringify(value));
  }
});

test("the adapter: the diff's traits from the patch traits, one change for a new patch", () => {
  const prefix = diffPayload("diff_prefix");
  const depth = diffPayload("diff_depth");
  const lens = createLocalModel({ _patch_meta: prefix.meta, _patch_sections: prefix.sections, patch: { prompt: 0, layer: 0, position: 0, source: "zero" } });
  const model = patchModel(lens);
  assert.ok(model.ready());
  assert.equal(decodeDiff(model.get("_meta"), model.get("_sections")).labels[1], prefix.meta.labels[1]);
  assert.equal(model.get("prompt"), 0);
  assert.equal(model.get("metric"), "delta_prob");
  assert.equal(model.get("selected"), null);
  assert.equal(model.send, undefined, "it sends nothing");
  let heard = 0;
  const onMeta = () => {
    heard += 1;
    // Whenever the diff hears of a change, the two traits it reads belong together (or the
    // patch was cleared).
    if (model.ready()) decodeDiff(model.get("_meta"), model.get("_sections"));
  };
  model.on("change:_meta", onMeta);
  // Python sets the next patch's metadata, then its sections: the diff keeps the last good patch
  // until both are there, then hears one change. (Hand-made: the next patch's metadata for a
  // prompt of 4 tokens, whose sections have not arrived; the two golden diffs have 3 tokens.)
  const longer = { ...depth.meta, lengths: [4], total: 4 };
  lens.set("_patch_meta", longer);
  assert.equal(heard, 0);
  assert.equal(model.get("_meta").labels[1], prefix.meta.labels[1]);
  lens.set("_patch_sections", { ...depth.sections });
  assert.equal(heard, 0, "still the 3-token sections");
  lens.set("_patch_meta", depth.meta);
  assert.equal(heard, 1);
  assert.equal(model.get("_meta").labels[1], depth.meta.labels[1]);
  // The diff's own choices stay here, not in the lens widget's traits of the same names.
  let selected = 0;
  model.on("change:selected", () => (selected += 1));
  model.set("selected", { prompt: 0, layer_index: 1, position: 2 });
  model.set("metric", "kl");
  model.set("_meta", {}); // the diff never sets its payload; if it did, nothing would change
  assert.equal(selected, 1);
  assert.deepEqual(model.get("selected"), { prompt: 0, layer_index: 1, position: 2 });
  assert.equal(lens.get("selected"), null);
  assert.equal(model.get("metric"), "kl");
  assert.ok(model.ready());
  // Cleared: empty, one change.
  lens.set("_patch_meta", {});
  assert.equal(heard, 2);
  assert.equal(model.ready(), false);
  assert.deepEqual(model.get("_meta"), {});
  // Disposed: the lens widget's changes no longer reach it.
  model.dispose();
  lens.set("_patch_meta", prefix.meta);
  lens.set("_patch_sections", { ...prefix.sections });
  assert.equal(heard, 2);
});

test("the adapter with no patch yet", () => {
  const lens = createLocalModel({});
  const model = patchModel(lens);
  assert.equal(model.ready(), false);
  assert.deepEqual(model.get("_meta"), {});
});
