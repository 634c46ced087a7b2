// Find and jump (js/src/view/search.js) against what Python says each cell holds (the golden
// payloads' `expected.cells`: input token, top-1 token, whether the answer is top-1, missing).

import assert from "node:assert/strict";
import { test } from "node:test";
import { decodePayload } from "../src/payload.js";
import { findHits, firstAnswerTop1, matchingTokens, stepHit } from "../src/view/search.js";
import { golden, lensPayload } from "./golden.mjs";

const decoded = (/** @type {string} */ name) => decodePayload(...Object.values(lensPayload(name)));

/** Python's hits of `query` in `prompt`: [position, row (-1: the input)] in reading order. */
function expectedHits(cells, prompt, query) {
  const q = query.toLowerCase();
  const mine = cells.filter((c) => c.prompt === prompt);
  const out = [];
  const positions = [...new Set(mine.map((c) => c.position))].sort((a, b) => a - b);
  for (const p of positions) {
    const column = mine.filter((c) => c.position === p).sort((a, b) => a.row - b.row);
    if (column[0].input.toLowerCase().includes(q)) out.push([p, -1]);
    for (const c of column) if (!c.missing && c.top1 !== null && c.top1.toLowerCase().includes(q)) out.push([p, c.row]);
  }
  return out;
}

for (const name of ["lens_answers", "lens_plain", "lens_missing", "lens_chat"]) {
  test(`${name}: find matches Python's input and top-1 tokens, case-blind`, () => {
    const data = decoded(name);
    const cells = golden(name).expected.cells;
    const queries = new Set(["a", "B", "\n", "<b>", "zzz-none"]);
    for (const c of cells) {
      if (c.top1) queries.add(c.top1.slice(0, 2).toUpperCase());
      queries.add(c.input.slice(-2));
    }
    let total = 0;
    for (let prompt = 0; prompt < data.P; prompt++) {
      for (const q of queries) {
        if (!q) continue;
        const got = findHits(data, prompt, q).map((hit) => [hit.position, hit.layerIndex]);
        assert.deepEqual(got, expectedHits(cells, prompt, q), `${name} prompt ${prompt} query ${JSON.stringify(q)}`);
        total += got.length;
      }
    }
    assert.ok(total > 10, `${name}: the queries find something (${total})`);
  });
}

test("the answer is first top-1 where Python says, and nowhere without answers", () => {
  const data = decoded("lens_answers");
  const cells = golden("lens_answers").expected.cells;
  for (let prompt = 0; prompt < data.P; prompt++) {
    const hits = cells.filter((c) => c.prompt === prompt && c.answer_top1 && !c.missing).sort((a, b) => a.position - b.position || a.row - b.row);
    const want = hits.length ? { position: hits[0].position, layerIndex: hits[0].row } : null;
    assert.deepEqual(firstAnswerTop1(data, prompt), want, `prompt ${prompt}`);
  }
  assert.ok(cells.some((c) => c.answer_top1), "the golden case has an answer top-1 somewhere");
  assert.equal(firstAnswerTop1(decoded("lens_plain"), 0), null);
});

test("the string table is matched once, and the steps wrap", () => {
  assert.deepEqual([...matchingTokens(["Paris", " paris", "x"], "PAR")], [1, 1, 0]);
  assert.deepEqual([...matchingTokens(["a"], "")], [0]);
  assert.equal(stepHit(0, -1, 1), -1);
  assert.equal(stepHit(3, -1, 1), 0);
  assert.equal(stepHit(3, -1, -1), 2);
  assert.equal(stepHit(3, 2, 1), 0);
  assert.equal(stepHit(3, 0, -1), 2);
});
