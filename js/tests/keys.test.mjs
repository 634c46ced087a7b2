import assert from "node:assert/strict";
import { test } from "node:test";

import { controlKind, keepsKey } from "../src/shared/keys.js";
import lens, * as lensEntry from "../src/heatmap/index.js";
import diff, * as diffEntry from "../src/diff/index.js";
import dataset, * as datasetEntry from "../src/dataset/index.js";

/** A stand-in for an element: what controlKind reads. */
const el = (tagName, type = undefined, tabindex = null) => ({ tagName, type, getAttribute: (name) => (name === "tabindex" ? tabindex : null) });
const key = (k, mods = {}) => ({ key: k, ...mods });

test("each control of the three widgets has a kind", () => {
  assert.equal(controlKind(el("INPUT", "range")), "range");
  assert.equal(controlKind(el("SELECT")), "select");
  assert.equal(controlKind(el("BUTTON", "button")), "button");
  assert.equal(controlKind(el("INPUT", "checkbox")), "button");
  assert.equal(controlKind(el("INPUT", "text")), "text");
  assert.equal(controlKind(el("TEXTAREA")), "text");
  assert.equal(controlKind(el("CANVAS", undefined, "0")), "composite");
  assert.equal(controlKind(el("svg", undefined, "0")), "composite");
  assert.equal(controlKind(el("CANVAS", undefined, "-1")), null);
  assert.equal(controlKind(el("DIV")), null);
  assert.equal(controlKind(null), null);
});

test("sliders keep the keys that move them, and only those", () => {
  for (const k of ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]) {
    assert.ok(keepsKey("range", key(k)), k);
    assert.ok(keepsKey("range", key(k, { shiftKey: true })), `Shift+${k}`);
  }
  for (const k of ["Enter", " ", "a", "Escape", "Tab"]) assert.ok(!keepsKey("range", key(k)), k);
});

test("menus keep navigation, opening and type-ahead; buttons keep Enter and Space", () => {
  for (const k of ["ArrowDown", "End", "Enter", " ", "k"]) assert.ok(keepsKey("select", key(k)), k);
  for (const k of ["Enter", " "]) assert.ok(keepsKey("button", key(k)), k);
  for (const k of ["ArrowDown", "a", "Escape"]) assert.ok(!keepsKey("button", key(k)), k);
});

test("the grids keep what they handle; text fields keep typing", () => {
  for (const k of ["ArrowLeft", "Home", "PageDown", "Enter", " "]) assert.ok(keepsKey("composite", key(k)), k);
  assert.ok(!keepsKey("composite", key("Escape")), "Escape is the grid's own handler's to stop (only when pinned)");
  for (const k of ["a", "ArrowLeft", "Backspace", "Enter"]) assert.ok(keepsKey("text", key(k)), k);
  for (const k of ["Escape", "Tab"]) assert.ok(!keepsKey("text", key(k)), k);
});

test("the host keeps its shortcuts: modifiers and Shift+Enter always pass", () => {
  for (const kind of ["range", "select", "button", "text", "composite"]) {
    for (const mods of [{ ctrlKey: true }, { metaKey: true }, { altKey: true }]) {
      assert.ok(!keepsKey(kind, key("ArrowDown", mods)), `${kind} ${JSON.stringify(mods)}`);
      assert.ok(!keepsKey(kind, key("s", mods)), `${kind} ${JSON.stringify(mods)} s`);
    }
    assert.ok(!keepsKey(kind, key("Enter", { shiftKey: true })), `${kind} Shift+Enter runs the cell`);
  }
});

test("anywidget gets render from the default export only (a named render takes its deprecated path and warns)", () => {
  for (const [name, widget, entry] of [["lens", lens, lensEntry], ["diff", diff, diffEntry], ["dataset", dataset, datasetEntry]]) {
    assert.equal(typeof widget.render, "function", name);
    assert.ok(!("render" in entry), `${name}: render is exported by name`);
    assert.equal(typeof entry.renderStandalone, "function", name);
  }
});
