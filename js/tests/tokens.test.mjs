import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { CODE_POINT_RANGES, charCount, codepointLabel, displayToken, hasBytes, isolateLtr, truncateText, wholeCharacter } from "../src/shared/tokens.js";

// The shared table: tests/test_tokens.py runs the same cases against murano_widgets/tokens.py.
const CASES = JSON.parse(readFileSync(new URL("../../tests/token_display_cases.json", import.meta.url), "utf8"));

test("the shared table has at least 40 cases", () => {
  assert.ok(CASES.length >= 40, `${CASES.length} cases`);
});

for (const [i, c] of CASES.entries()) {
  test(`case ${i}: ${c.why}`, () => {
    assert.equal(displayToken(c.text, { spaces: c.spaces ?? true }), c.shown);
  });
}

test("the Python rule list is the same list", () => {
  const source = readFileSync(new URL("../../murano_widgets/tokens.py", import.meta.url), "utf8");
  const block = source.slice(source.indexOf("_SHOWN_AS_CODE_POINT"), source.indexOf("\n)\n"));
  const ranges = [...block.matchAll(/\((0x[0-9A-Fa-f]+), (0x[0-9A-Fa-f]+)\)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  assert.deepEqual(ranges, CODE_POINT_RANGES.map((r) => [...r]));
});

test("not a string, and the prompt option", () => {
  assert.equal(displayToken(undefined), "?");
  assert.equal(displayToken(" a b", { spaces: false }), " a b");
  assert.equal(codepointLabel(0x1f600), "<U+1F600>");
});

test("truncation counts code points and ends in an ellipsis", () => {
  assert.equal(truncateText("abcdef", 4), "abc…");
  assert.equal(truncateText("abc", 3), "abc");
  assert.equal(truncateText("😀😀😀", 2), "😀…");
  assert.equal(truncateText("abc", 1), "…");
  assert.equal(truncateText("abc", 0), "");
  assert.equal(charCount("😀a"), 2);
  assert.equal(charCount("\ude00\ud83d"), 2);
});

test("isolateLtr wraps with LRI … PDI", () => {
  assert.equal(isolateLtr("אב"), "\u2066אב\u2069");
});

// Written by tests/test_tokens.py from the tiny byte-level tokenizer: a prompt's tokens as the
// step decodes them (split characters' bytes as <0xE6>), and the whole characters Python worked
// out from the prompt's own character boundaries.
const SPLIT = JSON.parse(readFileSync(new URL("../../tests/split_character_cases.json", import.meta.url), "utf8"));

test("a split character's bytes are put back together from the tokens around them", () => {
  assert.ok(SPLIT.tokens.length === SPLIT.whole.length && SPLIT.whole.filter(Boolean).length >= 8);
  for (let p = 0; p < SPLIT.tokens.length; p++) {
    assert.deepEqual(wholeCharacter(SPLIT.tokens, p), SPLIT.whole[p], `position ${p}: ${SPLIT.tokens[p]}`);
    assert.equal(hasBytes(SPLIT.tokens[p]), SPLIT.whole[p] !== null);
  }
  // A token with a whole letter and a split byte; a byte with no partner (a cut prompt).
  assert.deepEqual(wholeCharacter(["é<0xE6>", "<0x97><0xA5>x"], 0), { text: "日", bytes: "E6 97 A5", from: 0, to: 1 });
  assert.deepEqual(wholeCharacter(["a", "<0xE6>"], 1), { text: "\ufffd", bytes: "E6", from: 1, to: 1 });
  assert.equal(wholeCharacter(["plain"], 0), null);
});
