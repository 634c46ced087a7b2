// Honest numbers (issue 21, item 3): a probability shown twice for one cell reads the same in both
// places, no positive probability reads "0%", and no number is printed with digits finer than the
// payload's step. Checked on the golden payloads (tests/golden/*.json, written by Python); the
// facts compared against are the result's own floats (`expected`), not the payload's.
import assert from "node:assert/strict";
import { test } from "node:test";

import { diffCell, tooltipContent } from "../src/diff/details.js";
import { decodeDiff } from "../src/diff/payload.js";
import { cellDetails, tooltipModel } from "../src/heatmap/details.js";
import { formatBits, formatProb } from "../src/shared/format.js";
import { shortLabel } from "../src/heatmap/metrics.js";
import { decodePayload } from "../src/heatmap/payload.js";
import { displayToken } from "../src/shared/tokens.js";
import { diffPayload, golden, goldenNames, lensPayload } from "./golden.mjs";

/**
 * The text formatProb gives `p`, if every value within `step` of it gives the same text (else
 * null: `p` is too close to a rounding boundary for a quantised copy to be sure of its text).
 * @param {number} p
 * @param {number} step
 */
function robustText(p, step) {
  const text = formatProb(p);
  return formatProb(Math.max(0, p - step)) === text && formatProb(p + step) === text ? text : null;
}

test("a small positive probability never reads 0%", () => {
  for (let e = -12; e <= -1; e += 0.25) {
    const p = 10 ** e;
    assert.notEqual(formatProb(p), "0%", `${p}`);
    assert.doesNotMatch(formatProb(p), /^0(\.0*)?%$/, `${p}`);
  }
  assert.equal(formatProb(0.0004), "<0.1%");
  assert.equal(formatProb(3e-6), "<0.1%");
  assert.equal(formatProb(Number.MIN_VALUE), "<0.1%");
});

test("a formatter given the payload's step prints no digit finer than it", () => {
  // uint16 probabilities (a step of 1/65535 = 0.0015 %): two decimals of a percent are real.
  assert.equal(formatProb(0.023374, 1 / 65535), "2.34%");
  // A coarser step (1/255 = 0.39 %, the uint8 top-k of payloads before issue 21): whole percents.
  assert.equal(formatProb(6 / 255, 1 / 255), "2%");
  assert.equal(formatProb(118 / 255, 1 / 255), "46%");
  // Bits scaled to a large maximum (KL up to 2,000 bits: a step of 0.03 bits): one decimal.
  assert.equal(formatBits(1.2345, false, 2000 / 65535), "1.2 bits");
  assert.equal(formatBits(1.2345, false, 10 / 65535), "1.23 bits");
  assert.equal(formatBits(12.345, false, 2000 / 65535), "12.3 bits");
  assert.equal(formatBits(12.345, false, 20000 / 65535), "12 bits");
});

for (const name of goldenNames("lens_")) {
  test(`${name}: a probability shown twice in a tooltip reads the same, and never 0% when positive`, () => {
    const { expected } = golden(name);
    const data = decodePayload(...Object.values(lensPayload(name)));
    /** @param {string} field */
    const labelOf = (field) => {
      const spec = data.metrics.find((m) => m.field === field && m.available);
      return spec ? shortLabel(spec.label) : null;
    };
    let pairs = 0;
    for (const cell of expected.cells) {
      if (cell.missing) continue;
      const { prompt: p, row, position: j } = cell;
      const at = `${name} cell (prompt ${p}, row ${row}, position ${j})`;
      const tip = tooltipModel(cellDetails(data, p, row, j));
      /** @param {string} field */
      const rowText = (field) => tip.rows.find((r) => r.label === labelOf(field))?.value;
      const answer = data.answerSets[0]?.answers[p] ?? null;
      cell.top_k.forEach(([token, prob], r) => {
        const shown = tip.top[r].prob;
        if (prob > 0) assert.doesNotMatch(shown, /^0(\.0*)?%$/, `${at}: top-k ${r} (${prob}) reads ${shown}`);
        // The same float of the result elsewhere in the tooltip: the top-1, the final prediction,
        // the answer's first token.
        const same = [];
        if (r === 0) same.push("max_probs");
        if (token === cell.final && cell.values.final_token_probs === prob) same.push("final_token_probs");
        if (token === answer && cell.values.answer_token_probs === prob) same.push("answer_token_probs");
        for (const field of same) {
          const other = rowText(field);
          if (other === undefined) continue;
          pairs += 1;
          assert.equal(shown, other, `${at}: ${displayToken(token)} at rank ${r} reads ${shown}, its ${field} row ${other}`);
        }
        // The payload holds what is shown: the text is the float's own (unless the float sits
        // within a step of a rounding boundary, where no quantised copy can be sure).
        const step = r === 0 ? data.scales.max_probs : data.scales.topk_probs;
        const own = robustText(prob, step);
        if (own !== null) assert.equal(shown, own, `${at}: top-k ${r} is ${prob}, shown as ${shown}`);
      });
      for (const field of ["final_token_probs", "answer_token_probs"]) {
        const value = cell.values[field];
        const text = rowText(field);
        if (value > 0 && text !== undefined) assert.doesNotMatch(text, /^0(\.0*)?%$/, `${at}: ${field} ${value} reads ${text}`);
      }
    }
    if (name === "lens_rounding") assert.ok(pairs >= 8, `${name}: only ${pairs} numbers shown twice`);
  });
}

test("lens_rounding: the issue's cell reads 2.34% twice, and its tiny entries <0.1%", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_rounding")));
  const tip = tooltipModel(cellDetails(data, 0, 0, 1));
  assert.deepEqual(tip.top.map((t) => [t.text, t.prob]), [["␣the", "97.6%"], ["␣Paris", "2.34%"], ["␣a", "<0.1%"], ["␣Rome", "<0.1%"]]);
  assert.equal(tip.rows.find((r) => r.label === "Probability of the final prediction")?.value, "2.34%");
});

test("every probability section's step is finer than the last digit formatProb prints (0.01 %)", () => {
  for (const name of goldenNames("lens_")) {
    const { meta } = golden(name);
    const probabilityFields = new Set(meta.metrics.filter((m) => m.unit === "probability").map((m) => m.field));
    for (const field of [...probabilityFields, "topk_probs", "answer_probs", "target_probs"]) {
      const spec = meta.sections[field];
      if (spec) assert.ok(spec.scale <= 1e-4, `${name}: ${field} steps by ${spec.scale}`);
    }
  }
});

for (const name of goldenNames("diff_")) {
  test(`${name}: the diff tooltip's top-k columns print as its Δ line does`, () => {
    const { expected } = golden(name);
    const diff = decodeDiff(...Object.values(diffPayload(name)));
    let pairs = 0;
    for (const c of expected.cells) {
      if (!c.aligned) continue;
      const cell = diffCell(diff, c.prompt, c.row, c.position);
      const content = tooltipContent(diff, cell);
      const line = content.lines.find((l) => l.startsWith("Δ p("));
      const match = line && /\(([^()]+) → ([^()]+)\)$/.exec(line);
      [c.top_a, c.top_b].forEach((top, side) => {
        top.forEach(([token, prob], r) => {
          const shown = content.columns[side].rows[r];
          assert.equal(shown.prob, formatProb(side === 0 ? cell.topA[r].prob : cell.topB[r].prob), `${name} ${c.row}/${c.position}`);
          if (prob > 0) assert.doesNotMatch(shown.prob, /^0(\.0*)?%$/);
          const same = side === 0 ? c.token_prob_a : c.token_prob_b;
          if (match && token === c.token && same === prob) {
            pairs += 1;
            assert.equal(shown.prob, match[side + 1], `${name} ${c.row}/${c.position}: ${line}`);
          }
        });
      });
    }
    assert.ok(pairs > 0, `${name}: no number shown twice`);
  });
}
