import assert from "node:assert/strict";
import { test } from "node:test";

import { COLOUR_STOPS, colourLut, interpolateStops, relativeLuminance, scaleColour, textColourOn } from "../src/shared/colour.js";
import { colourImage } from "../src/heatmap/colour_image.js";
import { formatBits, formatProb, formatRank, niceCeil } from "../src/shared/format.js";
import {
  legendTicks,
  metricAvailable,
  metricDomain,
  metricNames,
  metricOffered,
  metricSpec,
  metricValue,
  resolveMetric,
  shortLabel,
  unitValue,
} from "../src/heatmap/metrics.js";
import { decodePayload } from "../src/heatmap/payload.js";
import { golden, lensPayload } from "./golden.mjs";

/** A golden lens payload (tests/golden/), decoded. */
const decoded = (name, options) => decodePayload(...Object.values(lensPayload(name, options)));

test("colour scales hit their end stops and interpolate in between", () => {
  assert.deepEqual(scaleColour("viridis", 0), [0x44, 0x01, 0x54]);
  assert.deepEqual(scaleColour("viridis", 1), [0xfd, 0xe7, 0x25]);
  assert.deepEqual(scaleColour("viridis", 1, true), [0x44, 0x01, 0x54]);
  assert.deepEqual(interpolateStops(["#000000", "#ffffff"], 0.5), [128, 128, 128]);
  assert.deepEqual(interpolateStops(["#000000", "#ffffff"], 7), [255, 255, 255]);
  assert.deepEqual(interpolateStops(["#000000", "#ffffff"], NaN), [0, 0, 0]);
  assert.throws(() => scaleColour("jet", 0.5), /unknown colour scale/);
});

test("every scale is perceptually ordered: luminance rises monotonically", () => {
  for (const name of Object.keys(COLOUR_STOPS)) {
    let previous = -1;
    for (let k = 0; k <= 20; k++) {
      const l = relativeLuminance(scaleColour(name, k / 20));
      assert.ok(l >= previous - 1e-3, `${name} at ${k / 20}`);
      previous = l;
    }
  }
});

test("the lookup table matches the scale function", () => {
  const lut = colourLut("cividis");
  assert.equal(lut.length, 768);
  assert.deepEqual(Array.from(lut.slice(3 * 255, 3 * 256)), scaleColour("cividis", 1));
  assert.equal(colourLut("cividis"), lut, "cached");
});

test("text colour contrasts with the cell", () => {
  assert.equal(textColourOn(scaleColour("viridis", 1)), "#000000");
  assert.equal(textColourOn(scaleColour("viridis", 0)), "#ffffff");
});

test("niceCeil and unitValue", () => {
  assert.equal(niceCeil(0.3), 0.5);
  assert.equal(niceCeil(3), 5);
  assert.equal(niceCeil(10), 10);
  assert.equal(niceCeil(0), 1);
  assert.equal(unitValue(0.5, { min: 0, max: 1 }), 0.5);
  assert.equal(unitValue(2, { min: 0, max: 1 }), 1);
  assert.ok(Number.isNaN(unitValue(NaN, { min: 0, max: 1 })));
  assert.equal(unitValue(99, { min: 0, max: 99, log: true }), 1);
  assert.ok(Math.abs(unitValue(9, { min: 0, max: 99, log: true }) - 0.5) < 1e-12);
});

test("metric domains come from the registry Python sends", () => {
  const data = decoded("lens_plain");
  assert.deepEqual(metricDomain(data, "prob"), { min: 0, max: 1, log: false });
  assert.ok(Math.abs(metricDomain(data, "entropy").max - Math.log2(1000)) < 1e-12); // a 1000-token vocabulary
  const rank = metricDomain(data, "final_rank");
  assert.equal(rank.log, true);
  assert.equal(rank.max, 99); // max rank 14 -> ranks up to 99 (one less than a power of ten)
  assert.equal(metricDomain(data, "kl").max, niceCeil(0.08)); // the largest KL, 0.08 bits
  assert.throws(() => metricDomain(data, "nope"), /unknown metric/);
  // A changed registry entry changes the colours: nothing is hard-coded here.
  const { meta, sections } = lensPayload("lens_plain");
  meta.metrics[0].domain = [0, 0.5];
  meta.metrics[0].scale = "magma";
  const changed = decodePayload(meta, sections);
  assert.deepEqual(metricDomain(changed, "prob"), { min: 0, max: 0.5, log: false });
  assert.deepEqual(Array.from(colourImage(changed, "prob", 0).data.slice(0, 3)), scaleColour("magma", 1));
});

test("metricValue and availability", () => {
  const data = decoded("lens_plain", { details: false });
  assert.ok(metricAvailable(data, "prob"));
  for (const m of ["entropy", "final_prob", "final_rank", "kl"]) {
    assert.ok(!metricAvailable(data, m), m);
    assert.ok(metricOffered(data, m), m);
  }
  assert.ok(Math.abs(metricValue(data, "prob", 0) - 1 / 3) < 1e-4);
  assert.ok(Number.isNaN(metricValue(data, "kl", 0)));
  assert.deepEqual(metricNames(data), golden("lens_plain").expected.metrics);
  assert.ok(!metricOffered(data, "answer"), "Python's registry lists the answer metric; this result has no answers");
  for (const m of metricNames(data)) assert.ok(COLOUR_STOPS[metricSpec(data, m).scale], m);
  assert.equal(resolveMetric(data, "kl"), "kl");
  assert.equal(resolveMetric(data, "nope"), "prob");
  const partial = decoded("lens_no_final");
  assert.ok(!metricOffered(partial, "final_rank"));
  assert.equal(resolveMetric(partial, "final_rank"), "prob");
  assert.equal(shortLabel("Entropy (bits)"), "Entropy");
  assert.equal(shortLabel("KL(final ‖ layer) in bits"), "KL(final ‖ layer) in bits");
});

test("final-based metrics are missing where the final distribution is", () => {
  const data = decoded("lens_final_missing"); // the model's own output at column 1 was not finite
  // Column 1 in every row: final-based values missing, the others kept.
  for (const row of [0, 2]) {
    const idx = row * 5 + 1;
    for (const m of ["final_prob", "final_rank", "kl"]) assert.ok(Number.isNaN(metricValue(data, m, idx)), `${m} row ${row}`);
    assert.ok(Number.isFinite(metricValue(data, "prob", idx)));
    assert.ok(Number.isFinite(metricValue(data, "entropy", idx)));
  }
  const img = colourImage(data, "final_rank", 0);
  const alpha = (row, col) => img.data[(row * 3 + col) * 4 + 3];
  assert.deepEqual([alpha(0, 0), alpha(0, 1), alpha(2, 1)], [255, 0, 0]);
  assert.equal(colourImage(data, "prob", 0).data[(0 * 3 + 1) * 4 + 3], 255);
});

test("colourImage puts the final layer in the top row and leaves missing cells transparent", () => {
  const data = decoded("lens_plain");
  const img = colourImage(data, "prob", 0);
  assert.equal(img.width, 3);
  assert.equal(img.height, 3);
  const pixelOf = (image) => (row, col) => Array.from(image.data.slice((row * 3 + col) * 4, (row * 3 + col) * 4 + 4));
  const pixel = pixelOf(img);
  // Top row = layer index 2, prob 1 -> the bright end.
  assert.deepEqual(pixel(0, 1), [...scaleColour("viridis", 1), 255]);
  // Bottom row = layer index 0, prob 1/3.
  assert.deepEqual(pixel(2, 1), [...scaleColour("viridis", Math.round((1 / 3) * 255) / 255), 255]);
  // lens_missing: layer 2 (the top row) of prompt 0 is not finite.
  const holed = pixelOf(colourImage(decoded("lens_missing"), "prob", 0));
  for (const col of [0, 1, 2]) assert.deepEqual(holed(0, col), [0, 0, 0, 0]);
  assert.deepEqual(holed(2, 1), pixel(2, 1));
  // Prompt 1 is 2 wide; a reused buffer of the wrong size is replaced.
  assert.equal(colourImage(data, "prob", 1, img.data).width, 2);
  // A metric whose section has not arrived gives an empty (transparent) image.
  const bare = decoded("lens_plain", { details: false });
  assert.ok(colourImage(bare, "kl", 0).data.every((v) => v === 0));
});

test("reversed metrics: low entropy and rank 0 are the bright end", () => {
  const data = decoded("lens_plain");
  const img = colourImage(data, "final_rank", 0);
  // Top row = final layer, rank 0 -> t = 0 -> reversed viridis = yellow.
  assert.deepEqual(Array.from(img.data.slice(0, 3)), scaleColour("viridis", 1));
});

test("formatting: one rank convention, rank 0 = the top-1 token", () => {
  assert.equal(formatProb(0.4213), "42.1%");
  assert.equal(formatProb(0.05), "5%");
  assert.equal(formatProb(0.0123), "1.23%");
  assert.equal(formatProb(0.0004), "<0.1%");
  assert.equal(formatProb(0), "0%");
  assert.equal(formatProb(1), "100%");
  assert.equal(formatProb(NaN), "–");
  assert.equal(formatBits(3.2109), "3.21 bits");
  assert.equal(formatBits(12.34), "12.3 bits");
  assert.equal(formatBits(2.5, true), "2.5");
  assert.equal(formatRank(0), "rank 0");
  assert.equal(formatRank(3), "rank 3");
  assert.equal(formatRank(65535), "rank ≥65535");
  assert.equal(formatRank(20000), "rank 20k");
  assert.equal(formatRank(NaN), "–");
  assert.equal(formatRank(1000, true), "1k");
});

test("legend ticks span the domain with readable labels", () => {
  const data = decoded("lens_plain");
  const spec = (name) => metricSpec(data, name);
  const prob = legendTicks(spec("prob"), { min: 0, max: 1, log: false });
  assert.deepEqual(prob.map((t) => t.label), ["0%", "50%", "100%"]);
  assert.deepEqual(prob.map((t) => t.t), [0, 0.5, 1]);
  const rank = legendTicks(spec("final_rank"), { min: 0, max: 1000, log: true });
  assert.deepEqual(rank.map((t) => t.label), ["0", "10", "100", "1k"]);
  assert.equal(rank[3].t, 1);
  const capped = legendTicks(spec("final_rank"), { min: 0, max: 65535, log: true });
  assert.equal(capped.at(-1).label, "≥65535");
  const bits = legendTicks(spec("entropy"), { min: 0, max: 9.97, log: false });
  assert.deepEqual(bits.map((t) => t.label), ["0", "5", "9.97"]);
});
