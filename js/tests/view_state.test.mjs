// The pure rules the heatmap view's feature modules apply to its state (src/view/store.js): what
// a payload sets (load.js), which metric the cells show (load.js), which cell the "why" panel
// explains (explain.js), a cell clamped to the columns shown and the keyboard's first cell
// (selection.js), what the chart follows (metric.js). Payloads are the golden ones (tests/golden/,
// written by Python).
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeLenses, decodePayload } from "../src/payload.js";
import { shownPositions } from "../src/token_marks.js";
import { whyCellOf } from "../src/view/explain.js";
import { shownMetricFor, stateForPayload } from "../src/view/load.js";
import { followKey } from "../src/view/metric.js";
import { clampCellTo, keyboardStart } from "../src/view/selection.js";
import { initialState } from "../src/view/store.js";
import { lensPayload } from "./golden.mjs";

const decoded = (name, options) => decodePayload(...Object.values(lensPayload(name, options)));
/** A model's traits as `model.get` reads them. */
const traitsOf = (traits) => (name) => traits[name];

test("the first payload takes the model's traits, clamped and resolved", () => {
  const data = decoded("lens_answers");
  const patch = stateForPayload(
    data,
    traitsOf({ prompt: 7, layer: 1, metric: "target", target: "<b>x</b>", selected: { prompt: 0, layer_index: 1, position: 2 }, hide_template: true, view: "components", explain: "answer" }),
    initialState(),
    null,
    true,
  );
  assert.deepEqual(patch, {
    prompt: data.P - 1,
    layer: 1,
    metric: "target",
    target: "<b>x</b>",
    group: "",
    selected: { prompt: 0, layer_index: 1, position: 2 },
    hideTemplate: true,
    view: "components",
    explain: "answer",
  });
  // No layer: the last row. Unknown values fall back.
  const fallback = stateForPayload(data, traitsOf({ prompt: 0, layer: null, metric: "nope", target: " Rome", view: "other" }), initialState(), null, true);
  assert.equal(fallback.layer, data.L - 1);
  assert.equal(fallback.metric, data.metrics[0].name);
  assert.equal(fallback.target, " Paris");
  assert.equal(fallback.selected, null);
  assert.equal(fallback.hideTemplate, false);
  assert.equal(fallback.view, "layers");
  assert.equal(fallback.explain, "top1");
});

test("a later payload keeps the local view, except what Python chose for it", () => {
  const data = decoded("lens_answers");
  const s = { ...initialState(), prompt: 1, layer: 2, metric: "entropy", target: "<b>x</b>" };
  // The same prompts: the local prompt stays, even while the model's lags behind.
  const same = stateForPayload(data, traitsOf({ prompt: 0, metric: "entropy", target: "<b>x</b>" }), s, data, false);
  assert.deepEqual(same, { prompt: 1, layer: 2, metric: "entropy", target: "<b>x</b>", group: "" });
  // A prompt added: Python's prompt wins; so do its metric and token when the payload has them.
  const fewer = decoded("lens_plain");
  const added = stateForPayload(data, traitsOf({ prompt: 0, metric: "target", target: " Paris" }), s, { ...fewer, P: fewer.P - 1 }, false);
  assert.deepEqual(added, { prompt: 0, layer: 2, metric: "target", target: " Paris", group: "" });
  // A metric the payload does not offer, a token it does not track: the local ones stay.
  const plain = stateForPayload(fewer, traitsOf({ prompt: 0, metric: "target", target: " Paris" }), { ...s, target: "" }, fewer, false);
  assert.equal(plain.metric, "entropy");
  assert.equal(plain.target, "");
});

test("the metric shown: the one shown while the payload has it, else the requested, else the first", () => {
  const base = decoded("lens_plain", { details: false });
  const full = decoded("lens_plain");
  const detail = full.metrics.find((m) => !m.available || !base.arrays[m.field])?.name ?? "kl";
  assert.equal(shownMetricFor(full, "entropy", "kl"), "entropy");
  assert.equal(shownMetricFor(full, "", "kl"), "kl");
  assert.equal(shownMetricFor(base, detail, detail), "prob", "the detail section has not come: the first metric the payload has");
});

test("the why panel's cell: hover, then focus, then the pinned cell, then the row's last position", () => {
  const data = decoded("lens_attribution");
  const none = { whyHover: null, components: { hover: null, focus: null, focused: false } };
  const s = { ...initialState(), prompt: 0, layer: 1 };
  const last = data.lengths[0] - 1;
  assert.deepEqual(whyCellOf(data, s, none), { row: 1, position: last, unit: -1, source: "default" });
  const pinned = { ...s, selected: { prompt: 0, layer_index: 2, position: 0 } };
  assert.deepEqual(whyCellOf(data, pinned, none), { row: 2, position: 0, unit: -1, source: "pinned" });
  // A pinned cell of another prompt, or out of this one, is not explained.
  assert.equal(whyCellOf(data, { ...pinned, prompt: 1 }, none).source, "default");
  assert.equal(whyCellOf(data, { ...s, selected: { prompt: 0, layer_index: 0, position: 99 } }, none).source, "default");
  const focused = { ...pinned, focus: { layerIndex: 0, position: 1 }, focused: true };
  assert.deepEqual(whyCellOf(data, focused, none), { row: 0, position: 1, unit: -1, source: "focus" });
  assert.equal(whyCellOf(data, { ...focused, focused: false }, none).source, "pinned");
  // The hovered cell, or the one the pointer left for the panel.
  assert.deepEqual(whyCellOf(data, focused, { ...none, whyHover: { layerIndex: 2, position: 2 } }), { row: 2, position: 2, unit: -1, source: "hover" });
  assert.deepEqual(whyCellOf(data, { ...focused, hover: { layerIndex: 1, position: 0 } }, none), { row: 1, position: 0, unit: -1, source: "hover" });
  // The component view: its hovered or focused unit, at the highlighted row.
  const comp = { ...s, view: /** @type {const} */ ("components") };
  const unit = { layerIndex: 3, position: 1 };
  assert.deepEqual(whyCellOf(data, comp, { ...none, components: { hover: unit, focus: null, focused: false } }), { row: 1, position: 1, unit: 3, source: "hover" });
  assert.deepEqual(whyCellOf(data, comp, { ...none, components: { hover: null, focus: unit, focused: true } }), { row: 1, position: 1, unit: 3, source: "focus" });
  assert.equal(whyCellOf(data, comp, { whyHover: { layerIndex: 0, position: 0 }, components: { hover: null, focus: unit, focused: false } }).source, "default");
});

test("a cell clamped into the prompt, a hidden template token giving way to the nearest shown", () => {
  const data = decoded("lens_chat");
  assert.deepEqual(clampCellTo(data, 1, null, { layerIndex: 9, position: 9 }), { layerIndex: data.L - 1, position: data.lengths[1] - 1 });
  assert.deepEqual(clampCellTo(data, 0, null, { layerIndex: -1, position: -3 }), { layerIndex: 0, position: 0 });
  const shown = shownPositions(data, 0, true);
  assert.ok(shown && shown.length < data.lengths[0], "the chat prompt has template tokens to hide");
  const hidden = [...Array(data.lengths[0]).keys()].find((p) => !shown.includes(p));
  const cell = clampCellTo(data, 0, shown, { layerIndex: 1, position: hidden });
  assert.ok(shown.includes(cell.position));
  assert.equal(cell.layerIndex, 1);
});

test("the keyboard starts at the pinned cell of the prompt, else the highlighted row", () => {
  const selected = { prompt: 1, layer_index: 2, position: 3 };
  assert.deepEqual(keyboardStart({ prompt: 1, layer: 0, selected }, 5), { layerIndex: 2, position: 3 });
  assert.deepEqual(keyboardStart({ prompt: 0, layer: 4, selected }, 5), { layerIndex: 4, position: 5 });
  assert.deepEqual(keyboardStart({ prompt: 0, layer: 4, selected: null }, 0), { layerIndex: 4, position: 0 });
});

test("the chart follows a per-target metric's token, and nothing else", () => {
  const data = decoded("lens_answers");
  assert.equal(followKey(data, "target", " Paris"), "target\u0000 Paris");
  assert.equal(followKey(data, "prob", " Paris"), "");
  assert.equal(followKey(data, "target", ""), "");
  assert.equal(followKey(null, "target", " Paris"), "");
});

test("every lens of a payload side by side resolves the same state", () => {
  const lenses = decodeLenses(...Object.values(lensPayload("lenses_three")));
  const traits = traitsOf({ prompt: 1, layer: 2, metric: "entropy", target: "" });
  const patches = lenses.map((data) => stateForPayload(data, traits, initialState(), null, true));
  for (const patch of patches) assert.deepEqual(patch, patches[0]);
});
