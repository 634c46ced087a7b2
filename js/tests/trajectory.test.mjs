import assert from "node:assert/strict";
import { test } from "node:test";

import { colourImage } from "../src/heatmap/colour_image.js";
import { cellDetails, readoutText, tooltipModel } from "../src/heatmap/details.js";
import { cellRect, computeLayout } from "../src/shared/layout.js";
import { metricAvailable, metricValue } from "../src/heatmap/metrics.js";
import { cellTargetIndex, decodePayload, isAnswerTop1, promptOfColumn, promptSetIndex } from "../src/heatmap/payload.js";
import { chartColumn, niceRankMax, rankAxisMax, seriesShown, seriesSummary, trajectorySeries, valueScale } from "../src/heatmap/trajectory.js";
import {
  answerMarkTriangle,
  chartBeside,
  drawOrder,
  LINE_STYLES,
  rowAtY,
  rowCentreY,
  seriesSegments,
  seriesStyle,
  SIDE,
  strokeAttributes,
  swatchLine,
  trajectoryRowsGeometry,
} from "../src/heatmap/trajectory_layout.js";
import { SERIES_COLOURS } from "../src/shared/theme.js";
import { lensPayload } from "./golden.mjs";

// The golden payload of a result with answers and targets (tests/golden/lens_answers.json,
// written by tests/golden_payloads.py): every value a formula of its indices, so the tests
// compute what to expect without the code under test. Its top-1 and final predictions follow
// lens_plain's formulas (top-1 (i + c) mod 5 at (i + 1) / 3; final prediction at rank 7 (2 - i),
// with probability 1000 i / 65535); token 3 is " Paris".
const L = 3;
const LENGTHS = [3, 2];
const T = 5;
const P = 2;
const TARGETS = [" Paris", "<b>x</b>"];
const SETS = [
  { name: "capital", answers: [" Paris", null], n_tokens: [1, null] },
  { name: "language", answers: [" French", " English"], n_tokens: [2, 1] },
];
const S = SETS.length;
const NT = TARGETS.length;
const U16 = 65535;

/** Raw stored values (uint16 probabilities are value × 65535), as Python's result holds them. */
const raw = {
  answerProb: (i, p, s) => (i + 1) * 1000 + p * 100 + s * 10,
  answerRank: (i, p, s) => (L - 1 - i) * 30 + p + s,
  answerTokenProb: (i, c) => (i + 1) * 2000 + c,
  answerTokenRank: (i, c) => (L - 1 - i) * 5 + c,
  targetProb: (i, c, j) => (i + 1) * 3000 + c * 10 + j,
  targetRank: (i, c, j) => (L - 1 - i) * 400 + c * 3 + j,
};

/**
 * lens_answers (`missing`: lens_answers_missing, where row 1 of prompt 0 is not finite);
 * `details: false` keeps the base sections only.
 */
function answerPayload({ details = true, missing = false } = {}) {
  return lensPayload(missing ? "lens_answers_missing" : "lens_answers", { details });
}

const data = decodePayload(...Object.values(answerPayload()));
const close = (a, b, tol = 1e-9) => Math.abs(a - b) <= tol;

test("answer sets, targets and the new section shapes are decoded", () => {
  assert.deepEqual(data.answerSets.map((s) => s.name), SETS.map((s) => s.name));
  assert.deepEqual(data.answerSets.map((s) => s.answers), SETS.map((s) => s.answers));
  assert.deepEqual(data.answerSets[0].answers, [" Paris", null]);
  assert.deepEqual(data.answerSets[1].nTokens, [2, 1]);
  assert.deepEqual(data.targets, TARGETS);
  assert.equal(data.arrays.answer_probs.length, L * P * S);
  assert.equal(data.arrays.target_probs.length, L * T * NT);
  // The indexing of the spec: i*P*S + p*S + s and (i*T + t)*n_targets + j.
  assert.equal(promptSetIndex(data, 2, 1, 1), 2 * P * S + 1 * S + 1);
  assert.equal(cellTargetIndex(data, 1, 2, 1, 1), (2 * T + (3 + 1)) * NT + 1);
  assert.equal(data.arrays.answer_probs[promptSetIndex(data, 2, 1, 1)], raw.answerProb(2, 1, 1));
  assert.equal(data.arrays.answer_probs[promptSetIndex(data, 2, 1, 0)], 0, "prompt 1 has no capital: no value, stored as 0");
  assert.equal(data.arrays.target_ranks[cellTargetIndex(data, 1, 0, 1, 1)], raw.targetRank(0, 4, 1));
  // Prompt 1 has no answer in the first set: the answer's cell sections have no value there.
  assert.deepEqual(Array.from(data.noValue.answer_token_probs), [0, 1]);
});

test("a payload without answers or targets decodes as before", () => {
  const plain = decodePayload(...Object.values(lensPayload("lens_plain")));
  assert.deepEqual(plain.answerSets, []);
  assert.deepEqual(plain.targets, []);
  assert.deepEqual(plain.noValue, {});
});

test("inconsistent answer sets, targets and shapes are named", () => {
  // Malformed on purpose: the golden payload, then one thing broken.
  const bad = (edit, pattern) => {
    const { meta, sections } = answerPayload();
    edit(meta, sections);
    assert.throws(() => decodePayload(meta, sections), pattern);
  };
  bad((m) => { m.answer_sets[0].answers = [" Paris"]; }, /answer_sets\[0\].*one answer \(or null\) per prompt \(2\)/);
  bad((m) => { m.answer_sets[1].answers = [3, null]; }, /answer_sets\[1\]\.answers must hold strings or null/);
  bad((m) => { m.answer_sets = {}; }, /answer_sets must be a list/);
  bad((m) => { m.targets = [1]; }, /targets must be a list of strings/);
  bad((m) => { m.sections.target_probs.shape = [L, T, 3]; }, /section target_probs: shape \[3,5,3\] disagrees.*\[3,5,2\]/);
  bad((m) => { m.sections.answer_probs.shape = [L, S, P + 1]; }, /section answer_probs: shape/);
});

test("at the last position: top-1, final, every set's teacher-forced answer, every target", () => {
  const series = trajectorySeries(data, 0, 2, "prob");
  assert.deepEqual(series.map((s) => s.key), ["top1", "final", "answer:0", "answer:1", "target:0", "target:1"]);
  const byKey = Object.fromEntries(series.map((s) => [s.key, s]));
  const col = 2;
  for (let i = 0; i < L; i++) {
    assert.ok(close(byKey.top1.values[i], Math.round(((i + 1) / L) * U16) / U16));
    assert.ok(close(byKey["answer:0"].values[i], raw.answerProb(i, 0, 0) / U16));
    assert.ok(close(byKey["answer:1"].values[i], raw.answerProb(i, 0, 1) / U16));
    assert.ok(close(byKey["target:1"].values[i], raw.targetProb(i, col, 1) / U16));
    assert.ok(close(byKey.final.values[i], (i * 1000) / U16));
  }
  assert.equal(byKey["answer:0"].token, " Paris");
  assert.equal(byKey["answer:1"].label, "language");
  assert.match(byKey["answer:1"].note, /whole answer \(teacher-forced/);
  assert.equal(byKey["target:1"].token, "<b>x</b>", "a target is data: its raw text, shown later with textContent");
  assert.equal(byKey.final.token, data.tokens[data.arrays.final_tokens[col]]);
});

test("rank mode: no top-1 line (its rank is 0 by definition); ranks read from the rank sections", () => {
  const series = trajectorySeries(data, 1, 1, "rank"); // prompt 1's last position: column 4
  assert.deepEqual(series.map((s) => s.key), ["final", "answer:1", "target:0", "target:1"], "prompt 1 has no answer in the first set");
  const byKey = Object.fromEntries(series.map((s) => [s.key, s]));
  for (let i = 0; i < L; i++) {
    assert.equal(byKey["answer:1"].values[i], raw.answerRank(i, 1, 1));
    assert.equal(byKey["target:0"].values[i], raw.targetRank(i, 4, 0));
    assert.equal(byKey.final.values[i], (L - 1 - i) * 7);
  }
});

test("elsewhere: the first set's answer token only", () => {
  const prob = trajectorySeries(data, 0, 1, "prob");
  assert.deepEqual(prob.map((s) => s.key), ["top1", "final", "answer:0", "target:0", "target:1"]);
  const answer = prob.find((s) => s.key === "answer:0");
  assert.equal(answer.section, "answer_token_probs");
  assert.deepEqual(answer.values.map((v) => Math.round(v * U16)), [0, 1, 2].map((i) => raw.answerTokenProb(i, 1)));
  const rank = trajectorySeries(data, 0, 0, "rank").find((s) => s.key === "answer:0");
  assert.deepEqual(rank.values, [0, 1, 2].map((i) => raw.answerTokenRank(i, 0)));
  // Prompt 1, not its last position, has no first-set answer: no answer line at all.
  assert.ok(!trajectorySeries(data, 1, 0, "prob").some((s) => s.kind === "answer"));
});

test("a missing row breaks every line; detail lines not loaded yet read as loading, tracked tokens come with the base", () => {
  const holed = decodePayload(...Object.values(answerPayload({ missing: true }))); // row 1 of prompt 0
  for (const s of trajectorySeries(holed, 0, 2, "prob")) assert.equal(s.values[1], null, s.key);
  const g = trajectoryRowsGeometry({ width: 300, nLayers: L, rowH: 20, heatY: 16 });
  const top1 = trajectorySeries(holed, 0, 2, "prob")[0];
  assert.deepEqual(seriesSegments(top1, valueScale("prob"), g).map((seg) => seg.length), [1, 1]);

  const base = decodePayload(...Object.values(answerPayload({ details: false })));
  const series = trajectorySeries(base, 0, 1, "prob"); // not the last position
  const loaded = Object.fromEntries(series.map((s) => [s.key, s.loaded]));
  assert.deepEqual(loaded, { top1: true, final: false, "answer:0": false, "target:0": true, "target:1": true });
  assert.ok(series.filter((s) => !s.loaded).every((s) => s.values.every((v) => v === null)));
  assert.equal(seriesSummary(series[1], base.layers, 0, String), "loading");
});

test("at the prompt's last position the final prediction's line comes with the base sections", () => {
  // Issue 21, item 6: the chart opens on the last position, and its legend read "loading…" for
  // the final prediction until a hover fetched the detail sections.
  const base = decodePayload(...Object.values(answerPayload({ details: false })));
  assert.equal(base.arrays.final_token_probs, undefined, "no detail section was sent");
  for (const [prompt, col] of [[0, 2], [1, 4]]) {
    const position = LENGTHS[prompt] - 1;
    const prob = trajectorySeries(base, prompt, position, "prob").find((s) => s.key === "final");
    assert.ok(prob.loaded, `prompt ${prompt}`);
    assert.equal(prob.token, base.tokens[base.arrays.final_tokens[col]]);
    // The formulas of the golden payload: probability 1000 i / 65535, rank 7 (L - 1 - i).
    assert.deepEqual(prob.values.map((v) => Math.round(v * U16)), [0, 1, 2].map((i) => 1000 * i));
    const rank = trajectorySeries(base, prompt, position, "rank").find((s) => s.key === "final");
    assert.deepEqual(rank.values, [0, 1, 2].map((i) => 7 * (L - 1 - i)));
    assert.match(seriesSummary(prob, base.layers, L - 1, String), /^L0 0 → L2 /);
  }
  // Without answers, the base section's ranks alone set the rank axis (largest 14: up to 99).
  const plain = decodePayload(...Object.values(lensPayload("lens_plain", { details: false })));
  assert.equal(plain.arrays.final_token_ranks, undefined);
  assert.equal(rankAxisMax(plain), 99);
  // With the detail sections the cell section takes over, with the same values.
  for (const mode of ["prob", "rank"]) {
    const before = trajectorySeries(base, 0, 2, mode).find((s) => s.key === "final");
    const after = trajectorySeries(data, 0, 2, mode).find((s) => s.key === "final");
    assert.equal(after.section, mode === "prob" ? "final_token_probs" : "final_token_ranks");
    assert.notEqual(before.section, after.section);
    assert.deepEqual(before.values, after.values, mode);
  }
});

test("the answer metric comes from the registry; prompts without an answer have no colour", () => {
  assert.ok(metricAvailable(data, "answer"));
  assert.ok(close(metricValue(data, "answer", 1 * T + 2), raw.answerTokenProb(1, 2) / U16));
  assert.ok(Number.isNaN(metricValue(data, "answer", 1 * T + 3)), "prompt 1 has no answer");
  assert.ok(Number.isFinite(metricValue(data, "prob", 1 * T + 3)));
  const image0 = colourImage(data, "answer", 0);
  const image1 = colourImage(data, "answer", 1);
  assert.ok(image0.data.some((v, k) => k % 4 === 3 && v === 255));
  assert.ok(image1.data.every((v, k) => k % 4 !== 3 || v === 0), "transparent: the hatch shows through");
  assert.equal(promptOfColumn(data, 0), 0);
  assert.equal(promptOfColumn(data, 2), 0);
  assert.equal(promptOfColumn(data, 3), 1);
  assert.equal(promptOfColumn(data, 4), 1);
});

test("answer marks: where answer_top1 is set, never for a prompt without an answer", () => {
  const marked = [];
  for (let i = 0; i < L; i++) for (let p = 0; p < P; p++) for (let j = 0; j < LENGTHS[p]; j++) if (isAnswerTop1(data, p, i, j)) marked.push([i, p, j]);
  assert.deepEqual(marked, [[1, 0, 2], [2, 0, 1]], "where the top-1 is token 3, \" Paris\", in prompt 0");
  // Python never marks a prompt without an answer; the front end does not trust the mask there
  // either (a hand-set bit, on purpose: cell (row 0, column 4) of prompt 1).
  const forged = answerPayload();
  const mask = new Uint8Array(forged.sections.answer_top1.buffer, forged.sections.answer_top1.byteOffset, L * T);
  mask[0 * T + 4] = 1;
  assert.equal(isAnswerTop1(decodePayload(forged.meta, forged.sections), 1, 0, 1), false);
  const d = cellDetails(data, 0, 2, 1);
  assert.equal(d.answerTop1, true);
  assert.deepEqual(d.answer, { text: " Paris", prob: raw.answerTokenProb(2, 1) / U16, step: 1 / U16, rank: raw.answerTokenRank(2, 1), whole: false });
  const last = cellDetails(data, 0, 1, 2);
  assert.deepEqual(last.answer, { text: " Paris", prob: raw.answerProb(1, 0, 0) / U16, step: 1 / U16, rank: raw.answerRank(1, 0, 0), whole: false });
  // Prompt 1's second-set answer is two tokens long: at its last position the tooltip gives the
  // whole answer's probability. (The first set has none for prompt 1; check set 1 through a
  // decoded payload whose first set is the second one.)
  const swapped = answerPayload();
  swapped.meta.answer_sets.reverse();
  const data2 = decodePayload(swapped.meta, swapped.sections);
  const whole = cellDetails(data2, 0, 1, 2);
  assert.equal(whole.answer.whole, true);
  assert.equal(whole.answer.prob, raw.answerProb(1, 0, 0) / U16, "the stored set 0 (what the payload holds)");
  const wholeRows = tooltipModel(whole).rows.map((r) => r.label);
  assert.deepEqual(wholeRows.slice(2, 5), ["answer", "answer rank", "whole answer"]);
  const tip = tooltipModel(d);
  assert.match(tip.badge, /= answer/);
  assert.ok(tip.rows.some((r) => r.label === "answer" && r.value === "␣Paris"));
  assert.ok(tip.rows.some((r) => r.label === "answer rank" && r.value === `rank ${raw.answerTokenRank(2, 1)}`));
  assert.ok(!tip.rows.some((r) => r.label === "whole answer"), "one token, one form: the metric row says it");
  assert.match(readoutText(d), /the answer/);
  assert.equal(cellDetails(data, 1, 0, 1).answer, null);
  assert.ok(!/answer/.test(tooltipModel(cellDetails(data, 1, 0, 1)).badge));
});

test("the chart follows hover, then keyboard focus, then the pinned cell, then the last position", () => {
  const state = { hover: null, focus: { position: 1 }, focused: false, selected: null, prompt: 0 };
  assert.deepEqual(chartColumn(state, 5), { position: 4, source: "last" });
  assert.deepEqual(chartColumn({ ...state, selected: { prompt: 1, position: 2 } }, 5), { position: 4, source: "last" }, "a pin on another prompt");
  assert.deepEqual(chartColumn({ ...state, selected: { prompt: 0, position: 2 } }, 5), { position: 2, source: "pinned" });
  assert.deepEqual(chartColumn({ ...state, focused: true, selected: { prompt: 0, position: 2 } }, 5), { position: 1, source: "focus" });
  assert.deepEqual(chartColumn({ ...state, focused: true, hover: { position: 3 } }, 5), { position: 3, source: "hover" });
  assert.deepEqual(chartColumn({ ...state, hover: { position: 9 } }, 5), { position: 4, source: "hover" });
});

test("value scales: more likely is to the right; ranks on a log scale with rank 0 at the right", () => {
  const prob = valueScale("prob");
  assert.equal(prob.toUnit(0), 0);
  assert.equal(prob.toUnit(1), 1);
  assert.equal(prob.toUnit(0.3), 0.3);
  assert.deepEqual(prob.ticks.map((t) => t.label), ["0%", "25%", "50%", "75%", "100%"]);
  const rank = valueScale("rank", 999);
  assert.equal(rank.toUnit(0), 1);
  assert.equal(rank.toUnit(999), 0);
  assert.ok(close(rank.toUnit(9), 1 - 1 / 3), "log10(rank + 1) / log10(1000)");
  assert.ok(close(rank.toUnit(99), 1 / 3));
  assert.ok(rank.toUnit(5000) === 0, "clamped");
  assert.deepEqual(rank.ticks.map((t) => t.label), ["0", "1", "10", "100", "999"]);
  assert.deepEqual(valueScale("rank", 65535).ticks.map((t) => t.label).slice(-2), ["10k", "≥65535"]);
  assert.equal(niceRankMax(0), 9);
  assert.equal(niceRankMax(10), 99);
  assert.equal(niceRankMax(1000), 9999);
  assert.equal(niceRankMax(65535), 65535);
  assert.equal(niceRankMax(60000), 65535);
  // The axis is the same for every column: set by the largest rank in the loaded rank sections.
  const largest = Math.max(raw.targetRank(0, 4, 1), raw.answerRank(0, 1, 1), 14);
  assert.equal(rankAxisMax(data), niceRankMax(largest));
});

test("the chart's rows are level with the heatmap's rows", () => {
  const layout = computeLayout({ nLayers: 12, nPositions: 9, width: 700, labelW: 40, charW: 7, maxChars: 6 });
  const g = trajectoryRowsGeometry({ width: 300, nLayers: 12, rowH: layout.rowH, heatY: layout.heatY, heightBelow: layout.height - layout.heatY - layout.heatH });
  assert.equal(g.height, layout.height);
  for (let i = 0; i < 12; i++) {
    const cell = cellRect(layout, i, 0, 0);
    assert.equal(rowCentreY(g, i), cell.y + cell.h / 2);
    assert.equal(rowAtY(g, cell.y + 1), i);
    assert.equal(rowAtY(g, cell.y + cell.h - 1), i);
  }
  assert.equal(rowAtY(g, layout.heatY - 1), -1);
  assert.equal(rowAtY(g, layout.heatY + layout.heatH), -1);
  const series = { values: [0, null, 0.5, 1, ...new Array(8).fill(null)] };
  const segments = seriesSegments(series, valueScale("prob"), g);
  assert.deepEqual(segments, [
    [[g.plotX, rowCentreY(g, 0)]],
    [[g.plotX + 0.5 * g.plotW, rowCentreY(g, 2)], [g.plotX + g.plotW, rowCentreY(g, 3)]],
  ]);
});

test("beside the heatmap only when both fit; below otherwise", () => {
  assert.equal(chartBeside(SIDE.minTotal - 1, 100), false);
  assert.equal(chartBeside(1280, 700), true);
  assert.equal(chartBeside(900, 700), false, "a 9-token prompt needs more than the 586 px left");
  assert.equal(chartBeside(900, 300), true, "a short prompt leaves room");
  assert.equal(chartBeside(1000, 5000), true, "a long prompt scrolls anyway: it gets the minimum");
  assert.equal(chartBeside(SIDE.chartW + SIDE.gap + SIDE.minHeatmapW - 1, 5000), false);
});

test("every line has its own colour and dash, from one table; extra targets start hidden", () => {
  const series = [
    { kind: "top1", index: 0 },
    { kind: "final", index: 0 },
    { kind: "answer", index: 0 },
    { kind: "answer", index: 1 },
    ...Array.from({ length: 24 }, (_, j) => ({ kind: "target", index: j })),
  ];
  const styles = series.map((s) => seriesStyle(s));
  const looks = new Set(styles.map((s) => `${s.colour}|${s.dash}`));
  assert.equal(looks.size, series.length, "no two lines share a (colour, dash) pair");
  const [top1, final, answer, answer2] = styles;
  assert.deepEqual(final, { ...LINE_STYLES.final }, "the table is the one source");
  // The palette in order: the final prediction first, the answers second and fourth, the
  // targets from the third on; the top-1 is neutral.
  assert.equal(final.colour, SERIES_COLOURS[0]);
  assert.deepEqual([answer.colour, answer2.colour], [SERIES_COLOURS[1], SERIES_COLOURS[3]]);
  assert.deepEqual(styles.slice(4, 10).map((s) => s.colour), [2, 3, 4, 5, 0, 1].map((k) => SERIES_COLOURS[k]));
  assert.ok(!SERIES_COLOURS.includes(top1.colour));
  // Targets are dashed, never solid like the answers nor dashed like the final prediction.
  for (const t of styles.slice(4)) assert.ok(t.dash !== "" && t.dash !== final.dash, t.dash);
  const toggled = new Map();
  const shown = series.map((s) => seriesShown({ ...s, key: `${s.kind}:${s.index}` }, toggled));
  assert.equal(shown.filter(Boolean).length, 4 + 6);
  toggled.set("target:10", true).set("answer:0", false);
  assert.equal(seriesShown({ kind: "target", index: 10, key: "target:10" }, toggled), true);
  assert.equal(seriesShown({ kind: "answer", index: 0, key: "answer:0" }, toggled), false);
});

test("coinciding lines stay readable: the pale top-1 band under the dashed final under the answer", () => {
  // Issue 21, item 10b: the top-1 (dotted) and the final prediction (dashed) coincide in the last
  // layers, where one hid the other.
  const [top1, final, answer, target] = [["top1", 0], ["final", 0], ["answer", 0], ["target", 0]].map(([kind, index]) => seriesStyle({ kind, index }));
  assert.equal(top1.dash, "", "the top-1 is solid");
  assert.notEqual(final.dash, "", "the final prediction is dashed");
  assert.equal(answer.dash, "", "an answer is solid");
  // Each line leaves at least a pixel of every wider line it may run along showing on both
  // sides; the top-1's band is pale, so what runs inside it keeps its colour.
  assert.ok((top1.width - final.width) / 2 >= 1 && (final.width - answer.width) / 2 >= 1 && answer.width > target.width);
  assert.ok(top1.opacity <= 0.4 && final.opacity === 1 && answer.opacity === 1);
  // The final prediction's gaps (butt caps: as written) are wide enough to see what is under.
  const [, gap] = final.dash.split(" ").map(Number);
  assert.ok(gap >= 3, final.dash);
  // Drawn widest first: the top-1's band first, then the final prediction, the answer, targets.
  assert.deepEqual(drawOrder([answer, target, top1, final]), [2, 3, 0, 1]);
  // Markers likewise: each wider line's marker is larger than the next one's, drawn over it.
  assert.ok(top1.markerScale > final.markerScale && final.markerScale > answer.markerScale);
});

test("a legend swatch is drawn with its line's stroke: the same width and dash", () => {
  const kinds = [["top1", 0], ["final", 0], ["answer", 0], ["answer", 1], ["target", 0], ["target", 7], ["target", 13]];
  for (const [kind, index] of kinds) {
    const style = seriesStyle({ kind, index });
    const line = strokeAttributes(style);
    const swatch = swatchLine(style);
    assert.equal(swatch["stroke-dasharray"], line["stroke-dasharray"], `${kind} ${index}`);
    assert.equal(swatch["stroke-width"], line["stroke-width"], `${kind} ${index}`);
    assert.equal(swatch["stroke-opacity"], line["stroke-opacity"], `${kind} ${index}`);
    assert.equal(line["stroke-dasharray"], style.dash || "none");
    // The swatch is long enough to show a whole dash period.
    const period = style.dash ? style.dash.split(" ").map(Number).reduce((a, b) => a + b, 0) : 0;
    assert.ok(swatch.x2 - swatch.x1 >= period, `${kind} ${index}: ${style.dash}`);
  }
});

test("the answer's corner mark stays inside its cell, small cells included", () => {
  for (const cell of [{ x: 10, y: 20, w: 60, h: 22 }, { x: 0, y: 0, w: 34, h: 5 }]) {
    for (const [x, y] of answerMarkTriangle(cell)) {
      assert.ok(x >= cell.x && x <= cell.x + cell.w && y >= cell.y && y <= cell.y + Math.max(cell.h, 5));
    }
  }
});

test("a series summary gives the first, the last and the chosen layer's values", () => {
  const s = { loaded: true, values: [null, 0.1, 0.5, 0.9] };
  assert.equal(seriesSummary(s, [0, 4, 8, 12], 2, (v) => `${v}`), "L4 0.1 → L12 0.9; at L8: 0.5");
  assert.equal(seriesSummary({ loaded: true, values: [null, null] }, [0, 1], 0, String), "no value");
});

test("the chart follows the heatmap's metric: KL and entropy are drawn themselves, on the colour bar's scale", async () => {
  const { chartModeFor, metricSeries } = await import("../src/heatmap/trajectory.js");
  const { cellIndex } = await import("../src/heatmap/payload.js");
  const { metricSpec, metricDomain, scaleChange } = await import("../src/heatmap/metrics.js");
  const { meta, sections } = lensPayload("lens_plain");
  const data = decodePayload(meta, sections);
  assert.equal(chartModeFor(metricSpec(data, "kl")), "metric");
  assert.equal(chartModeFor(metricSpec(data, "entropy")), "metric");
  assert.equal(chartModeFor(metricSpec(data, "final_rank")), "rank");
  assert.equal(chartModeFor(metricSpec(data, "prob")), "prob");
  assert.equal(chartModeFor(undefined), "prob");
  // Mode "metric": one line, the KL the cells are coloured by, at every row of the column.
  const series = trajectorySeries(data, 0, 1, "metric", "kl");
  assert.equal(series.length, 1);
  assert.equal(series[0].key, "metric:kl");
  assert.equal(series[0].loaded, true);
  for (let i = 0; i < data.L; i++) {
    const expected = metricValue(data, "kl", cellIndex(data, 0, i, 1));
    assert.ok(Number.isFinite(expected) && Math.abs(/** @type {number} */ (series[0].values[i]) - expected) < 1e-9, `row ${i}: ${series[0].values[i]} vs ${expected}`);
  }
  assert.deepEqual(metricSeries(data, 0, 1, "no such metric"), []);
  const scale = valueScale("metric", 9, { data, name: "kl" });
  const domain = metricDomain(data, "kl");
  assert.equal(scale.mode, "metric");
  assert.equal(scale.toUnit(domain.max), 1);
  assert.equal(scale.toUnit(domain.min), 0);
  assert.match(scale.title, /^KL/);
  assert.ok(scale.ticks.length >= 2);
  // Without a metric the mode falls back to probability.
  assert.equal(valueScale("metric").mode, "prob");

  // A new payload that refits the scale says so; the same scale says nothing.
  assert.equal(scaleChange(data, data, "kl"), "");
  const wider = { ...data, metrics: data.metrics.map((m) => (m.name === "kl" ? { ...m, domain: /** @type {[number, number]} */ ([0, 20]) } : m)) };
  const narrow = { ...data, metrics: data.metrics.map((m) => (m.name === "kl" ? { ...m, domain: /** @type {[number, number]} */ ([0, 10]) } : m)) };
  assert.equal(scaleChange(narrow, wider, "kl"), "Colour scale changed: now 0–20.0 bits (was 0–10.0 bits)");
  assert.equal(scaleChange(null, wider, "kl"), "");
  assert.equal(scaleChange(narrow, wider, "prob"), "");
});
