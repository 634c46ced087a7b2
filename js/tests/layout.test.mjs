import assert from "node:assert/strict";
import { test } from "node:test";

import {
  cellRect,
  chooseCellWidth,
  chooseRowHeight,
  clampScroll,
  computeLayout,
  GEOMETRY,
  hitTest,
  labelStride,
  revealColumn,
  rowOfLayer,
  visibleColumns,
} from "../src/shared/layout.js";
import { clampIndex, isSelected, moveFocus, toggleSelection } from "../src/shared/state.js";
import { throttle } from "../src/heatmap/throttle.js";

const base = { labelW: 40, charW: 7, maxChars: 6 };

test("row height shares the height budget, within limits", () => {
  assert.equal(chooseRowHeight(12), GEOMETRY.maxRowH);
  assert.equal(chooseRowHeight(80, 460), 5);
  assert.equal(chooseRowHeight(40, 460), 11);
  assert.equal(chooseRowHeight(1000), GEOMETRY.minRowH);
});

test("cell width fits the text, stretches for short prompts, scrolls for long ones", () => {
  assert.equal(chooseCellWidth({ maxChars: 6, charW: 7, n: 1000, available: 800 }), 54);
  assert.equal(chooseCellWidth({ maxChars: 6, charW: 7, n: 10, available: 800 }), 80);
  assert.equal(chooseCellWidth({ maxChars: 6, charW: 7, n: 2, available: 800 }), GEOMETRY.maxCellW);
  assert.equal(chooseCellWidth({ maxChars: 100, charW: 7, n: 1000, available: 800 }), GEOMETRY.maxCellW);
  assert.equal(chooseCellWidth({ maxChars: 0, charW: 7, n: 1000, available: 800 }), GEOMETRY.minCellW);
});

test("layout of a long prompt: scrolls, only visible columns are drawn", () => {
  const layout = computeLayout({ ...base, nLayers: 80, nPositions: 1000, width: 900 });
  assert.equal(layout.cellW, 54);
  assert.equal(layout.rowH, 5);
  assert.equal(layout.showCellText, false);
  assert.equal(layout.contentW, 40 + 54000 + GEOMETRY.rightPad);
  assert.equal(layout.maxScroll, layout.contentW - 900);
  assert.deepEqual(visibleColumns(layout, 0), [0, Math.ceil(860 / 54)]);
  assert.deepEqual(visibleColumns(layout, 54 * 500 + 10), [500, Math.ceil((54 * 500 + 10 + 860) / 54)]);
  assert.deepEqual(visibleColumns(layout, layout.maxScroll)[1], 1000);
  assert.equal(clampScroll(layout, -5), 0);
  assert.equal(clampScroll(layout, 1e9), layout.maxScroll);
});

test("layout of a short prompt: text in cells, nothing to scroll", () => {
  const layout = computeLayout({ ...base, nLayers: 12, nPositions: 9, width: 800 });
  assert.equal(layout.rowH, 22);
  assert.ok(layout.showCellText);
  assert.equal(layout.maxScroll, 0);
  assert.equal(layout.height, layout.predY + layout.stripH + GEOMETRY.bottomPad);
  assert.equal(layout.cellChars, Math.floor((layout.cellW - 6) / 7));
});

test("final layer on top: rows, rectangles and hit tests agree", () => {
  const layout = computeLayout({ ...base, nLayers: 4, nPositions: 30, width: 500 });
  assert.equal(rowOfLayer(layout, 3), 0);
  assert.equal(rowOfLayer(layout, 0), 3);
  const scroll = 100;
  for (const [layerIndex, position] of [[0, 2], [3, 5], [1, 9]]) {
    const r = cellRect(layout, layerIndex, position, scroll);
    const hit = hitTest(layout, r.x + r.w / 2, r.y + r.h / 2, scroll, 0);
    assert.deepEqual(hit, { layerIndex, position, area: "cells" });
  }
  // Row labels, beyond the last column, and the gaps hit nothing.
  assert.equal(hitTest(layout, 10, layout.heatY + 1, 0, 0), null);
  assert.equal(hitTest(layout, 2, 2, 0, 0), null);
  // The strips stand for the highlighted layer.
  assert.deepEqual(hitTest(layout, layout.labelW + 1, layout.predY + 2, 0, 2), { layerIndex: 2, position: 0, area: "predictions" });
  assert.equal(hitTest(layout, layout.labelW + 1, layout.inputY + 2, 0, 2).area, "input");
  const narrow = computeLayout({ ...base, nLayers: 4, nPositions: 2, width: 500 });
  assert.equal(hitTest(narrow, 499, narrow.heatY + 1, 0, 0), null);
});

test("revealColumn scrolls just enough", () => {
  const layout = computeLayout({ ...base, nLayers: 4, nPositions: 100, width: 400 });
  const w = layout.cellW;
  assert.equal(revealColumn(layout, 0, 2), 0);
  assert.equal(revealColumn(layout, 0, 20), 21 * w - 360);
  assert.equal(revealColumn(layout, 10 * w + 5, 10), 10 * w);
});

test("label stride", () => {
  assert.equal(labelStride(22), 1);
  assert.equal(labelStride(6), 2);
  assert.equal(labelStride(5), 5);
  assert.equal(labelStride(2), 10);
});

test("arrow keys move the focus cell (up = deeper layer), clamped", () => {
  const f = { layerIndex: 1, position: 1 };
  assert.deepEqual(moveFocus(f, "ArrowUp", 3, 5), { layerIndex: 2, position: 1 });
  assert.deepEqual(moveFocus({ layerIndex: 2, position: 1 }, "ArrowUp", 3, 5), { layerIndex: 2, position: 1 });
  assert.deepEqual(moveFocus(f, "ArrowDown", 3, 5), { layerIndex: 0, position: 1 });
  assert.deepEqual(moveFocus(f, "ArrowLeft", 3, 5), { layerIndex: 1, position: 0 });
  assert.deepEqual(moveFocus(f, "ArrowRight", 3, 5), { layerIndex: 1, position: 2 });
  assert.deepEqual(moveFocus(f, "End", 3, 5), { layerIndex: 1, position: 4 });
  assert.deepEqual(moveFocus(f, "Home", 3, 5), { layerIndex: 1, position: 0 });
  assert.deepEqual(moveFocus(f, "PageUp", 3, 5), { layerIndex: 2, position: 1 });
  assert.deepEqual(moveFocus(f, "PageDown", 3, 5), { layerIndex: 0, position: 1 });
  assert.equal(moveFocus(f, "x", 3, 5), null);
});

test("selection toggles and indices are clamped", () => {
  const sel = toggleSelection(null, 1, 2, 3);
  assert.deepEqual(sel, { prompt: 1, layer_index: 2, position: 3 });
  assert.ok(isSelected({ ...sel, layer: 7, input_token: "x" }, 1, 2, 3), "extra fields from Python are ignored");
  assert.equal(toggleSelection(sel, 1, 2, 3), null);
  assert.deepEqual(toggleSelection(sel, 1, 2, 4), { prompt: 1, layer_index: 2, position: 4 });
  assert.ok(!isSelected(null, 0, 0, 0));
  assert.equal(clampIndex(7, 3), 2);
  assert.equal(clampIndex(-1, 3), 0);
  assert.equal(clampIndex("2", 3), 2);
  assert.equal(clampIndex(null, 3), 0);
});

test("throttle: first call at once, a burst collapses into one trailing call with the last value", () => {
  let now = 0;
  const timers = [];
  const calls = [];
  const t = throttle((v) => calls.push([now, v]), 100, {
    now: () => now,
    setTimer: (fn, ms) => { timers.push({ fn, at: now + ms }); return timers.length; },
    clearTimer: (id) => { timers[id - 1].fn = null; },
  });
  const advance = (ms) => {
    now += ms;
    for (const timer of timers) if (timer.fn && timer.at <= now) { const fn = timer.fn; timer.fn = null; fn(); }
  };
  t(1);
  for (let v = 2; v <= 10; v++) { advance(10); t(v); }
  assert.deepEqual(calls, [[0, 1]]);
  advance(10);
  assert.deepEqual(calls, [[0, 1], [100, 10]]);
  t(11);
  t(12);
  t.flush();
  assert.deepEqual(calls.at(-1), [100, 12]);
  t(13);
  t.cancel();
  advance(500);
  assert.equal(calls.length, 3);
  t(14);
  assert.deepEqual(calls.at(-1), [600, 14]);
});
