// The shared grid key handling (src/shared/grid_events.js), as the heatmap and the diff use it.
import { test } from "node:test";
import assert from "node:assert/strict";

import { onGridKey } from "../src/shared/grid_events.js";
import { moveFocus } from "../src/shared/state.js";

/** A grid of 3 layers × 4 positions that records what the handlers did. */
function fakeGrid({ pinned = false, focused = true, focus = { layerIndex: 1, position: 1 } } = {}) {
  const log = [];
  const grid = {
    ready: true,
    focus,
    focused,
    pinned,
    cellAt: () => null,
    setHover: (cell) => log.push(["hover", cell]),
    setFocus: (cell) => {
      grid.focus = cell;
      log.push(["focus", cell]);
    },
    move: (cell, key) => moveFocus(cell, key, 3, 4),
    togglePin: (cell) => log.push(["pin", cell]),
    unpin: () => log.push(["unpin"]),
    showKeyboardFocus: () => {
      grid.focused = true;
      log.push(["show"]);
    },
    blurred: () => log.push(["blurred"]),
  };
  return { grid, log };
}

/** A key event that records whether it was kept from the page. */
function key(name, modifiers = {}) {
  const event = { key: name, altKey: false, ctrlKey: false, metaKey: false, ...modifiers, prevented: false, stopped: false };
  event.preventDefault = () => (event.prevented = true);
  event.stopPropagation = () => (event.stopped = true);
  return event;
}

test("arrows, Home/End and PageUp/PageDown move the focus cell", () => {
  const { grid, log } = fakeGrid();
  for (const [name, cell] of [
    ["ArrowUp", { layerIndex: 2, position: 1 }],
    ["ArrowRight", { layerIndex: 2, position: 2 }],
    ["End", { layerIndex: 2, position: 3 }],
    ["PageDown", { layerIndex: 0, position: 3 }],
    ["Home", { layerIndex: 0, position: 0 }],
    ["PageUp", { layerIndex: 2, position: 0 }],
    ["ArrowDown", { layerIndex: 1, position: 0 }],
    ["ArrowLeft", { layerIndex: 1, position: 0 }],
  ]) {
    const event = key(name);
    onGridKey(grid, event);
    assert.ok(event.prevented && event.stopped, name);
    assert.deepEqual(log.at(-1), ["focus", cell], name);
  }
});

test("Enter and Space pin the focus cell; Escape unpins only when a cell is pinned", () => {
  for (const name of ["Enter", " "]) {
    const { grid, log } = fakeGrid();
    onGridKey(grid, key(name));
    assert.deepEqual(log, [["pin", { layerIndex: 1, position: 1 }]]);
  }
  const unpinned = fakeGrid();
  const escape = key("Escape");
  onGridKey(unpinned.grid, escape);
  assert.deepEqual(unpinned.log, []);
  assert.equal(escape.prevented, false, "nothing to unpin: the page keeps Escape");
  const pinned = fakeGrid({ pinned: true });
  onGridKey(pinned.grid, key("Escape"));
  assert.deepEqual(pinned.log, [["unpin"]]);
});

test("the first key after a click shows the focus cell; other keys and modifiers pass through", () => {
  const { grid, log } = fakeGrid({ focused: false });
  onGridKey(grid, key("ArrowRight"));
  assert.deepEqual(log[0], ["show"]);
  for (const event of [key("a"), key("Tab"), key("ArrowUp", { ctrlKey: true }), key("Enter", { metaKey: true }), key("ArrowLeft", { altKey: true })]) {
    const before = log.length;
    onGridKey(grid, event);
    assert.equal(log.length, before);
    assert.equal(event.prevented, false);
  }
  const empty = fakeGrid();
  empty.grid.ready = false;
  onGridKey(empty.grid, key("Enter"));
  assert.deepEqual(empty.log, []);
});
