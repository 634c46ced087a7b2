// Token groups (Python's metric "group": a group's summed probability): the grid's values are
// the chosen group's of each cell's `[n_groups]` (the view's `group`, apart from its `target`),
// its label names the group as text, and the chart draws each group and their sum. The payload
// is the golden one Python wrote (tests/golden/lens_groups.json).
import assert from "node:assert/strict";
import { test } from "node:test";

import { cellDetails } from "../src/details.js";
import { metricAvailable, metricLabel, metricOffered, metricSpec, metricValue, resolveGroup } from "../src/metrics.js";
import { cellIndex, decodePayload } from "../src/payload.js";
import { chartModeFor, groupSeries, trajectorySeries, valueScale } from "../src/trajectory.js";
import { changeAt } from "../src/diff/colour.js";
import { decodeDiff, diffIndex } from "../src/diff/payload.js";
import { diffPayload, golden, lensPayload } from "./golden.mjs";

const decoded = (name, options) => decodePayload(...Object.values(lensPayload(name, options)));
const STEP = 1 / 65535;

test("the group metric reads each cell's chosen group as Python computed it", () => {
  const data = decoded("lens_groups", { details: false });
  const { expected } = golden("lens_groups");
  const spec = metricSpec(data, "group");
  assert.ok(spec && spec.perGroup && !spec.perTarget && spec.field === "group_probs");
  assert.deepEqual(data.groups, ["paris", "<b>g</b> $&"]);
  assert.ok(metricAvailable(data, "group"), "a base section: drawn with the first payload");
  assert.equal(resolveGroup(data, "nope"), "paris");
  for (let p = 0; p < data.P; p++) {
    for (let i = 0; i < data.L; i++) {
      for (let j = 0; j < data.lengths[p]; j++) {
        const idx = cellIndex(data, p, i, j);
        for (let g = 0; g < 2; g++) {
          // The target chosen does not move the group read, nor the other way round.
          const v = metricValue(data, "group", idx, { target: 1 - g, group: g });
          assert.ok(Math.abs(v - expected.group_probs[p][i][j][g]) <= STEP / 2 + 1e-9, `${p} ${i} ${j} ${g}`);
          const t = metricValue(data, "target", idx, { target: g, group: 1 - g });
          assert.equal(t, metricValue(data, "target", idx, g));
        }
      }
    }
  }
  // The label names the group as given, as text ("$&" is not a replacement pattern here).
  assert.equal(metricLabel(data, spec, { target: 0, group: 1 }), "Probability of group “<b>g</b> $&”");
  const details = cellDetails(data, 0, 1, 2, { target: 0, group: 1 });
  const entry = details.metrics.find((m) => m.spec.name === "group");
  assert.equal(entry?.label, "Probability of group “<b>g</b> $&”");
  assert.ok(Math.abs((entry?.value ?? NaN) - expected.group_probs[0][1][2][1]) <= STEP);
});

test("the chart draws a line per group and their sum", () => {
  const data = decoded("lens_groups");
  const { expected } = golden("lens_groups");
  const lines = trajectorySeries(data, 1, 1, "prob").filter((s) => s.kind === "group" || s.kind === "group_sum");
  assert.deepEqual(lines.map((s) => s.label), ["paris", "<b>g</b> $&", "sum of groups"]);
  for (let i = 0; i < data.L; i++) {
    const want = expected.group_probs[1][i][1];
    assert.ok(Math.abs(/** @type {number} */ (lines[0].values[i]) - want[0]) <= STEP);
    assert.ok(Math.abs(/** @type {number} */ (lines[1].values[i]) - want[1]) <= STEP);
    assert.ok(Math.abs(/** @type {number} */ (lines[2].values[i]) - (want[0] + want[1])) <= 2 * STEP);
  }
  // No rank for a group; a payload without groups has no such line nor metric.
  assert.equal(trajectorySeries(data, 1, 1, "rank").filter((s) => s.kind.startsWith("group")).length, 0);
  const plain = decoded("lens_answers");
  assert.deepEqual(plain.groups, []);
  assert.ok(!metricOffered(plain, "group"));
  assert.deepEqual(groupSeries(plain, [0], [false]), []);
});

test("the diff shows each group's change in probability, as Python computed it", () => {
  const { meta, sections } = diffPayload("diff_groups");
  const diff = decodeDiff(meta, sections);
  const { expected } = golden("diff_groups");
  const changes = diff.metrics.filter((m) => m.name.startsWith("delta_group_"));
  assert.deepEqual(changes.map((m) => m.label), ["Change in probability of group “paris” (b − a)", "Change in probability of group “<b>g</b> $&” (b − a)"]);
  changes.forEach((spec, g) => {
    const want = expected.group_changes[spec.group];
    let k = 0;
    for (let p = 0; p < diff.P; p++) {
      for (let i = 0; i < diff.L; i++) {
        for (let j = 0; j < diff.lengths[p]; j++, k++) {
          const got = changeAt(diff, spec.name, diffIndex(diff, i, p, j));
          if (want[k] === null) {
            assert.equal(got, null, `${g} ${p} ${i} ${j}: no partner`);
            continue;
          }
          assert.ok(got, `${g} ${p} ${i} ${j}`);
          assert.ok(Math.abs(got.a - want[k][0]) <= STEP && Math.abs(got.b - want[k][1]) <= STEP);
          assert.ok(Math.abs(got.delta - want[k][2]) <= 1 / 32767, `${g} ${p} ${i} ${j}: ${got.delta} vs ${want[k][2]}`);
        }
      }
    }
    assert.equal(k, want.length, "every cell read");
    assert.ok(want.some((w) => w === null) && want.some((w) => w !== null && w[2] !== 0), "cells with and without a partner, and changes");
  });
  // A comparison without groups has no such metric.
  const plain = decodeDiff(...Object.values(diffPayload("diff_prefix")));
  assert.equal(plain.metrics.filter((m) => m.name.startsWith("delta_group_")).length, 0);
});

test("the logit difference reaches the chart: its own line on its signed scale", () => {
  const data = decoded("lens_logit_diff");
  const { expected } = golden("lens_logit_diff");
  const spec = metricSpec(data, "logit_diff");
  assert.ok(spec && spec.available && spec.unit === "logit");
  assert.equal(chartModeFor(spec), "metric");
  const scale = valueScale("metric", 9, { data, name: "logit_diff" });
  assert.ok(scale.toUnit(0) === 0.5 && scale.toUnit(-spec.domain[1]) === 0, "0 in the middle of a symmetric axis");
  for (const cell of expected.cells) {
    const [line] = trajectorySeries(data, cell.prompt, cell.position, "metric", "logit_diff");
    const want = cell.values.logit_diff;
    const got = line.values[cell.row];
    if (want === null) assert.equal(got, null);
    else assert.ok(got !== null && Math.abs(got - want) <= 1e-5 * Math.max(1, Math.abs(want)), `${got} vs ${want}`);
  }
});
