// The data-set widget's pure functions: decoding what Python sends, ordering the prompts behind
// a layer, and the readout of a hovered layer.
import assert from "node:assert/strict";
import { test } from "node:test";

import { chartCurves, chartMetric, chartMetrics, datasetSeriesLook, decodeDataset, findSet, formatInterval, formatValue, layerReadout, promptOrder } from "../src/dataset/data.js";
import { SERIES_COLOURS, SERIES_DASHES, seriesLook } from "../src/theme.js";
import { readTypedArray } from "../src/shared/codec.js";
import { formatBits } from "../src/format.js";
import { datasetPayload, golden } from "./golden.mjs";

/** Little-endian bytes of float32 or int32 values, at `offset` inside a larger buffer. */
function encode(values, kind, offset = 0) {
  const buffer = new ArrayBuffer(offset + values.length * 4 + 3);
  const view = new DataView(buffer, offset, values.length * 4);
  values.forEach((v, i) => (kind === "float32" ? view.setFloat32(i * 4, v, true) : view.setInt32(i * 4, v, true)));
  return view;
}

// dataset_two_sets (tests/golden/dataset_two_sets.json, written by tests/golden_payloads.py):
// 4 prompts x layers [3, 7], answer sets "capital" and "language"; prompt 2 (its text HTML) has no
// capital, and prompt 3's capital cell at layer column 1 was not finite.
const ranks = [5, 0, 1, 0, -1, -1, 0, -1];
const probs = [0.125, 0.875, 0.25, 0.625, NaN, NaN, 0.5, NaN];
const decoded = (options) => {
  const { meta, data } = datasetPayload("dataset_two_sets", options);
  return decodeDataset(meta, data);
};

test("the byte reader reads little-endian float32 and int32 at any byte offset, and checks the length", () => {
  assert.deepEqual(Array.from(readTypedArray(encode([1.5, -2, 0.25], "float32", 3), "float32", 3)), [1.5, -2, 0.25]);
  assert.deepEqual(Array.from(readTypedArray(encode([7, -1, 65536], "int32", 1), "int32", 3)), [7, -1, 65536]);
  assert.throws(() => readTypedArray(encode([1, 2], "int32"), "int32", 3), /expected 3 int32 values/);
});

test("decodeDataset reads the sets' arrays and the meta", () => {
  const d = decoded({ byteOffset: 1 });
  assert.deepEqual(d.layers, [3, 7]);
  assert.equal(d.prompts[2], "<img src=x onerror=alert(1)>");
  assert.equal(d.sets.length, 2);
  assert.equal(d.sets[0].name, "capital");
  assert.deepEqual(d.sets[0].answers, [" Paris", " Rome", null, " Oslo"]);
  assert.deepEqual(Array.from(d.sets[0].ranks), ranks);
  assert.deepEqual(Array.from(d.sets[0].probs), probs);
  assert.ok(Number.isNaN(d.sets[0].probs[4]));
  assert.equal(d.canOpen, false);
  assert.match(d.reason, /^Cannot open a heatmap: this data set was loaded without its model/);
  assert.equal(d.ci, 0.9);
});

test("promptOrder: best rank first, ties by probability, no-answer prompts out, missing ranks last", () => {
  const set = decoded().sets[0];
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
  const d = decoded();
  const readout = layerReadout(d, 1);
  assert.equal(readout.layer, 7);
  assert.deepEqual(readout.rows.map((r) => r.set), ["capital", "language"]);
  const cells = Object.fromEntries(readout.rows[0].cells);
  // The summary is Python's (bootstrap intervals over the prompts with a capital): the readout
  // shows its column 1. Its mean is that of the capital's finite values there, 0.875 and 0.625.
  const s = golden("dataset_two_sets").meta.sets[0].summary;
  assert.equal(s.answer_prob_mean[1], 0.75);
  assert.equal(cells["mean answer probability (90% interval)"], formatInterval(s.answer_prob_mean[1], s.answer_prob_ci_low[1], s.answer_prob_ci_high[1]));
  assert.match(cells["mean answer probability (90% interval)"], /^75% \[\d+(\.\d)?%, \d+(\.\d)?%\]$/);
  assert.equal(cells["top-1 accuracy (90% interval)"], formatInterval(s.top1_accuracy[1], s.top1_accuracy_ci_low[1], s.top1_accuracy_ci_high[1]));
  assert.equal(cells["median rank (0 = top-1)"], "0");
  // Every reduced heatmap metric Python sent, with its interval, in its own unit.
  const kl = cells["KL to final (mean) (90% interval)"];
  assert.equal(kl, `${formatBits(/** @type {number} */ (s.kl_to_final_mean[1]))} [${formatBits(/** @type {number} */ (s.kl_to_final_ci_low[1]), true)}, ${formatBits(/** @type {number} */ (s.kl_to_final_ci_high[1]), true)}]`);
  assert.match(kl, /^\d+\.\d+ bits \[[\d.]+, [\d.]+\]$/, "bits once, no percent");
  assert.equal(cells["entropy (mean) (90% interval)"].split(" [")[0], formatBits(/** @type {number} */ (s.entropy_mean[1])));
  assert.match(cells["final prediction's rank (mean) (90% interval)"], /^\d+(\.\d)? \[\d+(\.\d)?, \d+(\.\d)?\]$/);
  assert.match(cells["final prediction's probability (mean) (90% interval)"], /^\d+(\.\d)?% \[/);
  assert.equal(cells.prompts, "3");
  // The rows are Python's metrics, in its order, each once: nothing here lists them.
  const meta0 = golden("dataset_two_sets").meta;
  assert.deepEqual(readout.rows[0].cells.slice(0, -1).map(([label]) => label.replace(" (90% interval)", "")), meta0.metrics.map((m) => m.short));
  // A value the summary lacks reads as a dash.
  const { meta, data } = datasetPayload("dataset_two_sets");
  meta.sets[0].summary.kl_to_final_mean[1] = null;
  assert.equal(Object.fromEntries(layerReadout(decodeDataset(meta, data), 1).rows[0].cells)["KL to final (mean) (90% interval)"], "–");
});

test("lenses side by side: one series per lens and set, found by both, coloured by lens", () => {
  const { meta, data } = datasetPayload("dataset_lenses");
  const d = decodeDataset(meta, data);
  assert.deepEqual(d.lenses, [{ name: "logit", title: "Logit lens" }, { name: "tuned", title: "Tuned lens" }]);
  assert.deepEqual(d.sets.map((s) => s.label), ["capital · Logit lens", "language · Logit lens", "capital · Tuned lens", "language · Tuned lens"]);
  assert.equal(findSet(d, "language", "tuned"), d.sets[3]);
  assert.equal(findSet(d, "capital", "logit"), d.sets[0]);
  assert.equal(findSet(d, "nope", "tuned"), d.sets[2], "an unknown set: the lens's first");
  // A lens keeps its colour across answer sets; a set keeps its dash across lenses.
  const looks = d.sets.map((_, k) => datasetSeriesLook(d, k));
  assert.deepEqual(looks.map((l) => l.colour), [0, 0, 1, 1].map((k) => SERIES_COLOURS[k]));
  assert.deepEqual(looks.map((l) => l.dash), [0, 1, 0, 1].map((k) => SERIES_DASHES[k]));
  // One lens: the k-th series look, as before.
  const one = decodeDataset(...Object.values(datasetPayload("dataset_two_sets")));
  assert.deepEqual(datasetSeriesLook(one, 1), seriesLook(1));
  assert.equal(findSet(one, "language", ""), one.sets[1]);
  // The readout names each series by its label, with the commitment share.
  const readout = layerReadout(d, 0);
  assert.deepEqual(readout.rows.map((r) => r.set), d.sets.map((s) => s.label));
  assert.ok(readout.rows[2].cells.some(([label, value]) => label.startsWith("committed") && value.startsWith("66.7%")));
});

test("the chart's metrics are Python's with an interval, their columns read from the summary", () => {
  const d = decoded();
  const { meta } = golden("dataset_two_sets");
  const charted = meta.metrics.filter((m) => m.interval !== null).map((m) => m.name);
  assert.deepEqual(chartMetrics(d).map((m) => m.name), charted);
  assert.ok(charted.includes("answer_prob") && charted.includes("committed") && !charted.includes("answer_rank"));
  assert.equal(chartMetric(d, "committed").name, "committed");
  assert.equal(chartMetric(d, "answer_rank").name, charted[0], "a metric without an interval is not charted: the first is");
  // Every reduced heatmap metric is charted: Python derived its entry from the heatmap's.
  for (const name of ["entropy", "final_prob", "final_rank", "kl"]) assert.equal(chartMetric(d, name).name, name);
  for (const m of chartMetrics(d)) {
    for (const column of [m.field, ...(m.interval || [])]) {
      assert.ok(Array.isArray(d.sets[0].summary[column]), `the summary sends ${column}`);
    }
  }
  assert.equal(formatValue(2.5, "bits"), formatBits(2.5));
  assert.equal(formatValue(1.25, "rank"), "1.3");
  assert.equal(formatValue(0.5, "share"), "50%");
  assert.equal(formatValue(null, "rank"), "–");
});

test("chartCurves: a curve per series, or per token group (of the listed set, under each lens) for the groups metric", () => {
  const summary = (base) => ({ answer_prob_mean: [base, base], answer_prob_ci_low: [0, 0], answer_prob_ci_high: [1, 1], group_en_mean: [base + 0.1, 0.2], group_en_ci_low: [0, 0.1], group_en_ci_high: [0.5, 0.3], group_zh_mean: [0.3, null], group_zh_ci_low: [0.2, null], group_zh_ci_high: [0.4, null] });
  const meta = {
    layers: [0, 1],
    prompts: ["a", "b"],
    lenses: [{ name: "logit", title: "Logit lens" }, { name: "tuned", title: "Tuned lens" }],
    sets: [
      { name: "answer", lens: "logit", answers: ["x", "y"], n_prompts: 2, summary: summary(0.1) },
      { name: "answer", lens: "tuned", answers: ["x", "y"], n_prompts: 2, summary: summary(0.2) },
    ],
    metrics: [
      { name: "answer_prob", field: "answer_prob_mean", label: "p", unit: "probability", interval: ["answer_prob_ci_low", "answer_prob_ci_high"] },
      { name: "group:en", field: "group_en_mean", label: "en", short: "group en", unit: "probability", interval: ["group_en_ci_low", "group_en_ci_high"] },
      { name: "group:zh", field: "group_zh_mean", label: "zh", short: "group zh", unit: "probability", interval: ["group_zh_ci_low", "group_zh_ci_high"] },
      { name: "groups", field: "group_mean", label: "groups", unit: "probability", interval: ["group_ci_low", "group_ci_high"] },
    ],
    groups: ["en", "zh"],
  };
  const data = { prob_0: encode([0, 0, 0, 0], "float32"), rank_0: encode([0, 0, 0, 0], "int32"), prob_1: encode([0, 0, 0, 0], "float32"), rank_1: encode([0, 0, 0, 0], "int32") };
  const d = decodeDataset(meta, data);
  assert.deepEqual(d.groups, ["en", "zh"]);
  const plain = chartCurves(d, chartMetric(d, "group:en"), "answer");
  assert.equal(plain.length, 2, "one curve per series");
  assert.deepEqual(plain.map((c) => c.mean[0]), [0.1 + 0.1, 0.2 + 0.1]);
  const all = chartCurves(d, chartMetric(d, "groups"), "answer");
  assert.deepEqual(all.map((c) => [c.group, c.lens]), [["en", "logit"], ["zh", "logit"], ["en", "tuned"], ["zh", "tuned"]]);
  assert.deepEqual(all[1].mean, [0.3, null]);
  assert.deepEqual([all[1].low, all[1].high], [[0.2, null], [0.4, null]]);
  assert.equal(all[0].colour, seriesLook(0).colour, "a group keeps its colour under every lens");
  assert.equal(all[2].colour, seriesLook(0).colour);
  assert.notEqual(all[0].dash, all[2].dash, "each lens its dash");
  assert.match(all[3].label, /^zh · Tuned lens/);
  // The readout lists each group's value (its metric), not the all-groups metric.
  const labels = layerReadout(d, 0).rows[0].cells.map(([label]) => label);
  assert.ok(labels.some((l) => l.startsWith("group en")) && !labels.some((l) => l.startsWith("groups")));
});
