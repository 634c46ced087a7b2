import assert from "node:assert/strict";
import { test } from "node:test";

import widget, * as entry from "../src/diff/index.js";

test("the diff entry: anywidget's render and the standalone renderer of the HTML export; no DOM at import", () => {
  assert.deepEqual(Object.keys(widget), ["render"]);
  assert.equal(typeof widget.render, "function");
  assert.equal(typeof entry.renderStandalone, "function");
  assert.equal(entry.renderStandalone.length, 2);
  assert.equal(typeof entry.createLocalModel, "function");
  assert.equal(typeof globalThis.document, "undefined");
});
