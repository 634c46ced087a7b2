// Built by `npm run build` (js/build.mjs) from js/src with esbuild; do not edit: edit js/src.

// src/shared/codec.js
var DTYPE_SIZES = Object.freeze({ uint8: 1, int16: 2, uint16: 2, uint32: 4, int32: 4, float32: 4 });
var CONSTRUCTORS = Object.freeze({
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  int32: Int32Array,
  float32: Float32Array
});
var HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
function decodeBase64(text) {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
function toBytes(buffer) {
  if (buffer instanceof Uint8Array) return buffer;
  if (ArrayBuffer.isView(buffer)) {
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  if (typeof buffer === "string") return decodeBase64(buffer);
  if (buffer && typeof buffer === "object" && typeof /** @type {any} */
  buffer.byteLength === "number") {
    return new Uint8Array(
      /** @type {ArrayBuffer} */
      buffer
    );
  }
  throw new TypeError(`expected binary data (DataView, ArrayBuffer or base64), got ${typeof buffer}`);
}
function readTypedArray(buffer, dtype, length, accepted = Object.keys(DTYPE_SIZES)) {
  const size = accepted.includes(dtype) ? (
    /** @type {Record<string, number>} */
    DTYPE_SIZES[dtype]
  ) : void 0;
  if (!size) throw new Error(`unsupported dtype ${JSON.stringify(dtype)} (expected ${accepted.join(", ")})`);
  const Ctor = CONSTRUCTORS[
    /** @type {Dtype} */
    dtype
  ];
  const bytes = toBytes(buffer);
  if (length !== void 0 && bytes.byteLength !== length * size) {
    throw new Error(`expected ${length} ${dtype} values (${length * size} bytes), got ${bytes.byteLength} bytes`);
  }
  if (bytes.byteLength % size !== 0) {
    throw new Error(`${bytes.byteLength} bytes is not a whole number of ${dtype} values`);
  }
  const n = bytes.byteLength / size;
  if (size === 1 || HOST_LITTLE_ENDIAN && bytes.byteOffset % size === 0) {
    return new Ctor(
      /** @type {ArrayBuffer} */
      bytes.buffer,
      bytes.byteOffset,
      n
    );
  }
  const out = new Ctor(n);
  if (HOST_LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes);
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const get = {
      int16: (i) => view.getInt16(i * 2, true),
      uint16: (i) => view.getUint16(i * 2, true),
      uint32: (i) => view.getUint32(i * 4, true),
      int32: (i) => view.getInt32(i * 4, true),
      float32: (i) => view.getFloat32(i * 4, true)
    }[
      /** @type {Exclude<Dtype, "uint8">} */
      dtype
    ];
    for (let i = 0; i < n; i++) out[i] = get(i);
  }
  return out;
}
function readSection(buffer, dtype, length, name, accepted) {
  try {
    return readTypedArray(buffer, dtype, length, accepted);
  } catch (error) {
    throw new Error(`section ${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// src/shared/local_model.js
function createLocalModel(state) {
  const values = { prompt: 0, layer: null, metric: "prob", selected: null, _details: true, ...state };
  if (values._sections) {
    const sections = {};
    for (const [name, data] of Object.entries(values._sections)) {
      const bytes = toBytes(data);
      sections[name] = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    values._sections = sections;
  }
  return kernelFreeModel(values);
}
function kernelFreeModel(values) {
  const listeners = /* @__PURE__ */ new Map();
  return {
    get: (name) => values[name],
    set(name, value) {
      if (Object.is(values[name], value)) return;
      values[name] = value;
      for (const fn of [...listeners.get(`change:${name}`) || []]) fn();
    },
    on(event, fn) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, set = /* @__PURE__ */ new Set());
      set.add(fn);
    },
    off(event, fn) {
      if (!event) listeners.clear();
      else if (!fn) listeners.delete(event);
      else listeners.get(event)?.delete(fn);
    },
    save_changes() {
    }
  };
}

// src/shared/colour_stops.js
var COLOUR_STOPS = Object.freeze({
  viridis: [
    "#440154",
    "#48186a",
    "#472d7b",
    "#424086",
    "#3b528b",
    "#33638d",
    "#2c728e",
    "#26828e",
    "#21918c",
    "#1fa088",
    "#28ae80",
    "#3fbc73",
    "#5ec962",
    "#84d44b",
    "#addc30",
    "#d8e219",
    "#fde725"
  ],
  cividis: [
    "#00224e",
    "#002e6a",
    "#1a386f",
    "#32436d",
    "#434e6c",
    "#535a6d",
    "#61656f",
    "#6f7073",
    "#7d7c78",
    "#8c8878",
    "#9b9476",
    "#aba072",
    "#bcae6c",
    "#cdbb63",
    "#dec958",
    "#f0d846",
    "#fee838"
  ],
  // Magma without its near-white end, which would vanish on a light background.
  magma: [
    "#000004",
    "#0a0822",
    "#1d1147",
    "#36106b",
    "#51127c",
    "#6a1c81",
    "#832681",
    "#9c2e7f",
    "#b73779",
    "#d0416f",
    "#e75263",
    "#f56b5c",
    "#fc8961",
    "#fea772",
    "#fec488"
  ]
});

// src/shared/colour.js
var DIVERGING_STOPS = Object.freeze(["#08519c", "#3182bd", "#6baed6", "#c6dbef", "#f4f4f2", "#fdd0a2", "#fd8d3c", "#e6550d", "#a63603"]);
function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [n >> 16 & 255, n >> 8 & 255, n & 255];
}
function interpolateStops(stops, t) {
  const x = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  const pos = x * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(pos));
  const f = pos - i;
  const a = hexToRgb(stops[i]);
  const b = hexToRgb(stops[i + 1]);
  const mix = (k) => Math.round(a[k] + (b[k] - a[k]) * f);
  return [mix(0), mix(1), mix(2)];
}
function relativeLuminance([r, g, b]) {
  const lin = (c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}
function textColourOn(rgb) {
  const l = relativeLuminance(rgb);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
}

// src/shared/state.js
function moveFocus(focus, key, nLayers, nPositions) {
  let { layerIndex, position } = focus;
  switch (key) {
    case "ArrowUp":
      layerIndex += 1;
      break;
    // up the screen = deeper layer
    case "ArrowDown":
      layerIndex -= 1;
      break;
    case "ArrowLeft":
      position -= 1;
      break;
    case "ArrowRight":
      position += 1;
      break;
    case "Home":
      position = 0;
      break;
    case "End":
      position = nPositions - 1;
      break;
    case "PageUp":
      layerIndex = nLayers - 1;
      break;
    case "PageDown":
      layerIndex = 0;
      break;
    default:
      return null;
  }
  return {
    layerIndex: Math.min(nLayers - 1, Math.max(0, layerIndex)),
    position: Math.min(nPositions - 1, Math.max(0, position))
  };
}
function clampIndex(value, n) {
  const v = Number.isInteger(value) ? (
    /** @type {number} */
    value
  ) : Math.round(Number(value)) || 0;
  return Math.min(Math.max(0, n - 1), Math.max(0, v));
}

// src/shared/tokens.js
var MARKS = Object.freeze({ " ": "␣", "\n": "↵", "	": "⇥", "\r": "⇤" });
var CODE_POINT_RANGES = Object.freeze([
  [0, 31],
  // C0 controls (tab, newline and carriage return have marks instead)
  [127, 159],
  // DEL and the C1 controls
  [160, 160],
  // no-break space
  [173, 173],
  // soft hyphen
  [847, 847],
  // combining grapheme joiner
  [1564, 1564],
  // Arabic letter mark
  [4447, 4448],
  // Hangul fillers
  [5760, 5760],
  // Ogham space mark
  [6068, 6069],
  // Khmer inherent vowels (invisible)
  [6155, 6159],
  // Mongolian variation selectors and vowel separator
  [8192, 8207],
  // en quad … hair space, zero-width space/non-joiner/joiner, LRM, RLM
  [8232, 8239],
  // line and paragraph separators, LRE … RLO embeddings, narrow no-break space
  [8287, 8303],
  // medium math space, word joiner, invisible operators, isolates (2066-2069)
  [12288, 12288],
  // ideographic space
  [12644, 12644],
  // Hangul filler
  [55296, 57343],
  // surrogates (only lone halves reach this test)
  [57344, 63743],
  // private use
  [65279, 65279],
  // zero-width no-break space (byte order mark)
  [65440, 65440],
  // halfwidth Hangul filler
  [65529, 65531],
  // interlinear annotation controls
  [113824, 113827],
  // shorthand format controls
  [119155, 119162],
  // musical symbol format controls
  [917504, 917631],
  // tag characters
  [983040, 1114111]
  // supplementary private use areas A and B (planes 15 and 16)
]);
function shownAsCodePoint(cp) {
  for (const [lo, hi] of CODE_POINT_RANGES) {
    if (cp < lo) return false;
    if (cp <= hi) return true;
  }
  return false;
}
function codepointLabel(cp) {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}
function displayToken(token, { spaces = true } = {}) {
  if (typeof token !== "string") return "?";
  if (token === "") return "∅";
  let out = "";
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    let cp = code;
    let ch = token[i];
    if (code >= 55296 && code <= 56319 && i + 1 < token.length) {
      const next = token.charCodeAt(i + 1);
      if (next >= 56320 && next <= 57343) {
        cp = (code - 55296) * 1024 + (next - 56320) + 65536;
        ch = token.slice(i, i + 2);
        i++;
      }
    }
    if (ch === " ") out += spaces ? MARKS[" "] : " ";
    else if (ch === "\n" || ch === "	" || ch === "\r") out += MARKS[ch];
    else if (shownAsCodePoint(cp)) out += codepointLabel(cp);
    else out += ch;
  }
  return out;
}
function truncateText(text, maxChars) {
  if (maxChars <= 0) return "";
  const chars = Array.from(text);
  if (chars.length <= maxChars) return text;
  if (maxChars === 1) return "…";
  return `${chars.slice(0, maxChars - 1).join("")}…`;
}
function charCount(text) {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!(c >= 56320 && c <= 57343 && i > 0 && text.charCodeAt(i - 1) >= 55296 && text.charCodeAt(i - 1) <= 56319)) n++;
  }
  return n;
}
function isolateLtr(text) {
  return `⁦${text}⁩`;
}

// src/diff/payload.js
var DIFF_VERSION = 2;
var REQUIRED = Object.freeze(["input_a", "aligned", "delta_prob", "delta_known", "top1_differs", "topk_tokens_a", "topk_probs_a", "topk_tokens_b", "topk_probs_b"]);
var DIFF_DTYPES = Object.freeze(["uint8", "int16", "uint16", "uint32", "int32"]);
function decodeDiff(meta, sections) {
  if (!meta || meta.format !== "lens_diff") throw new Error("this is not a lens-diff payload (meta.format is not 'lens_diff')");
  if (meta.version !== DIFF_VERSION) throw new Error(`lens-diff payload version ${meta.version}; this front end reads version ${DIFF_VERSION}`);
  const L = meta.layers.length;
  const T = meta.total;
  const P = meta.lengths.length;
  const K = meta.top_k;
  const arrays = {};
  const scales = {};
  for (const [name, spec] of Object.entries(
    /** @type {Record<string, {dtype: string, shape: number[], scale?: number}>} */
    meta.sections || {}
  )) {
    if (!(name in (sections || {}))) continue;
    const length = spec.shape.reduce((x, y) => x * y, 1);
    arrays[name] = /** @type {DiffArray} */
    readSection(sections[name], spec.dtype, length, name, DIFF_DTYPES);
    scales[name] = spec.scale ?? 1;
  }
  for (const name of REQUIRED) if (!arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  const expect = (
    /** @type {Record<string, number>} */
    { input_a: T, aligned: L * T, delta_prob: L * T, topk_tokens_a: L * T * K, topk_tokens_b: L * T * K }
  );
  for (const name of TOKEN_SECTIONS) {
    const mask = arrays[`no_token_${name}`];
    if (mask && arrays[name] && mask.length !== arrays[name].length) throw new Error(`section no_token_${name} has ${mask.length} values, expected ${arrays[name].length}`);
  }
  for (const [name, n] of Object.entries(expect)) {
    if (arrays[name].length !== n) throw new Error(`section ${name} has ${arrays[name].length} values, expected ${n}`);
  }
  return {
    meta,
    L,
    T,
    P,
    K,
    layers: meta.layers,
    bLayers: meta.b_layers,
    bHasRow: meta.b_has_row,
    depthA: meta.depth_a,
    depthB: meta.depth_b,
    lengths: meta.lengths,
    offsets: meta.offsets,
    tokens: meta.tokens,
    labels: meta.labels,
    metrics: meta.metrics,
    arrays,
    scales
  };
}
function diffIndex(diff, layerIndex, prompt, position) {
  return layerIndex * diff.T + diff.offsets[prompt] + position;
}
var TOKEN_SECTIONS = Object.freeze(["input_a", "input_b", "token", "topk_tokens_a", "topk_tokens_b"]);
function tokenAt(diff, name, i) {
  const none = diff.arrays[`no_token_${name}`];
  const section = diff.arrays[name];
  if (!section || none && none[i]) return null;
  const entry = section[i];
  return entry < diff.tokens.length ? diff.tokens[entry] : null;
}
function diffMetric(diff, name) {
  return diff.metrics.find((m) => m.name === name);
}

// src/diff/colour.js
var DIVERGING = DIVERGING_STOPS;
var DIVERGING_DARK = Object.freeze(["#b3d5ef", "#6baed6", "#3182bd", "#1d4e7e", "#2b2d31", "#7a3a10", "#c0510c", "#f08a3a", "#fdc28c"]);
var SAME_COLOUR = (
  /** @type {Rgb} */
  [214, 220, 228]
);
var SAME_COLOUR_DARK = (
  /** @type {Rgb} */
  [52, 56, 62]
);
var DIFFERS_COLOUR = (
  /** @type {Rgb} */
  [230, 85, 13]
);
function diffPalette(dark) {
  const magma = COLOUR_STOPS.magma;
  return dark ? { diverging: DIVERGING_DARK, kl: [...magma], same: SAME_COLOUR_DARK, differs: DIFFERS_COLOUR } : { diverging: DIVERGING, kl: [...magma].reverse(), same: SAME_COLOUR, differs: DIFFERS_COLOUR };
}
function divergingColour(value, max, stops = DIVERGING, log = false) {
  const m = max > 0 ? max : 1;
  const ratio = log ? Math.sign(value) * (Math.log1p(Math.abs(value)) / Math.log1p(m)) : value / m;
  const t = Number.isFinite(value) ? 0.5 + 0.5 * Math.max(-1, Math.min(1, ratio)) : 0.5;
  return interpolateStops(stops, t);
}
function klColour(value, max, dark = false) {
  const t = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  return interpolateStops(COLOUR_STOPS.magma, dark ? t : 1 - t);
}
function changeAt(diff, metric, index) {
  const arrays = diff.arrays;
  const spec = diffMetric(diff, metric);
  const change = spec?.change;
  if (!spec || !change || !arrays.aligned[index]) return null;
  const known = arrays[change.known];
  const delta = arrays[spec.field];
  if (!known || !delta || !known[index]) return null;
  const step = (name) => diff.scales[name] ?? 1;
  const read = (name) => arrays[name] ? arrays[name][index] * step(name) : Number.NaN;
  return {
    a: read(change.a),
    b: read(change.b),
    delta: read(spec.field),
    steps: { a: step(change.a), b: step(change.b), delta: step(spec.field) }
  };
}
function metricValueAt(diff, metric, index) {
  const a = diff.arrays;
  if (!a.aligned[index]) return null;
  const spec = diffMetric(diff, metric);
  if (!spec) return null;
  if (spec.change) return changeAt(diff, metric, index)?.delta ?? null;
  const section = a[spec.field];
  return section ? section[index] * (diff.scales[spec.field] ?? 1) : null;
}
function cellColour(diff, metric, index, dark = false) {
  const value = metricValueAt(diff, metric, index);
  if (value === null) return null;
  const spec = diffMetric(diff, metric);
  const max = spec ? spec.domain[1] : 1;
  const palette = diffPalette(dark);
  if (spec?.scale === "diverging") return divergingColour(value, max, palette.diverging, Boolean(spec.log));
  if (spec?.scale === "sequential") return klColour(value, max, dark);
  return value ? palette.differs : palette.same;
}

// src/shared/format.js
var RANK_CAP = 65535;
function realDigits(digits, step, unit = 1) {
  let d = digits;
  while (d > 0 && 10 ** -d * unit < step) d -= 1;
  return d;
}
function formatProb(p, step = 0) {
  if (!Number.isFinite(p)) return "–";
  if (p > 0 && p < 1e-3) return "<0.1%";
  if (p >= 0.9995) return "100%";
  const digits = realDigits(p >= 0.1 ? 1 : 2, step, 0.01);
  const text = (p * 100).toFixed(digits);
  return `${(digits ? text.replace(/\.?0+$/, "") : text) || "0"}%`;
}
function formatBits(b, short = false, step = 0) {
  if (!Number.isFinite(b)) return "–";
  const digits = realDigits(b >= 10 ? 1 : 2, step);
  const text = short ? String(Number(b.toFixed(digits))) : b.toFixed(digits);
  return short ? text : `${text} bits`;
}
function formatRank(rank, short = false) {
  if (!Number.isFinite(rank)) return "–";
  let text;
  if (rank >= RANK_CAP) text = `≥${RANK_CAP}`;
  else if (rank >= 1e4) text = `${Math.round(rank / 1e3)}k`;
  else if (rank >= 1e3 && short) text = `${Number((rank / 1e3).toFixed(1))}k`;
  else text = String(Math.round(rank));
  return short ? text : `rank ${text}`;
}
function formatUnit(unit, value, short = false, step = 0) {
  if (unit === "probability") return short ? Number.isFinite(value) ? `${Math.round(value * 100)}%` : "–" : formatProb(value, step);
  if (unit === "rank") return formatRank(value, short);
  if (unit === "bits") return formatBits(value, short, step);
  if (!Number.isFinite(value)) return "–";
  return String(Number(value.toPrecision(3)));
}
function formatChange(unit, value, short = false, step = 0) {
  if (value === null || !Number.isFinite(value)) return "–";
  const size = Math.abs(value);
  const sign = value > 0 ? "+" : "−";
  if (unit === "probability" || unit === "delta") {
    const points = size * 100;
    const digits = short ? points >= 9.95 ? 0 : 1 : points >= 10 ? 1 : 2;
    let text2 = points.toFixed(digits);
    if (text2.includes(".")) text2 = text2.replace(/\.?0+$/, "");
    if (text2 === "" || Number(text2) === 0) return short ? "0" : "0 pts";
    return short ? `${sign}${text2}` : `${sign}${text2} pts`;
  }
  if (unit === "rank") {
    const rounded = Math.round(size);
    if (rounded === 0) return short ? "0" : "0 ranks";
    const text2 = rounded >= 1e4 ? `${Math.round(rounded / 1e3)}k` : rounded >= 1e3 && short ? `${Number((rounded / 1e3).toFixed(1))}k` : String(rounded);
    return short ? `${sign}${text2}` : `${sign}${text2} rank${rounded === 1 ? "" : "s"}`;
  }
  if (unit === "bits") {
    const text2 = formatBits(size, true, step);
    if (Number(text2) === 0) return short ? "0" : "0 bits";
    return short ? `${sign}${text2}` : `${sign}${formatBits(size, false, step)}`;
  }
  const text = String(Number(size.toPrecision(3)));
  return Number(text) === 0 ? "0" : `${sign}${text}`;
}
function indexReadout(index, count) {
  return count > 1 ? `${index} (0–${count - 1})` : String(index);
}

// src/diff/details.js
function diffCell(diff, prompt, layerIndex, position) {
  const a = diff.arrays;
  const t = diff.offsets[prompt] + position;
  const index = diffIndex(diff, layerIndex, prompt, position);
  const aligned = Boolean(a.aligned[index]);
  const topk = (side) => {
    const out = [];
    const probs = a[`topk_probs_${side}`];
    const scale = diff.scales[`topk_probs_${side}`] ?? 1;
    for (let r = 0; r < diff.K; r++) {
      const text = tokenAt(diff, `topk_tokens_${side}`, index * diff.K + r);
      if (text !== null) out.push({ token: displayToken(text), prob: probs[index * diff.K + r] * scale });
    }
    return out;
  };
  const shown = (name) => {
    const text = tokenAt(diff, name, t);
    return text === null ? null : displayToken(text);
  };
  const positionB = a.position_b ? a.position_b[t] - 1 : -1;
  const delta = metricValueAt(diff, "delta_prob", index);
  const known = aligned && Boolean(a.delta_known[index]);
  return {
    prompt,
    layerIndex,
    position,
    layerA: diff.layers[layerIndex],
    layerB: diff.bLayers[layerIndex],
    aligned,
    inputA: displayToken(tokenAt(diff, "input_a", t)),
    inputB: positionB >= 0 ? shown("input_b") : null,
    positionB,
    token: shown("token"),
    delta,
    probA: known ? a.token_prob_a[index] * diff.scales.token_prob_a : null,
    probB: known ? a.token_prob_b[index] * diff.scales.token_prob_b : null,
    kl: metricValueAt(diff, "kl", index),
    klStep: diff.scales.kl_a_to_b ?? 0,
    differs: aligned ? Boolean(a.top1_differs[index]) : null,
    topA: topk("a"),
    topB: aligned || positionB >= 0 ? topk("b") : [],
    changes: cellChanges(diff, index)
  };
}
function cellChanges(diff, index) {
  const out = {};
  for (const spec of diff.metrics) {
    if (!spec.change || spec.unit === "delta") continue;
    const values = changeAt(diff, spec.name, index);
    if (values) out[spec.name] = { unit: spec.unit, label: spec.short || spec.name, ...values };
  }
  return out;
}
function changeLine(change) {
  const side = (value, step) => formatUnit(change.unit, value, false, step);
  const label = change.label.startsWith("Δ") ? change.label : `Δ ${change.label}`;
  return `${label}: ${side(change.a, change.steps.a)} → ${side(change.b, change.steps.b)} (${formatChange(change.unit, change.delta, false, change.steps.delta)})`;
}
function formatDelta(delta, short = false) {
  return formatChange("probability", delta, short);
}
function cellLabel(cell, metric) {
  if (!cell.aligned) return "";
  if (metric === "delta_prob") return cell.delta === null ? "" : formatDelta(cell.delta, true);
  if (metric === "kl") return cell.kl === null ? "" : formatBits(cell.kl, true, cell.klStep);
  if (metric === "top1_differs") return cell.differs && cell.topB.length ? cell.topB[0].token : "";
  const change = cell.changes[metric];
  return change ? formatChange(change.unit, change.delta, true, change.steps.delta) : "";
}
function tooltipContent(diff, cell, metric = "") {
  const layerB = diff.depthA === diff.depthB ? `layer ${cell.layerB}` : `layer ${cell.layerB} of ${diff.depthB}`;
  const title = `Layer ${cell.layerA} ↔ ${layerB} · position ${cell.position} ${cell.inputA}` + (cell.inputB !== null && cell.inputB !== cell.inputA ? ` (b: ${cell.inputB})` : "");
  const lines = [];
  if (!cell.aligned) {
    lines.push(diff.bHasRow[cell.layerIndex] ? cell.positionB < 0 ? "No partner position in b: not compared." : "No value in one of the cells: not compared." : `b has no layer ${cell.layerB}: not compared.`);
  } else {
    if (cell.token !== null) {
      lines.push(cell.delta === null ? `p(${cell.token}): unknown in one lens (not in its top-k)` : `Δ p(${cell.token}) = ${formatDelta(cell.delta)} (${formatProb(cell.probA ?? NaN, diff.scales.token_prob_a)} → ${formatProb(cell.probB ?? NaN, diff.scales.token_prob_b)})`);
    }
    const change = cell.changes[metric];
    if (change) lines.push(changeLine(change));
    const spec = diffMetric(diff, metric);
    if (!change && spec?.change && spec.unit !== "delta") lines.push(`${spec.short || spec.name}: no value in one of the cells`);
    if (cell.kl !== null) lines.push(`KL(a ‖ b) = ${formatBits(cell.kl, false, cell.klStep)}`);
    const topA = cell.topA[0]?.token ?? "?";
    const topB = cell.topB[0]?.token ?? "?";
    lines.push(cell.differs ? `Top-1 differs: ${topA} vs ${topB}` : `Same top-1: ${topA}`);
  }
  return {
    title,
    lines,
    columns: [
      { label: `a: ${diff.labels[0]}`, rows: cell.topA.map((c) => ({ token: c.token, prob: formatProb(c.prob, diff.scales.topk_probs_a) })) },
      { label: `b: ${diff.labels[1]}`, rows: cell.topB.map((c) => ({ token: c.token, prob: formatProb(c.prob, diff.scales.topk_probs_b) })) }
    ]
  };
}
function readoutLine(diff, cell, pinned, metric = "") {
  const content = tooltipContent(diff, cell, metric);
  return `${content.title}. ${content.lines.join(". ")}${pinned ? " (pinned)" : ""}`;
}
function alignmentHeadline(diff) {
  const depth = diff.depthA === diff.depthB ? "" : `Layers aligned by relative depth: a has ${diff.depthA} layers, b has ${diff.depthB}. `;
  return `${depth}${diff.meta.alignment_note ?? ""}`;
}

// src/shared/theme.js
var THEME_PROPERTIES = Object.freeze({
  fg: "--murano-fg",
  muted: "--murano-muted",
  bg: "--murano-bg",
  surface: "--murano-surface",
  border: "--murano-border",
  accent: "--murano-accent",
  focus: "--murano-focus",
  grid: "--murano-grid",
  stripBg: "--murano-strip-bg",
  hatch: "--murano-hatch",
  shadow: "--murano-shadow",
  generated: "--murano-generated",
  generatedBg: "--murano-generated-bg",
  warn: "--murano-warn",
  error: "--murano-error"
});
var SERIES_COLOURS = Object.freeze([0, 1, 2, 3, 4, 5].map((k) => `var(--murano-series-${k})`));
var SERIES_DASHES = Object.freeze(["", "6 3", "1.5 3", "9 3 1.5 3"]);
var FALLBACK_THEME = Object.freeze({
  fg: "rgb(31, 35, 40)",
  muted: "rgb(89, 99, 110)",
  bg: "rgb(255, 255, 255)",
  surface: "rgb(246, 248, 250)",
  border: "rgb(209, 217, 224)",
  accent: "rgb(9, 105, 218)",
  focus: "rgb(9, 105, 218)",
  grid: "rgb(255, 255, 255)",
  stripBg: "rgba(127, 127, 127, 0.09)",
  hatch: "rgb(89, 99, 110)",
  shadow: "rgba(31, 35, 40, 0.16)",
  generated: "rgb(213, 94, 0)",
  generatedBg: "rgba(213, 94, 0, 0.13)",
  warn: "rgb(154, 103, 0)",
  error: "rgb(207, 34, 46)",
  font: "system-ui, sans-serif",
  mono: "monospace",
  live: false
});
function isDarkTheme(theme) {
  const parts = (theme.bg.match(/[\d.]+/g) || []).map(Number);
  if (parts.length < 3 || parts[3] === 0) return false;
  const [r, g, b] = parts;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 100;
}
function readTheme(el) {
  const doc = el.ownerDocument;
  const win = doc && doc.defaultView;
  if (!win || !el.isConnected) return { ...FALLBACK_THEME };
  const probe = doc.createElement("span");
  probe.setAttribute("aria-hidden", "true");
  probe.style.display = "none";
  const spans = [];
  for (const [key, property] of Object.entries(THEME_PROPERTIES)) {
    const span = doc.createElement("span");
    span.style.setProperty("forced-color-adjust", "none");
    span.style.color = `var(${property})`;
    probe.append(span);
    spans.push([
      /** @type {keyof ThemeColours} */
      key,
      span
    ]);
  }
  el.append(probe);
  try {
    const style = win.getComputedStyle(el);
    const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    const theme = { ...FALLBACK_THEME, font: read("--murano-font", FALLBACK_THEME.font), mono: read("--murano-mono", FALLBACK_THEME.mono), live: true };
    for (const [key, span] of spans) {
      if (!style.getPropertyValue(THEME_PROPERTIES[key]).trim()) {
        theme.live = false;
        continue;
      }
      theme[key] = win.getComputedStyle(span).color || theme[key];
    }
    return theme;
  } finally {
    probe.remove();
  }
}
function watchTheme(onChange) {
  const abort = new AbortController();
  let observer;
  if (typeof MutationObserver !== "undefined" && typeof document !== "undefined") {
    observer = new MutationObserver(() => onChange());
    const options = { attributes: true, attributeFilter: ["class", "data-jp-theme-light", "data-jp-theme-name", "theme", "style"] };
    if (document.body) observer.observe(document.body, options);
    observer.observe(document.documentElement, options);
  }
  if (typeof matchMedia === "function") {
    for (const query of ["(prefers-color-scheme: dark)", "(forced-colors: active)", "(prefers-contrast: more)"]) {
      const list = matchMedia(query);
      if (typeof list.addEventListener === "function") list.addEventListener("change", () => onChange(), { signal: abort.signal });
    }
  }
  return () => {
    abort.abort();
    observer?.disconnect();
  };
}

// src/shared/dom.js
function fill(element, attrs, text) {
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (text !== void 0) element.textContent = text;
  return element;
}
function h(tag, className, attrs = {}, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  return fill(element, attrs, text);
}

// src/shared/debug.js
var DEBUG_HOOKS = Object.freeze({ heatmap: "__muranoDebug", diff: "__muranoDiffDebug", dataset: "__muranoDataset" });
function installDebug(el, widget, api) {
  const name = DEBUG_HOOKS[widget];
  const host = (
    /** @type {Record<string, unknown>} */
    /** @type {unknown} */
    el
  );
  host[name] = api;
  return () => {
    if (host[name] === api) delete host[name];
  };
}

// src/shared/hatch.js
function hatchPattern(ctx, colour) {
  const tile = document.createElement("canvas");
  tile.width = tile.height = 6;
  const t = tile.getContext("2d");
  if (!t) return null;
  t.strokeStyle = colour;
  t.lineWidth = 1;
  t.beginPath();
  t.moveTo(0, 6);
  t.lineTo(6, 0);
  t.stroke();
  return ctx.createPattern(tile, "repeat");
}

// src/shared/grid_events.js
function onGridKey(grid, event) {
  if (!grid.ready || event.altKey || event.ctrlKey || event.metaKey) return;
  const key = event.key;
  const pinKey = key === "Enter" || key === " ";
  const navigation = moveFocus({ layerIndex: 0, position: 0 }, key, 1, 1) !== null;
  if (!pinKey && !navigation && !(key === "Escape" && grid.pinned)) return;
  event.preventDefault();
  event.stopPropagation();
  if (key === "Escape") {
    grid.unpin();
    return;
  }
  if (!grid.focused) grid.showKeyboardFocus();
  const focus = grid.focus;
  if (!focus) return;
  if (pinKey) grid.togglePin(focus);
  else {
    const next = grid.move(focus, key);
    if (next) grid.setFocus(next);
  }
}
function bindGrid(target, grid, signal) {
  const on = (type, fn) => target.addEventListener(type, fn, { signal });
  on("pointermove", (event) => grid.setHover(grid.cellAt(event)));
  on("pointerleave", () => grid.setHover(null));
  on("click", (event) => {
    const cell = grid.cellAt(event);
    if (!cell) return;
    grid.focus = cell;
    grid.togglePin(cell);
  });
  on("pointerdown", () => {
    grid.focused = false;
  });
  on("keydown", (event) => onGridKey(grid, event));
  on("focus", () => {
    if (!grid.ready) return;
    let keyboard = true;
    try {
      keyboard = target.matches(":focus-visible");
    } catch {
    }
    if (keyboard) grid.showKeyboardFocus();
  });
  on("blur", () => {
    grid.focused = false;
    grid.blurred();
  });
}

// src/shared/keys.js
var NAVIGATION = /* @__PURE__ */ new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);
var PRESS = /* @__PURE__ */ new Set(["Enter", " "]);
function controlKind(target) {
  if (!target || typeof target.tagName !== "string") return null;
  const tag = target.tagName.toLowerCase();
  const type = String(target.type ?? "").toLowerCase();
  if (tag === "input") {
    if (type === "range") return "range";
    if (type === "checkbox" || type === "radio" || type === "button" || type === "submit" || type === "reset") return "button";
    return "text";
  }
  if (tag === "textarea" || target.isContentEditable === true) return "text";
  if (tag === "select") return "select";
  if (tag === "button" || tag === "summary") return "button";
  const tabindex = typeof target.getAttribute === "function" ? target.getAttribute("tabindex") : null;
  if (tabindex !== null && tabindex !== "-1") return "composite";
  return null;
}
function keepsKey(kind, event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return false;
  const key = event.key;
  if (key === "Enter" && event.shiftKey) return false;
  switch (kind) {
    case "range":
      return NAVIGATION.has(key);
    case "select":
      return NAVIGATION.has(key) || PRESS.has(key) || key.length === 1;
    case "button":
      return PRESS.has(key);
    case "text":
      return key !== "Escape" && key !== "Tab";
    case "composite":
      return NAVIGATION.has(key) || PRESS.has(key);
    default:
      return false;
  }
}
function keepControlKeys(root, signal) {
  root.addEventListener(
    "keydown",
    (event) => {
      const kind = controlKind(event.target);
      if (kind && keepsKey(kind, event)) event.stopPropagation();
    },
    { signal }
  );
}

// src/shared/store.js
function createStore(state) {
  const subscribers = /* @__PURE__ */ new Set();
  return {
    state,
    set(patch) {
      const changed = [];
      for (
        const key of
        /** @type {(keyof S)[]} */
        Object.keys(patch)
      ) {
        const value = patch[key];
        if (value === void 0 || Object.is(state[key], value)) continue;
        state[key] = /** @type {S[keyof S]} */
        value;
        changed.push(key);
      }
      if (changed.length) for (const fn of [...subscribers]) fn(changed, state);
      return changed;
    },
    subscribe(fn) {
      subscribers.add(fn);
      return () => {
        subscribers.delete(fn);
      };
    }
  };
}

// src/shared/tooltip.js
var TOOLTIP_GAP = 10;
function overlapArea(a, b) {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h2 = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  return w > 0 && h2 > 0 ? w * h2 : 0;
}
function placeTooltip(anchor, size, bounds, margin = TOOLTIP_GAP, avoid = []) {
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  const right = bounds.x + bounds.w;
  const bottom = bounds.y + bounds.h;
  const gap = 4;
  const rect = (left, top) => ({ x: left, y: top, w: size.w, h: size.h });
  const score = (c) => {
    const r = rect(c.left, c.top);
    return avoid.reduce((sum, o) => sum + overlapArea(r, o), 0) * 1e6 + overlapArea(r, anchor);
  };
  const fitsV = (top) => top >= bounds.y - 0.5 && top + size.h <= bottom + 0.5;
  const candidates = [];
  const below = anchor.y + anchor.h;
  const above = anchor.y - size.h;
  const shifted = clamp(below, bounds.y, Math.max(bounds.y, bottom - size.h));
  for (const left of [anchor.x + anchor.w + margin, anchor.x - size.w - margin]) {
    if (left < bounds.x - 0.5 || left + size.w > right + 0.5) continue;
    const tops = [below, above, shifted];
    for (const o of avoid) tops.push(o.y - size.h - gap, o.y + o.h + gap);
    for (const top of tops) if (fitsV(top) || top === shifted) candidates.push({ left, top });
  }
  const middle = clamp(anchor.x + anchor.w / 2 - size.w / 2, bounds.x, right - size.w);
  for (const top of [below + margin, anchor.y - size.h - margin]) {
    if (fitsV(top)) candidates.push({ left: middle, top });
  }
  let best = candidates.find((c) => score(c) === 0);
  if (!best) {
    const centred = clamp(anchor.y + anchor.h / 2 - size.h / 2, bounds.y, bottom - size.h);
    const lefts = [middle, bounds.x, right - size.w].map((x) => clamp(x, bounds.x, right - size.w));
    const tops = [centred, bounds.y, bottom - size.h].map((y) => clamp(y, bounds.y, Math.max(bounds.y, bottom - size.h)));
    for (const left of lefts) for (const top of tops) candidates.push({ left, top });
    best = candidates.reduce((a, b) => score(b) < score(a) ? b : a);
  }
  return { left: Math.round(Math.max(bounds.x, best.left)), top: Math.round(Math.max(bounds.y, best.top)) };
}
function visibleBounds(own, clip, size) {
  const x = Math.max(own.x, clip.x);
  const y = Math.max(own.y, clip.y);
  const w = Math.min(own.x + own.w, clip.x + clip.w) - x;
  const h2 = Math.min(own.y + own.h, clip.y + clip.h) - y;
  return {
    ...w >= size.w ? { x, w } : { x: own.x, w: own.w },
    ...h2 >= size.h ? { y, h: h2 } : { y: own.y, h: own.h }
  };
}
function tooltipBounds(root) {
  return { x: 4, y: 4, w: root.clientWidth - 8, h: root.clientHeight - 8 };
}
function placeInRoot(tip, root, anchor, obstacles = [], bounds = tooltipBounds(root)) {
  const rootBox = root.getBoundingClientRect();
  const local = (r) => ({ x: r.x - rootBox.left - root.clientLeft, y: r.y - rootBox.top - root.clientTop, w: r.w, h: r.h });
  const size = { w: tip.offsetWidth, h: tip.offsetHeight };
  const visible = visibleBounds(bounds, local(screenClip(root)), size);
  const { left, top } = placeTooltip(local(anchor), size, visible, TOOLTIP_GAP, obstacles.map(local));
  tip.style.left = `${left}px`;
  tip.style.top = `${top}px`;
}
function screenClip(element) {
  const view = element.ownerDocument.documentElement;
  let x0 = 0;
  let y0 = 0;
  let x1 = view.clientWidth || Infinity;
  let y1 = view.clientHeight || Infinity;
  for (let el = element.parentElement; el && el !== view; el = el.parentElement) {
    const style = getComputedStyle(el);
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const r = el.getBoundingClientRect();
    x0 = Math.max(x0, r.left);
    y0 = Math.max(y0, r.top);
    x1 = Math.min(x1, r.right);
    y1 = Math.min(y1, r.bottom);
  }
  return { x: x0, y: y0, w: Math.max(0, x1 - x0), h: Math.max(0, y1 - y0) };
}

// src/shared/layout.js
var GEOMETRY = Object.freeze({
  axisH: 16,
  // position numbers above the cells
  gap: 6,
  // between the cells and the token strips
  stripH: 22,
  // the input-token strip and the chosen layer's predictions strip
  bottomPad: 4,
  rightPad: 8,
  minRowH: 5,
  maxRowH: 22,
  minCellW: 34,
  maxCellW: 120,
  textMinRowH: 13
  // cell text is drawn only in rows at least this tall
});
function chooseCellWidth({ maxChars, charW, n, available }) {
  const want = Math.min(GEOMETRY.maxCellW, Math.max(GEOMETRY.minCellW, Math.ceil(maxChars * charW + 12)));
  const fill2 = n > 0 ? Math.floor(available / n) : want;
  if (fill2 > want) return Math.min(GEOMETRY.maxCellW, fill2);
  return want;
}
function chooseRowHeight(nLayers, maxHeight = 460) {
  return Math.max(GEOMETRY.minRowH, Math.min(GEOMETRY.maxRowH, Math.floor(maxHeight / Math.max(1, nLayers))));
}
function computeLayout({
  nLayers,
  nPositions,
  width,
  labelW,
  charW,
  maxChars,
  maxHeight = 460,
  columns = null,
  cellW: fixedCellW,
  rowH: fixedRowH,
  axisH = GEOMETRY.axisH,
  gap = GEOMETRY.gap,
  stripH = GEOMETRY.stripH,
  strips = 2,
  bottomPad = GEOMETRY.bottomPad,
  rightPad = GEOMETRY.rightPad
}) {
  const g = GEOMETRY;
  const viewW = Math.max(labelW + g.minCellW, Math.floor(width));
  const rowH = fixedRowH ?? chooseRowHeight(nLayers, maxHeight);
  const cellW = fixedCellW ?? chooseCellWidth({ maxChars, charW, n: nPositions, available: viewW - labelW - rightPad });
  const heatY = axisH;
  const heatH = nLayers * rowH;
  const inputY = heatY + heatH + gap;
  const predY = inputY + stripH;
  const height = inputY + strips * stripH + bottomPad;
  const contentW = labelW + nPositions * cellW + rightPad;
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
    stripH,
    contentW,
    maxScroll: Math.max(0, contentW - viewW),
    charW,
    cellChars: Math.max(0, Math.floor((cellW - 6) / charW)),
    showCellText: rowH >= g.textMinRowH && cellW - 6 >= 2 * charW,
    columns
  };
}
function clampScroll(layout, scrollLeft) {
  return Math.min(layout.maxScroll, Math.max(0, Math.round(scrollLeft) || 0));
}
function visibleColumns(layout, scrollLeft) {
  const viewCells = layout.width - layout.labelW;
  const first = Math.max(0, Math.floor(scrollLeft / layout.cellW));
  const last = Math.min(layout.nPositions, Math.ceil((scrollLeft + viewCells) / layout.cellW));
  return [first, Math.max(first, last)];
}
function rowOfLayer(layout, layerIndex) {
  return layout.nLayers - 1 - layerIndex;
}
function columnX(layout, position, scrollLeft) {
  return layout.labelW + position * layout.cellW - scrollLeft;
}
function cellRect(layout, layerIndex, position, scrollLeft) {
  return {
    x: columnX(layout, position, scrollLeft),
    y: layout.heatY + rowOfLayer(layout, layerIndex) * layout.rowH,
    w: layout.cellW,
    h: layout.rowH
  };
}
function hitTest(layout, x, y, scrollLeft, highlightedLayer) {
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
function revealColumn(layout, scrollLeft, position) {
  const left = position * layout.cellW;
  const viewCells = layout.width - layout.labelW;
  let next = scrollLeft;
  if (left < scrollLeft) next = left;
  else if (left + layout.cellW > scrollLeft + viewCells) next = left + layout.cellW - viewCells;
  return clampScroll(layout, next);
}

// src/diff/view.js
var CHANGE_UNITS = Object.freeze({ delta: " (percentage points)", probability: " (percentage points)", rank: " (ranks, log scale)" });
var DIFF_GEOMETRY = Object.freeze({ rowH: 22, axisH: 0, gap: 2, stripH: 20, bottomPad: 2, rightPad: 0 });
function shownMetric(diff, value) {
  const spec = diffMetric(diff, String(value));
  return spec && spec.available ? spec.name : (diff.metrics.find((m) => m.available) || diff.metrics[0]).name;
}
function tokenRule(diff) {
  const rule = diff.meta.token_rule;
  return typeof rule === "string" && rule ? `The chosen token: the ${rule}. ` : "";
}
var DiffView = class {
  /**
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   * @param {DiffOptions} [options]
   */
  constructor(model, el, options = {}) {
    this.model = model;
    this.el = el;
    this.options = options;
    this.diff = null;
    this.store = createStore(
      /** @type {DiffState} */
      { prompt: 0, metric: "delta_prob", selected: null, hover: null, focus: null, focused: false }
    );
    this.unsubscribe = this.store.subscribe((changed) => this.follow(changed));
    this.revealPending = true;
    this.frame = 0;
    this.cellW = 48;
    this.labelW = 60;
    this.charW = 6.6;
    this.theme = null;
    this.root = h("div", options.embedded ? "murano-diff murano-diff-embedded" : "murano-diff");
    this.title = h("div", "murano-diff-title");
    this.note = h("div", "murano-diff-note");
    this.error = h("div", "murano-diff-error", { role: "alert" });
    this.error.hidden = true;
    const controls = h("div", "murano-diff-controls");
    this.promptLabel = h("label", "murano-diff-prompt");
    this.promptInput = h("input", "murano-diff-prompt-input", { type: "range", min: "0", step: "1", "aria-label": "Prompt" });
    this.promptText = h("span", "murano-diff-prompt-text");
    this.promptLabel.append("Prompt ", this.promptInput, this.promptText);
    const metricLabel = h("label", "murano-diff-metric", {}, "Colour ");
    this.metricSelect = h("select", "murano-diff-metric-select", { "aria-label": "Colour by" });
    metricLabel.append(this.metricSelect);
    controls.append(this.promptLabel, metricLabel);
    this.prompts = h("div", "murano-diff-prompts");
    this.scroller = h("div", "murano-diff-scroller");
    this.track = h("div", "murano-diff-track");
    this.canvas = h("canvas", "murano-diff-canvas", { tabindex: "0", role: "grid", "aria-label": "Difference heatmap: arrows move, Enter pins" });
    this.track.append(this.canvas);
    this.scroller.append(this.track);
    this.legend = h("div", "murano-diff-legend");
    this.tooltip = h("div", "murano-diff-tooltip", { role: "tooltip" });
    this.tooltip.hidden = true;
    this.readout = h("div", "murano-diff-readout", { "aria-live": "polite" });
    if (options.embedded) {
      this.title.hidden = true;
      this.note.hidden = true;
      this.prompts.hidden = true;
    }
    this.root.append(this.title, this.note, this.error, controls, this.prompts, this.scroller, this.legend, this.tooltip, this.readout);
    el.append(this.root);
    this.abort = new AbortController();
    this.bind();
    this.reload();
    this.removeDebug = installDebug(el, "diff", this.debugApi());
  }
  destroy() {
    this.unsubscribe();
    this.abort.abort();
    for (const [event, fn] of this.handlers) this.model.off(event, fn);
    this.resize?.disconnect();
    this.stopWatchingTheme?.();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.root.remove();
    this.removeDebug();
  }
  reload() {
    try {
      this.diff = decodeDiff(this.model.get("_meta"), this.model.get("_sections"));
    } catch (error) {
      this.diff = null;
      this.error.textContent = `Cannot show this lens diff: ${error instanceof Error ? error.message : String(error)}`;
      this.error.hidden = false;
      return;
    }
    this.error.hidden = true;
    const diff = this.diff;
    this.title.textContent = `a: ${diff.labels[0]}   vs   b: ${diff.labels[1]}`;
    this.note.textContent = alignmentHeadline(diff);
    this.metricSelect.replaceChildren(
      ...diff.metrics.map((m) => {
        const option = h("option", "", { value: m.name }, m.available ? m.label : `${m.label} (unavailable)`);
        option.disabled = !m.available;
        return option;
      })
    );
    this.promptInput.max = String(diff.P - 1);
    this.promptLabel.hidden = diff.P < 2;
    const changed = this.store.set({
      prompt: clampIndex(this.model.get("prompt"), diff.P),
      // A state that names no available metric (a hand-made page) shows the first available one.
      metric: shownMetric(diff, this.model.get("metric") || "delta_prob"),
      selected: this.model.get("selected") ?? null
    });
    if (!changed.includes("prompt")) this.showPrompt();
    if (!changed.includes("metric")) this.showMetric();
  }
  // ---- State ---------------------------------------------------------------------------------
  /**
   * What follows each state key: the prompt's lines and layout, the metric's legend and colours,
   * the tooltip and the drawing (the pinned cell), the tooltip (the hovered cell). The focus cell
   * is shown by `setFocus`, once it has scrolled into view.
   * @param {(keyof DiffState)[]} changed
   */
  follow(changed) {
    if (changed.includes("prompt")) this.showPrompt();
    if (changed.includes("metric")) this.showMetric();
    if (changed.includes("selected")) {
      this.updateTooltip();
      this.requestDraw();
    } else if (changed.includes("hover")) this.updateTooltip();
  }
  get prompt() {
    return this.store.state.prompt;
  }
  get metric() {
    return this.store.state.metric;
  }
  get selected() {
    return this.store.state.selected;
  }
  get hover() {
    return this.store.state.hover;
  }
  set hover(cell) {
    this.store.set({ hover: cell });
  }
  get focus() {
    return this.store.state.focus;
  }
  set focus(cell) {
    this.store.set({ focus: cell });
  }
  get focused() {
    return this.store.state.focused;
  }
  set focused(value) {
    this.store.set({ focused: value });
  }
  /**
   * @param {string} name
   * @param {unknown} value
   */
  send(name, value) {
    this.model.set(name, value);
    this.model.save_changes();
  }
  /**
   * @param {unknown} value
   * @param {boolean} sync
   */
  setPrompt(value, sync) {
    if (!this.diff) return;
    const prompt = clampIndex(value, this.diff.P);
    if (sync) this.send("prompt", prompt);
    if (prompt === this.prompt) return;
    this.revealPending = true;
    this.store.set({ prompt, hover: null, focus: this.focus && this.clampCell(this.focus, prompt) });
  }
  /**
   * @param {unknown} value
   * @param {boolean} sync
   */
  setMetric(value, sync) {
    const diff = this.diff;
    if (!diff) return;
    const metric = shownMetric(diff, value);
    if (sync) this.send("metric", metric);
    this.metricSelect.value = metric;
    this.store.set({ metric });
  }
  /**
   * @param {Selected | null} value
   * @param {boolean} sync
   */
  setSelected(value, sync) {
    this.store.set({ selected: value });
    if (sync) this.send("selected", value);
  }
  /**
   * @param {Cell} cell
   * @param {number} [prompt] (default the one shown)
   */
  clampCell(cell, prompt = this.prompt) {
    const diff = (
      /** @type {Diff} */
      this.diff
    );
    return { layerIndex: clampIndex(cell.layerIndex, diff.L), position: clampIndex(cell.position, diff.lengths[prompt]) };
  }
  /** @param {Cell} cell */
  isPinned(cell) {
    const s = this.selected;
    return Boolean(s && s.prompt === this.prompt && s.layer_index === cell.layerIndex && s.position === cell.position);
  }
  /** @param {Cell} cell */
  togglePin(cell) {
    const next = this.isPinned(cell) ? null : { prompt: this.prompt, layer_index: cell.layerIndex, position: cell.position };
    this.setSelected(next, true);
    if (this.diff) this.readout.textContent = next ? readoutLine(this.diff, diffCell(this.diff, this.prompt, cell.layerIndex, cell.position), true, this.metric) : "Unpinned.";
  }
  /** @param {Cell} cell */
  setFocus(cell) {
    this.focus = cell;
    if (this.diff) {
      const layout = this.layout();
      const scroll = this.scroller.scrollLeft;
      const next = revealColumn(layout, scroll, cell.position);
      if (next !== clampScroll(layout, scroll)) this.scroller.scrollLeft = next;
    }
    if (this.diff) this.readout.textContent = readoutLine(this.diff, diffCell(this.diff, this.prompt, cell.layerIndex, cell.position), this.isPinned(cell), this.metric);
    this.updateTooltip();
    this.requestDraw();
  }
  /** @param {Cell | null} cell the cell under the pointer, or null */
  setHover(cell) {
    const old = this.hover;
    if (old === cell || old && cell && old.layerIndex === cell.layerIndex && old.position === cell.position) return;
    this.store.set({ hover: cell });
  }
  // ---- Showing -------------------------------------------------------------------------------
  showPrompt() {
    const diff = this.diff;
    if (!diff) return;
    this.promptInput.value = String(this.prompt);
    this.promptText.textContent = indexReadout(this.prompt, diff.P);
    const a = diff.meta.prompts_a?.[this.prompt] ?? "";
    const b = diff.meta.prompts_b?.[this.prompt] ?? "";
    const lineA = h("div", "murano-diff-prompt-line", {}, `a: ${a}`);
    const lineB = h("div", "murano-diff-prompt-line", {}, a === b ? "b: the same prompt" : `b: ${b}`);
    this.prompts.replaceChildren(lineA, lineB);
    this.relayout();
  }
  showMetric() {
    const diff = this.diff;
    if (!diff) return;
    this.metricSelect.value = this.metric;
    const spec = diffMetric(diff, this.metric);
    this.legend.replaceChildren();
    if (spec) {
      const palette = diffPalette(isDarkTheme(this.readTheme()));
      const bar = h("span", "murano-diff-legend-bar");
      const max = spec.domain[1];
      let stops;
      let ticks;
      if (spec.scale === "diverging") {
        stops = [...palette.diverging];
        ticks = [formatChange(spec.unit, -max, true), "0", formatChange(spec.unit, max, true)];
      } else if (spec.scale === "sequential") {
        stops = [...palette.kl];
        ticks = ["0", formatBits(max / 2, true), formatBits(max, true)];
      } else {
        stops = [`rgb(${palette.same.join(",")}) 0 50%`, `rgb(${palette.differs.join(",")}) 50% 100%`];
        ticks = ["same", "", "differs"];
      }
      bar.style.background = `linear-gradient(to right, ${stops.join(", ")})`;
      const tickRow = h("span", "murano-diff-legend-ticks");
      for (const tick of ticks) tickRow.append(h("span", "", {}, tick));
      const unit = spec.scale === "diverging" ? CHANGE_UNITS[spec.unit] ?? "" : "";
      const missing = h("span", "murano-diff-legend-missing", { title: "no partner cell, or no value" }, "missing");
      this.legend.append(h("span", "murano-diff-legend-label", {}, `${spec.label}${unit}`), bar, tickRow, missing, h("span", "murano-diff-legend-text", {}, spec.name === "delta_prob" ? `${tokenRule(diff)}${spec.description}` : spec.description));
    }
    this.updateTooltip();
    this.requestDraw();
  }
  /**
   * The shared palette (theme.js) as this widget's root sees it; kept until the host's theme
   * changes (a reading taken before the widget is in the page is used once, not kept).
   */
  readTheme() {
    if (this.theme) return this.theme;
    const theme = readTheme(this.root);
    if (theme.live) this.theme = theme;
    return theme;
  }
  /** The host's theme changed: read it again and redraw. */
  themeChanged() {
    this.theme = null;
    this.showMetric();
    this.relayout();
  }
  relayout() {
    const diff = this.diff;
    if (!diff) return;
    const ctx = this.canvas.getContext("2d");
    const theme = this.readTheme();
    let charW = 6.6;
    if (ctx) {
      ctx.font = `11px ${theme.mono}`;
      charW = ctx.measureText("M").width || charW;
      ctx.font = `600 11px ${theme.font}`;
      const widest = Math.max(...diff.layers.map((l, i) => ctx.measureText(this.rowLabel(l, diff.bLayers[i])).width), ctx.measureText(this.inputLabel("a")).width);
      this.labelW = Math.ceil(widest) + 14;
    }
    const n = diff.lengths[this.prompt];
    let chars = 4;
    for (let j = 0; j < n && chars < 10; j++) {
      const cell = diffCell(diff, this.prompt, diff.L - 1, j);
      chars = Math.max(chars, charCount(cell.inputA), cell.topB[0] ? charCount(cell.topB[0].token) : 0);
    }
    this.charW = charW;
    this.cellW = Math.ceil(Math.min(10, chars) * charW + 10);
    const host = this.options.columns ? this.options.columns() : null;
    if (host && host.cellW > 0) {
      this.cellW = Math.max(this.cellW, host.cellW);
      const reach = Math.round(host.left - this.scroller.getBoundingClientRect().left);
      if (this.scroller.isConnected && reach >= this.labelW && reach < this.labelW + 200) this.labelW = reach;
    }
    this.track.style.width = `${this.layout().contentW}px`;
    this.draw();
  }
  /**
   * Opens a prompt where its prediction is, as the heatmap does: its last position (or its
   * pinned cell) scrolled into view, once the scroller is in the page.
   */
  revealPromptEnd() {
    const diff = this.diff;
    if (!diff || !this.scroller.isConnected || this.scroller.clientWidth === 0) return;
    const sel = this.selected;
    const position = sel && sel.prompt === this.prompt ? sel.position : diff.lengths[this.prompt] - 1;
    this.scroller.scrollLeft = revealColumn(this.layout(), 0, Math.max(0, position));
    this.revealPending = false;
  }
  /**
   * The label of a token row: "a input" (and "b input"); inside the heatmap, where a patch
   * compares one prompt with itself, "input".
   * @param {"a" | "b"} side
   */
  inputLabel(side) {
    return this.options.embedded && this.diff && this.diff.meta.align === "tokens" ? "input" : `${side} input`;
  }
  /**
   * @param {number} layerA
   * @param {number} layerB
   */
  rowLabel(layerA, layerB) {
    const diff = this.diff;
    return diff && diff.depthA !== diff.depthB ? `L${layerA}↔${layerB}` : `L${layerA}`;
  }
  /**
   * The grid's geometry now (`../layout.js`, as the heatmap's): the column width and label column
   * chosen by `relayout`, the scroller's width.
   * @returns {Layout}
   */
  layout() {
    const diff = (
      /** @type {Diff} */
      this.diff
    );
    return computeLayout({
      ...DIFF_GEOMETRY,
      nLayers: diff.L,
      nPositions: diff.lengths[this.prompt],
      width: Math.max(100, this.scroller.clientWidth || 800),
      labelW: this.labelW,
      charW: this.charW,
      maxChars: 0,
      cellW: this.cellW,
      strips: diff.meta.align === "tokens" ? 1 : 2
    });
  }
  requestDraw() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }
  draw() {
    const diff = this.diff;
    if (!diff) return;
    if (this.revealPending) this.revealPromptEnd();
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    const theme = this.readTheme();
    const layout = this.layout();
    const width = Math.max(100, this.scroller.clientWidth || 800);
    const height = layout.height;
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    this.track.style.height = `${height}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const scroll = this.scroller.scrollLeft;
    const W = layout.cellW;
    const [first, last] = visibleColumns(layout, scroll);
    const hatch = hatchPattern(ctx, theme.hatch);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.font = `11px ${theme.mono}`;
    const maxChars = Math.max(1, Math.floor((W - 6) / (ctx.measureText("M").width || 6.6)));
    const dark = isDarkTheme(theme);
    for (let i = 0; i < diff.L; i++) {
      for (let j = first; j < last; j++) {
        const { x, y, w, h: cellH } = cellRect(layout, i, j, scroll);
        const rgb = cellColour(diff, this.metric, diffIndex(diff, i, this.prompt, j), dark);
        if (!rgb) {
          ctx.fillStyle = hatch || theme.hatch;
          ctx.globalAlpha = hatch ? 1 : 0.3;
          ctx.fillRect(x, y, w - 1, cellH - 1);
          ctx.globalAlpha = 1;
          continue;
        }
        ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
        ctx.fillRect(x, y, w - 1, cellH - 1);
        const label = cellLabel(diffCell(diff, this.prompt, i, j), this.metric);
        if (label) {
          ctx.fillStyle = textColourOn(rgb);
          ctx.fillText(isolateLtr(truncateText(label, maxChars)), x + (w - 1) / 2, y + cellH / 2);
        }
      }
    }
    const aMid = layout.inputY + layout.stripH / 2;
    const bMid = layout.predY + layout.stripH / 2;
    for (let j = first; j < last; j++) {
      const x = columnX(layout, j, scroll) + (W - 1) / 2;
      const cell = diffCell(diff, this.prompt, 0, j);
      ctx.fillStyle = theme.fg;
      ctx.fillText(isolateLtr(truncateText(cell.inputA, maxChars)), x, aMid);
      if (diff.meta.align !== "tokens") {
        ctx.fillStyle = cell.inputB === null ? theme.muted : cell.inputB === cell.inputA ? theme.muted : theme.fg;
        ctx.fillText(isolateLtr(truncateText(cell.inputB ?? "–", maxChars)), x, bMid);
      }
    }
    const marks = [[this.focused ? this.focus : null, false]];
    if (this.selected && this.selected.prompt === this.prompt) marks.push([{ layerIndex: this.selected.layer_index, position: this.selected.position }, true]);
    for (const [cell, pinned] of marks) {
      if (!cell) continue;
      ctx.strokeStyle = theme.accent;
      ctx.lineWidth = 2;
      ctx.setLineDash(pinned ? [4, 2] : []);
      const r = cellRect(layout, cell.layerIndex, cell.position, scroll);
      ctx.strokeRect(r.x + 1, r.y + 1, r.w - 3, r.h - 3);
      ctx.setLineDash([]);
    }
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, layout.labelW, height);
    ctx.textAlign = "right";
    ctx.font = `600 11px ${theme.font}`;
    ctx.fillStyle = theme.fg;
    for (let i = 0; i < diff.L; i++) {
      const r = cellRect(layout, i, 0, 0);
      ctx.fillText(this.rowLabel(diff.layers[i], diff.bLayers[i]), layout.labelW - 6, r.y + r.h / 2);
    }
    ctx.fillStyle = theme.muted;
    ctx.fillText(this.inputLabel("a"), layout.labelW - 6, aMid);
    if (diff.meta.align !== "tokens") ctx.fillText(this.inputLabel("b"), layout.labelW - 6, bMid);
  }
  // ---- Tooltip -------------------------------------------------------------------------------
  updateTooltip() {
    const diff = this.diff;
    const cell = this.hover || (this.focused ? this.focus : null);
    if (!diff || !cell) {
      this.tooltip.hidden = true;
      return;
    }
    const content = tooltipContent(diff, diffCell(diff, this.prompt, cell.layerIndex, cell.position), this.metric);
    const table = h("table", "murano-diff-topk");
    const head = h("tr", "");
    for (const column of content.columns) head.append(h("th", "", { colspan: "2" }, column.label));
    table.append(head);
    const rows = Math.max(content.columns[0].rows.length, content.columns[1].rows.length);
    for (let r = 0; r < rows; r++) {
      const tr = h("tr", "");
      for (const column of content.columns) {
        const item = column.rows[r];
        tr.append(h("td", "murano-diff-token", {}, item ? item.token : ""), h("td", "murano-diff-prob", {}, item ? item.prob : ""));
      }
      table.append(tr);
    }
    if (!rows) {
      const tr = h("tr", "");
      tr.append(h("td", "", { colspan: "2" }, "–"), h("td", "", { colspan: "2" }, "no partner cell"));
      table.append(tr);
    }
    this.tooltip.replaceChildren(
      h("div", "murano-diff-tooltip-title", {}, content.title + (this.isPinned(cell) ? " · pinned" : "")),
      ...content.lines.map((line) => h("div", "murano-diff-tooltip-line", {}, line)),
      table
    );
    this.tooltip.hidden = false;
    placeInRoot(this.tooltip, this.root, this.cellClientRect(cell.layerIndex, cell.position));
  }
  /**
   * A cell's box in client coordinates: its `cellRect`, less the 1 px gap between cells.
   * @param {number} layerIndex
   * @param {number} position
   */
  cellClientRect(layerIndex, position) {
    const box = this.canvas.getBoundingClientRect();
    const r = cellRect(this.layout(), layerIndex, position, this.scroller.scrollLeft);
    return { x: box.left + r.x, y: box.top + r.y, w: r.w - 1, h: r.h - 1 };
  }
  /**
   * The cell under a pointer, or null.
   * @param {MouseEvent} event
   * @returns {Cell | null}
   */
  cellAt(event) {
    const diff = this.diff;
    if (!diff) return null;
    const box = this.canvas.getBoundingClientRect();
    const hit = hitTest(this.layout(), event.clientX - box.left, event.clientY - box.top, this.scroller.scrollLeft, 0);
    return hit && hit.area === "cells" ? { layerIndex: hit.layerIndex, position: hit.position } : null;
  }
  // ---- Events --------------------------------------------------------------------------------
  bind() {
    const signal = this.abort.signal;
    const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
    on(this.promptInput, "input", () => this.setPrompt(Number(this.promptInput.value), true));
    on(this.metricSelect, "change", () => this.setMetric(this.metricSelect.value, true));
    on(this.scroller, "scroll", () => {
      this.hover = null;
      this.updateTooltip();
      this.requestDraw();
    });
    bindGrid(this.canvas, this, signal);
    keepControlKeys(this.root, signal);
    this.handlers = [
      ["change:prompt", () => this.setPrompt(this.model.get("prompt"), false)],
      ["change:metric", () => this.setMetric(this.model.get("metric"), false)],
      ["change:selected", () => this.setSelected(this.model.get("selected") ?? null, false)],
      ["change:_meta", () => this.reload()],
      ["change:_sections", () => this.reload()]
    ];
    for (const [event, fn] of this.handlers) this.model.on(event, fn);
    if (typeof ResizeObserver !== "undefined") {
      this.resize = new ResizeObserver(() => this.options.columns ? this.relayout() : this.requestDraw());
      this.resize.observe(this.scroller);
    }
    this.stopWatchingTheme = watchTheme(() => this.themeChanged());
  }
  showKeyboardFocus() {
    const diff = this.diff;
    if (!diff) return;
    this.focused = true;
    if (!this.focus) {
      const s = this.selected;
      this.focus = s && s.prompt === this.prompt ? { layerIndex: s.layer_index, position: s.position } : { layerIndex: diff.L - 1, position: 0 };
    }
    this.setFocus(this.clampCell(this.focus));
  }
  // ---- The shared grid handlers' side (`Grid` in `../shared/grid_events.js`) -------------------
  get ready() {
    return Boolean(this.diff);
  }
  get pinned() {
    return Boolean(this.selected);
  }
  /**
   * @param {Cell} cell
   * @param {string} key
   */
  move(cell, key) {
    return this.diff ? moveFocus(cell, key, this.diff.L, this.diff.lengths[this.prompt]) : null;
  }
  unpin() {
    this.setSelected(null, true);
    this.readout.textContent = "Unpinned.";
  }
  blurred() {
    this.updateTooltip();
    this.requestDraw();
  }
  /** The test hook's object (`el.__muranoDiffDebug`, see `../shared/debug.js`). */
  debugApi() {
    const view = this;
    return {
      get state() {
        return { prompt: view.prompt, metric: view.metric, selected: view.selected, focus: view.focus, focused: view.focused, hover: view.hover, cellW: view.cellW, labelW: view.labelW };
      },
      /** The grid's layout (rows, positions, cell sizes), as the heatmap's hook has it. */
      get layout() {
        return view.diff ? view.layout() : null;
      },
      /** @param {number} i @param {number} j */
      cellClientRect: (i, j) => view.cellClientRect(i, j),
      /** @param {number} i @param {number} j */
      cellColour: (i, j) => view.diff ? cellColour(view.diff, view.metric, diffIndex(view.diff, i, view.prompt, j), isDarkTheme(view.readTheme())) : null,
      drawNow: () => view.draw(),
      tooltipText: () => view.tooltip.hidden ? null : view.tooltip.textContent
    };
  }
};

// src/diff/index.js
function render({ model, el }) {
  const view = new DiffView(model, el);
  return () => view.destroy();
}
function renderStandalone(el, state) {
  const model = createLocalModel({ metric: "delta_prob", ...state });
  const destroy = render({ model, el });
  return { model, destroy };
}
var index_default = { render };
export {
  DIVERGING,
  cellColour,
  createLocalModel,
  decodeDiff,
  index_default as default,
  diffCell,
  diffIndex,
  divergingColour,
  formatDelta,
  renderStandalone,
  tooltipContent
};
