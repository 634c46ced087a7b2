// Lenses side by side: decoding a payload of several lenses into one `LensData` each, the lens
// menu's entries, and the trajectory chart's answer line under every other lens. The payloads
// are the golden files Python writes (tests/golden/lenses_*.json): lenses_answers holds the
// answers case twice, the "tuned" copy made with shift 1 (every row but the last predicts the
// token one further on, its answers 50/65535 more likely); lenses_three holds the plain case
// under three lenses, the third with shift 2 and row 0 of column 1 not finite.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeLenses, decodePayload, lastPositionIndex, promptSetIndex } from "../src/heatmap/payload.js";
import { lensSeries, trajectorySeries } from "../src/heatmap/trajectory.js";
import { LINE_STYLES, seriesStyle } from "../src/heatmap/trajectory_layout.js";
import { lensMenuText } from "../src/shared/lens_names.js";
import { golden, lensPayload } from "./golden.mjs";

const U16 = 65535;

/** @param {string} name */
function lensesOf(name, options = {}) {
  const { meta, sections } = lensPayload(name, options);
  return decodeLenses(meta, sections);
}

test("a payload of several lenses decodes to one LensData per lens, in order", () => {
  const [logit, tuned] = lensesOf("lenses_answers");
  assert.deepEqual([logit.lensName, logit.lensKind, logit.lensTitle], ["logit", "logit", "Logit lens"]);
  assert.deepEqual([tuned.lensName, tuned.lensKind, tuned.lensTitle], ["tuned", "tuned", "Tuned lens"]);
  // Each reads its own sections without their prefix, and the shared ones.
  assert.notEqual(logit.arrays.predicted_tokens, tuned.arrays.predicted_tokens);
  assert.deepEqual([...tuned.arrays.input_ids], [...logit.arrays.input_ids]);
  assert.deepEqual([...tuned.arrays.final_tokens], [...logit.arrays.final_tokens]);
  // Shift 1: row 0 of column 0 predicts token 1 under the tuned lens, 0 under the logit lens;
  // the last row (2) is the model's own, the same under both.
  assert.equal(logit.arrays.predicted_tokens[0], 0);
  assert.equal(tuned.arrays.predicted_tokens[0], 1);
  for (let c = 0; c < tuned.T; c++) assert.equal(tuned.arrays.predicted_tokens[2 * tuned.T + c], logit.arrays.predicted_tokens[2 * logit.T + c]);
  assert.deepEqual(tuned.metrics.map((m) => m.name), logit.metrics.map((m) => m.name));
  assert.equal(tuned.topK, 3);
  // The first lens alone is what a one-lens reader (decodePayload) makes of the payload.
  const { meta, sections } = lensPayload("lenses_answers");
  assert.deepEqual([...decodePayload(meta, sections).arrays.max_probs], [...logit.arrays.max_probs]);
});

test("a payload of one lens (version 2 or 3) decodes to one lens named by its kind", () => {
  const [only] = lensesOf("lens_plain");
  assert.equal(only.lensName, "logit");
  const { meta, sections } = lensPayload("lens_plain");
  delete meta.lenses;
  meta.version = 2;
  const [old] = decodeLenses(meta, sections);
  assert.equal(old.lensName, "logit");
  assert.equal(old.L, 3);
});

test("detail sections not sent yet are missing for every lens; base ones are there for all", () => {
  const lenses = lensesOf("lenses_three", { details: false });
  assert.equal(lenses.length, 3);
  for (const lens of lenses) {
    assert.ok(lens.arrays.max_probs && lens.arrays.predicted_tokens, lens.lensName);
    assert.equal(lens.arrays.entropy, undefined, lens.lensName);
  }
  // Row 0 of column 1 was not finite under the third lens alone.
  assert.equal(lenses[2].arrays.missing[1], 1);
  assert.equal(lenses[0].arrays.missing, undefined);
});

test("an inconsistent list of lenses is named", () => {
  const bad = (change, pattern) => {
    const { meta, sections } = lensPayload("lenses_answers");
    change(meta, sections);
    assert.throws(() => decodeLenses(meta, sections), pattern);
  };
  bad((m) => { m.lenses = []; }, /_meta.lenses must be a non-empty list/);
  bad((m) => { m.lenses[1].name = "logit"; }, /names "logit" twice/);
  bad((m) => { m.lenses[1].prefix = ""; }, /_meta.lenses\[1\] must have a name and a prefix/);
  bad((m) => { m.lenses[0].prefix = "0/"; }, /_meta.lenses\[0\] must have a name and a prefix/);
  bad((_m, s) => { delete s["1/max_probs"]; }, /the payload lacks the max_probs section/);
});

test("the chart's line under each other lens is that lens's own answer line, relabelled", () => {
  const [logit, tuned] = lensesOf("lenses_answers");
  const others = [{ name: "tuned", title: "Tuned lens", data: tuned }];
  // Prompt 0's last position (2): the first set's teacher-forced answer, from the tuned lens's
  // own answer_probs (raw (i + 1) * 1000 + 0 * 100 + 0 * 10, plus 50 on rows 0 and 1).
  const [line] = lensSeries(others, 0, 2, "prob");
  assert.equal(line.key, "lens:tuned");
  assert.equal(line.kind, "lens");
  assert.equal(line.label, "capital · Tuned lens");
  assert.equal(line.token, " Paris");
  const expected = [0, 1, 2].map((i) => ((i + 1) * 1000 + (i < 2 ? 50 : 0)) / U16);
  line.values.forEach((v, i) => assert.ok(Math.abs(v - expected[i]) <= 0.5 / U16, `row ${i}: ${v}`));
  assert.equal(tuned.arrays.answer_probs[promptSetIndex(tuned, 0, 0, 0)], 1050);
  const own = trajectorySeries(tuned, 0, 2, "prob").find((s) => s.key === "answer:0");
  assert.deepEqual(line.values, own.values, "exactly what the tuned lens's own chart draws");
  // In rank mode, its ranks.
  const [rank] = lensSeries(others, 0, 2, "rank");
  assert.deepEqual(rank.values, trajectorySeries(tuned, 0, 2, "rank").find((s) => s.key === "answer:0").values);
  // Prompt 1 has no "capital" answer: its first set with one ("language") is drawn instead.
  assert.equal(lensSeries(others, 1, 1, "prob")[0].label, "language · Tuned lens");
  assert.ok(logit !== tuned);
});

test("without answers, the line under each other lens is its final prediction's", () => {
  const [, tuned, jacobian] = lensesOf("lenses_three");
  const others = [
    { name: "tuned", title: "Tuned lens", data: tuned },
    { name: "jacobian", title: "Jacobian lens", data: jacobian },
  ];
  const lines = lensSeries(others, 0, 2, "prob");
  assert.deepEqual(lines.map((s) => [s.key, s.label, s.index]), [
    ["lens:tuned", "final prediction · Tuned lens", 0],
    ["lens:jacobian", "final prediction · Jacobian lens", 1],
  ]);
  // At the last position the base section serves: each lens's final_last_probs.
  const expected = [0, 1, 2].map((i) => jacobian.arrays.final_last_probs[lastPositionIndex(jacobian, i, 0)] * jacobian.scales.final_last_probs);
  assert.deepEqual(lines[1].values, expected);
  // A cell not finite under one lens breaks its line there only (column 1 is prompt 0's position 1).
  const [t, j] = lensSeries(others, 0, 1, "prob");
  assert.equal(j.values[0], null);
  assert.notEqual(t.values[0], null);
});

test("each other lens's line has a look of its own, none an answer's or the final prediction's", () => {
  const lenses = Array.from({ length: 9 }, (_, k) => seriesStyle({ kind: "lens", index: k }));
  const looks = new Set(lenses.map((s) => `${s.colour}|${s.dash}`));
  assert.equal(looks.size, 9);
  const taken = ["final", "answer"].flatMap((kind) => [0, 1].map((index) => seriesStyle({ kind, index })));
  for (const style of lenses) {
    assert.notEqual(style.dash, "", "dashed: the shown lens's solid answer shows through the gaps");
    for (const other of taken) assert.ok(style.colour !== other.colour || style.dash !== other.dash);
  }
  assert.equal(lenses[0].width, LINE_STYLES.answer.width, "as wide as the answer it is compared with");
});

test("the lens menu names each lens by its title, and its name where that says more", () => {
  assert.equal(lensMenuText("logit", "Logit lens"), "Logit lens");
  assert.equal(lensMenuText("tuned", "Tuned lens"), "Tuned lens");
  assert.equal(lensMenuText("tuned-2024", "Tuned lens"), "Tuned lens (tuned-2024)");
  assert.equal(lensMenuText("J", "Jacobian lens"), "Jacobian lens (J)");
  assert.ok(golden("lenses_three").meta.lenses.length === 3);
});
