import assert from "node:assert/strict";
import { test } from "node:test";
import { alignmentHeadline, cellLabel, diffCell, formatDelta, readoutLine, tooltipContent } from "../src/diff/details.js";
import { decodeDiff } from "../src/diff/payload.js";
import { diffPayload, golden } from "./golden.mjs";

// The golden diffs (tests/golden/diff_*.json, written by tests/golden_payloads.py): "The city<b>x</b>"
// read by a 2-layer model "small" (a); diff_prefix against "The city" read by "big" (2 layers,
// positions paired over the shared prefix), diff_depth against the same prompt read by a 5-layer
// "big" (layers paired by relative depth). The chosen token is a's final prediction, " Paris".
const decoded = (name) => decodeDiff(...Object.values(diffPayload(name)));

test("formatDelta writes signed percentage points", () => {
  assert.equal(formatDelta(0.123), "+12.3 pts");
  assert.equal(formatDelta(-0.004), "−0.4 pts");
  assert.equal(formatDelta(0), "0 pts");
  assert.equal(formatDelta(1, true), "+100");
  assert.equal(formatDelta(-0.5, true), "−50");
  assert.equal(formatDelta(0.031, true), "+3.1");
  assert.equal(formatDelta(null), "–");
  assert.equal(formatDelta(Number.NaN, true), "–");
});

test("a cell holds both sides' top-k, the partner token and the metrics", () => {
  const diff = decoded("diff_prefix");
  const cell = diffCell(diff, 0, 1, 0);
  assert.equal(cell.aligned, true);
  assert.equal(cell.inputA, "The");
  assert.equal(cell.inputB, "The");
  assert.equal(cell.token, "␣Paris");
  assert.ok(Math.abs(/** @type {number} */ (cell.delta) - 0.25) < 1e-4);
  const kl = golden("diff_prefix").expected.cells.find((c) => c.row === 1 && c.position === 0).kl_a_to_b;
  assert.ok(kl > 0.5 && Math.abs(/** @type {number} */ (cell.kl) - kl) < 1e-3, `${cell.kl} vs ${kl}`);
  assert.equal(cell.differs, true);
  assert.deepEqual(cell.topA.map((c) => c.token), ["␣Paris", "␣Rome"]);
  assert.deepEqual(cell.topB.map((c) => c.token), ["␣Rome", "␣Paris"]);
  const content = tooltipContent(diff, cell);
  assert.match(content.title, /^Layer 1 ↔ layer 1 · position 0 The$/);
  assert.deepEqual(content.columns.map((c) => c.label), ["a: small (logit lens)", "b: big (logit lens)"]);
  assert.ok(content.lines.some((l) => l === "Δ p(␣Paris) = +25 pts (12.5% → 37.5%)"), content.lines.join("|"));
  assert.ok(content.lines.includes("Top-1 differs: ␣Paris vs ␣Rome"));
  assert.equal(cellLabel(cell, "top1_differs"), "␣Rome");
  assert.equal(cellLabel(cell, "delta_prob"), "+25");
  assert.match(readoutLine(diff, cell, true), /pinned\)$/);
});

test("an unpaired cell says why and shows no b top-k; token text stays text", () => {
  const diff = decoded("diff_prefix");
  const cell = diffCell(diff, 0, 0, 2);
  assert.equal(cell.aligned, false);
  assert.equal(cell.inputB, null);
  assert.deepEqual(cell.topB, []);
  assert.equal(cell.inputA, "<b>x</b>");
  assert.deepEqual(tooltipContent(diff, cell).lines, ["No partner position in b: not compared."]);
  assert.equal(cellLabel(cell, "delta_prob"), "");
});

test("the headline says when layers are aligned by relative depth", () => {
  const same = decoded("diff_prefix");
  assert.doesNotMatch(alignmentHeadline(same), /relative depth/);
  const diff = decoded("diff_depth");
  assert.match(alignmentHeadline(diff), /^Layers aligned by relative depth: a has 2 layers, b has 5\./);
  assert.match(tooltipContent(diff, diffCell(diff, 0, 1, 0)).title, /↔ layer 4 of 5/);
});

test("a heatmap metric's change: the tooltip shows a's value, b's and the change in its unit", async () => {
  const { formatChange } = await import("../src/shared/format.js");
  assert.equal(formatChange("bits", 1.8985), "+1.90 bits");
  assert.equal(formatChange("bits", -0.5, true), "−0.5");
  assert.equal(formatChange("bits", 0), "0 bits");
  assert.equal(formatChange("rank", 1), "+1 rank");
  assert.equal(formatChange("rank", -25000), "−25k ranks");
  assert.equal(formatChange("rank", 1500, true), "+1.5k");
  assert.equal(formatChange("probability", -0.625), "−62.5 pts");
  assert.equal(formatChange("bits", Number.NaN), "–");
  const diff = decodeDiff(...Object.values(diffPayload("diff_prefix")));
  const cell = diffCell(diff, 0, 0, 0);
  const lines = tooltipContent(diff, cell, "delta_entropy").lines;
  assert.ok(lines.includes("Δ entropy: 1.48 bits → 3.38 bits (+1.90 bits)"), lines.join(" | "));
  assert.equal(cellLabel(cell, "delta_entropy"), "+1.9");
  assert.ok(tooltipContent(diff, cell, "delta_final_token_ranks").lines.includes("Δ final prediction's rank: rank 0 → rank 1 (+1 rank)"));
  assert.ok(tooltipContent(diff, cell, "delta_final_token_probs").lines.some((l) => /75(\.0)?% → 12\.5% \(−62\.5 pts\)/.test(l)));
  assert.match(readoutLine(diff, cell, false, "delta_kl_to_final"), /Δ KL to final: 1\.68 bits → 0\.93 bits \(−0\.76 bits\)/);
  assert.ok(!tooltipContent(diff, cell, "delta_prob").lines.some((l) => l.startsWith("Δ entropy")), "only the colouring's change");
});
