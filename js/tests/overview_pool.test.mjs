// The long-trace overview's pooling (js/src/view/overview_pool.js) against numpy: Python pooled
// the same buffer with a reshape-max / reshape-mean (tests/overview_pool_fixture.py).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { bucketStart, overviewWidth, poolColumns, runStarts } from "../src/view/overview_pool.js";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/overview_pool.json", import.meta.url), "utf8"));
const values = Float32Array.from(fixture.values, (v) => (v === null ? NaN : v));

test("the pooled overview equals numpy's reshape-max and reshape-mean of the same buffer", () => {
  assert.ok(fixture.cases.length >= 10);
  for (const { width, mode, expected } of fixture.cases) {
    const got = poolColumns(values, fixture.L, fixture.n, width, mode);
    assert.equal(got.length, expected.length, `${mode} at width ${width}`);
    expected.forEach((want, i) => {
      if (want === null) assert.ok(Number.isNaN(got[i]), `${mode} width ${width} [${i}]: an all-missing bucket is NaN, got ${got[i]}`);
      else assert.ok(Math.abs(got[i] - want) <= 1e-5 * Math.max(1, Math.abs(want)), `${mode} width ${width} [${i}]: ${got[i]} != ${want}`);
    });
  }
});

test("the buckets tile the positions, and a width above the positions is refused", () => {
  for (const [n, w] of [[10, 3], [16384, 900], [7, 7]]) {
    assert.equal(bucketStart(0, n, w), 0);
    assert.equal(bucketStart(w, n, w), n);
    for (let k = 0; k < w; k++) assert.ok(bucketStart(k + 1, n, w) > bucketStart(k, n, w));
  }
  assert.equal(overviewWidth(16384, 900.7), 900);
  assert.equal(overviewWidth(40, 900), 40);
  assert.throws(() => poolColumns(new Float32Array(6), 2, 3, 4, "max"), /width must be an int from 1 to 3, got 4/);
  assert.throws(() => poolColumns(new Float32Array(6), 2, 3, 1, /** @type {any} */ ("median")), /mode must be one of max, mean/);
  assert.throws(() => poolColumns(new Float32Array(5), 2, 3, 1, "max"), /5 values for 2 rows of 3/);
});

test("marks go at the start of each run", () => {
  const hits = [0, 1, 1, 0, 0, 1, 0, 1, 1, 1];
  assert.deepEqual(runStarts(hits.length, (j) => hits[j] === 1), [1, 5, 7]);
  assert.deepEqual(runStarts(3, () => false), []);
});
