// Two lenses as two grids: which lens the second grid shows, its menu, the swap when the lens
// shown becomes the one beside, the colour scale both share and each grid's caption. The payload
// is the golden file Python writes (tests/golden/lenses_three.json: the plain case under the
// logit, tuned and Jacobian lenses), read as the view reads it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { colourLut } from "../src/shared/colour.js";
import { colourImage } from "../src/heatmap/colour_image.js";
import { metricSpec } from "../src/heatmap/metrics.js";
import { decodeLenses } from "../src/heatmap/payload.js";
import { besideAfterSwitch, besideLens, besideMetric, besideOptions, gridCaption, sharedDomain } from "../src/heatmap/side_by_side.js";
import { golden, lensPayload } from "./golden.mjs";

const title = (/** @type {any} */ lens) => lens.lensTitle;

/** @param {(meta: any) => void} [change] */
function lenses(change) {
  const { meta, sections } = lensPayload("lenses_three");
  if (change) change(meta);
  return decodeLenses(meta, sections);
}

test("the lens beside: another lens by name; none, an unknown name or the lens shown give one grid", () => {
  const all = lenses();
  assert.equal(besideLens(all, "logit", "tuned"), all[1]);
  assert.equal(besideLens(all, "tuned", "jacobian"), all[2]);
  for (const wanted of ["", "logit", "lasso", null, undefined, 3]) assert.equal(besideLens(all, "logit", wanted), null, String(wanted));
});

test("the beside menu: one grid, or each lens but the one shown, named as the lens menu names it", () => {
  const all = lenses();
  assert.deepEqual(besideOptions(all, "tuned", title), [
    { value: "", label: "none (one grid)" },
    { value: "logit", label: "Logit lens" },
    { value: "jacobian", label: "Jacobian lens" },
  ]);
  assert.deepEqual(besideOptions(all.slice(0, 1), "logit", title), [{ value: "", label: "none (one grid)" }]);
});

test("choosing the lens beside in the lens menu swaps the two grids; another lens keeps it", () => {
  assert.equal(besideAfterSwitch("logit", "tuned", "tuned"), "logit");
  assert.equal(besideAfterSwitch("logit", "jacobian", "tuned"), "tuned");
  assert.equal(besideAfterSwitch("logit", "tuned", ""), "");
});

test("one colour scale: the span of both lenses' domains, as Python sent them", () => {
  // Marked: one lens's KL domain widened by hand (the golden lenses share theirs), as a lens whose
  // KL runs higher would send it.
  const all = lenses((meta) => {
    meta.lenses[2].metrics = meta.lenses[2].metrics.map((m) => (m.name === "kl" ? { ...m, domain: [0, 5] } : m));
  });
  const [logit, tuned, jacobian] = all;
  assert.deepEqual(sharedDomain(logit, tuned, "kl"), { min: 0, max: 0.1, log: false });
  assert.deepEqual(sharedDomain(logit, jacobian, "kl"), { min: 0, max: 5, log: false });
  assert.deepEqual(sharedDomain(jacobian, logit, "kl"), { min: 0, max: 5, log: false });
  assert.deepEqual(sharedDomain(logit, null, "kl"), { min: 0, max: 0.1, log: false });
  assert.deepEqual(sharedDomain(logit, jacobian, "final_rank"), { min: 0, max: 99, log: true });
  // A metric the lens beside lacks leaves the shown lens's own scale, and its grid no colours.
  assert.equal(besideMetric(tuned, "answer"), null);
  assert.equal(besideMetric(tuned, "kl"), "kl");
  assert.deepEqual(sharedDomain(logit, tuned, "answer"), { min: 0, max: 1, log: false });
});

test("a cell on the shared scale: its value over the shared domain, in every lens", () => {
  const all = lenses();
  const { expected } = golden("lenses_three");
  const domain = { min: 0, max: 0.4, log: false };
  for (const [i, data] of all.entries()) {
    // The colour map Python named for the metric.
    const spec = /** @type {any} */ (metricSpec(data, "kl"));
    const lut = colourLut(spec.scale, spec.reverse);
    const image = colourImage(data, "kl", 0, undefined, 0, domain);
    for (const cell of expected.lenses[i].cells.filter((/** @type {any} */ c) => c.prompt === 0 && !c.missing)) {
      const o = ((data.L - 1 - cell.row) * image.width + cell.position) * 4;
      // Python's value on the shared scale; the payload quantises it by the lens's own step.
      const t = Math.min(1, cell.values.kl_to_final / domain.max);
      const k = Math.round(t * 255);
      const got = Array.from(image.data.slice(o, o + 3));
      const near = [k - 1, k, k + 1].map((q) => Array.from(lut.slice(3 * Math.max(0, Math.min(255, q)), 3 * Math.max(0, Math.min(255, q)) + 3)));
      assert.ok(near.some((c) => c.every((v, n) => v === got[n])), `${data.lensName} row ${cell.row} position ${cell.position}: ${got} for ${cell.values.kl_to_final}`);
    }
    // Without a shared domain: the metric's own, as Python sent it.
    assert.deepEqual(colourImage(data, "kl", 0).data, colourImage(data, "kl", 0, undefined, 0, { min: 0, max: 0.1, log: false }).data);
  }
});

test("captions: each grid's lens, and why the second shows no colours", () => {
  const [logit, tuned] = lenses();
  assert.equal(gridCaption(logit, "Logit lens", true), "Logit lens");
  assert.equal(gridCaption(tuned, "Tuned lens", false), "Tuned lens: no values of this colouring under this lens");
});
