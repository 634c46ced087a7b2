import assert from "node:assert/strict";
import { test } from "node:test";

import { decodePayload } from "../src/payload.js";
import { lensPayload } from "./golden.mjs";
import { encode } from "./helpers.mjs";

// A long payload (Python's murano_widgets/payload/long.py, over 32 x 8,192 cells): the table in
// _meta holds the base strings; the top-k's others come as the detail section `detail_tokens`
// (a JSON list, UTF-8), and past 65,535 strings a token section is its low 16 bits plus a uint8
// `<name>_high` plane. Too big for a golden file, so the golden lens_plain is rewritten here by
// hand: 65,536 filler strings before its table, its last two strings moved to detail_tokens.
const TOKEN_SECTIONS = ["input_ids", "final_tokens", "predicted_tokens", "topk_tokens"];

test("a long payload's continued table and high planes decode to the same strings", () => {
  const plain = decodePayload(...Object.values(lensPayload("lens_plain")));
  const { meta, sections } = lensPayload("lens_plain");
  const filler = Array.from({ length: 65536 }, (_, i) => `f${i}`);
  const table = [...filler, ...meta.tokens];
  const later = table.splice(table.length - 2);
  meta.tokens = table;
  meta.sections = { ...meta.sections };
  for (const name of TOKEN_SECTIONS) {
    const n = meta.sections[name].shape.reduce((a, b) => a * b, 1);
    sections[`${name}_high`] = encode(new Array(n).fill(1), "uint8");
    meta.sections[`${name}_high`] = { dtype: "uint8", shape: [n], scale: 1 };
  }
  const bytes = new TextEncoder().encode(JSON.stringify(later));
  sections.detail_tokens = encode(Array.from(bytes), "uint8");
  meta.sections.detail_tokens = { dtype: "uint8", shape: [bytes.length], scale: 1 };
  meta.detail_sections = [...meta.detail_sections, "detail_tokens"];

  const data = decodePayload(meta, sections);
  assert.equal(data.tokens.length, 65536 + plain.tokens.length);
  for (const name of TOKEN_SECTIONS) {
    const strings = Array.from(data.arrays[name], (i) => data.tokens[i]);
    assert.deepEqual(strings, Array.from(plain.arrays[name], (i) => plain.tokens[i]), name);
  }

});

test("a top-k that comes by blocks reads as the whole one where its block has come, and waits elsewhere", async () => {
  const { cellDetails } = await import("../src/details.js");
  const whole = decodePayload(...Object.values(lensPayload("lens_plain")));
  const { meta, sections } = lensPayload("lens_plain");
  meta.topk_window = 4;
  const { topk_tokens: tokens, topk_probs: probs, ...rest } = sections;
  const data = decodePayload(meta, rest);
  assert.equal(data.topkWindow, 4);
  assert.equal(data.topK, whole.topK);
  // The block over positions 4.. (T = 5: one position), its own strings in reverse order.
  const k1 = whole.topK - 1;
  const strings = [...whole.tokens].reverse();
  const blockTokens = new Uint16Array(whole.L * k1);
  const blockProbs = new Uint16Array(whole.L * k1);
  for (let l = 0; l < whole.L; l++) {
    for (let r = 0; r < k1; r++) {
      const idx = (l * whole.T + 4) * k1 + r;
      blockTokens[l * k1 + r] = strings.indexOf(whole.tokens[whole.arrays.topk_tokens[idx]]);
      blockProbs[l * k1 + r] = whole.arrays.topk_probs[idx];
    }
  }
  data.topkBlocks = new Map([[4, { start: 4, width: 1, strings, tokens: blockTokens, probs: blockProbs, scale: whole.scales.topk_probs }]]);
  // Prompt 1 covers columns 3 and 4: position 1 is column 4 (its block has come), 0 is column 3.
  for (let l = 0; l < whole.L; l++) {
    const lazy = cellDetails(data, 1, l, 1);
    assert.deepEqual(lazy.top, cellDetails(whole, 1, l, 1).top);
    assert.equal(lazy.detailsLoaded, cellDetails(whole, 1, l, 1).detailsLoaded);
  }
  const waiting = cellDetails(data, 1, 0, 0);
  assert.equal(waiting.top.length, 1);
  assert.equal(waiting.detailsLoaded, false);
});
