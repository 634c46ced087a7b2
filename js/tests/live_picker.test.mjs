// The token picker's ranking (src/live/picker.js) against what Python computed from the result's
// floats: tests/golden/lens_picker.json's `expected.picker` (tests/golden_payloads.py's
// picker_expected: every token in a row's top-k, its best probability over the rows and the
// first row that has it, best first). The case's top-k tokens change from row to row, and one
// cell (row 1 of prompt 0's position 1) was not finite.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload } from "../src/heatmap/payload.js";
import { comparePicked, pickerColumn, pickerTokens } from "../src/heatmap/live/picker.js";
import { golden, lensPayload, quantised } from "./golden.mjs";

const CASE = "lens_picker";

test("every column's ranking is Python's: by the best probability over the layers", () => {
  const expected = golden(CASE).expected.picker;
  for (const byteOffset of [null, 1]) {
    const { meta, sections } = lensPayload(CASE, { byteOffset });
    const data = decodePayload(meta, sections);
    assert.equal(expected.length, 5);
    for (const column of expected) {
      const picked = pickerTokens(data, column.prompt, column.position);
      const where = `prompt ${column.prompt} position ${column.position}`;
      assert.ok(picked.complete, where);
      assert.deepEqual(picked.tokens.map((t) => t.token), column.tokens.map((t) => t.token), where);
      picked.tokens.forEach((t, r) => {
        const want = column.tokens[r];
        assert.equal(t.row, want.row, `${where}: ${JSON.stringify(t.token)}'s row`);
        assert.equal(t.layer, want.layer);
        assert.equal(data.tokens[t.tokenIndex], t.token);
        assert.ok(quantised(t.prob, want.prob, data.scales.topk_probs), `${where}: ${t.prob} vs ${want.prob}`);
      });
    }
  }
});

test("the ranking is not the last layer's: tokens of earlier rows rank by their best", () => {
  const { meta, sections } = lensPayload(CASE);
  const data = decodePayload(meta, sections);
  const { cells } = golden(CASE).expected;
  let differs = 0;
  for (const column of golden(CASE).expected.picker) {
    const last = cells.find((c) => c.prompt === column.prompt && c.position === column.position && c.row === data.L - 1);
    const lastOrder = last.top_k.map(([token]) => token);
    const ranked = pickerTokens(data, column.prompt, column.position).tokens.map((t) => t.token);
    assert.ok(ranked.length > lastOrder.length, "more tokens than the last row's top-k");
    if (ranked.slice(0, lastOrder.length).join("|") !== lastOrder.join("|")) differs += 1;
  }
  assert.ok(differs >= 3, `${differs} columns rank otherwise than the last row`);
});

test("a cell that was not finite adds nothing", () => {
  const { meta, sections } = lensPayload(CASE);
  const data = decodePayload(meta, sections);
  const column = pickerTokens(data, 0, 1).tokens;
  assert.ok(column.every((t) => t.row !== 1), "row 1 of position 1 has no value");
});

test("before the top-k arrives: the top-1s alone, ranked the same way, and not complete", () => {
  const { meta, sections } = lensPayload(CASE, { details: false });
  const data = decodePayload(meta, sections);
  const { cells } = golden(CASE).expected;
  for (const column of golden(CASE).expected.picker) {
    const picked = pickerTokens(data, column.prompt, column.position);
    assert.equal(picked.complete, false);
    // Independently: each row's top-1 from Python's cell descriptions, its best over the rows.
    /** @type {Map<string, {prob: number, row: number}>} */
    const best = new Map();
    for (const cell of cells) {
      if (cell.prompt !== column.prompt || cell.position !== column.position || cell.missing) continue;
      const seen = best.get(cell.top1);
      if (!seen || cell.values.max_probs > seen.prob) best.set(cell.top1, { prob: cell.values.max_probs, row: cell.row });
    }
    const want = [...best.entries()].sort((a, b) => b[1].prob - a[1].prob || a[1].row - b[1].row).map(([token, v]) => [token, v.row]);
    assert.deepEqual(picked.tokens.map((t) => [t.token, t.row]), want);
  }
});

test("ties: the earlier row first, then the text", () => {
  const t = (token, prob, row) => ({ token, tokenIndex: 0, prob, row, layer: row });
  const sorted = [t("b", 0.5, 2), t("a", 0.5, 2), t("c", 0.5, 1), t("d", 0.9, 3)].sort(comparePicked);
  assert.deepEqual(sorted.map((x) => x.token), ["d", "c", "a", "b"]);
});

test("the column: the keyboard focus's, else the pinned cell's on this prompt, else the last", () => {
  const base = { focus: null, focused: false, selected: null, prompt: 0 };
  assert.deepEqual(pickerColumn(base, 5), { position: 4, source: "last" });
  assert.deepEqual(pickerColumn({ ...base, selected: { prompt: 0, position: 2 } }, 5), { position: 2, source: "pinned" });
  assert.deepEqual(pickerColumn({ ...base, selected: { prompt: 1, position: 2 } }, 5), { position: 4, source: "last" });
  const focus = { position: 7 };
  assert.deepEqual(pickerColumn({ ...base, focus, focused: true, selected: { prompt: 0, position: 2 } }, 5), { position: 4, source: "focus" });
  assert.deepEqual(pickerColumn({ ...base, focus, focused: false, selected: { prompt: 0, position: 2 } }, 5), { position: 2, source: "pinned" });
});
