// The lens diff's grid in the heatmap's geometry (`computeLayout`'s optional sizes, diff/view.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { cellRect, clampScroll, computeLayout, hitTest, revealColumn, visibleColumns } from "../src/shared/layout.js";

const DIFF = { rowH: 22, axisH: 0, gap: 2, stripH: 20, bottomPad: 2, rightPad: 0 };
const base = { labelW: 60, charW: 6.6, maxChars: 0, width: 500 };

test("the defaults are the heatmap's layout", () => {
  const opts = { ...base, maxChars: 6, nLayers: 12, nPositions: 9 };
  const plain = computeLayout(opts);
  const explicit = computeLayout({ ...opts, axisH: 16, gap: 6, stripH: 22, strips: 2, bottomPad: 4, rightPad: 8 });
  assert.deepEqual(explicit, plain);
  assert.equal(plain.height, plain.predY + plain.stripH + 4);
});

test("the diff's grid: fixed rows and columns, no axis, one or two token rows", () => {
  for (const [strips, nLayers] of [[1, 4], [2, 4], [2, 40]]) {
    const layout = computeLayout({ ...base, ...DIFF, nLayers, nPositions: 30, cellW: 37, strips });
    assert.equal(layout.rowH, 22); // not shrunk for many layers
    assert.equal(layout.cellW, 37); // not stretched, no minimum
    assert.equal(layout.heatY, 0);
    assert.equal(layout.height, nLayers * 22 + strips * 20 + 4);
    assert.equal(layout.inputY, nLayers * 22 + 2);
    assert.equal(layout.predY, nLayers * 22 + 22);
    assert.equal(layout.contentW, 60 + 30 * 37);
    assert.equal(layout.maxScroll, 60 + 30 * 37 - 500);
    assert.deepEqual(cellRect(layout, nLayers - 1, 2, 10), { x: 60 + 74 - 10, y: 0, w: 37, h: 22 });
    assert.deepEqual(cellRect(layout, 0, 0, 0), { x: 60, y: (nLayers - 1) * 22, w: 37, h: 22 });
    assert.deepEqual(hitTest(layout, 61, 23, 0, 0), { layerIndex: nLayers - 2, position: 0, area: "cells" });
    assert.equal(hitTest(layout, 59, 5, 0, 0), null);
    assert.equal(hitTest(layout, 61, nLayers * 22 + 1, 0, 0), null); // the gap
    assert.equal(hitTest(layout, 61, nLayers * 22 + 12, 0, 0)?.area, "input"); // diff/view.js: no cell
  }
});

test("the diff's scrolling: visible columns and revealing a column", () => {
  const layout = computeLayout({ ...base, ...DIFF, nLayers: 4, nPositions: 30, cellW: 37, strips: 2 });
  assert.deepEqual(visibleColumns(layout, 0), [0, Math.ceil(440 / 37)]);
  assert.equal(revealColumn(layout, 0, 3), 0);
  assert.equal(revealColumn(layout, 0, 20), 21 * 37 - 440);
  assert.equal(revealColumn(layout, 500, 2), 74);
  assert.equal(revealColumn(layout, 0, 29), layout.maxScroll);
  assert.equal(clampScroll(layout, 1e9), layout.maxScroll);
});
