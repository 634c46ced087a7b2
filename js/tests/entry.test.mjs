import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import widget, * as entry from "../src/heatmap/index.js";

test("the entry: anywidget's render, the standalone renderer and the pure API; no DOM at import", () => {
  assert.equal(typeof widget.render, "function");
  assert.deepEqual(Object.keys(widget), ["render"]);
  for (const name of ["renderStandalone", "createLocalModel", "displayToken", "decodePayload", "metricDomain", "metricValue", "cellIndex", "scaleColour", "unitValue"]) {
    assert.equal(typeof entry[name], "function", name);
  }
});

test("the sources never build HTML from strings", () => {
  const files = readdirSync(new URL("../src/", import.meta.url), { recursive: true }).filter((f) => String(f).endsWith(".js"));
  assert.ok(files.length >= 15, files.join(", "));
  for (const file of files) {
    const source = readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8");
    assert.match(source, /^\/\/ @ts-check/, `${file} is type-checked`);
    for (const needle of ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"]) {
      assert.ok(!source.includes(needle), `${file}: ${needle}`);
    }
  }
});

test("every CSS class is prefixed murano-", () => {
  const css = readFileSync(new URL("../src/heatmap/logit_lens.css", import.meta.url), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
  const classes = [...css.matchAll(/\.([a-zA-Z_][\w-]*)/g)].map((m) => m[1]);
  assert.ok(classes.length > 50);
  for (const name of classes) assert.ok(name.startsWith("murano-") || name.startsWith("vscode-"), name);
});
