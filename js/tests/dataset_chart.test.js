// The data-set chart's geometry: columns, values, the nearest layer to a pointer, and paths that
// break at missing values instead of bridging them.
import assert from "node:assert/strict";
import { test } from "node:test";

import { bandPath, datasetCurveGeometry, labelColumns, linePath } from "../src/dataset/chart.js";

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
