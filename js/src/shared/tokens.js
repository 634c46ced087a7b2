// @ts-check
/**
 * Token display: untrusted token text made visible and safe to show as plain text.
 *
 * One explicit rule set, mirrored character for character by `murano_widgets/tokens.py`
 * (`display_token`) and checked against the shared table `tests/token_display_cases.json` by
 * both `node --test` and pytest. Do not switch either side to Unicode category tables: they differ
 * between Python and JavaScript versions.
 */

/**
 * Marks for the whitespace characters people need to see.
 * @type {Readonly<Record<string, string>>}
 */
const MARKS = Object.freeze({ " ": "␣", "\n": "↵", "\t": "⇥", "\r": "⇤" });

/**
 * Code point ranges (inclusive) shown as `<U+XXXX>`: controls, invisible and format characters,
 * unusual spaces, bidirectional controls, private use, tag characters and lone surrogates.
 * The same list stands in `murano_widgets/tokens.py` (`_SHOWN_AS_CODE_POINT`): change them together.
 * @type {ReadonlyArray<readonly [number, number]>}
 */
export const CODE_POINT_RANGES = Object.freeze([
  [0x0000, 0x001f], // C0 controls (tab, newline and carriage return have marks instead)
  [0x007f, 0x009f], // DEL and the C1 controls
  [0x00a0, 0x00a0], // no-break space
  [0x00ad, 0x00ad], // soft hyphen
  [0x034f, 0x034f], // combining grapheme joiner
  [0x061c, 0x061c], // Arabic letter mark
  [0x115f, 0x1160], // Hangul fillers
  [0x1680, 0x1680], // Ogham space mark
  [0x17b4, 0x17b5], // Khmer inherent vowels (invisible)
  [0x180b, 0x180f], // Mongolian variation selectors and vowel separator
  [0x2000, 0x200f], // en quad … hair space, zero-width space/non-joiner/joiner, LRM, RLM
  [0x2028, 0x202f], // line and paragraph separators, LRE … RLO embeddings, narrow no-break space
  [0x205f, 0x206f], // medium math space, word joiner, invisible operators, isolates (2066-2069)
  [0x3000, 0x3000], // ideographic space
  [0x3164, 0x3164], // Hangul filler
  [0xd800, 0xdfff], // surrogates (only lone halves reach this test)
  [0xe000, 0xf8ff], // private use
  [0xfeff, 0xfeff], // zero-width no-break space (byte order mark)
  [0xffa0, 0xffa0], // halfwidth Hangul filler
  [0xfff9, 0xfffb], // interlinear annotation controls
  [0x1bca0, 0x1bca3], // shorthand format controls
  [0x1d173, 0x1d17a], // musical symbol format controls
  [0xe0000, 0xe007f], // tag characters
  [0xf0000, 0x10ffff], // supplementary private use areas A and B (planes 15 and 16)
]);

/**
 * Whether a code point is shown as `<U+XXXX>`.
 * @param {number} cp
 * @returns {boolean}
 */
export function shownAsCodePoint(cp) {
  for (const [lo, hi] of CODE_POINT_RANGES) {
    if (cp < lo) return false;
    if (cp <= hi) return true;
  }
  return false;
}

/**
 * "<U+200F>" for a code point (at least four hex digits, upper case).
 * @param {number} cp
 * @returns {string}
 */
export function codepointLabel(cp) {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/**
 * A token as visible, safe text: every space as "␣", newlines as "↵", tabs as "⇥", carriage
 * returns as "⇤", controls, invisible, format, bidirectional, private-use and tag characters and
 * lone surrogates as "<U+XXXX>", the empty string as "∅". The result is plain text for
 * `textContent`/`fillText`, never HTML.
 * @param {unknown} token
 * @param {{spaces?: boolean}} [options] `spaces: false` keeps spaces as spaces (prompt text)
 * @returns {string}
 */
export function displayToken(token, { spaces = true } = {}) {
  if (typeof token !== "string") return "?";
  if (token === "") return "∅";
  let out = "";
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    let cp = code;
    let ch = token[i];
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < token.length) {
      const next = token.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        cp = (code - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
        ch = token.slice(i, i + 2);
        i++;
      }
    }
    if (ch === " ") out += spaces ? MARKS[" "] : " ";
    else if (ch === "\n" || ch === "\t" || ch === "\r") out += MARKS[ch];
    else if (shownAsCodePoint(cp)) out += codepointLabel(cp);
    else out += ch;
  }
  return out;
}

/**
 * A token (or a prompt) as a message quotes it: " Rome" → "“␣Rome”": `displayToken`'s text, cut
 * to `maxChars` code points with "…", in curly quotes. The one form of a token in status lines
 * and messages, the same as Python's `quote_token` (`murano_widgets/tokens.py`), so a line the
 * kernel words and one the front end words read alike.
 * @param {unknown} token
 * @param {{spaces?: boolean, maxChars?: number}} [options] `spaces: false` for a whole prompt
 * @returns {string}
 */
export function quoteToken(token, { spaces = true, maxChars = 48 } = {}) {
  return `“${truncateText(displayToken(token, { spaces }), maxChars)}”`;
}

/**
 * Shortens text to at most `maxChars` code points, ending in "…" when cut.
 * @param {string} text
 * @param {number} maxChars
 * @returns {string}
 */
export function truncateText(text, maxChars) {
  if (maxChars <= 0) return "";
  const chars = Array.from(text);
  if (chars.length <= maxChars) return text;
  if (maxChars === 1) return "…";
  return `${chars.slice(0, maxChars - 1).join("")}…`;
}

/**
 * Number of code points (a lone surrogate counts as one).
 * @param {string} text
 * @returns {number}
 */
export function charCount(text) {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!(c >= 0xdc00 && c <= 0xdfff && i > 0 && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff)) n++;
  }
  return n;
}

/**
 * Wraps text in a left-to-right isolate (LRI … PDI) for canvas `fillText`, so right-to-left
 * letters inside a token cannot reorder the text around them.
 * @param {string} text
 * @returns {string}
 */
export function isolateLtr(text) {
  return `\u2066${text}\u2069`;
}

/*
 * Characters split across tokens. Byte-level BPE cuts a multi-byte UTF-8 character ("日" is the
 * bytes E6 97 A5) into tokens that each hold part of it; decoded alone, each is "\ufffd". The
 * step keeps such a token's bytes instead, written "<0xE6>" (murano_widgets/tokens.py,
 * `bytes_text`; SentencePiece's own name for its byte tokens). The widget shows them as bytes
 * and puts the whole character together from the tokens around them.
 */

const BYTE_MARK = /<0x([0-9A-F]{2})>/g;

/**
 * Whether a token's text holds bytes of a character it has only part of ("<0xE6>").
 * @param {unknown} text
 * @returns {boolean}
 */
export function hasBytes(text) {
  return typeof text === "string" && /<0x[0-9A-F]{2}>/.test(text);
}

/**
 * A token's bytes, in order, each marked as a split character's byte or not.
 * @param {string} text
 * @returns {{byte: number, marked: boolean}[]}
 */
function tokenBytes(text) {
  /** @type {{byte: number, marked: boolean}[]} */
  const out = [];
  const encoder = new TextEncoder();
  let last = 0;
  for (const found of text.matchAll(BYTE_MARK)) {
    for (const byte of encoder.encode(text.slice(last, found.index))) out.push({ byte, marked: false });
    out.push({ byte: parseInt(found[1], 16), marked: true });
    last = /** @type {number} */ (found.index) + found[0].length;
  }
  for (const byte of encoder.encode(text.slice(last))) out.push({ byte, marked: false });
  return out;
}

/**
 * The whole character(s) a token's split bytes belong to, put together from it and the tokens
 * next to it that hold the character's other bytes.
 * @param {readonly string[]} tokens the prompt's input tokens' texts, in order
 * @param {number} position the token's index among them
 * @returns {{text: string, bytes: string, from: number, to: number} | null} the characters, their
 *   bytes in hex ("E6 97 A5") and the first and last positions that hold them; null for a token
 *   without split bytes
 */
export function wholeCharacter(tokens, position) {
  const text = tokens[position];
  if (!hasBytes(text)) return null;
  // The run of neighbours joined by split bytes: a token ending in one and the next starting with one.
  const endsMarked = (/** @type {string} */ t) => /<0x[0-9A-F]{2}>$/.test(t);
  const startsMarked = (/** @type {string} */ t) => /^<0x[0-9A-F]{2}>/.test(t);
  let lo = position;
  let hi = position;
  while (lo > 0 && typeof tokens[lo - 1] === "string" && endsMarked(tokens[lo - 1]) && startsMarked(tokens[lo])) lo--;
  while (hi + 1 < tokens.length && typeof tokens[hi + 1] === "string" && endsMarked(tokens[hi]) && startsMarked(tokens[hi + 1])) hi++;
  /** @type {{byte: number, marked: boolean, at: number}[]} */
  const bytes = [];
  for (let p = lo; p <= hi; p++) for (const b of tokenBytes(tokens[p])) bytes.push({ ...b, at: p });
  // Split the run into UTF-8 characters by their lead bytes; keep those holding this token's split bytes.
  const decoder = new TextDecoder();
  let whole = "";
  /** @type {number[]} */
  const hex = [];
  let from = Infinity;
  let to = -Infinity;
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i].byte;
    const size = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    const char = bytes.slice(i, Math.min(i + size, bytes.length));
    if (char.some((b) => b.marked && b.at === position)) {
      whole += decoder.decode(new Uint8Array(char.map((b) => b.byte)));
      for (const b of char) {
        hex.push(b.byte);
        from = Math.min(from, b.at);
        to = Math.max(to, b.at);
      }
    }
    i += char.length;
  }
  if (!hex.length) return null;
  return { text: whole, bytes: hex.map((b) => b.toString(16).toUpperCase().padStart(2, "0")).join(" "), from, to };
}
