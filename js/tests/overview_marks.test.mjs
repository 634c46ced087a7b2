// The long-trace overview's marks (js/src/view/overview_marks.js) against what Python says each
// cell and token holds (the golden payloads' `expected.cells`: role, generated, answer top-1,
// the tracked tokens' probabilities).

import assert from "node:assert/strict";
import { test } from "node:test";
import { decodePayload } from "../src/payload.js";
import { traceMarks } from "../src/view/overview_marks.js";
import { golden, lensPayload } from "./golden.mjs";

const decoded = (/** @type {string} */ name) => decodePayload(...Object.values(lensPayload(name)));

/** Starts of the runs of positions (0..n-1) where `hit(p)` holds. */
function starts(n, hit) {
  const out = [];
  for (let p = 0; p < n; p++) if (hit(p) && (p === 0 || !hit(p - 1))) out.push(p);
  return out;
}

test("roles and the generation start are marked where Python says they begin", () => {
  const name = "lens_chat";
  const data = decoded(name);
  const { meta, expected } = golden(name);
  for (let prompt = 0; prompt < data.P; prompt++) {
    const tokens = expected.cells.filter((c) => c.prompt === prompt && c.row === 0).sort((a, b) => a.position - b.position);
    const marks = traceMarks(data, prompt, null, -1, 0.5);
    const roles = marks.filter((m) => m.kind === "role").map((m) => [m.column, meta.roles[m.role]]);
    const want = tokens.filter((c, p) => p === 0 || c.role !== tokens[p - 1].role).map((c) => [c.position, c.role]);
    assert.deepEqual(roles, want, `prompt ${prompt}`);
    const generated = tokens.findIndex((c) => c.generated);
    assert.deepEqual(marks.filter((m) => m.kind === "generated").map((m) => m.column), generated >= 0 ? [generated] : []);
  }
  assert.ok(expected.cells.some((c) => c.generated), "the case has generated text");
});

test("answers and tracked tokens are marked at the start of each run where some layer passes", () => {
  const name = "lens_answers";
  const data = decoded(name);
  const { expected } = golden(name);
  let marked = 0;
  for (let prompt = 0; prompt < data.P; prompt++) {
    const cells = expected.cells.filter((c) => c.prompt === prompt);
    const n = data.lengths[prompt];
    const at = (p) => cells.filter((c) => c.position === p && !c.missing);
    const answers = starts(n, (p) => at(p).some((c) => c.answer_top1));
    for (let t = 0; t < data.targets.length; t++) {
      const probs = [...new Set(cells.map((c) => c.targets[t][0]))].sort((a, b) => a - b);
      // A threshold between two values Python sent, so rounding cannot decide.
      const threshold = probs.length > 1 ? (probs[probs.length >> 1] + probs[(probs.length >> 1) - 1]) / 2 : 0.5;
      const wantTarget = starts(n, (p) => cells.some((c) => c.position === p && !c.missing && c.targets[t][0] >= threshold));
      const marks = traceMarks(data, prompt, null, t, threshold);
      assert.deepEqual(marks.filter((m) => m.kind === "answer").map((m) => m.column), answers, `answers, prompt ${prompt}`);
      assert.deepEqual(marks.filter((m) => m.kind === "target").map((m) => m.column), wantTarget, `target ${t}, prompt ${prompt}`);
      marked += wantTarget.length;
    }
  }
  assert.ok(marked > 0, "some tracked token passes its threshold");
  assert.deepEqual(traceMarks(decoded("lens_plain"), 0, null, -1, 0.5), []);
});
