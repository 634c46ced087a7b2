import assert from "node:assert/strict";
import { test } from "node:test";
import { cellColour, DIVERGING, divergingColour, klColour } from "../src/diff/colour.js";
import { hexToRgb } from "../src/shared/colour.js";
import { decodeDiff, diffIndex } from "../src/diff/payload.js";
import { diffPayload } from "./golden.mjs";

test("zero is the near-white centre, the sign picks the hue, the size its strength", () => {
  const centre = divergingColour(0, 0.5);
  assert.deepEqual(centre, hexToRgb(DIVERGING[4]));
  assert.ok(Math.min(...centre) > 235);
  const [r1, , b1] = divergingColour(0.1, 0.5);
  const [r2, , b2] = divergingColour(0.5, 0.5);
  assert.ok(r1 > b1 && r2 - b2 > r1 - b1, "orange, stronger further out");
  const [r3, , b3] = divergingColour(-0.1, 0.5);
  const [r4, , b4] = divergingColour(-0.5, 0.5);
  assert.ok(b3 > r3 && b4 - r4 > b3 - r3, "blue, stronger further out");
  assert.deepEqual(divergingColour(2, 0.5), divergingColour(0.5, 0.5), "clamped");
  assert.deepEqual(divergingColour(Number.NaN, 0.5), centre);
});

test("the scale is symmetric: +x and -x are equally far from white", () => {
  for (const x of [0.05, 0.2, 0.4]) {
    const up = divergingColour(x, 0.5).reduce((s, c) => s + c, 0);
    const down = divergingColour(-x, 0.5).reduce((s, c) => s + c, 0);
    assert.ok(Math.abs(up - down) < 140, `${x}: ${up} vs ${down}`);
  }
});

test("KL 0 is the light end; missing cells have no colour under any metric", () => {
  assert.ok(klColour(0, 2).reduce((s, c) => s + c, 0) > klColour(2, 2).reduce((s, c) => s + c, 0) + 300);
  const { meta, sections } = diffPayload("diff_prefix"); // position 2 has no partner in b
  const diff = decodeDiff(meta, sections);
  for (const metric of ["delta_prob", "kl", "top1_differs"]) {
    assert.equal(cellColour(diff, metric, diffIndex(diff, 0, 0, 2)), null, metric);
    assert.notEqual(cellColour(diff, metric, diffIndex(diff, 0, 0, 0)), null, metric);
  }
  const down = cellColour(diff, "delta_prob", diffIndex(diff, 0, 0, 0));
  assert.ok(down && down[2] > down[0] + 80, "-0.5 on a ±0.5 domain is deep blue");
  assert.notDeepEqual(cellColour(diff, "top1_differs", diffIndex(diff, 1, 0, 0)), cellColour(diff, "top1_differs", diffIndex(diff, 0, 0, 0)));
});

test("on a dark page no change is a dark grey and a change grows brighter (a patch is not a white block)", async () => {
  const { diffPalette, DIVERGING_DARK } = await import("../src/diff/colour.js");
  const { relativeLuminance } = await import("../src/shared/colour.js");
  const { isDarkTheme } = await import("../src/shared/theme.js");
  assert.equal(isDarkTheme({ bg: "rgb(17, 17, 17)" }), true);
  assert.equal(isDarkTheme({ bg: "rgb(255, 255, 255)" }), false);
  assert.equal(isDarkTheme({ bg: "rgba(0, 0, 0, 0)" }), false, "a transparent background says nothing");
  const dark = diffPalette(true);
  assert.equal(dark.diverging, DIVERGING_DARK);
  const centre = divergingColour(0, 0.5, dark.diverging);
  assert.ok(relativeLuminance(centre) < 0.05, `centre ${centre}`);
  for (const x of [0.1, 0.3, 0.5]) {
    assert.ok(relativeLuminance(divergingColour(x, 0.5, dark.diverging)) > relativeLuminance(divergingColour(x / 2, 0.5, dark.diverging)), `+${x} brighter`);
    assert.ok(relativeLuminance(divergingColour(-x, 0.5, dark.diverging)) > relativeLuminance(divergingColour(-x / 2, 0.5, dark.diverging)), `-${x} brighter`);
  }
  const [r, , b] = divergingColour(0.5, 0.5, dark.diverging);
  const [r2, , b2] = divergingColour(-0.5, 0.5, dark.diverging);
  assert.ok(r > b && b2 > r2, "the hues stay: orange for more, blue for less");
  assert.ok(relativeLuminance(klColour(0, 2, true)) < 0.05 && relativeLuminance(klColour(2, 2, true)) > 0.5, "KL 0 is dark");
  assert.ok(relativeLuminance(dark.same) < 0.05);
  // A real diff's cells: the dark flag reaches every metric.
  const { meta, sections } = diffPayload("diff_prefix");
  const diff = decodeDiff(meta, sections);
  const index = diffIndex(diff, 1, 0, 1);
  for (const metric of ["delta_prob", "kl", "top1_differs"]) {
    assert.notDeepEqual(cellColour(diff, metric, index, true), cellColour(diff, metric, index, false), metric);
  }
});

test("a heatmap metric's change (bits, rank) decodes from its own sections and takes the diverging scale", async () => {
  const { changeAt, metricValueAt } = await import("../src/diff/colour.js");
  const { diffMetric } = await import("../src/diff/payload.js");
  const diff = decodeDiff(...Object.values(diffPayload("diff_prefix")));
  // Entropy at row 0, position 0: a 1.48 bits, b 3.38 bits: +1.90 bits, int16 scaled to the largest |change|.
  const up = changeAt(diff, "delta_entropy", diffIndex(diff, 0, 0, 0));
  assert.ok(up && Math.abs(up.delta - 1.8985) <= up.steps.delta && Math.abs(up.a - 1.4765) <= up.steps.a && Math.abs(up.b - 3.375) <= up.steps.b, JSON.stringify(up));
  assert.equal(diff.meta.sections.delta_entropy.dtype, "int16");
  assert.deepEqual(diffMetric(diff, "delta_entropy")?.domain, [-2, 2], "symmetric about 0, a round bound above the largest change");
  const orange = cellColour(diff, "delta_entropy", diffIndex(diff, 0, 0, 0));
  const blue = cellColour(diff, "delta_entropy", diffIndex(diff, 1, 0, 0)); // −1.75 bits
  assert.ok(orange && orange[0] > orange[2] + 80, `more entropy under b is orange: ${orange}`);
  assert.ok(blue && blue[2] > blue[0] + 80, `less is blue: ${blue}`);
  assert.deepEqual(cellColour(diff, "delta_entropy", diffIndex(diff, 0, 0, 1)), hexToRgb(DIVERGING[4]), "no change is the centre");
  assert.equal(cellColour(diff, "delta_entropy", diffIndex(diff, 0, 0, 2)), null, "no partner: no colour");
  // The final prediction's rank: exact int32 (a change of one rank reads as one).
  assert.equal(diff.meta.sections.delta_final_token_ranks.dtype, "int32");
  assert.equal(metricValueAt(diff, "delta_final_token_ranks", diffIndex(diff, 0, 0, 0)), 1);
  assert.equal(metricValueAt(diff, "delta_final_token_ranks", diffIndex(diff, 0, 0, 1)), 0);
  assert.equal(diffMetric(diff, "delta_final_token_ranks")?.log, true);
});

test("a rank's change sits on a symmetric log scale: a change of 3 ranks shows beside one of thousands", () => {
  const linear = divergingColour(3, 5000);
  const log = divergingColour(3, 5000, DIVERGING, true);
  const centre = hexToRgb(DIVERGING[4]);
  const distance = (/** @type {number[]} */ c) => c.reduce((s, x, i) => s + Math.abs(x - centre[i]), 0);
  assert.ok(distance(log) > distance(linear) + 60, `log ${log} vs linear ${linear}`);
  assert.deepEqual(divergingColour(5000, 5000, DIVERGING, true), divergingColour(1, 1), "the domain's end is the scale's end");
  const up = divergingColour(40, 5000, DIVERGING, true);
  const down = divergingColour(-40, 5000, DIVERGING, true);
  assert.ok(up[0] > up[2] && down[2] > down[0], "the sign picks the hue");
});
