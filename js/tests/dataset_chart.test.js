// The data-set chart's geometry: columns, values, the nearest layer to a pointer, and paths that
// break at missing values instead of bridging them.
import assert from "node:assert/strict";
import { test } from "node:test";

import { bandPath, chartScale, datasetCurveGeometry, labelColumns, linePath } from "../src/dataset/chart.js";
import { chartMetric, decodeDataset } from "../src/dataset/data.js";
import { datasetPayload } from "./golden.mjs";

const g = datasetCurveGeometry(200, 100, 3, { left: 0, right: 0, top: 0, bottom: 0 });

test("columns span the plot area; values map 0 to the bottom and 1 to the top, clamped", () => {
  assert.deepEqual([g.x(0), g.x(1), g.x(2)], [0, 100, 200]);
  assert.deepEqual([g.y(0), g.y(0.5), g.y(1), g.y(2), g.y(-1)], [100, 50, 0, 0, 100]);
  assert.equal(datasetCurveGeometry(200, 100, 1, { left: 0, right: 0 }).x(0), 100, "one layer sits in the middle");
});

test("layerAt finds the nearest column and clamps outside the plot", () => {
  assert.deepEqual([g.layerAt(-50), g.layerAt(49), g.layerAt(51), g.layerAt(160), g.layerAt(999)], [0, 0, 1, 2, 2]);
  assert.equal(datasetCurveGeometry(200, 100, 1).layerAt(10), 0);
});

test("linePath breaks at a missing value; bandPath closes one polygon per run", () => {
  assert.equal(linePath(g, [0, 0.5, 1]), "M0.00,100.00L100.00,50.00L200.00,0.00");
  assert.equal(linePath(g, [0, null, 1]), "M0.00,100.00M200.00,0.00");
  assert.equal(linePath(g, [null, NaN, null]), "");
  assert.equal(bandPath(g, [0, 0.25, 0.5], [0.5, 0.75, 1]), "M0.00,50.00L100.00,25.00L200.00,0.00L200.00,50.00L100.00,75.00L0.00,100.00Z");
  const split = bandPath(g, [0, null, 0], [1, null, 1]);
  assert.equal((split.match(/Z/g) || []).length, 2, "two runs, two polygons");
});

test("labelColumns writes every layer when they fit, else every k-th and the last", () => {
  assert.deepEqual(labelColumns(4, 16), [0, 1, 2, 3]);
  const many = labelColumns(80, 16);
  assert.ok(many.length <= 17, String(many.length));
  assert.equal(many[0], 0);
  assert.equal(many[many.length - 1], 79);
});

test("the value axis follows the metric: 0-100 % for a fraction, a round top above bits and ranks", () => {
  // Python's summaries (dataset_two_sets) and Python's metric entries.
  const { meta, data } = datasetPayload("dataset_two_sets");
  const d = decodeDataset(meta, data);
  const summaries = d.sets.map((set) => /** @type {Record<string, (number | null)[]>} */ (/** @type {unknown} */ (set.summary)));
  const fraction = chartScale(chartMetric(d, "answer_prob"), summaries);
  assert.equal(fraction.high, 1);
  assert.deepEqual(fraction.ticks.map(fraction.label), ["0%", "25%", "50%", "75%", "100%"]);
  for (const name of ["entropy", "kl", "final_rank"]) {
    const metric = chartMetric(d, name);
    const scale = chartScale(metric, summaries);
    const values = summaries.flatMap((s) => [metric.field, ...(metric.interval || [])].flatMap((c) => s[c] || [])).filter((v) => v !== null && Number.isFinite(v));
    const top = Math.max(...values.map(Number));
    assert.ok(scale.high >= top && scale.high < 10 * top, `${name}: ${scale.high} holds ${top}, not far above`);
    assert.ok([1, 2, 5, 10].includes(Number((scale.high / 10 ** Math.floor(Math.log10(scale.high))).toPrecision(3))), `${name}: a round top`);
    const g2 = datasetCurveGeometry(200, 100, 2, { left: 0, right: 0, top: 0, bottom: 0 }, scale.high);
    assert.equal(g2.y(scale.high), 0);
    assert.equal(g2.y(top), 100 - (top / scale.high) * 100);
  }
  assert.match(chartScale(chartMetric(d, "entropy"), summaries).label(2.5), /^2\.5$/, "bits ticks carry no unit");
  assert.equal(chartScale({ unit: "bits", field: "x", interval: null }, [{ x: [null] }]).high, 1, "no value: 0 to 1");
  const rank = { unit: "rank", field: "x", interval: null };
  assert.deepEqual(chartScale(rank, [{ x: [320] }]).ticks, [0, 100, 200, 300, 400, 500], "fifths of 500");
  assert.deepEqual(chartScale(rank, [{ x: [15] }]).ticks, [0, 5, 10, 15, 20], "quarters of 20");
});
