// Where the tooltip goes (js/src/shared/tooltip.js, shared by the heatmap and the diff): right-below
// the cell, flipped above or to the left only where it would leave the visible bounds, around
// obstacles (issue 21, item 10a: it used to sit centred beside the cell and flipped left over
// the cells there whenever its right side touched the trajectory chart's box).

import assert from "node:assert/strict";
import { test } from "node:test";

import { overlapArea, placeTooltip, TOOLTIP_GAP, visibleBounds } from "../src/shared/tooltip.js";

const bounds = { x: 0, y: 0, w: 500, h: 400 };
const size = { w: 100, h: 50 };
const cell = (x, y, w = 20, h = 20) => ({ x, y, w, h });
const box = (place, s = size) => ({ x: place.left, y: place.top, w: s.w, h: s.h });
const inside = (r, b = bounds) => r.x >= b.x && r.y >= b.y && r.x + r.w <= b.x + b.w && r.y + r.h <= b.y + b.h;

test("right-below the cell: its top-left corner at the cell's bottom-right, 10 px to the right", () => {
  const a = cell(10, 100);
  const place = placeTooltip(a, size, bounds);
  assert.deepEqual(place, { left: 10 + 20 + TOOLTIP_GAP, top: 120 });
  // It covers neither the cell's row nor its column.
  assert.ok(place.top >= a.y + a.h && place.left >= a.x + a.w);
});

test("no room on the right: flipped to the left, still below", () => {
  assert.deepEqual(placeTooltip(cell(450, 100), size, bounds), { left: 450 - 100 - TOOLTIP_GAP, top: 120 });
  // Room on the right by a pixel: it stays there.
  assert.deepEqual(placeTooltip(cell(370, 100), size, bounds), { left: 400, top: 120 });
});

test("no room below: flipped above, still on the right; in a corner, left and above", () => {
  assert.deepEqual(placeTooltip(cell(10, 370), size, bounds), { left: 40, top: 320 });
  assert.deepEqual(placeTooltip(cell(450, 370), size, bounds), { left: 340, top: 320 });
});

test("room neither below nor above: on the side, moved just enough to fit, off the cell", () => {
  const tall = { w: 100, h: 300 };
  const a = cell(10, 150);
  const place = placeTooltip(a, tall, bounds);
  assert.deepEqual(place, { left: 40, top: 100 });
  assert.equal(overlapArea(box(place, tall), a), 0);
  assert.ok(inside(box(place, tall)));
});

test("no room on either side: below the cell (above it near the bottom), centred on it", () => {
  const wide = { w: 480, h: 50 };
  assert.deepEqual(placeTooltip(cell(200, 10), wide, bounds), { left: 0, top: 30 + TOOLTIP_GAP });
  assert.deepEqual(placeTooltip(cell(200, 380), wide, bounds), { left: 0, top: 380 - 50 - TOOLTIP_GAP });
});

test("obstacles: a chip under the cell is stepped over, a chart on the right sends it left", () => {
  const tall = { w: 100, h: 120 };
  const pin = { x: 0, y: 360, w: 300, h: 24 };
  // Below would cover the chip: above the cell instead, still on the right.
  const low = placeTooltip(cell(10, 300), tall, bounds, TOOLTIP_GAP, [pin]);
  assert.deepEqual(low, { left: 40, top: 180 });
  assert.equal(overlapArea(box(low, tall), pin), 0);
  // Without the chip: below, where it fits.
  assert.deepEqual(placeTooltip(cell(10, 200), tall, bounds), { left: 40, top: 220 });
  // A chart taking the right of the widget: the left side.
  const chart = { x: 200, y: 0, w: 300, h: 400 };
  assert.deepEqual(placeTooltip(cell(150, 100), tall, bounds, TOOLTIP_GAP, [chart]), { left: 40, top: 120 });
});

test("room between the cell and the chart is used: the reported case stays on the right", () => {
  // The heatmap's last column ends well before the chart's plot: the tooltip fits between them.
  const plot = { x: 300, y: 0, w: 200, h: 400 };
  const a = cell(150, 100, 30, 20);
  const place = placeTooltip(a, size, bounds, TOOLTIP_GAP, [plot]);
  assert.deepEqual(place, { left: 190, top: 120 });
  assert.equal(overlapArea(box(place), plot), 0);
});

test("nowhere free: inside the bounds, covering the obstacles least, then the cell", () => {
  const tall = { w: 100, h: 120 };
  const all = { x: 0, y: 0, w: 500, h: 400 };
  const forced = placeTooltip(cell(10, 100), tall, bounds, TOOLTIP_GAP, [all]);
  assert.ok(inside(box(forced, tall)));
  assert.equal(overlapArea(box(forced, tall), cell(10, 100)), 0);
  assert.equal(overlapArea({ x: 0, y: 0, w: 10, h: 10 }, { x: 10, y: 0, w: 5, h: 5 }), 0, "touching is not covering");
});

test("over a grid of cells: always inside the bounds, never over the cell, right wherever it fits", () => {
  const b = { x: 4, y: 4, w: 792, h: 392 };
  const s = { w: 260, h: 180 };
  let right = 0;
  for (let x = 4; x + 40 <= 796; x += 40) {
    for (let y = 4; y + 16 <= 396; y += 16) {
      const a = cell(x, y, 40, 16);
      const r = box(placeTooltip(a, s, b), s);
      assert.ok(inside(r, b), JSON.stringify({ a, r }));
      assert.equal(overlapArea(r, a), 0, JSON.stringify({ a, r }));
      const fitsRight = a.x + a.w + TOOLTIP_GAP + s.w <= b.x + b.w;
      assert.equal(r.x >= a.x + a.w, fitsRight, JSON.stringify({ a, r }));
      right += fitsRight;
    }
  }
  assert.ok(right > 100);
});

test("the visible bounds: the widget cut to the screen, unless that leaves too little room", () => {
  const own = { x: 4, y: 4, w: 900, h: 600 };
  // The notebook panel shows the widget's rows 200..700 (scrolled): the bottom is cut.
  assert.deepEqual(visibleBounds(own, { x: -50, y: 200, w: 2000, h: 500 }, size), { x: 4, y: 200, w: 900, h: 404 });
  // Less than the tooltip's height on screen: the widget's own height (x is still cut).
  assert.deepEqual(visibleBounds(own, { x: 100, y: 580, w: 300, h: 400 }, size), { x: 100, y: 4, w: 300, h: 600 });
  // A window narrower than the widget.
  assert.deepEqual(visibleBounds(own, { x: 0, y: 0, w: 500, h: 2000 }, size), { x: 4, y: 4, w: 496, h: 600 });
  // On screen near the visible bottom, the tooltip goes above the cell rather than off screen.
  const seen = visibleBounds(own, { x: 0, y: 0, w: 2000, h: 300 }, size);
  assert.deepEqual(placeTooltip(cell(10, 270), size, seen), { left: 40, top: 220 });
});
