// The golden payloads (tests/golden/*.json, written by tests/golden_payloads.py): the front end
// decodes what Python meant. Each file's `expected` was read in Python from the result itself
// (not from the payload); values may differ from it by the payload's quantisation only, half a
// step of the section's scale as its meta says (a non-zero value under half a step reads as one
// step: only an exact 0 is stored as 0).
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeDataset } from "../src/dataset/data.js";
import { decodeDiff, diffIndex, diffMetric, tokenAt } from "../src/diff/payload.js";
import { changeAt, metricValueAt } from "../src/diff/colour.js";
import { cellDetails } from "../src/heatmap/details.js";
import { metricNames, metricValue } from "../src/heatmap/metrics.js";
import { cellIndex, cellTargetIndex, decodeLenses, decodePayload, isAnswerTop1, isFinalMissing, isMissing, promptSetIndex } from "../src/heatmap/payload.js";
import { isGenerated, tokenRole } from "../src/heatmap/token_marks.js";
import { datasetPayload, diffPayload, golden, goldenNames, lensPayload, quantised } from "./golden.mjs";

/** `actual` within the quantiser's tolerance of `expected` (null: no value, so NaN). */
function near(actual, expected, scale, what) {
  if (expected === null) {
    assert.ok(Number.isNaN(actual), `${what}: expected no value, got ${actual}`);
    return;
  }
  assert.ok(quantised(actual, expected, scale), `${what}: ${actual} vs ${expected} (step ${scale})`);
}

// Each payload is read twice: base64 text, as the HTML export sends it, and DataViews at an odd
// byte offset, as anywidget may hand them over.
const TRANSPORTS = [null, 1];

test("there are golden payloads of every widget", () => {
  assert.ok(goldenNames("lens_").length >= 4);
  assert.ok(goldenNames("lenses_").length >= 2);
  assert.ok(goldenNames("diff_").length >= 2);
  assert.ok(goldenNames("dataset_").length >= 2);
});

/**
 * Every cell of one decoded lens against what Python read from its result.
 * @param {any} data the decoded lens
 * @param {any} expected the lens's `expected` (see tests/golden_payloads.py's lens_expected)
 * @param {string} where
 */
function checkLens(data, expected, where) {
  assert.deepEqual(data.layers, expected.layers);
  assert.deepEqual(data.lengths, expected.lengths);
  assert.deepEqual(data.prompts, expected.prompts);
  assert.deepEqual(metricNames(data), expected.metrics, "the registry is Python's, in its order");
  assert.ok(Math.abs(data.maxEntropy - Math.log2(expected.vocab_size)) < 1e-12);
  assert.deepEqual(data.targets, expected.targets);
  assert.deepEqual(data.answerSets.map((s) => [s.name, s.answers]), expected.answer_sets.map((s) => [s.name, s.answers]));
  const { arrays, scales } = data;
  for (const cell of expected.cells) {
    const { prompt: p, row, position: j } = cell;
    const at = `${where} cell (prompt ${p}, row ${row}, position ${j})`;
    const idx = cellIndex(data, p, row, j);
    const col = data.offsets[p] + j;
    assert.equal(data.layers[row], cell.layer, at);
    assert.equal(data.tokens[arrays.input_ids[col]], cell.input, `${at}: input`);
    assert.equal(isMissing(data, idx), cell.missing, `${at}: missing`);
    const details = cellDetails(data, p, row, j);
    if (cell.missing) {
      assert.deepEqual(details.top, [], at);
    } else {
      assert.equal(data.tokens[arrays.predicted_tokens[idx]], cell.top1, `${at}: top-1`);
      assert.deepEqual(details.top.map((t) => t.token), cell.top_k.map(([token]) => token), `${at}: top-k tokens`);
      details.top.forEach((t, r) => near(t.prob, cell.top_k[r][1], r === 0 ? scales.max_probs : scales.topk_probs, `${at}: top-k ${r}`));
    }
    if (cell.final === null) assert.ok(!arrays.final_tokens || isFinalMissing(data, col), `${at}: no final prediction`);
    else assert.equal(data.tokens[arrays.final_tokens[col]], cell.final, `${at}: final prediction`);
    for (const spec of data.metrics) {
      if (spec.perTarget) {
        // One value per tracked token: the token the view shows is the metric's `target`.
        assert.equal(spec.available, cell.targets.length > 0, `${at}: ${spec.name} is offered exactly when tokens are tracked`);
        cell.targets.forEach(([prob], t) => near(metricValue(data, spec.name, idx, t), prob, scales[spec.field], `${at}: ${spec.name} of target ${t}`));
        assert.ok(Number.isNaN(metricValue(data, spec.name, idx, cell.targets.length)), `${at}: no target past the last`);
        continue;
      }
      const value = cell.values[spec.field];
      if (!spec.available) {
        assert.ok(value === undefined || value === null, `${at}: ${spec.name} is unavailable but the result has ${value}`);
        continue;
      }
      near(metricValue(data, spec.name, idx), value, scales[spec.field], `${at}: ${spec.name}`);
    }
    if ("answer_token_ranks" in cell.values && cell.values.answer_token_ranks !== null) {
      assert.equal(arrays.answer_token_ranks[idx], cell.values.answer_token_ranks, `${at}: answer rank`);
    }
    if (cell.answer_top1 !== null) assert.equal(isAnswerTop1(data, p, row, j), cell.answer_top1, `${at}: answer is top-1`);
    cell.targets.forEach(([prob, rank], t) => {
      const k = cellTargetIndex(data, p, row, j, t);
      if (prob === null) {
        assert.ok(cell.missing, `${at}: target ${t} without a value in a cell that has one`);
        return;
      }
      near(arrays.target_probs[k] * scales.target_probs, prob, scales.target_probs, `${at}: target ${t}`);
      assert.equal(arrays.target_ranks[k], rank, `${at}: target ${t} rank`);
    });
    assert.equal(isGenerated(data, p, j), Boolean(cell.generated), `${at}: generated`);
    if (cell.generated === null) assert.equal(arrays.generated, undefined);
    assert.equal(tokenRole(data, p, j), cell.role, `${at}: role`);
  }
  expected.answer_sets.forEach((set, s) => {
    set.probs.forEach((row, i) => row.forEach((prob, p) => {
      const k = promptSetIndex(data, i, p, s);
      const at = `${where} answer set ${set.name}, row ${i}, prompt ${p}`;
      if (prob === null) {
        // No answer, or the cell where the prompt ends has no value: stored as 0.
        assert.equal(arrays.answer_probs[k], 0, at);
        assert.equal(arrays.answer_ranks[k], 0, at);
        return;
      }
      near(arrays.answer_probs[k] * scales.answer_probs, prob, scales.answer_probs, at);
      assert.equal(arrays.answer_ranks[k], set.ranks[i][p], at);
    }));
  });
}

for (const name of goldenNames("lens_")) {
  test(`${name}: every cell decodes to the result's tokens and values`, () => {
    const { expected } = golden(name);
    for (const byteOffset of TRANSPORTS) {
      const where = `${name} (${byteOffset === null ? "base64" : `offset ${byteOffset}`})`;
      checkLens(decodePayload(...Object.values(lensPayload(name, { byteOffset }))), expected, where);
    }
  });
}

for (const name of goldenNames("lenses_")) {
  test(`${name}: every lens side by side decodes to its own result's tokens and values`, () => {
    const { expected } = golden(name);
    for (const byteOffset of TRANSPORTS) {
      const where = `${name} (${byteOffset === null ? "base64" : `offset ${byteOffset}`})`;
      const lenses = decodeLenses(...Object.values(lensPayload(name, { byteOffset })));
      assert.deepEqual(lenses.map((lens) => [lens.lensName, lens.lensTitle]), expected.lenses.map((lens) => [lens.name, lens.title]));
      // The per-position sections are sent once and read by every lens (from the same bytes,
      // unless unaligned data had to be copied).
      if (byteOffset === null) for (const lens of lenses.slice(1)) assert.equal(lens.arrays.input_ids.buffer, lenses[0].arrays.input_ids.buffer);
      lenses.forEach((lens, i) => checkLens(lens, expected.lenses[i], `${where} lens ${lens.lensName}`));
    }
  });
}

for (const name of goldenNames("diff_")) {
  test(`${name}: every cell decodes to the comparison's values and both sides' tokens`, () => {
    const { expected } = golden(name);
    for (const byteOffset of TRANSPORTS) {
      const where = `${name} (${byteOffset === null ? "base64" : `offset ${byteOffset}`})`;
      const diff = decodeDiff(...Object.values(diffPayload(name, { byteOffset })));
      assert.deepEqual(diff.labels, expected.labels);
      assert.deepEqual(diff.layers, expected.layers);
      assert.deepEqual(diff.bLayers, expected.b_layers);
      assert.deepEqual([diff.depthA, diff.depthB], [expected.depth_a, expected.depth_b]);
      assert.equal(diff.meta.align, expected.align);
      assert.equal(diffMetric(diff, "kl")?.available, expected.kl);
      const { arrays, scales } = diff;
      for (const cell of expected.cells) {
        const { prompt: p, row, position: j } = cell;
        const at = `${where} cell (prompt ${p}, row ${row}, position ${j})`;
        const idx = diffIndex(diff, row, p, j);
        const t = diff.offsets[p] + j;
        assert.equal(Boolean(arrays.aligned[idx]), cell.aligned, `${at}: aligned`);
        assert.equal(tokenAt(diff, "input_a", t), cell.input_a, `${at}: input a`);
        assert.equal(arrays.position_b[t] - 1, cell.position_b ?? -1, `${at}: partner position`);
        if (cell.position_b !== null) assert.equal(tokenAt(diff, "input_b", t), cell.input_b, `${at}: input b`);
        assert.equal(tokenAt(diff, "token", t), cell.token || null, `${at}: chosen token`);
        for (const [side, top] of [["a", cell.top_a], ["b", cell.top_b]]) {
          for (let r = 0; r < diff.K; r++) {
            const k = idx * diff.K + r;
            assert.equal(tokenAt(diff, `topk_tokens_${side}`, k), top[r]?.[0] ?? null, `${at}: top-k ${side} ${r}`);
            if (top[r]) near(arrays[`topk_probs_${side}`][k] * scales[`topk_probs_${side}`], top[r][1], scales[`topk_probs_${side}`], `${at}: top-k ${side} ${r}`);
          }
        }
        if (!cell.aligned) continue;
        assert.equal(Boolean(arrays.top1_differs[idx]), cell.top1_differs, `${at}: top-1 differs`);
        assert.equal(Boolean(arrays.delta_known[idx]), cell.delta_prob !== null, `${at}: delta known`);
        if (cell.delta_prob !== null) {
          for (const field of ["delta_prob", "token_prob_a", "token_prob_b"]) near(arrays[field][idx] * scales[field], cell[field], scales[field], `${at}: ${field}`);
        }
        if (expected.kl) near(arrays.kl_a_to_b[idx] * scales.kl_a_to_b, cell.kl_a_to_b, scales.kl_a_to_b, `${at}: kl`);
        else assert.equal(arrays.kl_a_to_b, undefined);
        // Each heatmap metric's change: a's value, b's and b − a, as the results' fields hold them.
        assert.ok(Object.keys(cell.changes).length >= 4, `${at}: the heatmap metrics' changes`);
        for (const [name, [va, vb, delta]] of Object.entries(cell.changes)) {
          const got = changeAt(diff, name, idx);
          if (delta === null) {
            assert.equal(got, null, `${at}: ${name} has no value`);
            continue;
          }
          assert.ok(got, `${at}: ${name} known`);
          near(got.a, va, got.steps.a, `${at}: ${name} a`);
          near(got.b, vb, got.steps.b, `${at}: ${name} b`);
          near(got.delta, delta, got.steps.delta, `${at}: ${name} b − a`);
          assert.equal(metricValueAt(diff, name, idx), got.delta);
        }
      }
    }
  });
}

for (const name of goldenNames("dataset_")) {
  test(`${name}: the data set's arrays, answers and summary decode as Python holds them`, () => {
    const { expected } = golden(name);
    for (const byteOffset of [0, 1]) {
      const { meta, data } = datasetPayload(name, { byteOffset });
      const d = decodeDataset(meta, data);
      assert.deepEqual(d.layers, expected.layers);
      assert.deepEqual(d.prompts, expected.prompts);
      assert.equal(d.ci, expected.ci);
      assert.equal(d.canOpen, expected.can_open);
      assert.ok(d.reason.length > 0, "a data set without its model says why no heatmap opens");
      assert.deepEqual(d.sets.map((s) => s.name), expected.sets.map((s) => s.name));
      assert.deepEqual(d.lenses, expected.lenses);
      assert.deepEqual(d.sets.map((s) => [s.lens, s.label]), expected.sets.map((s) => [s.lens, s.label]));
      expected.sets.forEach((set, s) => {
        const got = d.sets[s];
        assert.deepEqual(got.answers, set.answers);
        // The commitment's distribution: the share committed at or before each layer, as
        // Python's bootstrap mean; the expected value is counted directly from the ranks.
        set.committed.forEach((share, l) => assert.ok(Math.abs(/** @type {number} */ (got.summary.committed?.[l]) - share) < 1e-12, `${name} ${set.label} committed at column ${l}`));
        assert.equal(got.nPrompts, set.n_prompts);
        const n = d.layers.length;
        set.probs.forEach((row, p) => row.forEach((prob, l) => {
          const at = `${name} ${set.name} prompt ${p} layer column ${l}`;
          const value = got.probs[p * n + l];
          // float32 both ways: exact.
          if (prob === null) assert.ok(Number.isNaN(value), at);
          else assert.equal(value, prob, at);
          assert.equal(got.ranks[p * n + l], set.ranks[p][l], at);
        }));
        set.mean.forEach((mean, l) => {
          const value = got.summary.answer_prob_mean[l];
          if (mean === null) assert.equal(value, null);
          else assert.ok(Math.abs(/** @type {number} */ (value) - mean) < 1e-12, `${set.name} mean at column ${l}`);
        });
      });
    }
  });
}
