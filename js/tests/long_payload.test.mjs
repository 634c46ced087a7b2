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
