// The per-target metric (Python's "target": a tracked token's probability): its values are one
// tracked token's of each cell's `[n_targets]` (the view's `target`), its label names that token,
// and the colours, tooltip and readout read the same numbers. Payloads are the golden ones
// (tests/golden/, written by Python): lens_answers tracks " Paris" and "<b>x</b>".
import assert from "node:assert/strict";
import { test } from "node:test";

import { scaleColour } from "../src/shared/colour.js";
import { colourImage } from "../src/heatmap/colour_image.js";
import { cellDetails, readoutText, tooltipModel } from "../src/heatmap/details.js";
import { formatProb } from "../src/shared/format.js";
import { metricAvailable, metricLabel, metricOffered, metricSpec, metricValue, resolveTarget, targetIndex } from "../src/heatmap/metrics.js";
import { cellIndex, cellTargetIndex, decodePayload } from "../src/heatmap/payload.js";
import { golden, lensPayload } from "./golden.mjs";

const decoded = (name, options) => decodePayload(...Object.values(lensPayload(name, options)));

test("the registry says which metric reads each tracked token, and offers it only with targets", () => {
  const data = decoded("lens_answers");
  const spec = metricSpec(data, "target");
  assert.ok(spec && spec.perTarget && spec.available && spec.field === "target_probs");
  assert.deepEqual(data.targets, [" Paris", "<b>x</b>"]);
  assert.deepEqual(data.metrics.filter((m) => m.perTarget).map((m) => m.name), ["target"]);
  assert.ok(metricAvailable(data, "target"));
  const plain = decoded("lens_plain");
  assert.ok(!metricOffered(plain, "target") && !metricAvailable(plain, "target"));
  assert.match(metricSpec(plain, "target")?.unavailableReason ?? "", /^no tokens are tracked/);
  // It comes with the first payload (a base section): no detail section is needed to draw it.
  const base = decoded("lens_answers", { details: false });
  assert.equal(base.arrays.topk_probs, undefined, "no detail section was sent");
  assert.ok(metricAvailable(base, "target"));
});

test("the token shown: the trait's while tracked, else the first; none without targets", () => {
  const data = decoded("lens_answers");
  assert.equal(resolveTarget(data, "<b>x</b>"), "<b>x</b>");
  assert.equal(targetIndex(data, "<b>x</b>"), 1);
  for (const other of [" Rome", "", null, 3]) {
    assert.equal(resolveTarget(data, other), " Paris");
    assert.equal(targetIndex(data, other), 0);
  }
  assert.equal(resolveTarget(decoded("lens_plain"), " Paris"), "");
});

test("each target's values are its own, at idx * n_targets + t, and none past the last", () => {
  const data = decoded("lens_answers");
  const { expected } = golden("lens_answers");
  const scale = data.scales.target_probs;
  let differ = 0;
  for (const cell of expected.cells) {
    const idx = cellIndex(data, cell.prompt, cell.row, cell.position);
    cell.targets.forEach(([prob], t) => {
      const value = metricValue(data, "target", idx, t);
      assert.equal(value, data.arrays.target_probs[cellTargetIndex(data, cell.prompt, cell.row, cell.position, t)] * scale);
      assert.ok(Math.abs(value - prob) <= scale / 2 + 1e-12, `${value} vs ${prob}`);
    });
    if (metricValue(data, "target", idx, 0) !== metricValue(data, "target", idx, 1)) differ += 1;
    assert.ok(Number.isNaN(metricValue(data, "target", idx, 2)));
    assert.ok(Number.isNaN(metricValue(data, "target", idx, -1)));
  }
  assert.ok(differ > 0, "the two targets' values differ somewhere: the index matters");
});

test("the colours are the chosen target's values on the metric's scale", () => {
  const data = decoded("lens_answers");
  const spec = /** @type {any} */ (metricSpec(data, "target"));
  for (const t of [0, 1]) {
    for (let p = 0; p < data.P; p++) {
      const img = colourImage(data, "target", p, undefined, t);
      const n = data.lengths[p];
      for (let row = 0; row < data.L; row++) {
        for (let j = 0; j < n; j++) {
          const o = ((data.L - 1 - row) * n + j) * 4;
          const value = metricValue(data, "target", cellIndex(data, p, row, j), t);
          const want = Number.isNaN(value) ? [0, 0, 0, 0] : [...scaleColour(spec.scale, Math.round(value * 255) / 255, spec.reverse), 255];
          assert.deepEqual(Array.from(img.data.slice(o, o + 4)), want, `target ${t} prompt ${p} row ${row} position ${j}`);
        }
      }
    }
  }
  // No such target: nothing drawn.
  assert.ok(colourImage(data, "target", 0, undefined, 5).data.every((v) => v === 0));
});

test("the label names the token as text, the way tokens are shown", () => {
  const data = decoded("lens_answers");
  const spec = /** @type {any} */ (metricSpec(data, "target"));
  assert.equal(spec.label, "Probability of a tracked token");
  assert.equal(metricLabel(data, spec, 0), "Probability of “␣Paris”");
  assert.equal(metricLabel(data, spec, 1), "Probability of “<b>x</b>”");
  // A replacement pattern in a token stays text; a parenthesis in it is not dropped as short.
  const odd = { ...data, targets: [" $&$'", "(x)"] };
  assert.equal(metricLabel(odd, spec, 0), "Probability of “␣$&$'”");
  assert.equal(metricLabel(odd, spec, 1, true), "Probability of “(x)”");
  assert.equal(metricLabel(data, /** @type {any} */ (metricSpec(data, "entropy")), 0, true), "Entropy");
});

test("the tooltip and the readout give the chosen target's value under its name", () => {
  const data = decoded("lens_answers");
  const cell = golden("lens_answers").expected.cells.find((c) => !c.missing && c.targets.every(([p]) => p > 0.001));
  assert.ok(cell);
  for (const t of [0, 1]) {
    const details = cellDetails(data, cell.prompt, cell.row, cell.position, t);
    const entry = details.metrics.find((m) => m.spec.name === "target");
    assert.ok(entry && entry.value !== null);
    const label = metricLabel(data, entry.spec, t);
    const text = formatProb(entry.value, entry.step);
    assert.equal(entry.label, label);
    const row = tooltipModel(details).rows.find((r) => r.label === label);
    assert.equal(row?.value, text);
    assert.ok(readoutText(details, { metric: "target" }).includes(`; ${label} ${text}`));
    // The top-1's probability is said already: its metric adds nothing.
    assert.equal(readoutText(details, { metric: "prob" }), readoutText(details));
  }
});
