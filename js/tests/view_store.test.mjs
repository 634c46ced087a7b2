// The heatmap view's state store (src/view/store.js): one plain object, changed in place by
// `set`, which tells its subscribers which keys changed.
import assert from "node:assert/strict";
import { test } from "node:test";

import { createStore, initialState, sameCell } from "../src/heatmap/view/store.js";

test("the store assigns what differs, in place, and tells each subscriber once which keys", () => {
  const store = createStore();
  const state = store.state;
  assert.deepEqual(state, initialState());
  const calls = [];
  const unsubscribe = store.subscribe((changed, s) => calls.push([changed, s.prompt]));
  assert.deepEqual(store.set({ prompt: 1, layer: 0, metric: "prob" }), ["prompt", "metric"]);
  assert.equal(store.state, state, "one object for the store's life");
  assert.equal(state.prompt, 1);
  assert.deepEqual(calls, [[["prompt", "metric"], 1]]);
  // Nothing changed (the same values, or undefined: not part of the patch): no one is told.
  assert.deepEqual(store.set({ prompt: 1, target: undefined }), []);
  assert.equal(state.target, "");
  assert.equal(calls.length, 1);
  // Objects compare by identity: a new cell is a change, even at the same place.
  const cell = { layerIndex: 2, position: 1 };
  assert.deepEqual(store.set({ focus: cell }), ["focus"]);
  assert.deepEqual(store.set({ focus: cell }), []);
  assert.deepEqual(store.set({ focus: { ...cell } }), ["focus"]);
  unsubscribe();
  store.set({ prompt: 0 });
  assert.equal(calls.length, 3);
});

test("a subscriber may subscribe or unsubscribe while it is told", () => {
  const store = createStore();
  const seen = [];
  const off = store.subscribe(() => {
    seen.push("a");
    off();
    store.subscribe(() => seen.push("b"));
  });
  store.set({ layer: 1 });
  assert.deepEqual(seen, ["a"]);
  store.set({ layer: 2 });
  assert.deepEqual(seen, ["a", "b"]);
});

test("sameCell: the same row and position, or both none", () => {
  assert.ok(sameCell(null, null));
  assert.ok(sameCell({ layerIndex: 1, position: 2 }, { layerIndex: 1, position: 2 }));
  assert.ok(!sameCell({ layerIndex: 1, position: 2 }, null));
  assert.ok(!sameCell({ layerIndex: 1, position: 2 }, { layerIndex: 2, position: 2 }));
});
