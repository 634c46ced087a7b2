/**
 * The logit-lens widget front end: a canvas heatmap (rows = layers, final layer at the top;
 * columns = the prompt's real tokens) with prompt and layer sliders, a metric switch, a tooltip
 * and a pinned cell that Python can read back.
 *
 * One hand-written ES module, no build step and no imports (anywidget loads `_esm` from a single
 * file). The first half holds pure functions (payload decoding, colour scales, layout maths,
 * token display, cell lookup, tooltip content), exported and tested with `node --test`; the
 * second half is the small DOM part (`render`). Nothing touches the DOM at import time.
 *
 * Safety: tokens are untrusted data. They only ever reach the page through `textContent`,
 * `setAttribute` and canvas `fillText`, never as HTML.
 */

// ---------------------------------------------------------------------------------------------
// Payload decoding
// ---------------------------------------------------------------------------------------------

/** Bytes per element of the dtypes the encoder writes. */
export const DTYPE_SIZES = Object.freeze({ uint8: 1, uint16: 2, uint32: 4 });
const DTYPE_ARRAYS = { uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array };

/** Sections the default view needs; the payload is unusable without them. */
export const CORE_SECTIONS = Object.freeze([
  "input_tokens",
  "final_tokens",
  "top1_tokens",
  "top1_probs",
]);

/** Sections Python sends once the front end sets `_details`. */
export const DETAIL_SECTIONS = Object.freeze([
  "entropy",
  "final_probs",
  "final_ranks",
  "kl",
  "topk_tokens",
  "topk_probs",
]);

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A rank of 65535 in `final_ranks` means "65535 or worse". */
export const RANK_CAP = 65535;

/**
 * Decodes base64 text to bytes (used by the standalone HTML export).
 * @param {string} text
 * @returns {Uint8Array}
 */
export function decodeBase64(text) {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * A byte view of a buffer as anywidget or a standalone page hands it over: a DataView (maybe with a
 * non-zero byteOffset), an ArrayBuffer, a typed array, or base64 text.
 * @returns {Uint8Array}
 */
export function toBytes(buffer) {
  if (buffer instanceof Uint8Array) return buffer;
  if (ArrayBuffer.isView(buffer)) {
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  if (typeof buffer === "string") return decodeBase64(buffer);
  if (buffer && typeof buffer === "object" && typeof buffer.byteLength === "number") {
    // An ArrayBuffer from another realm (e.g. an iframe) fails `instanceof`.
    return new Uint8Array(buffer);
  }
  throw new TypeError(`expected binary data (DataView, ArrayBuffer or base64), got ${typeof buffer}`);
}

/**
 * Reads a little-endian array of `dtype` from `buffer`. Returns a view when the data is aligned
 * (and the host is little-endian); copies otherwise, since typed arrays need aligned offsets.
 * @param {DataView|ArrayBuffer|ArrayBufferView|string} buffer
 * @param {"uint8"|"uint16"|"uint32"} dtype
 * @param {number} [length] expected number of elements (checked when given)
 */
export function readTypedArray(buffer, dtype, length) {
  const size = DTYPE_SIZES[dtype];
  if (!size) throw new Error(`unsupported dtype ${JSON.stringify(dtype)} (expected uint8, uint16 or uint32)`);
  const bytes = toBytes(buffer);
  if (bytes.byteLength % size !== 0) {
    throw new Error(`${bytes.byteLength} bytes is not a whole number of ${dtype} values`);
  }
  const n = bytes.byteLength / size;
  if (length !== undefined && n !== length) {
    throw new Error(`expected ${length} ${dtype} values, got ${n}`);
  }
  const Ctor = DTYPE_ARRAYS[dtype];
  if (size === 1) return new Uint8Array(bytes.buffer, bytes.byteOffset, n);
  if (HOST_LITTLE_ENDIAN && bytes.byteOffset % size === 0) {
    return new Ctor(bytes.buffer, bytes.byteOffset, n);
  }
  const out = new Ctor(n);
  if (HOST_LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes);
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < n; i++) out[i] = size === 2 ? view.getUint16(i * 2, true) : view.getUint32(i * 4, true);
  }
  return out;
}

function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function isIntArray(value) {
  return Array.isArray(value) && value.every((x) => Number.isInteger(x) && x >= 0);
}

/**
 * Checks `_meta` and decodes `_sections` into typed arrays.
 *
 * Sections that `_meta` describes but `_sections` lacks (or the reverse) are left out, so a
 * metric whose section has not arrived yet reads as "not available" rather than failing.
 * @param {object} meta the `_meta` trait
 * @param {Object<string, DataView|ArrayBuffer|string>} sections the `_sections` trait
 * @returns {Lens}
 * @throws {Error} naming what is wrong when the payload is inconsistent
 *
 * @typedef {object} Lens
 * @property {object} meta
 * @property {number} L rows (shown layers)
 * @property {number} T positions of all prompts laid end to end
 * @property {number} P prompts
 * @property {number[]} layers model layer number of each row
 * @property {number[]} lengths real tokens per prompt
 * @property {number[]} offsets start of each prompt on the position axis
 * @property {string[]} tokens the distinct token strings
 * @property {number} topK number of top tokens available (top-1 included)
 * @property {number} maxEntropy log2(vocab) in bits
 * @property {Object<string, Uint8Array|Uint16Array|Uint32Array>} arrays raw values
 * @property {Object<string, number>} scales value = raw * scale
 * @property {Object<string, number>} maxima per-section maximum raw value, filled lazily
 */
export function decodePayload(meta, sections) {
  if (!meta || typeof meta !== "object") throw new Error("_meta is empty: no logit-lens data to show");
  if (meta.version !== 1) throw new Error(`unsupported payload version ${JSON.stringify(meta.version)} (expected 1)`);
  const { layers, lengths, offsets, tokens } = meta;
  if (!isIntArray(layers) || layers.length === 0) throw new Error("_meta.layers must be a non-empty list of layer numbers");
  if (!isIntArray(lengths) || lengths.length === 0) throw new Error("_meta.lengths must be a non-empty list of token counts");
  if (!isIntArray(offsets) || offsets.length !== lengths.length) {
    throw new Error(`_meta.offsets must have one entry per prompt (${lengths.length}), got ${JSON.stringify(offsets)?.slice(0, 80)}`);
  }
  let expectedOffset = 0;
  for (let p = 0; p < lengths.length; p++) {
    if (offsets[p] !== expectedOffset) throw new Error(`_meta.offsets[${p}] is ${offsets[p]}, expected ${expectedOffset}`);
    expectedOffset += lengths[p];
  }
  const T = expectedOffset;
  if (meta.total !== undefined && meta.total !== T) throw new Error(`_meta.total is ${meta.total} but the lengths add up to ${T}`);
  if (!Array.isArray(tokens)) throw new Error("_meta.tokens must be a list of strings");
  const L = layers.length;
  const topK = Math.max(1, Number(meta.top_k) || 1);
  const expectedShapes = {
    input_tokens: [T],
    final_tokens: [T],
    top1_tokens: [L, T],
    top1_probs: [L, T],
    missing: [L, T],
    entropy: [L, T],
    final_probs: [L, T],
    final_ranks: [L, T],
    kl: [L, T],
    topk_tokens: [L, T, topK - 1],
    topk_probs: [L, T, topK - 1],
  };
  const specs = meta.sections || {};
  const arrays = {};
  const scales = {};
  for (const [name, spec] of Object.entries(specs)) {
    if (!sections || sections[name] === undefined || sections[name] === null) continue;
    const shape = spec.shape;
    if (!isIntArray(shape)) throw new Error(`section ${name}: shape must be a list of sizes`);
    const expected = expectedShapes[name];
    if (expected && (expected.length !== shape.length || expected.some((n, i) => n !== shape[i]))) {
      throw new Error(`section ${name}: shape ${JSON.stringify(shape)} disagrees with the layers and lengths (expected ${JSON.stringify(expected)})`);
    }
    try {
      arrays[name] = readTypedArray(sections[name], spec.dtype, product(shape));
    } catch (error) {
      throw new Error(`section ${name}: ${error.message}`);
    }
    scales[name] = typeof spec.scale === "number" && Number.isFinite(spec.scale) ? spec.scale : 1;
  }
  for (const name of CORE_SECTIONS) {
    if (!arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  }
  const nTokens = tokens.length;
  for (const name of ["input_tokens", "final_tokens", "top1_tokens", "topk_tokens"]) {
    const array = arrays[name];
    if (!array) continue;
    for (let i = 0; i < array.length; i++) {
      if (array[i] >= nTokens) throw new Error(`section ${name}: token index ${array[i]} is outside the table of ${nTokens} strings`);
    }
  }
  return {
    meta,
    L,
    T,
    P: lengths.length,
    layers,
    lengths,
    offsets,
    tokens,
    prompts: Array.isArray(meta.prompts) ? meta.prompts : [],
    modelName: typeof meta.model_name === "string" ? meta.model_name : "",
    topK: arrays.topk_tokens && arrays.topk_probs ? topK : 1,
    maxEntropy: Number(meta.max_entropy) > 0 ? Number(meta.max_entropy) : 0,
    arrays,
    scales,
    maxima: {},
  };
}

/** Index of cell (row `layerIndex`, prompt `prompt`, position `position`) in an [L, T] section. */
export function cellIndex(lens, prompt, layerIndex, position) {
  return layerIndex * lens.T + lens.offsets[prompt] + position;
}

/** The largest raw value of a section (cached), or 0 when absent. */
export function sectionMax(lens, name) {
  if (lens.maxima[name] !== undefined) return lens.maxima[name];
  const array = lens.arrays[name];
  let max = 0;
  if (array) for (let i = 0; i < array.length; i++) if (array[i] > max) max = array[i];
  lens.maxima[name] = max;
  return max;
}

/** Whether the value of cell `idx` is missing (non-finite in the model). */
export function isMissing(lens, idx) {
  const missing = lens.arrays.missing;
  return Boolean(missing && missing[idx]);
}

/**
 * Whether the layer's top-1 at this cell already equals the model's final prediction.
 */
export function isSettled(lens, prompt, layerIndex, position) {
  const idx = cellIndex(lens, prompt, layerIndex, position);
  if (isMissing(lens, idx)) return false;
  return lens.arrays.top1_tokens[idx] === lens.arrays.final_tokens[lens.offsets[prompt] + position];
}

/**
 * The lowest row from which the top-1 equals the final prediction in every row above, or -1.
 */
export function settleRow(lens, prompt, position) {
  let row = -1;
  for (let i = lens.L - 1; i >= 0; i--) {
    if (!isSettled(lens, prompt, i, position)) break;
    row = i;
  }
  return row;
}

// ---------------------------------------------------------------------------------------------
// Metrics and colour scales
// ---------------------------------------------------------------------------------------------

/** Colour stops (17, evenly spaced) sampled from matplotlib's colour-blind-safe maps. */
export const COLOUR_STOPS = Object.freeze({
  viridis: ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
    "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725"],
  cividis: ["#00224e", "#002e6a", "#1a386f", "#32436d", "#434e6c", "#535a6d", "#61656f", "#6f7073", "#7d7c78",
    "#8c8878", "#9b9476", "#aba072", "#bcae6c", "#cdbb63", "#dec958", "#f0d846", "#fee838"],
  // Magma without its near-white end, which would vanish on a light background.
  magma: ["#000004", "#0a0822", "#1d1147", "#36106b", "#51127c", "#6a1c81", "#832681", "#9c2e7f", "#b73779",
    "#d0416f", "#e75263", "#f56b5c", "#fc8961", "#fea772", "#fec488"],
});

/**
 * The metrics the switch offers. `reverse` flips the scale so that "confident / close to the final
 * prediction" is always the bright end.
 */
export const METRICS = Object.freeze({
  prob: { label: "Top-1 probability", section: "top1_probs", scale: "viridis", reverse: false, kind: "prob" },
  entropy: { label: "Entropy (bits)", section: "entropy", scale: "cividis", reverse: true, kind: "bits" },
  final_prob: { label: "Probability of the final prediction", section: "final_probs", scale: "viridis", reverse: false, kind: "prob" },
  final_rank: { label: "Rank of the final prediction (log scale)", section: "final_ranks", scale: "viridis", reverse: true, kind: "rank" },
  kl: { label: "KL(final ‖ layer) in bits", section: "kl", scale: "magma", reverse: true, kind: "bits" },
});

export const METRIC_NAMES = Object.freeze(Object.keys(METRICS));

/** Whether the payload carries what `metric` needs. */
export function metricAvailable(lens, metric) {
  const spec = METRICS[metric];
  return Boolean(spec && lens && lens.arrays[spec.section]);
}

/** Parses "#rrggbb" into [r, g, b]. */
export function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/**
 * The colour at `t` in [0, 1] of a scale given by evenly spaced stops (linear interpolation in
 * sRGB; `t` is clamped, NaN gives the first stop).
 * @returns {number[]} [r, g, b]
 */
export function interpolateStops(stops, t) {
  const x = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  const pos = x * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(pos));
  const f = pos - i;
  const a = hexToRgb(stops[i]);
  const b = hexToRgb(stops[i + 1]);
  return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
}

/** The colour of `t` on a named scale. */
export function scaleColour(name, t, reverse = false) {
  const stops = COLOUR_STOPS[name];
  if (!stops) throw new Error(`unknown colour scale ${name}`);
  return interpolateStops(stops, reverse ? 1 - t : t);
}

const lutCache = new Map();

/**
 * A 256-entry lookup table of a scale: `lut[3*k .. 3*k+2]` is the colour of t = k/255.
 * @returns {Uint8Array}
 */
export function colourLut(name, reverse = false) {
  const key = `${name}|${reverse}`;
  let lut = lutCache.get(key);
  if (!lut) {
    lut = new Uint8Array(256 * 3);
    for (let k = 0; k < 256; k++) lut.set(scaleColour(name, k / 255, reverse), 3 * k);
    lutCache.set(key, lut);
  }
  return lut;
}

/** WCAG relative luminance of an sRGB colour. */
export function relativeLuminance([r, g, b]) {
  const lin = (c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** Black or white, whichever reads better on `rgb` (by WCAG contrast). */
export function textColourOn(rgb) {
  const l = relativeLuminance(rgb);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
}

/** Rounds up to 1, 2 or 5 times a power of ten. */
export function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x - 1e-12 * p) return m * p;
  return 10 * p;
}

/**
 * The value range a metric's colours span for this payload.
 * @returns {{min: number, max: number, log: boolean}}
 */
export function metricDomain(lens, metric) {
  const spec = METRICS[metric];
  if (!spec) throw new Error(`unknown metric ${JSON.stringify(metric)}`);
  if (spec.kind === "prob") return { min: 0, max: 1, log: false };
  if (metric === "final_rank") {
    return { min: 0, max: Math.max(9, niceCeil(sectionMax(lens, "final_ranks") + 1) - 1), log: true };
  }
  if (metric === "entropy") {
    const max = lens.maxEntropy || sectionMax(lens, "entropy") * (lens.scales.entropy || 1);
    return { min: 0, max: max > 0 ? max : 1, log: false };
  }
  const top = sectionMax(lens, spec.section) * (lens.scales[spec.section] || 1);
  return { min: 0, max: top > 0 ? niceCeil(top) : 1, log: false };
}

/** Position of `value` in the domain, in [0, 1] (log1p for log domains); NaN stays NaN. */
export function unitValue(value, domain) {
  if (!Number.isFinite(value)) return NaN;
  let t;
  if (domain.log) t = Math.log1p(Math.max(0, value - domain.min)) / Math.log1p(domain.max - domain.min);
  else t = (value - domain.min) / (domain.max - domain.min);
  return Math.min(1, Math.max(0, t));
}

/** The value of `metric` at cell `idx` (NaN if missing or not loaded). */
export function metricValue(lens, metric, idx) {
  const spec = METRICS[metric];
  const array = spec && lens.arrays[spec.section];
  if (!array || isMissing(lens, idx)) return NaN;
  return array[idx] * (lens.scales[spec.section] ?? 1);
}

/** Tick marks for the legend: [{t, label}] with t in [0, 1] along the bar (low value on the left). */
export function legendTicks(metric, domain) {
  const spec = METRICS[metric];
  const values = [];
  if (spec.kind === "rank") {
    for (let v = 1; v - 1 <= domain.max; v *= 10) values.push(v - 1);
  } else {
    const step = niceCeil((domain.max - domain.min) / 4);
    for (let v = domain.min; v <= domain.max + 1e-9; v += step) values.push(v);
    // Label the top end too unless a tick already sits close to it.
    if (domain.max - values[values.length - 1] > 0.25 * step) values.push(domain.max);
  }
  return values.map((v) => ({ t: unitValue(v, domain), label: formatValue(metric, v, true) }));
}

/**
 * Fills an RGBA image of one prompt's cells: width = the prompt's length, height = L, the final
 * layer in row 0 (the top). Missing or not-yet-loaded cells stay transparent, so whatever is drawn
 * below (a hatch pattern) shows through.
 * @returns {{width: number, height: number, data: Uint8ClampedArray}}
 */
export function colourImage(lens, metric, prompt, out) {
  const n = lens.lengths[prompt];
  const L = lens.L;
  const data = out && out.length === n * L * 4 ? out : new Uint8ClampedArray(n * L * 4);
  data.fill(0);
  const spec = METRICS[metric];
  const array = lens.arrays[spec.section];
  if (!array) return { width: n, height: L, data };
  const scale = lens.scales[spec.section] ?? 1;
  const domain = metricDomain(lens, metric);
  const lut = colourLut(spec.scale, spec.reverse);
  const missing = lens.arrays.missing;
  const offset = lens.offsets[prompt];
  const logDen = domain.log ? Math.log1p(domain.max - domain.min) : 0;
  const span = domain.max - domain.min;
  for (let i = 0; i < L; i++) {
    const row = L - 1 - i;
    const base = i * lens.T + offset;
    for (let j = 0; j < n; j++) {
      const idx = base + j;
      if (missing && missing[idx]) continue;
      const v = array[idx] * scale - domain.min;
      let t = domain.log ? Math.log1p(v > 0 ? v : 0) / logDen : v / span;
      t = t < 0 ? 0 : t > 1 ? 1 : t;
      const k = Math.round(t * 255) * 3;
      const o = (row * n + j) * 4;
      data[o] = lut[k];
      data[o + 1] = lut[k + 1];
      data[o + 2] = lut[k + 2];
      data[o + 3] = 255;
    }
  }
  return { width: n, height: L, data };
}

// ---------------------------------------------------------------------------------------------
// Formatting and token display
// ---------------------------------------------------------------------------------------------

/** "42.1%", "<0.1%", "100%". */
export function formatProb(p) {
  if (!Number.isFinite(p)) return "–";
  if (p > 0 && p < 0.001) return "<0.1%";
  if (p >= 0.9995) return "100%";
  return `${(p * 100).toFixed(p >= 0.1 ? 1 : 2).replace(/\.?0+$/, "") || "0"}%`;
}

/** "3.21 bits". */
export function formatBits(b, short = false) {
  if (!Number.isFinite(b)) return "–";
  const digits = b >= 10 ? 1 : 2;
  const text = short ? String(Number(b.toFixed(digits))) : b.toFixed(digits);
  return short ? text : `${text} bits`;
}

/** A raw rank (0 = top-1) shown 1-based: "#1", "#4", "≥#65536". */
export function formatRank(rank) {
  if (!Number.isFinite(rank)) return "–";
  if (rank >= RANK_CAP) return `≥#${RANK_CAP + 1}`;
  const r = rank + 1;
  return r >= 10000 ? `#${Math.round(r / 1000)}k` : `#${r}`;
}

/** A metric value as text (`short` for legend ticks). */
export function formatValue(metric, value, short = false) {
  const kind = METRICS[metric].kind;
  if (kind === "prob") return short ? `${Math.round(value * 100)}%` : formatProb(value);
  if (kind === "rank") return formatRank(value);
  return formatBits(value, short);
}

// Characters that render as nothing (or move other text) and are shown as <U+XXXX>: format and
// bidirectional controls, zero-width characters, unusual spaces, line/paragraph separators.
const INVISIBLE = /[\u00a0\u00ad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufeff\ufff9-\ufffb]/;

/** "<U+200F>" for a code point. */
export function codepointLabel(cp) {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/**
 * A token as visible, safe text: spaces as "␣", newlines as "↵", tabs as "⇥", carriage returns as
 * "␍", control and invisible characters (e.g. the right-to-left mark U+200F) and lone surrogates
 * as "<U+XXXX>", the empty string as "∅". The result is plain text for `textContent`/`fillText`.
 * @param {string} token
 * @param {{spaces?: boolean}} [options] `spaces: false` keeps spaces (for prompt text)
 */
export function displayToken(token, { spaces = true } = {}) {
  if (typeof token !== "string") return "?";
  if (token === "") return "∅";
  let out = "";
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    // Surrogate pairs pass through; lone halves (broken UTF-16) become visible.
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = token.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        const cp = (code - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
        // Tag characters and interlinear annotation-like invisibles in the astral planes.
        out += (cp >= 0xe0000 && cp <= 0xe007f) || (cp >= 0x1d173 && cp <= 0x1d17a) ? codepointLabel(cp) : token[i] + token[i + 1];
        i++;
      } else {
        out += codepointLabel(code);
      }
      continue;
    }
    if (code >= 0xdc00 && code <= 0xdfff) {
      out += codepointLabel(code);
      continue;
    }
    const ch = token[i];
    if (ch === " ") out += spaces ? "␣" : " ";
    else if (ch === "\n") out += "↵";
    else if (ch === "\t") out += "⇥";
    else if (ch === "\r") out += "␍";
    else if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || INVISIBLE.test(ch)) out += codepointLabel(code);
    else out += ch;
  }
  return out;
}

/** Shortens text to at most `maxChars` code points, ending in "…" when cut. */
export function truncateText(text, maxChars) {
  if (maxChars <= 0) return "";
  const chars = Array.from(text);
  if (chars.length <= maxChars) return text;
  if (maxChars === 1) return "…";
  return `${chars.slice(0, maxChars - 1).join("")}…`;
}

/** Number of code points. */
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
 */
export function isolateLtr(text) {
  return `\u2066${text}\u2069`;
}

// ---------------------------------------------------------------------------------------------
// Layout
// ---------------------------------------------------------------------------------------------

/** Fixed sizes of the heatmap canvas, in CSS pixels. */
export const GEOMETRY = Object.freeze({
  axisH: 16, // position numbers above the cells
  gap: 6, // between the cells and the token strips
  stripH: 22, // the input-token strip and the chosen layer's predictions strip
  bottomPad: 4,
  rightPad: 8,
  minRowH: 5,
  maxRowH: 22,
  minCellW: 34,
  maxCellW: 120,
  textMinRowH: 13, // cell text is drawn only in rows at least this tall
});

/**
 * The column width for a prompt: wide enough for `maxChars` characters of `charW` pixels (within
 * limits), stretched to fill `available` pixels when the prompt is short.
 */
export function chooseCellWidth({ maxChars, charW, n, available }) {
  const want = Math.min(GEOMETRY.maxCellW, Math.max(GEOMETRY.minCellW, Math.ceil(maxChars * charW + 12)));
  const fill = n > 0 ? Math.floor(available / n) : want;
  if (fill > want) return Math.min(GEOMETRY.maxCellW, fill);
  return want;
}

/** Row height: the rows share `maxHeight` pixels, within limits. */
export function chooseRowHeight(nLayers, maxHeight = 460) {
  return Math.max(GEOMETRY.minRowH, Math.min(GEOMETRY.maxRowH, Math.floor(maxHeight / Math.max(1, nLayers))));
}

/**
 * The heatmap geometry for one prompt.
 * @param {{nLayers: number, nPositions: number, width: number, labelW: number, charW: number,
 *   maxChars: number, maxHeight?: number}} options
 */
export function computeLayout({ nLayers, nPositions, width, labelW, charW, maxChars, maxHeight = 460 }) {
  const g = GEOMETRY;
  const viewW = Math.max(labelW + g.minCellW, Math.floor(width));
  const rowH = chooseRowHeight(nLayers, maxHeight);
  const cellW = chooseCellWidth({ maxChars, charW, n: nPositions, available: viewW - labelW - g.rightPad });
  const heatY = g.axisH;
  const heatH = nLayers * rowH;
  const inputY = heatY + heatH + g.gap;
  const predY = inputY + g.stripH;
  const height = predY + g.stripH + g.bottomPad;
  const contentW = labelW + nPositions * cellW + g.rightPad;
  return {
    nLayers,
    nPositions,
    width: viewW,
    height,
    labelW,
    rowH,
    cellW,
    heatY,
    heatH,
    inputY,
    predY,
    stripH: g.stripH,
    contentW,
    maxScroll: Math.max(0, contentW - viewW),
    charW,
    cellChars: Math.max(0, Math.floor((cellW - 6) / charW)),
    showCellText: rowH >= g.textMinRowH && cellW - 6 >= 2 * charW,
  };
}

/** Clamps a scroll offset to the layout's range. */
export function clampScroll(layout, scrollLeft) {
  return Math.min(layout.maxScroll, Math.max(0, Math.round(scrollLeft) || 0));
}

/** The half-open range [first, last) of columns at least partly visible. */
export function visibleColumns(layout, scrollLeft) {
  const viewCells = layout.width - layout.labelW;
  const first = Math.max(0, Math.floor(scrollLeft / layout.cellW));
  const last = Math.min(layout.nPositions, Math.ceil((scrollLeft + viewCells) / layout.cellW));
  return [first, Math.max(first, last)];
}

/** Screen row (0 = top) of a layer index: the final layer is at the top. */
export function rowOfLayer(layout, layerIndex) {
  return layout.nLayers - 1 - layerIndex;
}

/** x of the left edge of column `position` on the canvas. */
export function columnX(layout, position, scrollLeft) {
  return layout.labelW + position * layout.cellW - scrollLeft;
}

/** The rectangle of a heatmap cell on the canvas, in CSS pixels. */
export function cellRect(layout, layerIndex, position, scrollLeft) {
  return {
    x: columnX(layout, position, scrollLeft),
    y: layout.heatY + rowOfLayer(layout, layerIndex) * layout.rowH,
    w: layout.cellW,
    h: layout.rowH,
  };
}

/**
 * What is under canvas point (x, y): a heatmap cell, a column of the predictions strip (which
 * stands for the highlighted layer's cell), or nothing.
 * @returns {{layerIndex: number, position: number, area: "cells"|"predictions"|"input"}|null}
 */
export function hitTest(layout, x, y, scrollLeft, highlightedLayer) {
  if (x < layout.labelW || x >= layout.width) return null;
  const position = Math.floor((x - layout.labelW + scrollLeft) / layout.cellW);
  if (position < 0 || position >= layout.nPositions) return null;
  if (y >= layout.heatY && y < layout.heatY + layout.heatH) {
    const row = Math.floor((y - layout.heatY) / layout.rowH);
    return { layerIndex: layout.nLayers - 1 - row, position, area: "cells" };
  }
  if (y >= layout.predY && y < layout.predY + layout.stripH) {
    return { layerIndex: highlightedLayer, position, area: "predictions" };
  }
  if (y >= layout.inputY && y < layout.inputY + layout.stripH) {
    return { layerIndex: highlightedLayer, position, area: "input" };
  }
  return null;
}

/** The scroll offset that brings column `position` fully into view (unchanged if it is). */
export function revealColumn(layout, scrollLeft, position) {
  const left = position * layout.cellW;
  const viewCells = layout.width - layout.labelW;
  let next = scrollLeft;
  if (left < scrollLeft) next = left;
  else if (left + layout.cellW > scrollLeft + viewCells) next = left + layout.cellW - viewCells;
  return clampScroll(layout, next);
}

/** Every how many rows a layer label fits (1, 2, 5, 10, …). */
export function labelStride(rowH, minSpacing = 12) {
  if (rowH >= minSpacing) return 1;
  return niceCeil(minSpacing / rowH);
}

/**
 * Where to put a tooltip of `size` next to an anchor rectangle, inside `bounds` (all in the same
 * coordinates): beside the anchor (right, else left), vertically centred on it and shifted to fit;
 * below or above it when neither side has room.
 */
export function placeTooltip(anchor, size, bounds, margin = 10) {
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  const right = bounds.x + bounds.w;
  const bottom = bounds.y + bounds.h;
  let left = anchor.x + anchor.w + margin;
  if (left + size.w > right) left = anchor.x - size.w - margin;
  let top;
  if (left >= bounds.x) {
    top = clamp(anchor.y + anchor.h / 2 - size.h / 2, bounds.y, bottom - size.h);
  } else {
    left = clamp(anchor.x + anchor.w / 2 - size.w / 2, bounds.x, right - size.w);
    top = anchor.y + anchor.h + margin;
    if (top + size.h > bottom) top = anchor.y - size.h - margin;
  }
  return { left: Math.round(Math.max(bounds.x, left)), top: Math.round(Math.max(bounds.y, top)) };
}

/** The cell a key press moves the focus to, or null for keys that do not move it. */
export function moveFocus(focus, key, nLayers, nPositions) {
  let { layerIndex, position } = focus;
  switch (key) {
    case "ArrowUp": layerIndex += 1; break; // up the screen = deeper layer
    case "ArrowDown": layerIndex -= 1; break;
    case "ArrowLeft": position -= 1; break;
    case "ArrowRight": position += 1; break;
    case "Home": position = 0; break;
    case "End": position = nPositions - 1; break;
    case "PageUp": layerIndex = nLayers - 1; break;
    case "PageDown": layerIndex = 0; break;
    default: return null;
  }
  return {
    layerIndex: Math.min(nLayers - 1, Math.max(0, layerIndex)),
    position: Math.min(nPositions - 1, Math.max(0, position)),
  };
}

/** Clamps an index trait received from Python into [0, n). */
export function clampIndex(value, n) {
  const v = Number.isInteger(value) ? value : Math.round(Number(value)) || 0;
  return Math.min(Math.max(0, n - 1), Math.max(0, v));
}

/** Whether `selected` (the `selected` trait) names this cell. */
export function isSelected(selected, prompt, layerIndex, position) {
  return Boolean(
    selected && selected.prompt === prompt && selected.layer_index === layerIndex && selected.position === position,
  );
}

/** The `selected` value after clicking a cell: the cell, or null when it was already pinned. */
export function toggleSelection(selected, prompt, layerIndex, position) {
  if (isSelected(selected, prompt, layerIndex, position)) return null;
  return { prompt, layer_index: layerIndex, position };
}

// ---------------------------------------------------------------------------------------------
// Cell details: tooltip content and the screen-reader readout
// ---------------------------------------------------------------------------------------------

function tokenAt(lens, index) {
  return lens.tokens[index] ?? "";
}

/**
 * Everything known about one cell, as values (token strings raw, numbers unformatted).
 */
export function cellDetails(lens, prompt, layerIndex, position) {
  const idx = cellIndex(lens, prompt, layerIndex, position);
  const col = lens.offsets[prompt] + position;
  const a = lens.arrays;
  const value = (name) => (a[name] ? a[name][idx] * (lens.scales[name] ?? 1) : null);
  const missing = isMissing(lens, idx);
  const top = [];
  if (!missing) {
    top.push({ token: tokenAt(lens, a.top1_tokens[idx]), prob: a.top1_probs[idx] * lens.scales.top1_probs });
    if (lens.topK > 1) {
      const k1 = lens.topK - 1;
      for (let r = 0; r < k1; r++) {
        top.push({
          token: tokenAt(lens, a.topk_tokens[idx * k1 + r]),
          prob: a.topk_probs[idx * k1 + r] * (lens.scales.topk_probs ?? 1 / 255),
        });
      }
    }
  }
  return {
    prompt,
    layerIndex,
    layer: lens.layers[layerIndex],
    isFinalLayer: layerIndex === lens.L - 1,
    position,
    input: tokenAt(lens, a.input_tokens[col]),
    finalToken: tokenAt(lens, a.final_tokens[col]),
    missing,
    settled: !missing && a.top1_tokens[idx] === a.final_tokens[col],
    top,
    entropy: missing ? null : value("entropy"),
    finalProb: missing ? null : value("final_probs"),
    finalRank: missing || !a.final_ranks ? null : a.final_ranks[idx],
    kl: missing ? null : value("kl"),
    detailsLoaded: Boolean(a.entropy || a.final_probs || a.final_ranks || a.kl || a.topk_tokens),
  };
}

/**
 * The tooltip as plain strings: a title, label/value rows and the top-k list with bar widths.
 */
export function tooltipModel(details) {
  const rows = [];
  rows.push({ label: "input", value: displayToken(details.input), token: true });
  rows.push({ label: "final prediction", value: displayToken(details.finalToken), token: true });
  if (!details.missing) {
    if (details.finalProb !== null) rows.push({ label: "p(final)", value: formatProb(details.finalProb) });
    if (details.finalRank !== null) rows.push({ label: "rank of final", value: formatRank(details.finalRank) });
    if (details.entropy !== null) rows.push({ label: "entropy", value: formatBits(details.entropy) });
    if (details.kl !== null) rows.push({ label: "KL(final ‖ layer)", value: formatBits(details.kl) });
  }
  let note = "";
  if (details.missing) note = "No prediction: this layer's output was not finite.";
  else if (!details.detailsLoaded) note = "Loading details…";
  return {
    title: `Layer ${details.layer} · position ${details.position}`,
    badge: details.settled ? "= final" : "",
    rows,
    top: details.top.map((entry, rank) => ({
      rank: rank + 1,
      text: displayToken(entry.token),
      prob: formatProb(entry.prob),
      width: Math.max(0, Math.min(1, entry.prob)),
    })),
    note,
  };
}

/** One sentence about a cell for the aria-live readout. */
export function readoutText(details, { pinned = false } = {}) {
  const parts = [`Layer ${details.layer}, position ${details.position}, input ${displayToken(details.input)}`];
  if (details.missing) parts.push("no prediction (not finite)");
  else {
    const top = details.top[0];
    parts.push(`top-1 ${displayToken(top.token)} ${formatProb(top.prob)}`);
    if (details.settled) parts.push("equals the final prediction");
    else parts.push(`final prediction ${displayToken(details.finalToken)}${details.finalRank !== null ? ` at rank ${formatRank(details.finalRank)}` : ""}`);
  }
  if (pinned) parts.push("pinned");
  return `${parts.join("; ")}.`;
}

// ---------------------------------------------------------------------------------------------
// Throttling kernel sync
// ---------------------------------------------------------------------------------------------

/**
 * Calls `fn` at most once every `ms`: the first call runs at once, later calls inside the window
 * collapse into one trailing call with the latest arguments. `flush()` runs a pending call now,
 * `cancel()` drops it. The clock and timers can be injected for tests.
 */
export function throttle(fn, ms, { now = () => Date.now(), setTimer = setTimeout, clearTimer = clearTimeout } = {}) {
  let last = -Infinity;
  let timer = null;
  let pending = null;
  const run = () => {
    timer = null;
    last = now();
    const args = pending;
    pending = null;
    if (args) fn(...args);
  };
  const call = (...args) => {
    pending = args;
    const wait = last + ms - now();
    if (wait <= 0 && timer === null) run();
    else if (timer === null) timer = setTimer(run, Math.max(0, wait));
  };
  call.flush = () => {
    if (timer !== null) clearTimer(timer);
    timer = null;
    if (pending) run();
  };
  call.cancel = () => {
    if (timer !== null) clearTimer(timer);
    timer = null;
    pending = null;
  };
  return call;
}


// ---------------------------------------------------------------------------------------------
// Models without a kernel (standalone HTML export, tests)
// ---------------------------------------------------------------------------------------------

/**
 * A minimal in-page stand-in for an anywidget model: get/set/on/off/save_changes/send, with
 * `change:<name>` events. `_sections` values may be ArrayBuffers, DataViews, typed arrays or
 * base64 strings; they are handed to the view as DataViews, as anywidget does.
 */
export function createLocalModel(state) {
  const values = { prompt: 0, layer: 0, metric: "prob", selected: null, _details: true, ...state };
  if (values._sections) {
    const sections = {};
    for (const [name, data] of Object.entries(values._sections)) {
      const bytes = toBytes(data);
      sections[name] = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    values._sections = sections;
  }
  const listeners = new Map();
  return {
    get: (name) => values[name],
    set(name, value) {
      if (Object.is(values[name], value)) return;
      values[name] = value;
      for (const fn of [...(listeners.get(`change:${name}`) || [])]) fn();
    },
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(fn);
    },
    off(event, fn) {
      if (!event) listeners.clear();
      else if (!fn) listeners.delete(event);
      else listeners.get(event)?.delete(fn);
    },
    save_changes() {},
    send() {},
  };
}

/**
 * Renders the full interactive widget with no kernel, from a plain state object
 * (`{_meta, _sections, prompt?, layer?, metric?, selected?}`).
 * @returns {{model: object, destroy: () => void}}
 */
export function renderStandalone(el, state) {
  const model = createLocalModel(state);
  const destroy = render({ model, el });
  return { model, destroy };
}

// ---------------------------------------------------------------------------------------------
// The view
// ---------------------------------------------------------------------------------------------

/** Sync to Python at most this often while a slider is dragged. */
export const SYNC_INTERVAL_MS = 100;

let viewCounter = 0;

/** A DOM element with a class, attributes and text (never HTML). */
function h(tag, className, attrs = {}, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

const TEXT_ON = new Map();
function textOn(r, g, b) {
  const key = (r << 16) | (g << 8) | b;
  let colour = TEXT_ON.get(key);
  if (!colour) {
    colour = textColourOn([r, g, b]);
    TEXT_ON.set(key, colour);
  }
  return colour;
}

class LensView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.id = `murano-${++viewCounter}`;
    this.abort = new AbortController();
    this.lens = null;
    this.layout = null;
    this.theme = null;
    this.images = new Map(); // `${prompt}|${metric}` -> {canvas, data}
    this.tokenTexts = [];
    this.cellTexts = new Map();
    this.cellTextChars = -1;
    this.frame = 0;
    this.detailsRequested = false;
    this.shownMetric = "prob";
    this.state = {
      prompt: 0,
      layer: 0,
      metric: "prob",
      selected: null,
      hover: null,
      focus: null,
      focused: false,
    };
    this.debug = { frames: 0, lastDrawMs: 0, drawListeners: [] };
    this.syncPrompt = throttle((v) => this.send("prompt", v), SYNC_INTERVAL_MS);
    this.syncLayer = throttle((v) => this.send("layer", v), SYNC_INTERVAL_MS);
    this.build();
    this.bind();
    this.reload();
    this.exposeDebug();
    if (this.scroller.clientWidth > 0) this.draw();
    else this.requestDraw();
  }

  // ---- DOM -----------------------------------------------------------------------------------

  build() {
    const id = this.id;
    this.root = h("div", "murano-root", { role: "group", "aria-label": "Logit lens" });

    const header = h("div", "murano-header");
    this.titleEl = h("span", "murano-title", {}, "Logit lens");
    this.modelEl = h("span", "murano-model");
    this.dimsEl = h("span", "murano-dims");
    const metricLabel = h("label", "murano-metric");
    metricLabel.append(h("span", "murano-label", {}, "Colour"));
    this.metricSelect = h("select", "murano-select", { "aria-label": "Colour cells by" });
    for (const name of METRIC_NAMES) this.metricSelect.append(h("option", "", { value: name }, METRICS[name].label));
    metricLabel.append(this.metricSelect);
    header.append(this.titleEl, this.modelEl, this.dimsEl, metricLabel);

    const controls = h("div", "murano-controls");
    const slider = (name, label) => {
      const row = h("div", `murano-control murano-${name}-control`);
      const labelEl = h("label", "murano-label", { for: `${id}-${name}` }, label);
      const input = h("input", "murano-slider", { type: "range", id: `${id}-${name}`, min: 0, max: 0, step: 1, value: 0 });
      const output = h("output", "murano-value", { for: `${id}-${name}` });
      const extra = h("span", `murano-${name}-text`);
      row.append(labelEl, input, output, extra);
      controls.append(row);
      return { row, input, output, extra };
    };
    this.promptUi = slider("prompt", "Prompt");
    this.layerUi = slider("layer", "Layer");
    this.layerUi.extra.textContent = "highlighted row; its predictions appear under the tokens";

    this.body = h("div", "murano-heatmap");
    this.scroller = h("div", "murano-scroll");
    this.track = h("div", "murano-track");
    this.canvas = h("canvas", "murano-canvas", {
      tabindex: 0,
      role: "application",
      "aria-roledescription": "heatmap",
      "aria-describedby": `${id}-readout`,
    });
    this.track.append(this.canvas);
    this.scroller.append(this.track);
    this.tooltip = h("div", "murano-tooltip", { role: "tooltip", id: `${id}-tooltip`, hidden: "" });
    this.body.append(this.scroller);

    const footer = h("div", "murano-footer");
    this.legend = h("div", "murano-legend");
    this.legendTitle = h("span", "murano-legend-title");
    const scale = h("span", "murano-legend-scale");
    this.legendBar = h("canvas", "murano-legend-bar", { width: 256, height: 1, "aria-hidden": "true" });
    this.legendTicks = h("span", "murano-legend-ticks", { "aria-hidden": "true" });
    scale.append(this.legendBar, this.legendTicks);
    const settledKey = h("span", "murano-key murano-key-settled");
    settledKey.append(h("span", "murano-key-dot", { "aria-hidden": "true" }), h("span", "", {}, "top-1 = final prediction"));
    this.missingKey = h("span", "murano-key murano-key-missing", { hidden: "" });
    this.missingKey.append(h("span", "murano-key-hatch", { "aria-hidden": "true" }), h("span", "", {}, "not finite"));
    this.legend.append(this.legendTitle, scale, settledKey, this.missingKey);

    this.pinEl = h("span", "murano-pin", { hidden: "" });
    this.pinText = h("span", "murano-pin-text");
    this.unpinButton = h("button", "murano-unpin", { type: "button", "aria-label": "Unpin the cell", title: "Unpin" }, "×");
    this.pinEl.append(this.pinText, this.unpinButton);
    this.readout = h("div", "murano-readout", { id: `${id}-readout`, role: "status", "aria-live": "polite" },
      "Hover or focus a cell for details; click or Enter pins it. Arrow keys move inside the heatmap.");
    footer.append(this.legend, this.pinEl, this.readout);

    this.errorEl = h("div", "murano-error", { role: "alert", hidden: "" });
    this.root.append(header, controls, this.body, footer, this.errorEl, this.tooltip);
    this.el.append(this.root);
  }

  bind() {
    const signal = this.abort.signal;
    const on = (target, type, fn, options = {}) => target.addEventListener(type, fn, { signal, ...options });
    const { model } = this;

    on(this.promptUi.input, "input", () => this.setPrompt(Number(this.promptUi.input.value), "throttled"));
    on(this.promptUi.input, "change", () => this.syncPrompt.flush());
    on(this.layerUi.input, "input", () => this.setLayer(Number(this.layerUi.input.value), "throttled"));
    on(this.layerUi.input, "change", () => this.syncLayer.flush());
    on(this.metricSelect, "change", () => this.setMetric(this.metricSelect.value, true));
    on(this.scroller, "scroll", () => {
      if (this.state.hover) this.setHover(null);
      this.requestDraw();
    }, { passive: true });
    on(this.canvas, "pointermove", (event) => this.onPointerMove(event));
    on(this.canvas, "pointerleave", () => this.setHover(null));
    on(this.canvas, "click", (event) => this.onClick(event));
    on(this.canvas, "pointerdown", () => {
      this.state.focused = false;
    });
    on(this.canvas, "keydown", (event) => this.onKeyDown(event));
    on(this.canvas, "focus", () => this.onFocus());
    on(this.canvas, "blur", () => {
      this.state.focused = false;
      this.updateTooltip();
      this.requestDraw();
    });
    on(this.unpinButton, "click", () => this.setSelected(null, true));

    this.modelHandlers = {
      "change:prompt": () => { this.syncPrompt.cancel(); this.setPrompt(model.get("prompt"), false); },
      "change:layer": () => { this.syncLayer.cancel(); this.setLayer(model.get("layer"), false); },
      "change:metric": () => this.setMetric(model.get("metric"), false),
      "change:selected": () => this.setSelected(model.get("selected") ?? null, false),
      "change:_sections": () => this.reload(),
      "change:_meta": () => this.reload(),
    };
    for (const [event, fn] of Object.entries(this.modelHandlers)) model.on(event, fn);

    if (typeof ResizeObserver !== "undefined") {
      this.resizeObserver = new ResizeObserver(() => this.relayout());
      this.resizeObserver.observe(this.scroller);
    }
    const themeChanged = () => {
      this.theme = null;
      this.relayout();
    };
    if (typeof MutationObserver !== "undefined") {
      this.themeObserver = new MutationObserver(themeChanged);
      const options = { attributes: true, attributeFilter: ["class", "data-jp-theme-light", "data-jp-theme-name", "theme", "style"] };
      if (document.body) this.themeObserver.observe(document.body, options);
      this.themeObserver.observe(document.documentElement, options);
    }
    if (typeof matchMedia === "function") {
      on(matchMedia("(prefers-color-scheme: dark)"), "change", themeChanged);
    }
  }

  destroy() {
    this.abort.abort();
    for (const [event, fn] of Object.entries(this.modelHandlers)) this.model.off(event, fn);
    this.resizeObserver?.disconnect();
    this.themeObserver?.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.syncPrompt.flush();
    this.syncLayer.flush();
    this.images.clear();
    this.root.remove();
    if (this.el.__muranoDebug === this.debugApi) delete this.el.__muranoDebug;
  }

  // ---- Data ----------------------------------------------------------------------------------

  reload() {
    try {
      this.lens = decodePayload(this.model.get("_meta"), this.model.get("_sections"));
    } catch (error) {
      this.lens = null;
      this.showError(`Cannot show this logit lens: ${error.message}`);
      return;
    }
    this.errorEl.hidden = true;
    this.body.hidden = false;
    const lens = this.lens;
    this.images.clear();
    this.tokenTexts = new Array(lens.tokens.length);
    this.cellTexts.clear();
    this.layoutKey = null;

    this.modelEl.textContent = lens.modelName;
    this.modelEl.hidden = !lens.modelName;
    this.root.setAttribute("aria-label", `Logit lens${lens.modelName ? ` of ${lens.modelName}` : ""}`);
    this.promptUi.input.max = String(lens.P - 1);
    this.promptUi.row.classList.toggle("murano-single", lens.P < 2);
    this.layerUi.input.max = String(lens.L - 1);
    this.missingKey.hidden = !lens.arrays.missing;

    // The first load takes the model's values; later loads (new sections) keep the local view,
    // which may be ahead of the model while a slider's sync is throttled.
    const s = this.state;
    const source = this.loaded ? s : { prompt: this.model.get("prompt"), layer: this.model.get("layer") };
    s.prompt = clampIndex(source.prompt, lens.P);
    s.layer = clampIndex(source.layer, lens.L);
    if (!this.loaded) {
      const metric = this.model.get("metric");
      s.metric = METRICS[metric] ? metric : "prob";
      s.selected = this.model.get("selected") ?? null;
    }
    this.loaded = true;
    if (s.focus) s.focus = this.clampCell(s.focus);
    if (s.hover) s.hover = this.clampCell(s.hover);
    this.metricSelect.value = s.metric;
    this.refreshControls();
    this.refreshMetric();
    this.refreshPin();
    this.relayout();
    this.updateTooltip();
  }

  showError(message) {
    this.errorEl.textContent = message;
    this.errorEl.hidden = false;
    this.body.hidden = true;
    this.hideTooltip();
  }

  clampCell(cell) {
    return {
      layerIndex: clampIndex(cell.layerIndex, this.lens.L),
      position: clampIndex(cell.position, this.lens.lengths[this.state.prompt]),
    };
  }

  hasDetails() {
    return DETAIL_SECTIONS.some((name) => this.lens?.arrays[name]);
  }

  requestDetails() {
    if (this.detailsRequested || !this.lens || this.hasDetails()) return;
    this.detailsRequested = true;
    if (!this.model.get("_details")) {
      this.model.set("_details", true);
      this.model.save_changes();
    }
  }

  send(name, value) {
    if (this.model.get(name) === value) return;
    this.model.set(name, value);
    this.model.save_changes();
  }

  tokenText(index) {
    let text = this.tokenTexts[index];
    if (text === undefined) {
      text = displayToken(this.lens.tokens[index]);
      this.tokenTexts[index] = text;
    }
    return text;
  }

  /** A token's display text cut to the width of a cell, wrapped in an LTR isolate for fillText. */
  cellText(index) {
    const chars = this.layout.cellChars;
    if (chars !== this.cellTextChars) {
      this.cellTexts.clear();
      this.cellTextChars = chars;
    }
    let text = this.cellTexts.get(index);
    if (text === undefined) {
      text = isolateLtr(truncateText(this.tokenText(index), chars));
      this.cellTexts.set(index, text);
    }
    return text;
  }

  // ---- State changes -------------------------------------------------------------------------

  setPrompt(value, sync) {
    if (!this.lens) return;
    const prompt = clampIndex(value, this.lens.P);
    if (sync === "throttled") this.syncPrompt(prompt);
    if (prompt === this.state.prompt) {
      this.promptUi.input.value = String(prompt);
      return;
    }
    this.state.prompt = prompt;
    this.state.hover = null;
    if (this.state.focus) this.state.focus = this.clampCell(this.state.focus);
    this.refreshControls();
    this.refreshPin();
    this.relayout();
    this.scroller.scrollLeft = 0;
    this.updateTooltip();
  }

  setLayer(value, sync) {
    if (!this.lens) return;
    const layer = clampIndex(value, this.lens.L);
    if (sync === "throttled") this.syncLayer(layer);
    if (layer === this.state.layer) {
      this.layerUi.input.value = String(layer);
      return;
    }
    this.state.layer = layer;
    this.refreshControls();
    this.requestDraw();
  }

  setMetric(value, sync) {
    const metric = METRICS[value] ? value : "prob";
    if (sync) this.send("metric", metric);
    if (metric === this.state.metric) return;
    this.state.metric = metric;
    this.metricSelect.value = metric;
    this.refreshMetric();
    this.requestDraw();
  }

  setSelected(value, sync) {
    this.state.selected = value;
    if (sync) this.send("selected", value);
    this.refreshPin();
    this.requestDraw();
  }

  setHover(cell) {
    const old = this.state.hover;
    if (old === cell || (old && cell && old.layerIndex === cell.layerIndex && old.position === cell.position)) return;
    this.state.hover = cell;
    if (cell) this.requestDetails();
    this.updateTooltip();
    this.requestDraw();
  }

  setFocus(cell, announce = true) {
    this.state.focus = cell;
    const scroll = revealColumn(this.layout, this.scroller.scrollLeft, cell.position);
    if (scroll !== this.scroller.scrollLeft) this.scroller.scrollLeft = scroll;
    if (announce) this.announce(cell);
    this.updateTooltip();
    this.requestDraw();
  }

  announce(cell) {
    const s = this.state;
    const details = cellDetails(this.lens, s.prompt, cell.layerIndex, cell.position);
    this.readout.textContent = readoutText(details, { pinned: isSelected(s.selected, s.prompt, cell.layerIndex, cell.position) });
  }

  /** The metric the cells show: the chosen one, or the last shown while its section loads. */
  refreshMetric() {
    const s = this.state;
    const available = metricAvailable(this.lens, s.metric);
    if (available) this.shownMetric = s.metric;
    else this.requestDetails();
    this.root.classList.toggle("murano-loading", !available);
    this.drawLegend();
  }

  // ---- Events --------------------------------------------------------------------------------

  eventCell(event) {
    if (!this.layout) return null;
    const rect = this.canvas.getBoundingClientRect();
    const hit = hitTest(this.layout, event.clientX - rect.left, event.clientY - rect.top, this.scrollLeft(), this.state.layer);
    return hit && hit.area !== "input" ? { layerIndex: hit.layerIndex, position: hit.position } : null;
  }

  onPointerMove(event) {
    this.setHover(this.eventCell(event));
  }

  onClick(event) {
    const cell = this.eventCell(event);
    if (!cell) return;
    this.state.focus = cell;
    this.togglePin(cell);
  }

  togglePin(cell) {
    const s = this.state;
    const next = toggleSelection(s.selected, s.prompt, cell.layerIndex, cell.position);
    this.setSelected(next, true);
    this.readout.textContent = next
      ? readoutText(cellDetails(this.lens, s.prompt, cell.layerIndex, cell.position), { pinned: true })
      : "Unpinned.";
  }

  onFocus() {
    if (!this.lens) return;
    let keyboard = true;
    try {
      keyboard = this.canvas.matches(":focus-visible");
    } catch {
      // Browsers without :focus-visible: treat every focus as keyboard focus.
    }
    // A mouse click focuses the canvas too; it pins instead, and shows no focus cell.
    if (keyboard) this.showKeyboardFocus();
  }

  /** Shows the focus cell (keyboard navigation) with its tooltip and readout. */
  showKeyboardFocus() {
    const s = this.state;
    s.focused = true;
    this.requestDetails();
    if (!s.focus) {
      // Start at the pinned cell, else on the highlighted row at the first visible column.
      const sel = s.selected;
      const first = Math.ceil(this.scrollLeft() / this.layout.cellW);
      s.focus = this.clampCell(
        sel && sel.prompt === s.prompt
          ? { layerIndex: sel.layer_index, position: sel.position }
          : { layerIndex: s.layer, position: first },
      );
    }
    this.setFocus(s.focus);
  }

  onKeyDown(event) {
    if (!this.lens || event.altKey || event.ctrlKey || event.metaKey) return;
    const s = this.state;
    const key = event.key;
    const pinKey = key === "Enter" || key === " ";
    const navigation = moveFocus({ layerIndex: 0, position: 0 }, key, 1, 1) !== null;
    if (!pinKey && !navigation && !(key === "Escape" && s.selected)) return;
    // Handled here: keep the page (and notebook shortcuts such as arrows between cells) out.
    event.preventDefault();
    event.stopPropagation();
    if (key === "Escape") {
      this.setSelected(null, true);
      this.readout.textContent = "Unpinned.";
      return;
    }
    // The first key after a mouse click shows the focus cell where the click was.
    if (!s.focused) this.showKeyboardFocus();
    if (pinKey) {
      this.togglePin(s.focus);
    } else {
      this.setFocus(moveFocus(s.focus, key, this.lens.L, this.lens.lengths[s.prompt]));
    }
  }

  // ---- Controls, legend, pin, tooltip --------------------------------------------------------

  refreshControls() {
    const lens = this.lens;
    const s = this.state;
    const { input: promptInput, output: promptOutput, extra: promptText } = this.promptUi;
    promptInput.value = String(s.prompt);
    promptOutput.textContent = `${s.prompt + 1} / ${lens.P}`;
    const text = displayToken(lens.prompts[s.prompt] ?? "", { spaces: false });
    promptText.textContent = text;
    promptText.setAttribute("title", text);
    promptInput.setAttribute("aria-valuetext", `prompt ${s.prompt + 1} of ${lens.P}: ${truncateText(text, 80)}`);
    const layer = lens.layers[s.layer];
    this.layerUi.input.value = String(s.layer);
    this.layerUi.output.textContent = `L${layer}`;
    this.layerUi.input.setAttribute("aria-valuetext", `layer ${layer}, row ${s.layer + 1} of ${lens.L}`);
    const n = lens.lengths[s.prompt];
    this.dimsEl.textContent = `${lens.L} layers × ${n} token${n === 1 ? "" : "s"}`;
    this.canvas.setAttribute(
      "aria-label",
      `Logit lens heatmap: ${lens.L} layers (final layer at the top) by ${n} tokens of prompt ${s.prompt + 1}. ` +
        "Arrow keys move between cells, Home and End jump along the prompt, Enter pins a cell, Escape unpins.",
    );
  }

  drawLegend() {
    if (!this.lens) return;
    const s = this.state;
    const metric = this.shownMetric;
    const spec = METRICS[metric];
    const loading = s.metric !== metric;
    this.legendTitle.textContent = loading ? `${METRICS[s.metric].label}: loading…` : spec.label;
    const ctx = this.legendBar.getContext("2d");
    if (ctx) {
      const image = ctx.createImageData(256, 1);
      const lut = colourLut(spec.scale, spec.reverse);
      for (let k = 0; k < 256; k++) image.data.set([lut[3 * k], lut[3 * k + 1], lut[3 * k + 2], 255], 4 * k);
      ctx.putImageData(image, 0, 0);
    }
    const ticks = legendTicks(metric, metricDomain(this.lens, metric));
    this.legendTicks.replaceChildren(
      ...ticks.map((tick, i) => {
        const span = h("span", "murano-legend-tick", {}, tick.label);
        span.style.left = `${(tick.t * 100).toFixed(2)}%`;
        if (i === 0) span.classList.add("murano-first");
        if (i === ticks.length - 1 && tick.t > 0.95) span.classList.add("murano-last");
        return span;
      }),
    );
  }

  refreshPin() {
    const sel = this.state.selected;
    const lens = this.lens;
    if (!sel || !lens || !(sel.prompt >= 0 && sel.prompt < lens.P)) {
      this.pinEl.hidden = true;
      return;
    }
    const li = clampIndex(sel.layer_index, lens.L);
    const pos = clampIndex(sel.position, lens.lengths[sel.prompt]);
    const d = cellDetails(lens, sel.prompt, li, pos);
    const top = d.top[0];
    const where = lens.P > 1 ? `prompt ${sel.prompt + 1} · ` : "";
    this.pinText.textContent = `Pinned: ${where}L${d.layer} · pos ${pos} · ${displayToken(d.input)} → ${top ? `${displayToken(top.token)} ${formatProb(top.prob)}` : "not finite"}`;
    this.pinEl.hidden = false;
  }

  tooltipCell() {
    const s = this.state;
    return s.hover || (s.focused ? s.focus : null);
  }

  hideTooltip() {
    this.tooltip.hidden = true;
  }

  updateTooltip() {
    const cell = this.lens && this.layout ? this.tooltipCell() : null;
    if (!cell) {
      this.hideTooltip();
      return;
    }
    const s = this.state;
    const details = cellDetails(this.lens, s.prompt, cell.layerIndex, cell.position);
    const content = tooltipModel(details);
    const tip = this.tooltip;
    const head = h("div", "murano-tt-head");
    head.append(h("span", "murano-tt-title", {}, content.title));
    if (content.badge) head.append(h("span", "murano-tt-badge", {}, content.badge));
    if (isSelected(s.selected, s.prompt, cell.layerIndex, cell.position)) head.append(h("span", "murano-tt-badge murano-tt-pinned", {}, "pinned"));
    const parts = [head];
    if (content.top.length) {
      const list = h("div", "murano-tt-topk");
      for (const entry of content.top) {
        list.append(
          h("span", "murano-tt-rank", {}, `${entry.rank}`),
          h("span", "murano-token", {}, entry.text),
          (() => {
            const bar = h("span", "murano-tt-bar");
            const fill = h("span", "murano-tt-bar-fill");
            fill.style.width = `${(entry.width * 100).toFixed(1)}%`;
            bar.append(fill);
            return bar;
          })(),
          h("span", "murano-tt-prob", {}, entry.prob),
        );
      }
      parts.push(list);
    }
    const rows = h("div", "murano-tt-rows");
    for (const row of content.rows) {
      rows.append(h("span", "murano-tt-label", {}, row.label), h("span", row.token ? "murano-token" : "murano-tt-value", {}, row.value));
    }
    parts.push(rows);
    if (content.note) parts.push(h("div", "murano-tt-note", {}, content.note));
    tip.replaceChildren(...parts);
    tip.hidden = false;
    this.positionTooltip(cell);
  }

  positionTooltip(cell) {
    if (this.tooltip.hidden || !this.layout) return;
    // The tooltip lives in the root (position: relative) and stays inside it.
    const r = cellRect(this.layout, cell.layerIndex, cell.position, this.scrollLeft());
    const canvasBox = this.canvas.getBoundingClientRect();
    const rootBox = this.root.getBoundingClientRect();
    const anchor = { x: r.x + canvasBox.left - rootBox.left, y: r.y + canvasBox.top - rootBox.top, w: r.w, h: r.h };
    const size = { w: this.tooltip.offsetWidth, h: this.tooltip.offsetHeight };
    const bounds = { x: 4, y: 4, w: this.root.clientWidth - 8, h: this.root.clientHeight - 8 };
    const { left, top } = placeTooltip(anchor, size, bounds);
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${top}px`;
  }

  // ---- Layout and drawing --------------------------------------------------------------------

  readTheme() {
    const style = getComputedStyle(this.root);
    const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    const theme = {
      fg: read("--murano-fg", "#1f2328"),
      muted: read("--murano-muted", "#667085"),
      bg: read("--murano-bg", "#ffffff"),
      grid: read("--murano-grid", read("--murano-bg", "#ffffff")),
      accent: read("--murano-accent", "#0969da"),
      focus: read("--murano-focus", "#0969da"),
      stripBg: read("--murano-strip-bg", "rgba(127,127,127,0.08)"),
      hatch: read("--murano-hatch", "#9aa0a6"),
      uiFont: read("--murano-font", "system-ui, sans-serif"),
      monoFont: read("--murano-mono", "monospace"),
    };
    theme.labelFont = `11px ${theme.uiFont}`;
    theme.labelBold = `600 11px ${theme.uiFont}`;
    theme.axisFont = `10px ${theme.uiFont}`;
    theme.cellFont = `11px ${theme.monoFont}`;
    const ctx = this.canvas.getContext("2d");
    ctx.font = theme.cellFont;
    theme.charW = ctx.measureText("M").width || 6.6;
    const hatch = document.createElement("canvas");
    hatch.width = hatch.height = 6;
    const hctx = hatch.getContext("2d");
    if (hctx) {
      hctx.strokeStyle = theme.hatch;
      hctx.lineWidth = 1;
      hctx.beginPath();
      hctx.moveTo(0, 6);
      hctx.lineTo(6, 0);
      hctx.stroke();
      theme.hatchPattern = ctx.createPattern(hatch, "repeat");
    }
    this.theme = theme;
    return theme;
  }

  /** Recomputes the layout for the current prompt and width, then redraws. */
  relayout() {
    if (!this.lens) return;
    const lens = this.lens;
    const theme = this.theme || this.readTheme();
    const s = this.state;
    const n = lens.lengths[s.prompt];
    const width = this.scroller.clientWidth || this.el.clientWidth || 800;
    const key = `${s.prompt}|${width}|${theme.charW}|${theme.uiFont}`;
    if (key !== this.layoutKey) {
      const ctx = this.canvas.getContext("2d");
      ctx.font = theme.labelBold;
      const maxLayer = Math.max(...lens.layers);
      const labelW = Math.ceil(Math.max(ctx.measureText("input").width, ctx.measureText(`L${maxLayer}`).width)) + 16;
      let maxChars = 1;
      const a = lens.arrays;
      const offset = lens.offsets[s.prompt];
      const lastRow = (lens.L - 1) * lens.T + offset;
      for (let j = 0; j < n; j++) {
        maxChars = Math.max(maxChars, charCount(this.tokenText(a.input_tokens[offset + j])), charCount(this.tokenText(a.top1_tokens[lastRow + j])));
        if (maxChars >= 10) break;
      }
      this.layout = computeLayout({ nLayers: lens.L, nPositions: n, width, labelW, charW: theme.charW, maxChars: Math.min(10, maxChars) });
      this.layoutKey = key;
      this.track.style.width = `${this.layout.contentW}px`;
      this.track.style.height = `${this.layout.height}px`;
    }
    this.draw();
  }

  scrollLeft() {
    return this.layout ? clampScroll(this.layout, this.scroller.scrollLeft) : 0;
  }

  requestDraw() {
    if (this.frame || typeof requestAnimationFrame !== "function") return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (!this.layout || this.layoutKey === null) this.relayout();
      else this.draw();
    });
  }

  /** The cached 1-pixel-per-cell colour image of (prompt, metric). */
  colourCanvas(prompt, metric) {
    const key = `${prompt}|${metric}`;
    let entry = this.images.get(key);
    if (!entry) {
      const image = colourImage(this.lens, metric, prompt);
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, image.width);
      canvas.height = Math.max(1, image.height);
      if (image.width > 0) canvas.getContext("2d").putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
      entry = { canvas, data: image.data, width: image.width };
      if (this.images.size >= 8) this.images.delete(this.images.keys().next().value);
      this.images.set(key, entry);
    }
    return entry;
  }

  /** Draws the visible part of the heatmap, its strips and labels (synchronously). */
  draw() {
    if (this.frame) {
      cancelAnimationFrame(this.frame);
      this.frame = 0;
    }
    if (!this.lens || !this.layout) return;
    const t0 = performance.now();
    const layout = this.layout;
    const ctx = this.prepareCanvas(layout);
    const scroll = this.scrollLeft();
    const [c0, c1] = visibleColumns(layout, scroll);
    const metric = this.shownMetric;
    // Everything the drawing steps share, for this frame.
    const f = {
      ctx,
      layout,
      theme: this.theme || this.readTheme(),
      scroll,
      c0,
      c1,
      x0: columnX(layout, c0, scroll),
      span: (c1 - c0) * layout.cellW,
      image: this.colourCanvas(this.state.prompt, metric),
      offset: this.lens.offsets[this.state.prompt],
      loading: this.state.metric !== metric,
    };
    ctx.save();
    ctx.beginPath();
    ctx.rect(layout.labelW, 0, layout.width - layout.labelW, layout.height);
    ctx.clip();
    this.drawCells(f);
    this.drawStrips(f);
    this.drawMarks(f);
    ctx.restore();
    this.drawLabels(f);

    const tipCell = this.tooltipCell();
    if (tipCell && !this.tooltip.hidden) this.positionTooltip(tipCell);
    this.debug.frames += 1;
    this.debug.lastDrawMs = performance.now() - t0;
    this.debug.visible = [c0, c1];
    for (const fn of this.debug.drawListeners.splice(0)) fn(this.debug.lastDrawMs);
  }

  /** Sizes the canvas for the layout and the device pixel ratio; returns a cleared context. */
  prepareCanvas(layout) {
    const canvas = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const { width: W, height: H } = layout;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      canvas.style.width = `${W}px`;
      canvas.style.height = `${H}px`;
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.direction = "ltr";
    return ctx;
  }

  /** The cells: the cached colour image scaled up, grid gaps, settled dots and top-1 text. */
  drawCells({ ctx, layout, theme, scroll, c0, c1, x0, span, image, offset, loading }) {
    const lens = this.lens;
    const a = lens.arrays;
    const { cellW, rowH, heatY, heatH } = layout;
    const L = lens.L;
    const n = layout.nPositions;
    // Missing cells show a hatch through the transparent pixels of the colour image.
    if (a.missing && theme.hatchPattern) {
      ctx.fillStyle = theme.hatchPattern;
      ctx.fillRect(x0, heatY, span, heatH);
    }
    if (c1 > c0) {
      ctx.imageSmoothingEnabled = false;
      ctx.globalAlpha = loading ? 0.45 : 1;
      ctx.drawImage(image.canvas, c0, 0, c1 - c0, L, x0, heatY, span, heatH);
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = theme.grid;
    if (cellW >= 10) for (let j = c0; j <= c1; j++) ctx.fillRect(columnX(layout, j, scroll) - 0.5, heatY, 1, heatH);
    if (rowH >= 9) for (let r = 1; r < L; r++) ctx.fillRect(x0, heatY + r * rowH - 0.5, span, 1);

    // Settled marks and cell text, in black or white by the cell's colour; dots in two batches.
    const data = image.data;
    const dot = Math.max(1.5, Math.min(3, rowH / 5));
    const darkDots = new Path2D();
    const lightDots = new Path2D();
    const text = layout.showCellText && !loading;
    ctx.font = theme.cellFont;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let row = 0; row < L; row++) {
      const y = heatY + row * rowH;
      const base = (L - 1 - row) * lens.T + offset;
      for (let j = c0; j < c1; j++) {
        const o = (row * n + j) * 4;
        if (data[o + 3] === 0) continue;
        const colour = textOn(data[o], data[o + 1], data[o + 2]);
        const x = columnX(layout, j, scroll);
        const token = a.top1_tokens[base + j];
        if (token === a.final_tokens[offset + j]) {
          const path = colour === "#000000" ? darkDots : lightDots;
          const cx = x + cellW - dot - 2.5;
          const cy = y + Math.min(rowH / 2, dot + 2);
          path.moveTo(cx + dot, cy);
          path.arc(cx, cy, dot, 0, 2 * Math.PI);
        }
        if (text) {
          ctx.fillStyle = colour;
          ctx.fillText(this.cellText(token), x + cellW / 2 - (cellW > 40 ? 2 : 0), y + rowH / 2 + 0.5);
        }
      }
    }
    ctx.fillStyle = "#000000";
    ctx.fill(darkDots);
    ctx.fillStyle = "#ffffff";
    ctx.fill(lightDots);
  }

  /** Under the cells: the input tokens, then the highlighted layer's predictions as chips. */
  drawStrips({ ctx, layout, theme, scroll, c0, c1, x0, span, image, offset }) {
    const lens = this.lens;
    const a = lens.arrays;
    const layer = this.state.layer;
    const { cellW, inputY, predY, stripH } = layout;
    const data = image.data;
    const n = layout.nPositions;
    const row = lens.L - 1 - layer;
    const base = layer * lens.T + offset;
    ctx.fillStyle = theme.stripBg;
    ctx.fillRect(x0, inputY, span, stripH);
    ctx.font = theme.cellFont;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let j = c0; j < c1; j++) {
      const x = columnX(layout, j, scroll);
      ctx.fillStyle = theme.fg;
      ctx.fillText(this.cellText(a.input_tokens[offset + j]), x + cellW / 2, inputY + stripH / 2 + 0.5);
      const o = (row * n + j) * 4;
      const chip = { x: x + 1, y: predY + 2, w: cellW - 2, h: stripH - 4 };
      if (data[o + 3] === 0) {
        if (theme.hatchPattern) {
          ctx.fillStyle = theme.hatchPattern;
          ctx.fillRect(chip.x, chip.y, chip.w, chip.h);
        }
        continue;
      }
      ctx.fillStyle = `rgb(${data[o]},${data[o + 1]},${data[o + 2]})`;
      ctx.fillRect(chip.x, chip.y, chip.w, chip.h);
      ctx.fillStyle = textOn(data[o], data[o + 1], data[o + 2]);
      ctx.fillText(this.cellText(a.top1_tokens[base + j]), x + cellW / 2, predY + stripH / 2 + 0.5);
      if (a.top1_tokens[base + j] === a.final_tokens[offset + j]) {
        ctx.beginPath();
        ctx.arc(chip.x + chip.w - 4, chip.y + 4, 2, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
    // Position numbers above the cells.
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    const stride = niceCeil(Math.max(1, 28 / cellW));
    for (let j = c0 - (c0 % stride); j < c1; j += stride) {
      ctx.fillText(String(j), columnX(layout, j, scroll) + cellW / 2, layout.heatY - 4);
    }
  }

  /** The highlighted row, the pinned, hovered and focused cells, and scroll shadows. */
  drawMarks({ ctx, layout, theme, scroll, c0, c1 }) {
    const s = this.state;
    const { labelW, width: W, rowH, heatY, predY, stripH } = layout;
    const highlighted = cellRect(layout, s.layer, 0, 0);
    ctx.strokeStyle = theme.accent;
    ctx.lineWidth = 2;
    const right = Math.min(W - 1, columnX(layout, layout.nPositions, scroll) + 1);
    ctx.strokeRect(labelW + 1, highlighted.y - 1, right - labelW - 2, rowH + 2);

    const outline = (cell, style, width, dash = []) => {
      if (!cell || cell.position < c0 || cell.position >= c1) return;
      const r = cellRect(layout, cell.layerIndex, cell.position, scroll);
      ctx.strokeStyle = style;
      ctx.lineWidth = width;
      ctx.setLineDash(dash);
      ctx.strokeRect(r.x + width / 2, r.y + width / 2, r.w - width, r.h - width);
      ctx.setLineDash([]);
    };
    const sel = s.selected;
    if (sel && sel.prompt === s.prompt && sel.layer_index < this.lens.L && sel.position < layout.nPositions) {
      const cell = { layerIndex: sel.layer_index, position: sel.position };
      outline(cell, theme.bg, 4);
      outline(cell, theme.fg, 2);
    }
    if (s.hover) outline(s.hover, theme.fg, 1);
    if (s.focused && s.focus) outline(s.focus, theme.focus, 2, [3, 2]);

    const shade = (x, dir) => {
      const g = ctx.createLinearGradient(x, 0, x + 10 * dir, 0);
      g.addColorStop(0, "rgba(0,0,0,0.22)");
      g.addColorStop(1, "rgba(0,0,0,0)");
      ctx.fillStyle = g;
      ctx.fillRect(dir > 0 ? x : x - 10, heatY, 10, predY + stripH - heatY);
    };
    if (scroll > 0) shade(labelW, 1);
    if (scroll < layout.maxScroll) shade(W, -1);
  }

  /** Row labels (layer numbers) and strip labels, kept in view at the left. */
  drawLabels({ ctx, layout, theme }) {
    const lens = this.lens;
    const layer = this.state.layer;
    const { labelW, rowH, heatY, inputY, predY, stripH } = layout;
    const L = lens.L;
    const hlRow = L - 1 - layer;
    const every = labelStride(rowH, 12);
    const x = labelW - 8;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let row = 0; row < L; row++) {
      const i = L - 1 - row;
      const isHl = i === layer;
      // Every row, or every `every`-th layer number, never crowding the highlighted one.
      if (!isHl && every > 1 && lens.layers[i] % every !== 0) continue;
      if (!isHl && Math.abs(row - hlRow) * rowH < 11) continue;
      ctx.font = isHl ? theme.labelBold : theme.labelFont;
      ctx.fillStyle = isHl ? theme.accent : theme.muted;
      ctx.fillText(String(lens.layers[i]), x, heatY + row * rowH + rowH / 2 + 0.5);
    }
    ctx.fillStyle = theme.accent;
    ctx.fillRect(labelW - 4, heatY + hlRow * rowH, 3, rowH);
    ctx.font = theme.labelFont;
    ctx.fillStyle = theme.muted;
    ctx.fillText("input", x, inputY + stripH / 2 + 0.5);
    ctx.font = theme.labelBold;
    ctx.fillStyle = theme.accent;
    ctx.fillText(`L${lens.layers[layer]}`, x, predY + stripH / 2 + 0.5);
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    ctx.fillText("layer", x, heatY - 4);
  }

  // ---- Test hook -----------------------------------------------------------------------------

  exposeDebug() {
    const view = this;
    this.debugApi = {
      get state() {
        const s = view.state;
        return { prompt: s.prompt, layer: s.layer, metric: s.metric, shownMetric: view.shownMetric, selected: s.selected, hover: s.hover, focus: s.focus, focused: s.focused };
      },
      get layout() {
        return view.layout && { ...view.layout, scrollLeft: view.scrollLeft() };
      },
      get frames() {
        return view.debug.frames;
      },
      get lastDrawMs() {
        return view.debug.lastDrawMs;
      },
      get visibleColumns() {
        return view.debug.visible;
      },
      /** A cell's rectangle in viewport (client) coordinates. */
      cellClientRect(layerIndex, position) {
        const r = cellRect(view.layout, layerIndex, position, view.scrollLeft());
        const c = view.canvas.getBoundingClientRect();
        return { x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h };
      },
      /** The colour the cell should have under the shown metric ([r, g, b, a]; a = 0: missing). */
      cellColour(layerIndex, position) {
        const image = view.colourCanvas(view.state.prompt, view.shownMetric);
        const o = ((view.lens.L - 1 - layerIndex) * image.width + position) * 4;
        return Array.from(image.data.slice(o, o + 4));
      },
      cellDetails: (layerIndex, position) => cellDetails(view.lens, view.state.prompt, layerIndex, position),
      drawNow: () => view.relayout(),
      nextDraw: () => new Promise((resolve) => view.debug.drawListeners.push(resolve)),
    };
    this.el.__muranoDebug = this.debugApi;
  }
}

/** anywidget entry point: draws the widget into `el`; returns the cleanup function. */
function render({ model, el }) {
  const view = new LensView(model, el);
  return () => view.destroy();
}

export default { render };
