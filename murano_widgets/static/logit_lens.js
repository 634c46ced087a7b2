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
function scaleColour(name, t, reverse = false) {
  const stops = COLOUR_STOPS[name];
  if (!stops) throw new Error(`unknown colour scale ${name}`);
  return interpolateStops(stops, reverse ? 1 - t : t);
}
var lutCache = /* @__PURE__ */ new Map();
function colourLut(name, reverse = false) {
  const key = `${name}|${reverse}`;
  let lut = lutCache.get(key);
  if (!lut) {
    lut = new Uint8Array(256 * 3);
    for (let k = 0; k < 256; k++) lut.set(scaleColour(name, k / 255, reverse), 3 * k);
    lutCache.set(key, lut);
  }
  return lut;
}
function relativeLuminance([r, g, b]) {
  const lin = (c) => {
    const s2 = c / 255;
    return s2 <= 0.03928 ? s2 / 12.92 : ((s2 + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}
function textColourOn(rgb) {
  const l = relativeLuminance(rgb);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
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
function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x - 1e-12 * p) return m * p;
  return 10 * p;
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
function promptName(index) {
  return `prompt ${index}`;
}
function indexReadout(index, count) {
  return count > 1 ? `${index} (0–${count - 1})` : String(index);
}
function indexSpoken(index, count) {
  return count > 1 ? `${index} (0 to ${count - 1})` : String(index);
}

// src/heatmap/payload.js
var PAYLOAD_VERSIONS = Object.freeze([2, 3]);
var LENS_DTYPES = Object.freeze(["uint8", "uint16", "uint32", "float32"]);
var ATTRIBUTION_SHAPES = Object.freeze({
  contributions: "cell_component",
  contribution_bias: "cell",
  top1_logits: "cell",
  answer_token_contributions: "cell_component",
  answer_token_bias: "cell",
  answer_row_contributions: "last_component",
  answer_row_bias: "last",
  target_contributions: "cell_target_component",
  target_bias: "cell_target"
});
var SITES = Object.freeze(["resid_mid", "resid_post"]);
var TOKEN_SECTIONS = Object.freeze(["input_ids", "final_tokens", "predicted_tokens", "topk_tokens"]);
var ANSWER_CELL_SECTIONS = Object.freeze(["answer_token_probs", "answer_token_ranks", "answer_top1"]);
var PROMPT_SET_SECTIONS = Object.freeze(["answer_probs", "answer_ranks"]);
var LAST_POSITION_SECTIONS = Object.freeze({ final_token_probs: "final_last_probs", final_token_ranks: "final_last_ranks" });
var CELL_TARGET_SECTIONS = Object.freeze(["target_probs", "target_ranks"]);
var REQUIRED_SECTIONS = Object.freeze(["input_ids", "predicted_tokens"]);
function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}
function isIntArray(value) {
  return Array.isArray(value) && value.every((x) => Number.isInteger(x) && x >= 0);
}
function isStringArray(value) {
  return Array.isArray(value) && value.every((x) => typeof x === "string");
}
function normaliseMetric(raw, index) {
  if (!raw || typeof raw !== "object" || typeof raw.name !== "string" || typeof raw.field !== "string") {
    throw new Error(`_meta.metrics[${index}] must be an object with a name and a field`);
  }
  const domain = Array.isArray(raw.domain) ? raw.domain.map(Number) : [];
  const [lo, hi] = domain.length === 2 && domain.every(Number.isFinite) && domain[1] > domain[0] ? domain : [0, 1];
  return {
    name: raw.name,
    field: raw.field,
    label: typeof raw.label === "string" && raw.label ? raw.label : raw.name,
    unit: typeof raw.unit === "string" ? raw.unit : "",
    scale: typeof raw.scale === "string" && raw.scale in COLOUR_STOPS ? raw.scale : "viridis",
    reverse: Boolean(raw.reverse),
    log: Boolean(raw.log),
    domain: [lo, hi],
    description: typeof raw.description === "string" ? raw.description : "",
    finalBased: Boolean(raw.final_based),
    perTarget: raw.per_target === true,
    perGroup: raw.per_group === true,
    targetLabel: typeof raw.target_label === "string" && raw.target_label.includes("{target}") ? raw.target_label : null,
    available: raw.available !== false,
    unavailableReason: typeof raw.unavailable_reason === "string" && raw.unavailable_reason ? raw.unavailable_reason : null
  };
}
function detailTokens(bytes) {
  const list = JSON.parse(new TextDecoder().decode(
    /** @type {Uint8Array} */
    bytes
  ));
  if (!isStringArray(list)) throw new Error("section detail_tokens must be a list of strings");
  return list;
}
function decodePayload(meta, sections) {
  const grid = readGrid(meta);
  const { layers, lengths, tokens, T } = grid;
  if (!Array.isArray(meta.metrics) || meta.metrics.length === 0) throw new Error("_meta.metrics must list the metrics");
  const metrics = meta.metrics.map(normaliseMetric);
  const topK = Math.max(1, Number(meta.top_k) || 1);
  const answerSets = normaliseAnswerSets(meta.answer_sets, lengths.length);
  const targets = meta.targets === void 0 || meta.targets === null ? [] : meta.targets;
  if (!isStringArray(targets)) throw new Error("_meta.targets must be a list of strings");
  const groups = meta.groups === void 0 || meta.groups === null ? [] : meta.groups;
  if (!isStringArray(groups)) throw new Error("_meta.groups must be a list of group names");
  const components = meta.components === void 0 || meta.components === null ? [] : meta.components;
  if (!isStringArray(components)) throw new Error("_meta.components must be a list of component labels");
  const shapes = sectionShapes(grid, topK, metrics, answerSets.length, targets.length, groups.length, components.length);
  const { arrays, scales, baseSections, detailSections, specs } = readSections(meta, sections, shapes, metrics, components.length);
  const allTokens = arrays.detail_tokens ? tokens.concat(detailTokens(arrays.detail_tokens)) : tokens;
  const roles = meta.roles === void 0 || meta.roles === null ? [] : meta.roles;
  if (!isStringArray(roles)) throw new Error("_meta.roles must be a list of role names");
  checkIndices(arrays, allTokens.length, roles.length);
  const nModel = Number(meta.n_model_layers);
  const topkWindow = Number(meta.topk_window) > 0 && !arrays.topk_tokens && specs.topk_tokens ? Number(meta.topk_window) : 0;
  const noValue = {};
  if (answerSets.length) {
    const without = Uint8Array.from(answerSets[0].answers, (a) => a === null ? 1 : 0);
    if (without.some(Boolean)) for (const name of ANSWER_CELL_SECTIONS) noValue[name] = without;
  }
  return {
    meta,
    L: layers.length,
    T,
    P: lengths.length,
    layers,
    nModelLayers: Number.isInteger(nModel) && nModel > 0 ? nModel : null,
    lengths,
    offsets: grid.offsets,
    tokens: allTokens,
    prompts: isStringArray(meta.prompts) ? meta.prompts : [],
    modelName: typeof meta.model_name === "string" ? meta.model_name : "",
    lensName: typeof meta.lens_name === "string" && meta.lens_name ? meta.lens_name : typeof meta.lens_kind === "string" && meta.lens_kind ? meta.lens_kind : "logit",
    lensKind: typeof meta.lens_kind === "string" && meta.lens_kind ? meta.lens_kind : "logit",
    lensTitle: typeof meta.lens_title === "string" && meta.lens_title ? meta.lens_title : null,
    topK: arrays.topk_tokens && arrays.topk_probs || topkWindow ? topK : 1,
    topkWindow,
    topkBlocks: null,
    maxEntropy: Number(meta.max_entropy) > 0 ? Number(meta.max_entropy) : 0,
    metrics,
    baseSections,
    detailSections,
    arrays,
    scales,
    maxima: {},
    answerSets,
    targets,
    groups,
    noValue,
    sites: grid.sites,
    components,
    logitSoftcap: Number.isFinite(meta.logit_softcap) && meta.logit_softcap > 0 ? Number(meta.logit_softcap) : null,
    foils: Array.isArray(meta.foils) && meta.foils.length === lengths.length ? meta.foils.map((f) => typeof f === "string" ? f : null) : null
  };
}
function readGrid(meta) {
  if (!meta || typeof meta !== "object" || Object.keys(meta).length === 0) {
    throw new Error("_meta is empty: no logit-lens data to show");
  }
  if (!PAYLOAD_VERSIONS.includes(meta.version)) {
    throw new Error(`unsupported payload version ${JSON.stringify(meta.version)} (expected ${PAYLOAD_VERSIONS.join(" or ")}); the Python package and its front end disagree`);
  }
  const { layers, lengths, offsets, tokens } = meta;
  if (!isIntArray(layers) || layers.length === 0) throw new Error("_meta.layers must be a non-empty list of layer numbers");
  const sites = rowSites(meta.addresses, layers);
  for (let i = 1; i < layers.length; i++) {
    const same = sites && layers[i] === layers[i - 1] && SITES.indexOf(sites[i]) > SITES.indexOf(sites[i - 1]);
    if (layers[i] <= layers[i - 1] && !same) throw new Error(`_meta.layers must be ascending, got ${JSON.stringify(layers).slice(0, 80)}`);
  }
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
  if (meta.total !== void 0 && meta.total !== T) throw new Error(`_meta.total is ${meta.total} but the lengths add up to ${T}`);
  if (!isStringArray(tokens)) throw new Error("_meta.tokens must be a list of strings");
  return { layers, sites, lengths, offsets, T, tokens };
}
function sectionShapes({ layers, lengths, T }, topK, metrics, nSets, nTargets, nGroups, C) {
  const L = layers.length;
  const P = lengths.length;
  const shapes = {
    input_ids: [T],
    final_tokens: [T],
    final_missing: [T],
    predicted_tokens: [L, T],
    missing: [L, T],
    topk_tokens: [L, T, topK - 1],
    topk_probs: [L, T, topK - 1],
    generated: [T],
    token_roles: [T]
  };
  for (const metric of metrics) shapes[metric.field] = metric.perTarget ? [L, T, nTargets] : metric.perGroup ? [L, T, nGroups] : [L, T];
  for (const name of ANSWER_CELL_SECTIONS) shapes[name] = [L, T];
  for (const name of PROMPT_SET_SECTIONS) shapes[name] = [L, P, nSets];
  for (const name of CELL_TARGET_SECTIONS) shapes[name] = [L, T, nTargets];
  for (const name of Object.values(LAST_POSITION_SECTIONS)) shapes[name] = [L, P];
  const attributionShapes = {
    cell: [L, T],
    cell_component: [L, T, C],
    last: [L, P],
    last_component: [L, P, C],
    cell_target: [L, T, nTargets],
    cell_target_component: [L, T, nTargets, C]
  };
  for (const [name, shape] of Object.entries(ATTRIBUTION_SHAPES)) shapes[name] = attributionShapes[shape];
  return shapes;
}
function readSections(meta, sections, shapes, metrics, C) {
  const signedFields = new Set(metrics.filter((metric) => metric.unit === "logit").map((metric) => metric.field));
  const baseSections = isStringArray(meta.base_sections) ? meta.base_sections : [];
  const detailSections = isStringArray(meta.detail_sections) ? meta.detail_sections : [];
  const specs = meta.sections && typeof meta.sections === "object" ? meta.sections : {};
  const arrays = {};
  const scales = {};
  for (const [name, spec] of Object.entries(specs)) {
    const data = sections ? sections[name] : void 0;
    if (data === void 0 || data === null) continue;
    const shape = spec && spec.shape;
    if (!isIntArray(shape)) throw new Error(`section ${name}: shape must be a list of sizes`);
    if (name in ATTRIBUTION_SHAPES && C === 0) throw new Error(`section ${name}: _meta.components does not name its components`);
    if (spec.dtype === "float32" !== (name in ATTRIBUTION_SHAPES || signedFields.has(name))) throw new Error(`section ${name}: dtype ${spec.dtype} is not this section's`);
    const expected = shapes[name];
    if (expected && (expected.length !== shape.length || expected.some((n, i) => n !== shape[i]))) {
      throw new Error(`section ${name}: shape ${JSON.stringify(shape)} disagrees with the layers and lengths (expected ${JSON.stringify(expected)})`);
    }
    arrays[name] = /** @type {RawArray} */
    readSection(
      /** @type {any} */
      data,
      spec.dtype,
      product(shape),
      name,
      LENS_DTYPES
    );
    scales[name] = typeof spec.scale === "number" && Number.isFinite(spec.scale) ? spec.scale : 1;
  }
  for (const name of REQUIRED_SECTIONS) {
    if (!arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  }
  for (const name of baseSections) {
    if (specs[name] && !arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  }
  for (const name of TOKEN_SECTIONS) {
    const low = arrays[name];
    const high = arrays[`${name}_high`];
    if (!low || !high) continue;
    if (high.length !== low.length) throw new Error(`section ${name}_high: ${high.length} values for ${low.length}`);
    arrays[name] = Uint32Array.from(low, (value, i) => value + high[i] * 65536);
  }
  return { arrays, scales, baseSections, detailSections, specs };
}
function checkIndices(arrays, nTokens, nRoles) {
  for (const name of TOKEN_SECTIONS) {
    const array = arrays[name];
    if (!array) continue;
    for (let i = 0; i < array.length; i++) {
      if (array[i] >= nTokens) throw new Error(`section ${name}: token index ${array[i]} is outside the table of ${nTokens} strings`);
    }
  }
  const roleCodes = arrays.token_roles;
  if (roleCodes) {
    for (let i = 0; i < roleCodes.length; i++) {
      if (roleCodes[i] >= nRoles) throw new Error(`section token_roles: role ${roleCodes[i]} is outside _meta.roles (${nRoles} names)`);
    }
  }
}
function rowSites(addresses, layers) {
  if (addresses === void 0 || addresses === null) return null;
  if (!isStringArray(addresses) || addresses.length !== layers.length) {
    throw new Error(`_meta.addresses must hold one address per row (${layers.length})`);
  }
  return addresses.map((address, i) => {
    const match = /^L(-?\d+)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(address);
    if (!match || Number(match[1]) !== layers[i] || !SITES.includes(match[2])) {
      throw new Error(`_meta.addresses[${i}] is ${JSON.stringify(address)}: expected L${layers[i]}.resid_mid or L${layers[i]}.resid_post`);
    }
    return match[2];
  });
}
function decodeLenses(meta, sections) {
  if (!meta || typeof meta !== "object" || meta.lenses === void 0 || meta.lenses === null) {
    return [decodePayload(meta, sections)];
  }
  const entries = meta.lenses;
  if (!Array.isArray(entries) || entries.length === 0) throw new Error("_meta.lenses must be a non-empty list");
  const shared = isStringArray(meta.shared_sections) ? meta.shared_sections : [];
  const names = /* @__PURE__ */ new Set();
  const sharedBytes = {};
  for (const name of shared) if (sections && sections[name] !== void 0 && sections[name] !== null) sharedBytes[name] = toBytes(sections[name]);
  return entries.map((entry, i) => {
    if (!entry || typeof entry.name !== "string" || !entry.name || typeof entry.prefix !== "string" || i > 0 !== Boolean(entry.prefix)) {
      throw new Error(`_meta.lenses[${i}] must have a name and a prefix (empty for the first lens only)`);
    }
    if (names.has(entry.name)) throw new Error(`_meta.lenses names ${JSON.stringify(entry.name)} twice`);
    names.add(entry.name);
    const specs = {};
    const own = {};
    for (const [name, spec] of Object.entries(meta.sections && typeof meta.sections === "object" ? meta.sections : {})) {
      const mine = ownSection(name, entry.prefix, shared);
      if (mine === null) continue;
      specs[mine] = spec;
      if (sections && sections[name] !== void 0) own[mine] = sharedBytes[name] ?? sections[name];
    }
    const lensMeta = {
      ...meta,
      sections: specs,
      lens_name: entry.name,
      lens_kind: entry.kind,
      lens_title: entry.title,
      metrics: Array.isArray(entry.metrics) ? entry.metrics : meta.metrics,
      top_k: entry.top_k ?? meta.top_k
    };
    return decodePayload(lensMeta, own);
  });
}
function ownSection(name, prefix, shared) {
  if (!prefix) return name.includes("/") ? null : name;
  if (name.startsWith(prefix)) return name.slice(prefix.length);
  return shared.includes(name.replace(/_high$/, "")) ? name : null;
}
function normaliseAnswerSets(raw, P) {
  if (raw === void 0 || raw === null) return [];
  if (!Array.isArray(raw)) throw new Error("_meta.answer_sets must be a list");
  return raw.map((entry, s2) => {
    const answers = entry && entry.answers;
    if (!entry || typeof entry.name !== "string" || !Array.isArray(answers) || answers.length !== P) {
      throw new Error(`_meta.answer_sets[${s2}] must have a name and one answer (or null) per prompt (${P})`);
    }
    if (!answers.every((a) => a === null || typeof a === "string")) {
      throw new Error(`_meta.answer_sets[${s2}].answers must hold strings or null`);
    }
    const counts = Array.isArray(entry.n_tokens) && entry.n_tokens.length === P ? entry.n_tokens : answers.map(() => null);
    const accepted = Array.isArray(entry.accepted) && entry.accepted.length === P ? entry.accepted : answers.map((a) => a === null ? null : [a]);
    return {
      name: entry.name,
      answers,
      nAccepted: accepted.map((forms) => Array.isArray(forms) ? forms.length : 0),
      nTokens: counts.map((n) => Number.isInteger(n) && /** @type {number} */
      n > 0 ? (
        /** @type {number} */
        n
      ) : null)
    };
  });
}
function cellIndex(data, prompt, layerIndex, position) {
  return layerIndex * data.T + data.offsets[prompt] + position;
}
function promptSetIndex(data, layerIndex, prompt, set) {
  return (layerIndex * data.P + prompt) * data.answerSets.length + set;
}
function lastPositionIndex(data, layerIndex, prompt) {
  return layerIndex * data.P + prompt;
}
function cellTargetIndex(data, prompt, layerIndex, position, target) {
  return cellIndex(data, prompt, layerIndex, position) * data.targets.length + target;
}
function promptOfColumn(data, col) {
  const offsets = data.offsets;
  let lo = 0;
  let hi = offsets.length - 1;
  while (lo < hi) {
    const mid = lo + hi + 1 >> 1;
    if (offsets[mid] <= col) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
function promptHasNoValue(data, name, prompt) {
  const flags = data.noValue[name];
  return Boolean(flags && flags[prompt]);
}
function sectionValue(data, name, idx) {
  const array = data.arrays[name];
  return array ? array[idx] * (data.scales[name] ?? 1) : NaN;
}
function isAnswerTop1(data, prompt, layerIndex, position) {
  const mask = data.arrays.answer_top1;
  if (!mask || promptHasNoValue(data, "answer_top1", prompt)) return false;
  const idx = cellIndex(data, prompt, layerIndex, position);
  return Boolean(mask[idx]) && !isMissing(data, idx);
}
function sectionMax(data, name) {
  if (data.maxima[name] !== void 0) return data.maxima[name];
  const array = data.arrays[name];
  let max = 0;
  if (array) {
    for (let i = 0; i < array.length; i++) if (array[i] > max) max = array[i];
  }
  data.maxima[name] = max;
  return max;
}
function isMissing(data, idx) {
  const missing = data.arrays.missing;
  return Boolean(missing && missing[idx]);
}
function isFinalMissing(data, col) {
  const missing = data.arrays.final_missing;
  return Boolean(missing && missing[col]);
}
function rowOfModelLayer(layers, layer) {
  const value = Number(layer);
  if (layer === null || layer === void 0 || !Number.isFinite(value)) return 0;
  let best = 0;
  let exact = -1;
  for (let i = 0; i < layers.length; i++) {
    if (layers[i] === value) exact = i;
    if (Math.abs(layers[i] - value) < Math.abs(layers[best] - value)) best = i;
  }
  return exact >= 0 ? exact : best;
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
function quoteToken(token, { spaces = true, maxChars = 48 } = {}) {
  return `“${truncateText(displayToken(token, { spaces }), maxChars)}”`;
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
var BYTE_MARK = /<0x([0-9A-F]{2})>/g;
function hasBytes(text) {
  return typeof text === "string" && /<0x[0-9A-F]{2}>/.test(text);
}
function tokenBytes(text) {
  const out = [];
  const encoder = new TextEncoder();
  let last = 0;
  for (const found of text.matchAll(BYTE_MARK)) {
    for (const byte of encoder.encode(text.slice(last, found.index))) out.push({ byte, marked: false });
    out.push({ byte: parseInt(found[1], 16), marked: true });
    last = /** @type {number} */
    found.index + found[0].length;
  }
  for (const byte of encoder.encode(text.slice(last))) out.push({ byte, marked: false });
  return out;
}
function wholeCharacter(tokens, position) {
  const text = tokens[position];
  if (!hasBytes(text)) return null;
  const endsMarked = (t) => /<0x[0-9A-F]{2}>$/.test(t);
  const startsMarked = (t) => /^<0x[0-9A-F]{2}>/.test(t);
  let lo = position;
  let hi = position;
  while (lo > 0 && typeof tokens[lo - 1] === "string" && endsMarked(tokens[lo - 1]) && startsMarked(tokens[lo])) lo--;
  while (hi + 1 < tokens.length && typeof tokens[hi + 1] === "string" && endsMarked(tokens[hi]) && startsMarked(tokens[hi + 1])) hi++;
  const bytes = [];
  for (let p = lo; p <= hi; p++) for (const b of tokenBytes(tokens[p])) bytes.push({ ...b, at: p });
  const decoder = new TextDecoder();
  let whole = "";
  const hex = [];
  let from = Infinity;
  let to = -Infinity;
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i].byte;
    const size = lead < 128 ? 1 : lead >= 240 ? 4 : lead >= 224 ? 3 : lead >= 192 ? 2 : 1;
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

// src/heatmap/metrics.js
function metricSpec(data, name) {
  return data ? data.metrics.find((m) => m.name === name) : void 0;
}
function metricOffered(data, name) {
  const spec = metricSpec(data, name);
  return Boolean(spec && spec.available);
}
function metricAvailable(data, name) {
  const spec = metricSpec(data, name);
  if (!data || !spec || !spec.available || !data.arrays[spec.field]) return false;
  const items = itemsOf(data, spec);
  return !items || items.length > 0;
}
function itemsOf(data, spec) {
  if (spec.perGroup) return data.groups;
  return spec.perTarget ? data.targets : null;
}
function pickIndex(spec, pick) {
  if (typeof pick === "number") return pick;
  return spec.perGroup ? pick.group : pick.target;
}
function resolveGroup(data, value) {
  if (!data || data.groups.length === 0) return "";
  return typeof value === "string" && data.groups.includes(value) ? value : data.groups[0];
}
function resolveTarget(data, value) {
  if (!data || data.targets.length === 0) return "";
  return typeof value === "string" && data.targets.includes(value) ? value : data.targets[0];
}
function targetIndex(data, value) {
  return Math.max(0, data.targets.indexOf(resolveTarget(data, value)));
}
function metricLabel(data, spec, target = 0, short = false) {
  const items = itemsOf(data, spec);
  const item = items ? items[pickIndex(spec, target)] : void 0;
  if (!spec.targetLabel || item === void 0) return short ? shortLabel(spec.label) : spec.label;
  const label = short ? shortLabel(spec.targetLabel) : spec.targetLabel;
  return label.replace("{target}", () => spec.perGroup ? item : displayToken(item));
}
function resolveMetric(data, name) {
  if (typeof name === "string" && metricOffered(data, name)) return name;
  const first = data.metrics.find((m) => m.available);
  return (first || data.metrics[0]).name;
}
function shortLabel(label) {
  return label.replace(/\s*\([^()]*\)\s*$/, "") || label;
}
function metricDomain(data, name) {
  const spec = metricSpec(data, name);
  if (!spec) throw new Error(`unknown metric ${JSON.stringify(name)}`);
  return { min: spec.domain[0], max: spec.domain[1], log: spec.log };
}
function unitValue(value, domain) {
  if (!Number.isFinite(value)) return NaN;
  let t;
  if (domain.log) t = Math.log1p(Math.max(0, value - domain.min)) / Math.log1p(domain.max - domain.min);
  else t = (value - domain.min) / (domain.max - domain.min);
  return Math.min(1, Math.max(0, t));
}
function metricValue(data, name, idx, target = 0) {
  const spec = metricSpec(data, name);
  const array = spec && data.arrays[spec.field];
  if (!spec || !array || isMissing(data, idx)) return NaN;
  if (spec.finalBased && isFinalMissing(data, idx % data.T)) return NaN;
  if (data.noValue[spec.field] && promptHasNoValue(data, spec.field, promptOfColumn(data, idx % data.T))) return NaN;
  const { stride, offset } = metricLayout(data, spec, target);
  if (stride === 0) return NaN;
  return array[idx * stride + offset] * (data.scales[spec.field] ?? 1);
}
function metricLayout(data, spec, pick = 0) {
  const items = itemsOf(data, spec);
  if (!items) return { stride: 1, offset: 0 };
  const n = items.length;
  const target = pickIndex(spec, pick);
  return Number.isInteger(target) && target >= 0 && target < n ? { stride: n, offset: target } : { stride: 0, offset: 0 };
}
function formatMetric(spec, value, short = false, step = 0) {
  return formatUnit(spec.unit, value, short, step);
}
function legendTicks(spec, domain) {
  const values = [];
  if (domain.log) {
    values.push(domain.min);
    for (let v = 10; v <= domain.max; v *= 10) if (v > domain.min) values.push(v);
    const last = values[values.length - 1];
    if (unitValue(domain.max, domain) - unitValue(last, domain) > 0.15) values.push(domain.max);
  } else {
    const step = niceCeil((domain.max - domain.min) / 4);
    for (let v = domain.min; v <= domain.max + 1e-9; v += step) values.push(v);
    if (domain.max - values[values.length - 1] > 0.25 * step) values.push(domain.max);
  }
  return values.map((v) => ({ t: unitValue(v, domain), label: formatMetric(spec, v, true) }));
}
function scaleChange(before, after, name) {
  const a = metricSpec(before, name);
  const b = metricSpec(after, name);
  if (!a || !b || a.domain[0] === b.domain[0] && a.domain[1] === b.domain[1]) return "";
  const range = (spec) => `${formatMetric(spec, spec.domain[0], true)}–${formatMetric(spec, spec.domain[1])}`;
  return `Colour scale changed: now ${range(b)} (was ${range(a)})`;
}

// src/heatmap/colour_image.js
function colourImage(lensData, metric, prompt, out, target = 0, scaleDomain = null) {
  const n = lensData.lengths[prompt];
  const L = lensData.L;
  const data = out && out.length === n * L * 4 ? out : new Uint8ClampedArray(n * L * 4);
  data.fill(0);
  const spec = metricSpec(lensData, metric);
  const array = spec && lensData.arrays[spec.field];
  if (!spec || !array || promptHasNoValue(lensData, spec.field, prompt)) return { width: n, height: L, data };
  const { stride, offset: at } = metricLayout(lensData, spec, target);
  if (stride === 0) return { width: n, height: L, data };
  const scale = lensData.scales[spec.field] ?? 1;
  const domain = scaleDomain ?? metricDomain(lensData, metric);
  const lut = colourLut(spec.scale, spec.reverse);
  const missing = lensData.arrays.missing;
  const offset = lensData.offsets[prompt];
  const finalMissing = spec.finalBased ? lensData.arrays.final_missing : void 0;
  const logDen = domain.log ? Math.log1p(domain.max - domain.min) : 0;
  const span = domain.max - domain.min;
  for (let i = 0; i < L; i++) {
    const row = L - 1 - i;
    const base = i * lensData.T + offset;
    for (let j = 0; j < n; j++) {
      const idx = base + j;
      if (missing && missing[idx]) continue;
      if (finalMissing && finalMissing[offset + j]) continue;
      const v = array[idx * stride + at] * scale - domain.min;
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
function columnOf(layout, position) {
  return columnOfPosition(layout.columns, position);
}
function positionAt(layout, column) {
  return positionOfColumn(layout.columns, column);
}
function clampScroll(layout, scrollLeft2) {
  return Math.min(layout.maxScroll, Math.max(0, Math.round(scrollLeft2) || 0));
}
function visibleColumns(layout, scrollLeft2) {
  const viewCells = layout.width - layout.labelW;
  const first = Math.max(0, Math.floor(scrollLeft2 / layout.cellW));
  const last = Math.min(layout.nPositions, Math.ceil((scrollLeft2 + viewCells) / layout.cellW));
  return [first, Math.max(first, last)];
}
function rowOfLayer(layout, layerIndex) {
  return layout.nLayers - 1 - layerIndex;
}
function columnX(layout, position, scrollLeft2) {
  return layout.labelW + position * layout.cellW - scrollLeft2;
}
function cellRect(layout, layerIndex, position, scrollLeft2) {
  return {
    x: columnX(layout, position, scrollLeft2),
    y: layout.heatY + rowOfLayer(layout, layerIndex) * layout.rowH,
    w: layout.cellW,
    h: layout.rowH
  };
}
function hitTest(layout, x, y, scrollLeft2, highlightedLayer) {
  if (x < layout.labelW || x >= layout.width) return null;
  const position = Math.floor((x - layout.labelW + scrollLeft2) / layout.cellW);
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
function revealColumn(layout, scrollLeft2, position) {
  const left = position * layout.cellW;
  const viewCells = layout.width - layout.labelW;
  let next = scrollLeft2;
  if (left < scrollLeft2) next = left;
  else if (left + layout.cellW > scrollLeft2 + viewCells) next = left + layout.cellW - viewCells;
  return clampScroll(layout, next);
}
function labelStride(rowH, minSpacing = 12) {
  if (rowH >= minSpacing) return 1;
  return niceCeil(minSpacing / rowH);
}
function columnOfPosition(columns, position) {
  if (!columns) return position;
  let lo = 0;
  let hi = columns.length - 1;
  while (lo <= hi) {
    const mid = lo + hi >> 1;
    if (columns[mid] === position) return mid;
    if (columns[mid] < position) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
function positionOfColumn(columns, column) {
  return columns ? columns[column] : column;
}

// src/heatmap/rows.js
function isSublayerRow(data, row) {
  return Boolean(data.sites && data.sites[row] === "resid_mid");
}
function hasSublayerRows(data) {
  return Boolean(data.sites && data.sites.includes("resid_mid"));
}
function rowLabel(data, row, form = "short") {
  const layer = data.layers[row];
  const mid = isSublayerRow(data, row);
  if (form === "axis") return mid ? `${layer} attn` : String(layer);
  if (form === "long") return mid ? `layer ${layer} after attention` : `layer ${layer}`;
  return mid ? `L${layer} attn` : `L${layer}`;
}
function rowLabelled(data, row, stride) {
  if (stride <= 1) return true;
  return !isSublayerRow(data, row) && data.layers[row] % stride === 0;
}
function rowNames(data) {
  return data.layers.map((_, row) => rowLabel(data, row));
}

// src/heatmap/token_marks.js
var TEMPLATE_ROLE = "template";
var ROLE_COLOURS = Object.freeze({
  template: "#999999",
  system: "#e69f00",
  user: "#0072b2",
  assistant: "#009e73"
});
var OTHER_COLOURS = Object.freeze(["#cc79a7", "#d55e00", "#56b4e9", "#f0e442"]);
function roleNames(data) {
  const roles = data.meta.roles;
  return Array.isArray(roles) && roles.every((r) => typeof r === "string") ? roles : [];
}
function roleStyles(names) {
  let other = 0;
  return names.map((name) => {
    const known = (
      /** @type {Record<string, string>} */
      ROLE_COLOURS[name]
    );
    const colour = known ?? OTHER_COLOURS[other++ % OTHER_COLOURS.length];
    return { name, colour, label: name === TEMPLATE_ROLE ? "chat template" : name };
  });
}
function tokenRole(data, prompt, position) {
  const codes = data.arrays.token_roles;
  if (!codes) return null;
  return roleNames(data)[codes[data.offsets[prompt] + position]] ?? null;
}
function isGenerated(data, prompt, position) {
  const mask = data.arrays.generated;
  return Boolean(mask && mask[data.offsets[prompt] + position]);
}
function generationStart(data, prompt) {
  const mask = data.arrays.generated;
  if (!mask) return -1;
  const offset = data.offsets[prompt];
  for (let j = 0; j < data.lengths[prompt]; j++) if (mask[offset + j]) return j;
  return -1;
}
function rolesPresent(data) {
  const codes = data.arrays.token_roles;
  if (!codes) return [];
  const seen = new Set(codes);
  return roleStyles(roleNames(data)).filter((_, code) => seen.has(code));
}
function hasTemplateTokens(data) {
  const codes = data.arrays.token_roles;
  const template = roleNames(data).indexOf(TEMPLATE_ROLE);
  return Boolean(codes) && template >= 0 && /** @type {Uint8Array} */
  codes.includes(template);
}
function shownPositions(data, prompt, hideTemplate) {
  const codes = data.arrays.token_roles;
  const template = roleNames(data).indexOf(TEMPLATE_ROLE);
  if (!hideTemplate || !codes || template < 0) return null;
  const offset = data.offsets[prompt];
  const shown = [];
  for (let j = 0; j < data.lengths[prompt]; j++) if (codes[offset + j] !== template) shown.push(j);
  return shown.length && shown.length < data.lengths[prompt] ? shown : null;
}
function shownPromptText(data, prompt, hideTemplate) {
  const columns = shownPositions(data, prompt, hideTemplate);
  if (!columns) return data.prompts[prompt] ?? "";
  const ids = (
    /** @type {ArrayLike<number>} */
    data.arrays.input_ids
  );
  const offset = data.offsets[prompt];
  return columns.map((p) => data.tokens[ids[offset + p]] ?? "").join("");
}
function nearestShown(columns, position) {
  if (!columns || !columns.length) return position;
  let best = columns[0];
  for (const p of columns) {
    if (Math.abs(p - position) <= Math.abs(best - position)) best = p;
    if (p > position) break;
  }
  return best;
}
function generationColumn(data, prompt, columns) {
  const start = generationStart(data, prompt);
  if (start < 0) return -1;
  if (!columns) return start;
  const index = columns.findIndex((p) => p >= start);
  return index;
}
function tokenMarkText(generated, role) {
  const parts = [];
  if (generated) parts.push("generated");
  if (role) parts.push(role === TEMPLATE_ROLE ? "chat template" : role);
  return parts.join(", ");
}
function pickColumns(image, columns) {
  const width = columns.length;
  const data = new Uint8ClampedArray(width * image.height * 4);
  for (let row = 0; row < image.height; row++) {
    for (let j = 0; j < width; j++) {
      const from = (row * image.width + columns[j]) * 4;
      data.set(image.data.subarray(from, from + 4), (row * width + j) * 4);
    }
  }
  return { data, width, height: image.height };
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

// src/heatmap/trajectory_layout.js
var CHART = Object.freeze({
  labelW: 34,
  // layer numbers at the left
  rightPad: 12,
  minWidth: 200,
  bottomPad: 24
  // under the plot: the axis title
});
var SIDE = Object.freeze({ chartW: 300, gap: 14, minHeatmapW: 600, minTotal: 760 });
function chartBeside(available, heatmapNatural) {
  if (available < SIDE.minTotal) return false;
  return available - SIDE.chartW - SIDE.gap >= Math.min(heatmapNatural, SIDE.minHeatmapW);
}
function trajectoryRowsGeometry({ width, nLayers, rowH, heatY, heightBelow = CHART.bottomPad }) {
  const w = Math.max(CHART.minWidth, Math.floor(width));
  const plotX = CHART.labelW + 6;
  const plotH = nLayers * rowH;
  return {
    width: w,
    height: heatY + plotH + Math.max(CHART.bottomPad, heightBelow),
    nLayers,
    rowH,
    plotX,
    plotW: Math.max(40, w - plotX - CHART.rightPad),
    plotY: heatY,
    plotH,
    labelX: CHART.labelW,
    labelStride: labelStride(rowH, 12)
  };
}
function rowCentreY(g, layerIndex) {
  return g.plotY + (g.nLayers - 1 - layerIndex) * g.rowH + g.rowH / 2;
}
function rowAtY(g, y) {
  if (y < g.plotY || y >= g.plotY + g.plotH) return -1;
  return g.nLayers - 1 - Math.floor((y - g.plotY) / g.rowH);
}
function valueX(g, t) {
  return g.plotX + t * g.plotW;
}
function seriesSegments(series, scale, g) {
  const segments = [];
  let current = [];
  series.values.forEach((v, i) => {
    if (v === null) {
      if (current.length) segments.push(current);
      current = [];
      return;
    }
    current.push([round2(valueX(g, scale.toUnit(v))), round2(rowCentreY(g, i))]);
  });
  if (current.length) segments.push(current);
  return segments;
}
function round2(v) {
  return Math.round(v * 100) / 100;
}
var LINE_STYLES = Object.freeze({
  top1: Object.freeze({ colour: "var(--murano-traj-top1)", width: 9, dash: "", opacity: 0.3, marker: "circle", markerScale: 1.7 }),
  final: Object.freeze({ colour: SERIES_COLOURS[0], width: 4, dash: "8 4", opacity: 1, marker: "square", markerScale: 1.2 }),
  answer: Object.freeze({ colours: [SERIES_COLOURS[1], SERIES_COLOURS[3]], width: 2, dash: "", opacity: 1, marker: "diamond", markerScale: 1 }),
  lens: Object.freeze({ colours: [SERIES_COLOURS[4], SERIES_COLOURS[5], SERIES_COLOURS[2]], width: 2, dashes: ["3 2", "1 2", "6 2 1 2"], opacity: 1, marker: "circle", markerScale: 1 }),
  target: Object.freeze({
    width: 1.5,
    dashes: ["5 3", "1.5 3", "9 3 1.5 3", "14 4"],
    opacity: 1,
    markers: (
      /** @type {SeriesStyle["marker"][]} */
      ["triangle", "cross", "square", "diamond"]
    ),
    markerScale: 1
  })
});
function seriesStyle(series) {
  switch (series.kind) {
    case "top1":
      return { ...LINE_STYLES.top1 };
    case "final":
    case "metric":
      return { ...LINE_STYLES.final };
    case "answer": {
      const { colours, ...rest } = LINE_STYLES.answer;
      return { ...rest, colour: colours[series.index % colours.length] };
    }
    case "group":
    case "group_sum": {
      if (series.kind === "group_sum") return { colour: "var(--murano-traj-top1)", width: 2, dash: "4 3", opacity: 1, marker: "circle", markerScale: 1 };
      const t = LINE_STYLES.target;
      const j = series.index;
      return { colour: SERIES_COLOURS[(2 + j) % SERIES_COLOURS.length], width: 2, dash: "", opacity: 1, marker: t.markers[j % t.markers.length], markerScale: 1 };
    }
    case "lens": {
      const { colours, dashes, ...rest } = LINE_STYLES.lens;
      const k = series.index;
      return { ...rest, colour: colours[k % colours.length], dash: dashes[Math.floor(k / colours.length) % dashes.length] };
    }
    default: {
      const t = LINE_STYLES.target;
      const j = series.index;
      const n = SERIES_COLOURS.length;
      return {
        colour: SERIES_COLOURS[(2 + j) % n],
        width: t.width,
        dash: t.dashes[Math.floor(j / n) % t.dashes.length],
        opacity: t.opacity,
        marker: t.markers[j % t.markers.length],
        markerScale: t.markerScale
      };
    }
  }
}
function strokeAttributes(style) {
  return { "stroke-width": style.width, "stroke-dasharray": style.dash || "none", "stroke-opacity": style.opacity };
}
function swatchLine(style) {
  return { x1: 1, x2: 25, y1: 6, y2: 6, ...strokeAttributes(style) };
}
function drawOrder(styles) {
  return styles.map((_, k) => k).sort((a, b) => styles[b].width - styles[a].width || a - b);
}
function markerPath(shape, x, y, r) {
  const f = (v) => round2(v);
  switch (shape) {
    case "square":
      return `M${f(x - r)},${f(y - r)}h${f(2 * r)}v${f(2 * r)}h${f(-2 * r)}Z`;
    case "triangle":
      return `M${f(x)},${f(y - r * 1.15)}L${f(x + r * 1.1)},${f(y + r * 0.85)}L${f(x - r * 1.1)},${f(y + r * 0.85)}Z`;
    case "diamond":
      return `M${f(x)},${f(y - r * 1.3)}L${f(x + r * 1.3)},${f(y)}L${f(x)},${f(y + r * 1.3)}L${f(x - r * 1.3)},${f(y)}Z`;
    case "cross":
      return `M${f(x - r)},${f(y - r)}L${f(x + r)},${f(y + r)}M${f(x + r)},${f(y - r)}L${f(x - r)},${f(y + r)}`;
    default:
      return `M${f(x - r)},${f(y)}a${f(r)},${f(r)} 0 1,0 ${f(2 * r)},0a${f(r)},${f(r)} 0 1,0 ${f(-2 * r)},0Z`;
  }
}
function answerMarkTriangle(cell) {
  const s2 = Math.max(4, Math.min(9, Math.min(cell.h * 0.6, cell.w * 0.3)));
  return [
    [cell.x + 1, cell.y + 1],
    [cell.x + 1 + s2, cell.y + 1],
    [cell.x + 1, cell.y + 1 + s2]
  ];
}

// src/heatmap/painter.js
var TEXT_ON = /* @__PURE__ */ new Map();
function textOn(r, g, b) {
  const key = r << 16 | g << 8 | b;
  let colour = TEXT_ON.get(key);
  if (!colour) {
    colour = textColourOn([r, g, b]);
    TEXT_ON.set(key, colour);
  }
  return colour;
}
function context2d(canvas) {
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error("this browser gives no 2D canvas context");
  return ctx;
}
var Painter = class {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {Element} styleSource the element whose CSS variables give the theme
   */
  constructor(canvas, styleSource) {
    this.canvas = canvas;
    this.styleSource = styleSource;
    this.theme = null;
    this.lensData = null;
    this.images = /* @__PURE__ */ new Map();
    this.tokenTexts = [];
    this.cellTexts = /* @__PURE__ */ new Map();
    this.cellTextChars = -1;
  }
  /**
   * New data: drops every cache.
   * @param {LensData} lensData
   */
  setData(lensData) {
    this.lensData = lensData;
    this.images.clear();
    this.tokenTexts = new Array(lensData.tokens.length);
    this.cellTexts.clear();
  }
  /** The theme changed (forget it; it is read again on the next use). */
  forgetTheme() {
    this.theme = null;
  }
  /** @returns {Theme} */
  readTheme() {
    if (this.theme) return this.theme;
    const colours = readTheme(this.styleSource);
    const uiFont = colours.font;
    const monoFont = colours.mono;
    const ctx = context2d(this.canvas);
    const cellFont = `11px ${monoFont}`;
    ctx.font = cellFont;
    const hatch = hatchPattern(ctx, colours.hatch);
    const theme = {
      fg: colours.fg,
      muted: colours.muted,
      bg: colours.bg,
      grid: colours.grid,
      accent: colours.accent,
      focus: colours.focus,
      stripBg: colours.stripBg,
      hatch: colours.hatch,
      shadow: colours.shadow,
      uiFont,
      monoFont,
      labelFont: `11px ${uiFont}`,
      labelBold: `600 11px ${uiFont}`,
      axisFont: `10px ${uiFont}`,
      cellFont,
      cellItalic: `italic ${cellFont}`,
      generated: colours.generated,
      generatedBg: colours.generatedBg,
      charW: ctx.measureText("M").width || 6.6,
      hatchPattern: hatch
    };
    if (colours.live) this.theme = theme;
    return theme;
  }
  /**
   * Width of the row labels (the widest row name, "L5" or "L5 attn", or "input"), in CSS pixels.
   * @param {LensData} lensData
   */
  labelWidth(lensData) {
    const ctx = context2d(this.canvas);
    ctx.font = this.readTheme().labelBold;
    const maxLayer = Math.max(...lensData.layers);
    const widest = hasSublayerRows(lensData) ? `L${maxLayer} attn` : `L${maxLayer}`;
    return Math.ceil(Math.max(ctx.measureText("input").width, ctx.measureText(widest).width)) + 16;
  }
  /**
   * A token's display text (cached by table index).
   * @param {number} index
   */
  tokenText(index) {
    let text = this.tokenTexts[index];
    if (text === void 0) {
      text = displayToken(this.lensData?.tokens[index]);
      this.tokenTexts[index] = text;
    }
    return text;
  }
  /**
   * A token's display text cut to `chars` characters, wrapped in an LTR isolate for fillText.
   * @param {number} index
   * @param {number} chars
   */
  cellText(index, chars) {
    if (chars !== this.cellTextChars) {
      this.cellTexts.clear();
      this.cellTextChars = chars;
    }
    let text = this.cellTexts.get(index);
    if (text === void 0) {
      text = isolateLtr(truncateText(this.tokenText(index), chars));
      this.cellTexts.set(index, text);
    }
    return text;
  }
  /**
   * The cached 1-pixel-per-cell colour image of (prompt, metric, target): one pixel column per
   * shown column (every position, or those `columns` lists when template tokens are hidden).
   * @param {number} prompt
   * @param {string} metric
   * @param {number[] | null} [columns]
   * @param {number} [target] for a per-target metric, the tracked token's index
   * @param {{min: number, max: number, log: boolean} | null} [domain] the scale's domain, when
   *   not the metric's own
   * @returns {ColourImage}
   */
  colourCanvas(prompt, metric, columns = null, target = 0, domain = null) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const scale = domain ? `|${domain.min}:${domain.max}` : "";
    const key = `${prompt}|${metric}|${target}${scale}${columns ? `|${columns.length}:${columns.join(",")}` : ""}`;
    let entry = this.images.get(key);
    if (!entry) {
      const all = colourImage(lensData, metric, prompt, void 0, target, domain);
      const image = columns ? pickColumns(all, columns) : all;
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, image.width);
      canvas.height = Math.max(1, image.height);
      if (image.width > 0) context2d(canvas).putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
      entry = { canvas, data: image.data, width: image.width };
      if (this.images.size >= 8) {
        const oldest = this.images.keys().next().value;
        if (oldest !== void 0) this.images.delete(oldest);
      }
      this.images.set(key, entry);
    }
    return entry;
  }
  /**
   * Draws the visible part of the heatmap, its strips and labels (synchronously).
   * @param {Layout} layout
   * @param {Scene} scene
   * @param {number} scroll
   * @returns {[number, number]} the visible columns drawn
   */
  draw(layout, scene, scroll) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const ctx = this.prepareCanvas(layout);
    const [c0, c1] = visibleColumns(layout, scroll);
    const f = {
      ctx,
      layout,
      theme: this.readTheme(),
      scene,
      scroll,
      c0,
      c1,
      x0: columnX(layout, c0, scroll),
      span: (c1 - c0) * layout.cellW,
      image: this.colourCanvas(scene.prompt, scene.metric, layout.columns, scene.target, scene.domain ?? null),
      offset: lensData.offsets[scene.prompt]
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
    return [c0, c1];
  }
  /**
   * Sizes the canvas for the layout and the device pixel ratio; returns a cleared context.
   * @param {Layout} layout
   */
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
    const ctx = context2d(canvas);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.direction = "ltr";
    return ctx;
  }
  /**
   * The answer mask of the prompt shown (`answer_top1`: 1 where the top-1 is the answer), or null.
   * @param {number} prompt
   */
  answerMask(prompt) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const mask = lensData.arrays.answer_top1;
    return mask && !promptHasNoValue(lensData, "answer_top1", prompt) ? mask : null;
  }
  /**
   * The cells: the cached colour image scaled up, grid gaps, settled dots, answer corners and
   * top-1 text.
   * @param {Frame} f
   */
  drawCells({ ctx, layout, theme, scene, scroll, c0, c1, x0, span, image, offset }) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const a = lensData.arrays;
    const { cellW, rowH, heatY, heatH } = layout;
    const L = lensData.L;
    const n = layout.nPositions;
    if (theme.hatchPattern && (a.missing || a.final_missing)) {
      ctx.fillStyle = theme.hatchPattern;
      ctx.fillRect(x0, heatY, span, heatH);
    }
    if (c1 > c0) {
      ctx.imageSmoothingEnabled = false;
      ctx.globalAlpha = scene.loading ? 0.45 : 1;
      ctx.drawImage(image.canvas, c0, 0, c1 - c0, L, x0, heatY, span, heatH);
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = theme.grid;
    if (cellW >= 10) for (let j = c0; j <= c1; j++) ctx.fillRect(columnX(layout, j, scroll) - 0.5, heatY, 1, heatH);
    if (rowH >= 9) for (let r = 1; r < L; r++) ctx.fillRect(x0, heatY + r * rowH - 0.5, span, 1);
    const data = image.data;
    const predicted = a.predicted_tokens;
    const finals = a.final_tokens;
    const finalMissing = a.final_missing;
    const dot = Math.max(1.5, Math.min(3, rowH / 5));
    const darkDots = new Path2D();
    const lightDots = new Path2D();
    const answers = this.answerMask(scene.prompt);
    const darkCorners = new Path2D();
    const lightCorners = new Path2D();
    const text = layout.showCellText && !scene.loading;
    const chars = layout.cellChars;
    ctx.font = theme.cellFont;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const columns = layout.columns;
    for (let row = 0; row < L; row++) {
      const y = heatY + row * rowH;
      const base = (L - 1 - row) * lensData.T + offset;
      for (let j = c0; j < c1; j++) {
        const o = (row * n + j) * 4;
        if (data[o + 3] === 0) continue;
        const p = columns ? columns[j] : j;
        const colour = textOn(data[o], data[o + 1], data[o + 2]);
        const x = columnX(layout, j, scroll);
        const token = predicted[base + p];
        if (finals && token === finals[offset + p] && !(finalMissing && finalMissing[offset + p])) {
          const path = colour === "#000000" ? darkDots : lightDots;
          const cx = x + cellW - dot - 2.5;
          const cy = y + Math.min(rowH / 2, dot + 2);
          path.moveTo(cx + dot, cy);
          path.arc(cx, cy, dot, 0, 2 * Math.PI);
        }
        if (answers && answers[base + p]) {
          const [a0, a1, a2] = answerMarkTriangle({ x, y, w: cellW, h: rowH });
          const path = colour === "#000000" ? darkCorners : lightCorners;
          path.moveTo(a0[0], a0[1]);
          path.lineTo(a1[0], a1[1]);
          path.lineTo(a2[0], a2[1]);
          path.closePath();
        }
        if (text) {
          ctx.fillStyle = colour;
          ctx.fillText(this.cellText(token, chars), x + cellW / 2 - (cellW > 40 ? 2 : 0), y + rowH / 2 + 0.5);
        }
      }
    }
    ctx.fillStyle = "#000000";
    ctx.fill(darkDots);
    ctx.fill(darkCorners);
    ctx.fillStyle = "#ffffff";
    ctx.fill(lightDots);
    ctx.fill(lightCorners);
  }
  /**
   * Under the cells: the input tokens, then the highlighted layer's predictions as chips.
   * @param {Frame} f
   */
  drawStrips({ ctx, layout, theme, scene, scroll, c0, c1, x0, span, image, offset }) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const a = lensData.arrays;
    const layer = scene.layer;
    const { cellW, inputY, predY, stripH } = layout;
    const data = image.data;
    const n = layout.nPositions;
    const row = lensData.L - 1 - layer;
    const base = layer * lensData.T + offset;
    const chars = layout.cellChars;
    const finals = a.final_tokens;
    const finalMissing = a.final_missing;
    const answers = this.answerMask(scene.prompt);
    const columns = layout.columns;
    const generated = a.generated;
    const roles = a.token_roles;
    const roleColours = roles ? roleStyles(roleNames(lensData)).map((r) => r.colour) : [];
    const band = roles ? 3 : 0;
    ctx.fillStyle = theme.stripBg;
    ctx.fillRect(x0, inputY, span, stripH);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let j = c0; j < c1; j++) {
      const p = columns ? columns[j] : j;
      const x = columnX(layout, j, scroll);
      const isGenerated2 = Boolean(generated && generated[offset + p]);
      if (isGenerated2) {
        ctx.fillStyle = theme.generatedBg;
        ctx.fillRect(x, inputY, cellW, stripH);
      }
      if (roles) {
        ctx.fillStyle = roleColours[roles[offset + p]] ?? theme.muted;
        ctx.fillRect(x + 1, inputY + stripH - band, cellW - 2, band);
      }
      const isBytes = hasBytes(lensData.tokens[a.input_ids[offset + p]]);
      ctx.font = isGenerated2 || isBytes ? theme.cellItalic : theme.cellFont;
      ctx.fillStyle = isBytes ? theme.muted : theme.fg;
      ctx.fillText(this.cellText(a.input_ids[offset + p], chars), x + cellW / 2, inputY + (stripH - band) / 2 + 0.5);
      ctx.font = theme.cellFont;
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
      ctx.fillText(this.cellText(a.predicted_tokens[base + p], chars), x + cellW / 2, predY + stripH / 2 + 0.5);
      if (finals && a.predicted_tokens[base + p] === finals[offset + p] && !(finalMissing && finalMissing[offset + p])) {
        ctx.beginPath();
        ctx.arc(chip.x + chip.w - 4, chip.y + 4, 2, 0, 2 * Math.PI);
        ctx.fill();
      }
      if (answers && answers[base + p]) {
        const [a0, a1, a2] = answerMarkTriangle({ x: chip.x, y: chip.y, w: chip.w, h: chip.h });
        ctx.beginPath();
        ctx.moveTo(a0[0], a0[1]);
        ctx.lineTo(a1[0], a1[1]);
        ctx.lineTo(a2[0], a2[1]);
        ctx.closePath();
        ctx.fill();
      }
    }
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    const stride = niceCeil(Math.max(1, 28 / cellW));
    for (let j = c0 - c0 % stride; j < c1; j += stride) {
      ctx.fillText(String(columns ? columns[j] : j), columnX(layout, j, scroll) + cellW / 2, layout.heatY - 4);
    }
  }
  /**
   * The highlighted row, the pinned, hovered and focused cells, and scroll shadows.
   * @param {Frame} f
   */
  drawMarks({ ctx, layout, theme, scene, scroll, c0, c1 }) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const { labelW, width: W, rowH, heatY, predY, stripH } = layout;
    const highlighted = cellRect(layout, scene.layer, 0, 0);
    ctx.strokeStyle = theme.accent;
    ctx.lineWidth = 2;
    const right = Math.min(W - 1, columnX(layout, layout.nPositions, scroll) + 1);
    ctx.strokeRect(labelW + 1, highlighted.y - 1, right - labelW - 2, rowH + 2);
    const boundary = generationColumn(lensData, scene.prompt, layout.columns);
    if (boundary > 0 && boundary >= c0 && boundary <= c1) {
      const x = columnX(layout, boundary, scroll);
      ctx.fillStyle = theme.generated;
      ctx.fillRect(x - 1.5, heatY - 2, 3, predY + stripH - heatY + 2);
    }
    const outline = (cell, style, width, dash = []) => {
      if (!cell) return;
      const column = columnOf(layout, cell.position);
      if (column < c0 || column >= c1) return;
      const r = cellRect(layout, cell.layerIndex, column, scroll);
      ctx.strokeStyle = style;
      ctx.lineWidth = width;
      ctx.setLineDash(dash);
      ctx.strokeRect(r.x + width / 2, r.y + width / 2, r.w - width, r.h - width);
      ctx.setLineDash([]);
    };
    const sel = scene.selected;
    if (sel && sel.prompt === scene.prompt && sel.layer_index < lensData.L && sel.position < lensData.lengths[scene.prompt]) {
      const cell = { layerIndex: sel.layer_index, position: sel.position };
      outline(cell, theme.bg, 4);
      outline(cell, theme.fg, 2);
    }
    outline(scene.hover, theme.fg, 1);
    outline(scene.focus, theme.focus, 2, [3, 2]);
    const shade = (x, dir) => {
      const g = ctx.createLinearGradient(x, 0, x + 10 * dir, 0);
      g.addColorStop(0, theme.shadow);
      g.addColorStop(1, "rgba(0,0,0,0)");
      ctx.fillStyle = g;
      ctx.fillRect(dir > 0 ? x : x - 10, heatY, 10, predY + stripH - heatY);
    };
    if (scroll > 0) shade(labelW, 1);
    if (scroll < layout.maxScroll) shade(W, -1);
  }
  /**
   * Row labels (layer numbers; "3 attn" for a sublayer row) and strip labels, kept in view at
   * the left.
   * @param {Frame} f
   */
  drawLabels({ ctx, layout, theme, scene }) {
    const lensData = (
      /** @type {LensData} */
      this.lensData
    );
    const layer = scene.layer;
    const { labelW, rowH, heatY, inputY, predY, stripH } = layout;
    const L = lensData.L;
    const hlRow = L - 1 - layer;
    const every = labelStride(rowH, 12);
    const x = labelW - 8;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let row = 0; row < L; row++) {
      const i = L - 1 - row;
      const isHl = i === layer;
      if (!isHl && !rowLabelled(lensData, i, every)) continue;
      if (!isHl && Math.abs(row - hlRow) * rowH < 11) continue;
      ctx.font = isHl ? theme.labelBold : theme.labelFont;
      ctx.fillStyle = isHl ? theme.accent : theme.muted;
      ctx.fillText(rowLabel(lensData, i, "axis"), x, heatY + row * rowH + rowH / 2 + 0.5);
    }
    ctx.fillStyle = theme.accent;
    ctx.fillRect(labelW - 4, heatY + hlRow * rowH, 3, rowH);
    ctx.font = theme.labelFont;
    ctx.fillStyle = theme.muted;
    ctx.fillText("input", x, inputY + stripH / 2 + 0.5);
    ctx.font = theme.labelBold;
    ctx.fillStyle = theme.accent;
    ctx.fillText(rowLabel(lensData, layer), x, predY + stripH / 2 + 0.5);
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    ctx.fillText("layer", x, heatY - 4);
  }
};

// src/heatmap/details.js
function capitalise(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
function cellAnswer(data, prompt, layerIndex, position) {
  const set = data.answerSets[0];
  const text = set ? set.answers[prompt] : null;
  if (!set || text === null) return null;
  const idx = cellIndex(data, prompt, layerIndex, position);
  if (isMissing(data, idx)) return { text, prob: null, step: 0, rank: null, whole: false };
  const last = position === data.lengths[prompt] - 1;
  const at = last ? promptSetIndex(data, layerIndex, prompt, 0) : idx;
  const section = last ? "answer_probs" : "answer_token_probs";
  const prob = sectionValue(data, section, at);
  const rank = sectionValue(data, last ? "answer_ranks" : "answer_token_ranks", at);
  const whole = last && ((set.nTokens[prompt] ?? 1) > 1 || set.nAccepted[prompt] > 1);
  return { text, prob: Number.isFinite(prob) ? prob : null, step: data.scales[section] ?? 0, rank: Number.isFinite(rank) ? rank : null, whole };
}
function tokenAt(data, index) {
  return data.tokens[index] ?? "";
}
function promptTokens(data, prompt) {
  const offset = data.offsets[prompt];
  return Array.from({ length: data.lengths[prompt] }, (_, p) => tokenAt(data, data.arrays.input_ids[offset + p]));
}
function cellDetails(data, prompt, layerIndex, position, target = 0) {
  const idx = cellIndex(data, prompt, layerIndex, position);
  const col = data.offsets[prompt] + position;
  const a = data.arrays;
  const missing = isMissing(data, idx);
  const finalMissing = isFinalMissing(data, col);
  const top = [];
  let blockPending = false;
  if (!missing) {
    const probs = a.max_probs;
    const step = probs ? data.scales.max_probs : 0;
    top.push({ token: tokenAt(data, a.predicted_tokens[idx]), prob: probs ? probs[idx] * step : NaN, step });
    if (data.topK > 1) {
      const k1 = data.topK - 1;
      const topkStep = data.scales.topk_probs;
      const block = data.topkWindow ? data.topkBlocks?.get(col - col % data.topkWindow) : null;
      if (!data.topkWindow) {
        for (let r = 0; r < k1; r++) {
          top.push({ token: tokenAt(data, a.topk_tokens[idx * k1 + r]), prob: a.topk_probs[idx * k1 + r] * topkStep, step: topkStep });
        }
      } else if (block) {
        const at = (layerIndex * block.width + col - block.start) * k1;
        for (let r = 0; r < k1; r++) {
          top.push({ token: block.strings[block.tokens[at + r]] ?? "", prob: block.probs[at + r] * block.scale, step: block.scale });
        }
      } else blockPending = true;
    }
  }
  const metrics = [];
  let finalRank = null;
  for (const spec of data.metrics) {
    if (!spec.available || !a[spec.field]) continue;
    const v = metricValue(data, spec.name, idx, target);
    const value = Number.isFinite(v) ? v : null;
    metrics.push({ spec, label: metricLabel(data, spec, target, true), value, step: data.scales[spec.field] });
    if (finalRank === null && spec.unit === "rank" && spec.finalBased) finalRank = value;
  }
  const finalTokens = a.final_tokens;
  return {
    prompt,
    layerIndex,
    layer: data.layers[layerIndex],
    rowName: rowLabel(data, layerIndex),
    rowLong: rowLabel(data, layerIndex, "long"),
    isLastRow: layerIndex === data.L - 1,
    isLastPosition: position === data.lengths[prompt] - 1,
    position,
    input: tokenAt(data, a.input_ids[col]),
    inputWhole: hasBytes(tokenAt(data, a.input_ids[col])) ? wholeCharacter(promptTokens(data, prompt), position) : null,
    finalToken: finalTokens ? tokenAt(data, finalTokens[col]) : null,
    finalMissing,
    missing,
    settled: Boolean(finalTokens) && !missing && !finalMissing && a.predicted_tokens[idx] === finalTokens[col],
    top,
    metrics,
    finalRank,
    detailsLoaded: !detailsPending(data) && !blockPending,
    answerTop1: isAnswerTop1(data, prompt, layerIndex, position),
    answer: cellAnswer(data, prompt, layerIndex, position),
    generated: isGenerated(data, prompt, position),
    role: tokenRole(data, prompt, position)
  };
}
var DETAILS_TIMEOUT_MS = 5e3;
function waitingNote(what, late) {
  return late ? `Waiting for the kernel to send ${what}: it is busy, or there is none (a saved notebook: run its cell).` : `Loading ${what}…`;
}
function detailsPending(data) {
  return data.detailSections.some((name) => Boolean(data.meta.sections?.[name]) && !data.arrays[name] && !(data.topkWindow && BY_BLOCKS.includes(name)));
}
var BY_BLOCKS = ["topk_tokens", "topk_probs", "detail_tokens"];
var NO_VALUE = "no value (non-finite)";
function tooltipModel(details, { late = false } = {}) {
  const rows = [];
  rows.push({ label: "input", value: displayToken(details.input), token: true });
  const whole = details.inputWhole;
  if (whole) {
    const where = whole.from === whole.to ? `position ${whole.from}` : `positions ${whole.from}–${whole.to}`;
    rows.push({ label: "character", value: `${displayToken(whole.text)} = ${whole.bytes}`, token: true, title: `The input token holds part of a character (its bytes, <0x..>): the whole character and its UTF-8 bytes, from the tokens at ${where}` });
  }
  const mark = tokenMarkText(details.generated, details.role);
  if (mark) rows.push({ label: "token", value: mark, title: "Who wrote the input token: generated by the model, and its role in the chat" });
  if (details.finalToken !== null) {
    rows.push(details.finalMissing ? { label: "final prediction", value: NO_VALUE } : { label: "final prediction", value: displayToken(details.finalToken), token: true });
  }
  if (details.answer && !details.missing) {
    const { text, prob, step, rank, whole: whole2 } = details.answer;
    rows.push({ label: "answer", value: displayToken(text), token: true, title: "The prompt's answer (its first accepted form)" });
    if (rank !== null) rows.push({ label: "answer rank", value: formatRank(rank), title: "Where the answer's first token stands in this layer's ranking (0 = top-1)" });
    if (whole2 && prob !== null) {
      rows.push({ label: "whole answer", value: formatProb(prob, step), title: "The probability of the whole answer after the prompt: all its tokens, teacher-forced, its accepted forms summed" });
    }
  }
  if (!details.missing) {
    for (const { spec, label, value, step } of details.metrics) {
      rows.push({
        label,
        value: value === null ? "–" : formatMetric(spec, value, false, step),
        title: spec.description || spec.label
      });
    }
  }
  let note = "";
  if (details.missing) note = `No value (non-finite): this layer's output was not finite here.`;
  else if (details.finalMissing && details.finalToken !== null) note = "The model's final distribution was not finite here: no value for what is measured against it.";
  else if (!details.detailsLoaded) note = waitingNote("details", late);
  return {
    title: `${capitalise(details.rowLong)} · position ${details.position}`,
    badge: [details.generated ? "generated" : "", details.settled ? "= final" : "", details.answerTop1 ? "= answer" : ""].filter(Boolean).join(" · "),
    rows,
    top: details.top.map((entry, rank) => ({
      rank,
      text: displayToken(entry.token),
      prob: formatProb(entry.prob, entry.step),
      width: Number.isFinite(entry.prob) ? Math.max(0, Math.min(1, entry.prob)) : 0
    })),
    note
  };
}
function readoutText(details, { pinned = false, metric = "" } = {}) {
  const mark = tokenMarkText(details.generated, details.role);
  const parts = [`${capitalise(details.rowLong)}, position ${details.position}, input ${displayToken(details.input)}${mark ? ` (${mark})` : ""}`];
  if (details.missing) parts.push(NO_VALUE);
  else {
    const top = details.top[0];
    parts.push(`top-1 ${displayToken(top.token)} ${formatProb(top.prob, top.step)}`);
    if (details.answerTop1) parts.push("the answer");
    if (details.settled) parts.push("equals the final prediction");
    else if (details.finalToken !== null && details.finalMissing) parts.push(`final prediction: ${NO_VALUE}`);
    else if (details.finalToken !== null) {
      const rank = details.finalRank !== null ? ` at ${formatRank(details.finalRank)}` : "";
      parts.push(`final prediction ${displayToken(details.finalToken)}${rank}`);
    }
    const colour = details.metrics.find((m) => m.spec.name === metric && m.spec.field !== "max_probs");
    if (colour) parts.push(`${colour.label} ${colour.value === null ? "–" : formatMetric(colour.spec, colour.value, false, colour.step)}`);
  }
  if (pinned) parts.push("pinned");
  return `${parts.join("; ")}.`;
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
function isSelected(selected, prompt, layerIndex, position) {
  return Boolean(
    selected && selected.prompt === prompt && selected.layer_index === layerIndex && selected.position === position
  );
}
function toggleSelection(selected, prompt, layerIndex, position) {
  if (isSelected(selected, prompt, layerIndex, position)) return null;
  return { prompt, layer_index: layerIndex, position };
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
  for (const name of TOKEN_SECTIONS2) {
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
var TOKEN_SECTIONS2 = Object.freeze(["input_a", "input_b", "token", "topk_tokens_a", "topk_tokens_b"]);
function tokenAt2(diff, name, i) {
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
      const text = tokenAt2(diff, `topk_tokens_${side}`, index * diff.K + r);
      if (text !== null) out.push({ token: displayToken(text), prob: probs[index * diff.K + r] * scale });
    }
    return out;
  };
  const shown = (name) => {
    const text = tokenAt2(diff, name, t);
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
    inputA: displayToken(tokenAt2(diff, "input_a", t)),
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

// src/shared/dom.js
var SVG_NS = "http://www.w3.org/2000/svg";
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
function s(tag, attrs = {}, text) {
  return fill(
    /** @type {SVGElement} */
    document.createElementNS(SVG_NS, tag),
    attrs,
    text
  );
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
function sameCell(a, b) {
  return a === b || Boolean(a && b && a.layerIndex === b.layerIndex && a.position === b.position);
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
    const metricLabel2 = h("label", "murano-diff-metric", {}, "Colour ");
    this.metricSelect = h("select", "murano-diff-metric-select", { "aria-label": "Colour by" });
    metricLabel2.append(this.metricSelect);
    controls.append(this.promptLabel, metricLabel2);
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
    const s2 = this.selected;
    return Boolean(s2 && s2.prompt === this.prompt && s2.layer_index === cell.layerIndex && s2.position === cell.position);
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
      for (const tick2 of ticks) tickRow.append(h("span", "", {}, tick2));
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
      const s2 = this.selected;
      this.focus = s2 && s2.prompt === this.prompt ? { layerIndex: s2.layer_index, position: s2.position } : { layerIndex: diff.L - 1, position: 0 };
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

// src/heatmap/live/patch.js
function patchTarget(data, selected) {
  if (!data || !selected) return { ok: false, reason: "Pin a cell to patch it." };
  if (!(selected.prompt >= 0 && selected.prompt < data.P)) return { ok: false, reason: "Pin a cell to patch it." };
  const row = clampIndex(selected.layer_index, data.L);
  const position = clampIndex(selected.position, data.lengths[selected.prompt]);
  if (data.sites && data.sites[row] !== "resid_post") {
    return { ok: false, reason: "A patch overwrites a block's output: pin a cell on a block-output row (not one after attention)." };
  }
  const where = data.P > 1 ? `${promptName(selected.prompt)} · ` : "";
  return { ok: true, prompt: selected.prompt, row, layer: data.layers[row], position, label: `${where}${rowLabel(data, row)} · pos ${position}` };
}
function patchSources(prompts, prompt) {
  const others = prompts.flatMap(
    (text, i) => i === prompt ? [] : [{ value: String(i), label: `${promptName(i)}: ${truncateText(displayToken(text, { spaces: false }), 40)}` }]
  );
  return [...others, { value: "zero", label: "zero (ablate)" }, { value: "mean", label: "mean (ablate)" }];
}
function sourceOf(value) {
  return value === "zero" || value === "mean" ? value : Number(value);
}
function isPatch(value) {
  if (!value || typeof value !== "object") return false;
  const v = (
    /** @type {Record<string, unknown>} */
    value
  );
  return Number.isInteger(v.prompt) && Number.isInteger(v.layer) && Number.isInteger(v.position) && (v.source === "zero" || v.source === "mean" || Number.isInteger(v.source));
}
function patchSummary(patch, prompts, token = null) {
  const source = patch.source === "zero" ? "set to zero" : patch.source === "mean" ? "set to its mean" : `replaced by ${promptName(patch.source)}'s${prompts[patch.source] !== void 0 ? ` (${truncateText(displayToken(prompts[patch.source], { spaces: false }), 40)})` : ""}`;
  const where = prompts.length > 1 ? `Prompt ${patch.prompt}: block` : "Block";
  const at = typeof token === "string" ? ` (${truncateText(displayToken(token), 24)})` : "";
  const title = `${where} ${patch.layer}'s output at position ${patch.position}${at} ${source}.`;
  const change = (label, token2, clean, patched) => typeof token2 === "string" && typeof clean === "number" && typeof patched === "number" ? [`${label} ${displayToken(token2)}: ${formatProb(clean)} → ${formatProb(patched)}`] : [];
  const answer = [
    ...change("Answer", patch.answer, patch.answer_prob_clean, patch.answer_prob_patched),
    ...change("Tracked", patch.target, patch.target_prob_clean, patch.target_prob_patched)
  ].join(" · ");
  return { title, answer };
}
function patchModel(model) {
  const values = { _meta: {}, _sections: {}, prompt: 0, metric: "delta_prob", selected: null };
  const local = kernelFreeModel(values);
  let taken = { meta: (
    /** @type {unknown} */
    null
  ), sections: (
    /** @type {unknown} */
    null
  ) };
  const changed = () => {
    const meta = model.get("_patch_meta");
    const sections = model.get("_patch_sections");
    if (meta === taken.meta && sections === taken.sections) return;
    const empty = !meta || typeof meta !== "object" || Object.keys(meta).length === 0;
    if (!empty) {
      try {
        decodeDiff(meta, sections || {});
      } catch {
        return;
      }
    }
    taken = { meta, sections };
    values._sections = empty ? {} : sections;
    local.set("_meta", empty ? {} : { ...meta });
  };
  changed();
  model.on("change:_patch_meta", changed);
  model.on("change:_patch_sections", changed);
  return {
    ...local,
    set(name, value) {
      if (name !== "_meta" && name !== "_sections") local.set(name, value);
    },
    ready: () => Object.keys(values._meta).length > 0,
    dispose() {
      model.off("change:_patch_meta", changed);
      model.off("change:_patch_sections", changed);
      local.off();
    }
  };
}

// src/heatmap/live/picker.js
function pickerColumn(state, length) {
  const clamp = (p) => Math.min(Math.max(0, length - 1), Math.max(0, p));
  if (state.focused && state.focus) return { position: clamp(state.focus.position), source: "focus" };
  const sel = state.selected;
  if (sel && sel.prompt === state.prompt) return { position: clamp(sel.position), source: "pinned" };
  return { position: Math.max(0, length - 1), source: "last" };
}
function comparePicked(a, b) {
  if (a.prob !== b.prob) return b.prob - a.prob;
  if (a.row !== b.row) return a.row - b.row;
  return a.token < b.token ? -1 : a.token > b.token ? 1 : 0;
}
function pickerTokens(data, prompt, position) {
  const a = data.arrays;
  const k1 = data.topK - 1;
  const complete = Boolean(a.topk_tokens && a.topk_probs) || !data.meta.sections?.topk_tokens;
  const best = /* @__PURE__ */ new Map();
  const offer = (tokenIndex, prob, row) => {
    if (!Number.isFinite(prob) || tokenIndex >= data.tokens.length) return;
    const seen = best.get(tokenIndex);
    if (seen && seen.prob >= prob) return;
    best.set(tokenIndex, { token: data.tokens[tokenIndex], tokenIndex, prob, row, layer: data.layers[row] });
  };
  const topStep = data.scales.max_probs ?? 1;
  const topkStep = data.scales.topk_probs ?? 1;
  for (let row = 0; row < data.L; row++) {
    const idx = cellIndex(data, prompt, row, position);
    if (isMissing(data, idx)) continue;
    offer(a.predicted_tokens[idx], a.max_probs ? a.max_probs[idx] * topStep : NaN, row);
    if (k1 > 0 && a.topk_tokens && a.topk_probs) {
      for (let r = 0; r < k1; r++) offer(a.topk_tokens[idx * k1 + r], a.topk_probs[idx * k1 + r] * topkStep, row);
    }
  }
  return { tokens: [...best.values()].sort(comparePicked), complete };
}

// src/heatmap/live/protocol.js
var HELLO_TIMEOUT_MS = 3e3;
var REPLY_TIMEOUT_MS = 6e4;
var NO_KERNEL_TEXT = "Editing needs a running kernel: run the notebook to type prompts, track tokens or patch.";
var ACTIONS = Object.freeze(["add_prompt", "remove_prompt", "track", "untrack", "patch", "clear_patch", "describe_patchscope", "group"]);
var REPLIES = Object.freeze(["done", "error", "superseded"]);
function initialState({ live, canSend, firstId = 1 }) {
  return {
    kernel: !live ? "off" : canSend ? "waiting" : "none",
    nextId: firstId,
    helloId: -1,
    helloAt: 0,
    latest: null,
    open: [],
    dismissed: false
  };
}
function hello(state, now) {
  if (state.kernel !== "waiting") return { state, message: null };
  const id = state.nextId;
  return { state: { ...state, nextId: id + 1, helloId: id, helloAt: now }, message: { action: "hello", id } };
}
function request(state, action, fields, now) {
  if (!ACTIONS.includes(action)) throw new Error(`unknown action ${JSON.stringify(action)}`);
  if (state.kernel === "off" || state.kernel === "none") return { state, message: null };
  const id = state.nextId;
  const latest = { id, action, fields: { ...fields }, sentAt: now, phase: "running", message: "", waited: 0 };
  return {
    state: { ...state, nextId: id + 1, latest, open: [...state.open, id], dismissed: false },
    message: { ...fields, action, id }
  };
}
function receive(state, msg) {
  if (!msg || typeof msg !== "object") return state;
  const { action, id, message, live } = (
    /** @type {Record<string, unknown>} */
    msg
  );
  if (typeof id !== "number") return state;
  if (action === "hello") {
    if (id !== state.helloId || state.kernel === "off") return state;
    return { ...state, kernel: live === true ? "ready" : "off" };
  }
  if (typeof action !== "string" || !REPLIES.includes(action) || !state.open.includes(id)) return state;
  const next = { ...state, open: state.open.filter((open) => open !== id) };
  if (next.kernel === "none" || next.kernel === "waiting") next.kernel = "ready";
  const latest = state.latest;
  if (latest && latest.id === id) {
    next.latest = { ...latest, phase: (
      /** @type {Phase} */
      action
    ), message: typeof message === "string" ? message : "" };
    next.dismissed = false;
  }
  return next;
}
function tick(state, now, { hello: helloMs = HELLO_TIMEOUT_MS, reply = REPLY_TIMEOUT_MS } = {}) {
  let next = state;
  if (state.kernel === "waiting" && state.helloId >= 0 && now - state.helloAt >= helloMs) next = { ...next, kernel: "none" };
  const latest = next.latest;
  if (latest && latest.phase === "running" && now - latest.sentAt >= reply) {
    next = { ...next, latest: { ...latest, phase: "timeout", waited: reply }, dismissed: false };
  }
  return next;
}
function nextDeadline(state, { hello: helloMs = HELLO_TIMEOUT_MS, reply = REPLY_TIMEOUT_MS } = {}) {
  const times = [];
  if (state.kernel === "waiting" && state.helloId >= 0) times.push(state.helloAt + helloMs);
  if (state.latest && state.latest.phase === "running") times.push(state.latest.sentAt + reply);
  return times.length ? Math.min(...times) : null;
}
function noKernel(state) {
  return state.kernel === "off" ? state : { ...state, kernel: "none" };
}
function dismiss(state) {
  return { ...state, dismissed: true };
}
function controlsShown(state) {
  return state.kernel === "waiting" || state.kernel === "ready";
}
function describeRequest(action, fields, phase) {
  const text = typeof fields.text === "string" ? fields.text : "";
  const quoted = quoteToken(text, { spaces: action === "track" || action === "untrack" });
  const running = phase === "running";
  switch (action) {
    case "add_prompt":
      return running ? `Running the lens on ${quoted}…` : `Added ${quoted}.`;
    case "remove_prompt":
      return running ? `Removing ${promptName(Number(fields.index))}…` : `Removed ${promptName(Number(fields.index))}.`;
    case "track":
      return running ? `Tracking ${quoted}…` : `Tracking ${quoted}.`;
    case "untrack":
      return running ? `No longer tracking ${quoted}…` : `No longer tracking ${quoted}.`;
    case "patch":
      return running ? `Patching ${promptName(Number(fields.prompt))}: block ${fields.layer}'s output at position ${fields.position}, with ${patchWith(fields.source)}…` : "Patched.";
    case "clear_patch":
      return running ? "Clearing the patch…" : "Patch cleared.";
    case "describe_patchscope":
      return running ? `Describing ${promptName(Number(fields.prompt))}: block ${fields.layer}'s output at position ${fields.position}…` : "Described.";
    case "group":
      return running ? `Tracking the word ${quoted} as a group…` : `Tracking the word ${quoted} as a group.`;
    default:
      return running ? "Working…" : "Done.";
  }
}
function patchWith(source) {
  if (typeof source === "number" && Number.isInteger(source)) return `${promptName(source)}'s output`;
  if (source === "zero") return "zero";
  if (source === "mean") return "the mean";
  return quoteToken(String(source));
}
function isLiveStatus(value) {
  if (!value || typeof value !== "object") return false;
  const v = (
    /** @type {Record<string, unknown>} */
    value
  );
  return typeof v.state === "string" && typeof v.request === "number";
}
function statusLine(state, liveStatus) {
  if (state.kernel === "off") return { kind: "none", text: "", id: -1 };
  if (state.kernel === "none") return { kind: "no-kernel", text: NO_KERNEL_TEXT, id: -1 };
  const status = isLiveStatus(liveStatus) ? liveStatus : null;
  const latest = state.latest;
  if (latest) {
    const about = status && status.request === latest.id ? status : null;
    const message = about && typeof about.message === "string" && about.message || "";
    switch (latest.phase) {
      case "running":
        if (about && about.state === "error") {
          return state.dismissed ? { kind: "none", text: "", id: latest.id } : { kind: "error", text: message || "The kernel reported an error.", id: latest.id };
        }
        return { kind: "progress", text: message || describeRequest(latest.action, latest.fields, "running"), id: latest.id };
      case "error":
        if (state.dismissed) break;
        return { kind: "error", text: latest.message || message || "The kernel reported an error.", id: latest.id };
      case "timeout":
        if (state.dismissed) break;
        return {
          kind: "error",
          text: `No reply from the kernel after ${formatWait(latest.waited)} (${lowerFirst(describeRequest(latest.action, latest.fields, "running").replace(/…$/, ""))}): it may still be working, or the kernel stopped.`,
          id: latest.id
        };
      case "superseded":
        return { kind: "note", text: "Superseded: a newer request took its place.", id: latest.id };
      case "done":
        if (status && status.request === -1 && status.state === "running") break;
        return { kind: "done", text: describeRequest(latest.action, latest.fields, "done"), id: latest.id };
    }
  }
  if (status && status.request === -1 && status.state === "running") {
    return { kind: "progress", text: status.message || "Python is running a request…", id: -1 };
  }
  return { kind: "none", text: "", id: -1 };
}
function formatWait(ms) {
  const seconds = ms / 1e3;
  return `${seconds >= 10 ? Math.round(seconds) : Number(seconds.toPrecision(2))} s`;
}
function lowerFirst(text) {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

// src/shared/lens_names.js
function lensMenuText(name, title) {
  const plain = (t) => t.toLowerCase().replace(/ lens$/, "");
  return plain(title) === plain(name) ? title : `${title} (${name})`;
}

// src/heatmap/view/controls.js
function showData(ui, data) {
  const kind = lensTitle(data);
  ui.titleEl.textContent = kind;
  ui.modelEl.textContent = data.modelName;
  ui.modelEl.hidden = !data.modelName;
  if (data.modelName) ui.modelEl.setAttribute("title", data.modelName);
  ui.root.setAttribute("aria-label", `${kind}${data.modelName ? ` of ${data.modelName}` : ""}`);
  ui.metricSelect.replaceChildren(
    ...data.metrics.map((spec) => {
      const reason = spec.available ? "" : spec.unavailableReason || "not in this result";
      const text = reason ? `${shortLabel(spec.label)} (${reason.split(/[:,;]/)[0].trim()})` : spec.label;
      const option = h("option", "", { value: spec.name }, text);
      option.disabled = !spec.available;
      option.title = reason ? `Not available: ${reason}` : spec.description;
      return option;
    })
  );
  ui.promptUi.input.max = String(data.P - 1);
  const single = data.P < 2;
  ui.promptUi.row.classList.toggle("murano-single", single);
  ui.promptUi.input.hidden = single;
  ui.promptUi.label.hidden = single;
  ui.promptUi.output.hidden = single;
  ui.layerUi.input.max = String(data.L - 1);
  ui.missingKey.hidden = !data.arrays.missing && !data.arrays.final_missing && Object.keys(data.noValue).length === 0;
  ui.answerKey.hidden = data.answerSets.length === 0;
  const first = data.answerSets[0];
  const named = first && (data.answerSets.length > 1 || first.name !== "answer") ? ` (${first.name})` : "";
  const keyText = ui.answerKey.lastElementChild;
  if (keyText) keyText.textContent = `top-1 = the answer${named}`;
  ui.settledKey.hidden = !data.arrays.final_tokens;
  ui.generatedKey.hidden = !data.arrays.generated;
  const roles = rolesPresent(data);
  ui.roleKeys.hidden = roles.length === 0;
  ui.roleKeys.replaceChildren(
    ...roles.map((role) => {
      const key = h("span", `murano-key murano-key-role`, { "data-role": role.name });
      const band = h("span", "murano-key-band", { "aria-hidden": "true" });
      band.style.background = role.colour;
      key.append(band, h("span", "", {}, role.label));
      return key;
    })
  );
  ui.hideTemplateLabel.hidden = !hasTemplateTokens(data);
}
function showLensMenu(ui, lenses, shown) {
  ui.lensLabel.hidden = lenses.length < 2;
  ui.lensSelect.replaceChildren(
    ...lenses.map((lens) => {
      const title = lensTitle(lens);
      return h("option", "", { value: lens.lensName }, lensMenuText(lens.lensName, title));
    })
  );
  ui.lensSelect.value = shown;
}
function lensTitle(data) {
  if (data.lensTitle) return data.lensTitle;
  const kind = data.lensKind || "logit";
  return `${kind.charAt(0).toUpperCase()}${kind.slice(1)} lens`;
}
function showControls(ui, data, state) {
  const { input: promptInput, output: promptOutput, extra: promptText } = ui.promptUi;
  promptInput.value = String(state.prompt);
  promptOutput.textContent = indexReadout(state.prompt, data.P);
  const text = displayToken(shownPromptText(data, state.prompt, Boolean(state.hide_template)), { spaces: false });
  promptText.textContent = text;
  promptText.setAttribute("title", text);
  promptInput.setAttribute("aria-valuetext", `prompt ${indexSpoken(state.prompt, data.P)}: ${truncateText(text, 80)}`);
  ui.layerUi.input.value = String(state.layer);
  ui.layerUi.output.textContent = rowLabel(data, state.layer);
  ui.layerUi.input.setAttribute("aria-valuetext", `${rowLabel(data, state.layer, "long")}, row ${indexSpoken(state.layer, data.L)}`);
  const n = data.lengths[state.prompt];
  const shownLayers = new Set(data.layers).size;
  const depth = data.nModelLayers && data.nModelLayers !== shownLayers ? ` of ${data.nModelLayers}` : "";
  const sublayers = data.L !== shownLayers ? ` (${data.L} rows: after attention too)` : "";
  ui.dimsEl.textContent = `${shownLayers}${depth} layers${sublayers} × ${n} token${n === 1 ? "" : "s"}`;
  ui.canvas.setAttribute(
    "aria-label",
    `${lensTitle(data)} heatmap: ${data.L === shownLayers ? `${data.L} layers` : `${data.L} rows of ${shownLayers} layers, each after its attention and after its block`} (final layer at the top) by ${n} tokens of ${promptName(state.prompt)}. Arrow keys move between cells, Home and End jump along the prompt, Enter pins a cell, Escape unpins.`
  );
}
function showTargetMenu(ui, data, metric, target) {
  const spec = metricSpec(data, metric);
  ui.targetLabel.hidden = !(spec && spec.perTarget && data.targets.length > 0);
  const key = data.targets.join("\0");
  if (ui.targetSelect.dataset.key !== key) {
    ui.targetSelect.replaceChildren(...data.targets.map((token) => h("option", "", { value: token, title: token }, displayToken(token))));
    ui.targetSelect.dataset.key = key;
  }
  ui.targetSelect.value = target;
  ui.targetSelect.title = spec && spec.perTarget && target ? metricLabel(data, spec, data.targets.indexOf(target)) : "";
}
function showLegend(ui, data, shown, requested, target = 0, domain = null) {
  const spec = metricSpec(data, shown);
  if (!spec) return;
  const wanted = metricSpec(data, requested);
  ui.legendTitle.textContent = wanted && wanted !== spec ? `${metricLabel(data, wanted, target)}: loading…` : metricLabel(data, spec, target);
  ui.legendTitle.setAttribute("title", (wanted || spec).description);
  ui.metricSelect.setAttribute("title", (wanted || spec).description);
  const ctx = ui.legendBar.getContext("2d");
  if (ctx) {
    const image = ctx.createImageData(256, 1);
    const lut = colourLut(spec.scale, spec.reverse);
    for (let k = 0; k < 256; k++) image.data.set([lut[3 * k], lut[3 * k + 1], lut[3 * k + 2], 255], 4 * k);
    ctx.putImageData(image, 0, 0);
  }
  const ticks = legendTicks(spec, domain ?? metricDomain(data, shown));
  ui.legendTicks.replaceChildren(
    ...ticks.map((tick2, i) => {
      const span = h("span", "murano-legend-tick", {}, tick2.label);
      span.style.left = `${(tick2.t * 100).toFixed(2)}%`;
      if (i === 0) span.classList.add("murano-first");
      if (i === ticks.length - 1 && tick2.t > 0.95) span.classList.add("murano-last");
      return span;
    })
  );
}
function showComponentLegend(ui, grid, softcap) {
  const max = grid ? grid.max : 1;
  ui.legendTitle.textContent = `Part of the logit${softcap ? " (before the soft-cap)" : ""}`;
  ui.legendTitle.setAttribute("title", "Each component's direct part of the explained logit: orange raises it, blue lowers it");
  const ctx = ui.legendBar.getContext("2d");
  if (ctx) {
    const image = ctx.createImageData(256, 1);
    for (let k = 0; k < 256; k++) image.data.set([...interpolateStops(DIVERGING_STOPS, k / 255), 255], 4 * k);
    ctx.putImageData(image, 0, 0);
  }
  const end = String(Number(max.toPrecision(3)));
  const ticks = [
    { t: 0, label: `−${end}` },
    { t: 0.5, label: "0" },
    { t: 1, label: `+${end}` }
  ];
  ui.legendTicks.replaceChildren(
    ...ticks.map((tick2, i) => {
      const span = h("span", "murano-legend-tick", {}, tick2.label);
      span.style.left = `${(tick2.t * 100).toFixed(2)}%`;
      if (i === 0) span.classList.add("murano-first");
      if (i === ticks.length - 1) span.classList.add("murano-last");
      return span;
    })
  );
}
function showPin(ui, data, sel) {
  if (!sel || !data || !(sel.prompt >= 0 && sel.prompt < data.P)) {
    ui.pinEl.hidden = true;
    return;
  }
  const li = clampIndex(sel.layer_index, data.L);
  const pos = clampIndex(sel.position, data.lengths[sel.prompt]);
  const d = cellDetails(data, sel.prompt, li, pos);
  const top = d.top[0];
  const where = data.P > 1 ? `${promptName(sel.prompt)} · ` : "";
  ui.pinText.textContent = `Pinned: ${where}${rowLabel(data, li)} · pos ${pos} · ${displayToken(d.input)} → ${top ? `${displayToken(top.token)} ${formatProb(top.prob, top.step)}` : "no value"}`;
  ui.pinEl.hidden = false;
}

// src/heatmap/view/tooltip.js
var TooltipView = class {
  /**
   * @param {HTMLDivElement} element the tooltip box (absolutely positioned in `root`)
   * @param {HTMLElement} root the positioned ancestor whose box bounds the tooltip
   * @param {() => Rect[]} obstacles rectangles (in viewport coordinates) not to cover
   */
  constructor(element, root, obstacles) {
    this.element = element;
    this.root = root;
    this.obstacles = obstacles;
  }
  get hidden() {
    return this.element.hidden;
  }
  hide() {
    this.element.hidden = true;
  }
  /**
   * Fills the box with `content` and shows it.
   * @param {TooltipContent} content
   * @param {boolean} pinned the cell is the pinned one
   */
  show(content, pinned) {
    const head = h("div", "murano-tt-head");
    head.append(h("span", "murano-tt-title", {}, content.title));
    if (content.badge) head.append(h("span", "murano-tt-badge", {}, content.badge));
    if (pinned) head.append(h("span", "murano-tt-badge murano-tt-pinned", {}, "pinned"));
    const parts = [head];
    const columns = h("div", "murano-tt-columns");
    if (content.top.length) {
      const list = h("div", "murano-tt-topk");
      for (const entry of content.top) {
        const bar = h("span", "murano-tt-bar");
        const fill2 = h("span", "murano-tt-bar-fill");
        fill2.style.width = `${(entry.width * 100).toFixed(1)}%`;
        bar.append(fill2);
        list.append(
          h("span", "murano-tt-rank", { title: "rank (0 = top-1)" }, `${entry.rank}`),
          h("span", "murano-token", {}, entry.text),
          bar,
          h("span", "murano-tt-prob", {}, entry.prob)
        );
      }
      columns.append(list);
    }
    const rows = h("div", "murano-tt-rows");
    for (const row of content.rows) {
      const label = h("span", "murano-tt-label", row.title ? { title: row.title } : {}, row.label);
      rows.append(label, h("span", row.token ? "murano-token" : "murano-tt-value", {}, row.value));
    }
    columns.append(rows);
    parts.push(columns);
    if (content.note) parts.push(h("div", "murano-tt-note", {}, content.note));
    this.element.replaceChildren(...parts);
    this.element.hidden = false;
  }
  /**
   * Places the shown box beside `anchor` (a rectangle in viewport coordinates).
   * @param {Rect} anchor
   */
  place(anchor) {
    const tip = this.element;
    if (tip.hidden) return;
    const bounds = tooltipBounds(this.root);
    tip.classList.remove("murano-tt-wide");
    tip.style.maxHeight = "";
    tip.style.maxWidth = "";
    if (tip.offsetHeight > bounds.h) {
      tip.classList.add("murano-tt-wide");
      tip.style.maxWidth = `${Math.max(200, bounds.w)}px`;
    }
    if (tip.offsetHeight > bounds.h) tip.style.maxHeight = `${bounds.h}px`;
    placeInRoot(tip, this.root, anchor, this.obstacles(), bounds);
  }
};

// src/heatmap/view/topk_blocks.js
function attachTopkBlocks(view, lenses) {
  const meta = view.model.get("_meta");
  if (!view.topkStore || view.topkStore.meta !== meta) view.topkStore = { meta, byLens: /* @__PURE__ */ new Map(), asked: /* @__PURE__ */ new Set() };
  for (const data of lenses) {
    if (!data.topkWindow) continue;
    let blocks = view.topkStore.byLens.get(data.lensName);
    if (!blocks) view.topkStore.byLens.set(data.lensName, blocks = /* @__PURE__ */ new Map());
    data.topkBlocks = blocks;
  }
}
function requestTopkBlock(view, data, col) {
  const store = view.topkStore;
  if (!data.topkWindow || !data.topkBlocks || !store || typeof view.model.send !== "function") return;
  const start = col - col % data.topkWindow;
  if (data.topkBlocks.has(start) || store.asked.has(start)) return;
  store.asked.add(start);
  view.model.send({ action: "topk_window", start });
}
function receiveTopkBlock(view, msg, buffers = []) {
  if (!msg || typeof msg !== "object") return false;
  const reply = (
    /** @type {Record<string, any>} */
    msg
  );
  if (reply.action !== "topk_window") return false;
  const store = view.topkStore;
  if (!store || typeof reply.start !== "number") return true;
  if (typeof reply.error === "string") {
    console.warn(`murano_widgets: ${reply.error}`);
    return true;
  }
  const meta = store.meta;
  const lenses = Array.isArray(meta?.lenses) ? meta.lenses : [];
  for (const lens of lenses) {
    const blocks = store.byLens.get(lens.name);
    const names = (
      /** @type {string[]} */
      reply.names
    );
    const at = (name) => names.indexOf(`${lens.prefix}${name}`);
    const t = at("topk_tokens");
    const p = at("topk_probs");
    if (!blocks || t < 0 || p < 0) continue;
    const read = (i) => {
      const spec = reply.sections[names[i]];
      const n = spec.shape.reduce((a, b) => a * b, 1);
      return (
        /** @type {import("../payload.js").RawArray} */
        readSection(buffers[i], spec.dtype, n, names[i], LENS_DTYPES)
      );
    };
    blocks.set(reply.start, {
      start: reply.start,
      width: reply.stop - reply.start,
      strings: reply.strings,
      tokens: read(t),
      probs: read(p),
      scale: reply.sections[names[p]].scale
    });
  }
  view.updateTooltip();
  return true;
}

// src/heatmap/view/cell_tip.js
function makeTooltip(view) {
  const ui = view.ui;
  return new TooltipView(ui.tooltip, ui.root, () => [
    ...ui.pinEl.hidden ? [] : [rectOf(ui.pinEl.getBoundingClientRect())],
    // The "why" panel follows the hovered cell: it is read beside the tooltip.
    ...ui.why.panel.hidden ? [] : [rectOf(ui.why.bars.getBoundingClientRect())],
    view.trajectory.keepVisibleRect()
  ]);
}
function rectOf(r) {
  return { x: r.left, y: r.top, w: r.width, h: r.height };
}
function tooltipCell(view) {
  const s2 = view.state;
  return s2.hover || (s2.focused ? s2.focus : null);
}
function tipGrid(view) {
  if (view.beside && view.hoverGrid === 1 && view.state.hover) return { data: view.beside, layout: view.besideLayoutShown, canvas: view.ui.besideCanvas };
  return { data: (
    /** @type {import("../payload.js").LensData} */
    view.data
  ), layout: view.layout, canvas: view.ui.canvas };
}
function updateTooltip(view) {
  const { data, tooltip } = view;
  const s2 = view.state;
  if (s2.view === "components") {
    const c = view.components;
    const cell2 = data && c.grid ? c.hover || (c.focused ? c.focus : null) : null;
    const rect = cell2 && c.cellClientRect(cell2.layerIndex, cell2.position);
    if (!cell2 || !rect) {
      tooltip.hide();
      return;
    }
    tooltip.show(c.tooltipContent(cell2), isSelected(s2.selected, s2.prompt, s2.layer, cell2.position));
    tooltip.place(rect);
    return;
  }
  const cell = data && view.layout ? tooltipCell(view) : null;
  if (!cell || !data) {
    tooltip.hide();
    return;
  }
  const lens = tipGrid(view).data;
  requestTopkBlock(view, lens, lens.offsets[s2.prompt] + cell.position);
  const details = cellDetails(lens, s2.prompt, cell.layerIndex, cell.position, view.targetIndex());
  const content = tooltipModel(details, { late: view.detailsLate });
  if (view.beside) content.title = `${lensTitle(lens)} · ${content.title}`;
  tooltip.show(content, isSelected(s2.selected, s2.prompt, cell.layerIndex, cell.position));
  placeTooltip2(view, cell);
}
function placeTooltip2(view, cell) {
  const { tooltip } = view;
  const { layout, canvas } = tipGrid(view);
  if (tooltip.hidden || !layout || view.state.view === "components") return;
  const column = columnOf(layout, cell.position);
  if (column < 0) return;
  const r = cellRect(layout, cell.layerIndex, column, view.scrollLeft());
  const box = canvas.getBoundingClientRect();
  tooltip.place({ x: box.left + r.x, y: box.top + r.y, w: r.w, h: r.h });
}
function tipFollowsTarget(view) {
  return view.store.subscribe((changed) => {
    if (changed.includes("target")) updateTooltip(view);
  });
}

// src/heatmap/view/details_request.js
function requestDetails(view) {
  const { data, model } = view;
  if (view.detailsRequested || !data) return;
  if (!detailsPending(data)) return;
  view.detailsRequested = true;
  if (!model.get("_details")) {
    model.set("_details", true);
    model.save_changes();
  }
  if (typeof model.send !== "function") view.detailsLate = true;
  else view.detailsTimer = setTimeout(() => detailsOverdue(view), DETAILS_TIMEOUT_MS);
}
function detailsOverdue(view) {
  const data = view.data;
  if (!data || !detailsPending(data)) return;
  view.detailsLate = true;
  updateTooltip(view);
  view.updateWhy();
  view.drawTrajectory();
}

// src/heatmap/live/controls.js
var PICKER_LIMIT = 30;
function stringList(value) {
  return Array.isArray(value) && value.every((v) => typeof v === "string") ? value : null;
}
function promptTexts(live) {
  const data = live.lens.data;
  const trait = stringList(live.store.state.prompts);
  if (data && trait && trait.length === data.P) return trait;
  return data ? data.prompts : [];
}
function trackedTokens(live) {
  const data = live.lens.data;
  return data ? data.targets : stringList(live.store.state.targets) || [];
}
function showStatus(live) {
  const { ui } = live;
  const { conn, live_status } = live.store.state;
  const offered = controlsOffered(live);
  const line = statusLine(conn, live_status);
  ui.panel.hidden = conn.kernel === "off";
  ui.panel.dataset.kernel = conn.kernel;
  ui.panel.dataset.status = line.kind;
  ui.controls.hidden = !offered;
  ui.noKernel.hidden = line.kind !== "no-kernel";
  ui.noKernel.textContent = line.kind === "no-kernel" ? line.text : "";
  const progress = line.kind === "progress";
  ui.status.classList.toggle("murano-running", progress);
  ui.line.hidden = !offered;
  ui.statusText.textContent = progress || line.kind === "done" || line.kind === "note" ? line.text : "";
  ui.error.hidden = line.kind !== "error";
  if (line.kind === "error" && ui.errorText.textContent !== line.text) ui.errorText.textContent = line.text;
}
function controlsOffered(live) {
  return controlsShown(live.store.state.conn);
}
function showPromptControls(live) {
  const data = live.lens.data;
  const { removeButton } = live.ui;
  const P = data ? data.P : 0;
  const prompt = live.lens.state.prompt;
  const hadFocus = removeButton.ownerDocument.activeElement === removeButton;
  removeButton.disabled = P < 2;
  if (hadFocus && removeButton.disabled) live.ui.promptInput.focus();
  removeButton.setAttribute("aria-label", P < 2 ? "Remove this prompt (the last prompt stays)" : `Remove ${promptName(prompt)}`);
  removeButton.title = P < 2 ? "The last prompt cannot be removed" : `Remove ${promptName(prompt)} from the widget`;
}
function showChips(live) {
  const items = trackedTokens(live).map((target) => {
    const shown = displayToken(target);
    const chip = h("li", "murano-chip");
    chip.append(
      h("span", "murano-chip-text murano-token", { title: target }, truncateText(shown, 24)),
      h("button", "murano-chip-remove", { type: "button", "aria-label": `Stop tracking ${shown}`, title: "Stop tracking", "data-token": target }, "×")
    );
    return chip;
  });
  const { chips } = live.ui;
  const focused = [...chips.querySelectorAll("button.murano-chip-remove")].indexOf(
    /** @type {HTMLButtonElement} */
    chips.ownerDocument.activeElement
  );
  chips.replaceChildren(...items);
  chips.hidden = items.length === 0;
  if (focused >= 0) {
    const buttons = chips.querySelectorAll("button.murano-chip-remove");
    const next = (
      /** @type {HTMLButtonElement | undefined} */
      buttons[Math.min(focused, buttons.length - 1)]
    );
    (next || live.ui.trackInput).focus();
  }
}
function showPinTokens(live) {
  const data = live.lens.data;
  const sel = live.lens.state.selected;
  const { pinRow, pinTokens } = live.ui;
  if (!data || !sel || !(sel.prompt >= 0 && sel.prompt < data.P)) {
    pinRow.hidden = true;
    pinTokens.replaceChildren();
    return;
  }
  requestDetails(live.lens);
  const d = cellDetails(data, sel.prompt, Math.min(sel.layer_index, data.L - 1), Math.min(sel.position, data.lengths[sel.prompt] - 1));
  const tracked = new Set(trackedTokens(live));
  pinTokens.replaceChildren(
    ...d.top.map((entry) => {
      const shown = displayToken(entry.token);
      const button = h(
        "button",
        "murano-pin-token",
        { type: "button", "data-token": entry.token, "aria-label": `Track ${shown} (${formatProb(entry.prob, entry.step)} at the pinned cell)` }
      );
      button.append(h("span", "murano-token", {}, truncateText(shown, 16)), h("span", "murano-pin-token-prob", {}, formatProb(entry.prob, entry.step)));
      button.disabled = tracked.has(entry.token);
      if (button.disabled) button.title = "Already tracked";
      return button;
    })
  );
  pinRow.hidden = d.top.length === 0;
}
function showPatchControl(live) {
  const { patchRow, patchWhere, patchSource, patchRun, patchReason } = live.ui;
  const sel = live.lens.state.selected;
  if (!sel) {
    patchRow.hidden = true;
    return;
  }
  patchRow.hidden = false;
  const target = patchTarget(live.lens.data, sel);
  patchWhere.textContent = target.ok ? target.label : "";
  patchReason.hidden = target.ok;
  patchReason.textContent = target.ok ? "" : target.reason;
  patchSource.hidden = !target.ok;
  patchRun.hidden = !target.ok;
  if (!target.ok) return;
  const options = patchSources(promptTexts(live), target.prompt);
  const key = options.map((o) => `${o.value}=${o.label}`).join("\n");
  if (patchSource.dataset.key !== key) {
    const previous = patchSource.value;
    patchSource.replaceChildren(...options.map((o) => h("option", "", { value: o.value }, o.label)));
    patchSource.dataset.key = key;
    if (options.some((o) => o.value === previous)) patchSource.value = previous;
  }
  patchRun.setAttribute("aria-label", `Run the patch of ${target.label}`);
}
function showPickerBox(live) {
  const open = live.store.state.pickerOpen;
  live.ui.pickerButton.setAttribute("aria-expanded", String(open));
  live.ui.picker.hidden = !open;
  if (open) showPicker(live);
}
function showPicker(live) {
  const data = live.lens.data;
  const { pickerHead, pickerList } = live.ui;
  if (!data) return;
  const s2 = live.lens.state;
  const column = pickerColumn(s2, data.lengths[s2.prompt]);
  const picked = pickerTokens(data, s2.prompt, column.position);
  const tracked = new Set(trackedTokens(live));
  const input = cellDetails(data, s2.prompt, 0, column.position).input;
  const why = { focus: "focused", pinned: "pinned", last: "last position" }[column.source];
  pickerHead.textContent = `Position ${column.position} (${displayToken(input)}, ${why}): every token in the top-k at any layer, by its best probability over the layers` + (picked.complete ? "." : " (top-1 only until the top-k arrives).");
  const shown = picked.tokens.slice(0, PICKER_LIMIT);
  const items = shown.map((entry) => {
    const text = displayToken(entry.token);
    const where = rowLabel(data, entry.row);
    const li = h("li", "murano-picker-entry");
    const button = h("button", "murano-picker-item", {
      type: "button",
      "data-token": entry.token,
      "aria-label": `Track ${text}: best ${formatProb(entry.prob)} at ${rowLabel(data, entry.row, "long")}`
    });
    button.append(h("span", "murano-token", {}, truncateText(text, 20)), h("span", "murano-picker-prob", {}, formatProb(entry.prob)), h("span", "murano-picker-layer", {}, where));
    if (tracked.has(entry.token)) {
      button.disabled = true;
      button.title = "Already tracked";
    }
    li.append(button);
    return li;
  });
  if (picked.tokens.length > shown.length) items.push(h("li", "murano-picker-more", {}, `… and ${picked.tokens.length - shown.length} more`));
  pickerList.replaceChildren(...items);
}

// src/heatmap/live/patch_panel.js
function showPatch(live, offered) {
  const patch = live.store.state.patch;
  const ui = live.ui;
  if (!isPatch(patch)) {
    closePatch(live);
    return;
  }
  if (!live.patchModel) live.patchModel = patchModel(live.model);
  if (!live.patchModel.ready()) {
    closePatch(live);
    return;
  }
  if (!live.diff) {
    const lens = live.lens;
    live.diff = new DiffView(live.patchModel, ui.patchDiff, {
      embedded: true,
      columns: () => lens.layout && !lens.layout.columns && lens.ui.scroller.isConnected ? { cellW: lens.layout.cellW, left: lens.ui.scroller.getBoundingClientRect().left + lens.layout.labelW } : null
    });
  }
  const data = live.lens.data;
  const token = data && patch.prompt < data.P && patch.position < data.lengths[patch.prompt] ? cellDetails(data, patch.prompt, 0, patch.position).input : null;
  const summary = patchSummary(patch, promptTexts(live), token);
  ui.patchTitle.textContent = summary.title;
  ui.patchAnswer.textContent = summary.answer;
  ui.patchAnswer.hidden = !summary.answer;
  ui.patchClear.hidden = !offered;
  ui.patchPanel.hidden = false;
}
function closePatch(live) {
  if (live.diff) live.diff.destroy();
  live.diff = null;
  if (live.patchModel) live.patchModel.dispose();
  live.patchModel = null;
  live.ui.patchPanel.hidden = true;
}

// src/heatmap/live/describe.js
var DESCRIBE_ACTION = "describe_patchscope";
function describeTarget(data, selected) {
  if (!data || data.lensKind !== "patchscope") return { ok: false, reason: "The lens shown is not a Patchscope." };
  const target = patchTarget(data, selected);
  if (!target.ok) return { ok: false, reason: target.reason.replace(/patch(es)? it/, "describe it").replace("A patch overwrites", "A Patchscope reads") };
  return { ok: true, prompt: target.prompt, layer: target.layer, position: target.position, label: target.label };
}
function buildDescribe() {
  const row = h("div", "murano-live-row murano-describe", { hidden: "" });
  const where = h("span", "murano-patch-where murano-describe-where");
  const button = h("button", "murano-live-button murano-describe-run", { type: "button", title: "Patch this cell's state into the Patchscope's target prompt and generate a few tokens from it, greedily" }, "Describe");
  const text = h("output", "murano-describe-text murano-token", { "aria-live": "polite" });
  row.append(h("span", "murano-label", {}, "Describe this cell"), where, button, text);
  return { row, where, button, text };
}
function describeReply(described2, msg) {
  if (!msg || typeof msg !== "object" || described2.pending < 0) return described2;
  const { action, id, message } = (
    /** @type {Record<string, unknown>} */
    msg
  );
  if (id !== described2.pending) return described2;
  if (action !== "done" && action !== "error" && action !== "superseded") return described2;
  return { pending: -1, cell: described2.cell, text: action === "done" && typeof message === "string" ? message : described2.text };
}
function showDescribe(ui, described2, offered, data, selected) {
  const { row, where, button, text } = ui;
  const target = describeTarget(data, selected);
  const patchscope = !!data && data.lensKind === "patchscope";
  let now = described2;
  if (!target.ok || cellKey(target) !== described2.cell) {
    const cell = !target.ok || described2.pending < 0 ? "" : described2.cell;
    if (cell !== described2.cell || described2.text) now = { pending: described2.pending, cell, text: "" };
  }
  row.hidden = !offered || !patchscope || !selected;
  if (row.hidden) return described2;
  where.textContent = target.ok ? target.label : target.reason;
  button.disabled = !target.ok;
  if (text.textContent !== now.text) text.textContent = now.text;
  return now;
}
function cellKey(target) {
  return target.ok ? `${target.prompt}|${target.layer}|${target.position}` : "";
}

// src/heatmap/live/kernel.js
function post(live, conn, message) {
  if (!message) return conn;
  try {
    live.model.send?.(message);
    return conn;
  } catch {
    return noKernel(conn);
  }
}
function startHello(live) {
  const { state, message } = hello(live.store.state.conn, live.now());
  live.store.set({ conn: post(live, state, message) });
  schedule(live);
}
function ask(live, action, fields) {
  const { state, message } = request(live.store.state.conn, action, fields, live.now());
  live.store.set({ conn: post(live, state, message) });
  schedule(live);
  return message ? message.id : -1;
}
function askFromBox(live, box, action, fields) {
  const text = box.value;
  const id = ask(live, action, fields);
  if (id >= 0) live.store.set({ sent: [...live.store.state.sent, { id, box, text }] });
}
function onMessage(live, msg) {
  const s2 = live.store.state;
  const conn = receive(s2.conn, msg);
  if (conn === s2.conn) return;
  const reply = (
    /** @type {{action?: unknown, id?: unknown}} */
    msg
  );
  for (const sent2 of s2.sent) {
    if (sent2.id === reply.id && reply.action === "done" && sent2.box.value === sent2.text) sent2.box.value = "";
  }
  const sent = s2.sent.some((x) => x.id === reply.id) ? s2.sent.filter((x) => x.id !== reply.id) : s2.sent;
  live.store.set({ conn, sent, describe: describeReply(s2.describe, msg) });
  schedule(live);
}
function schedule(live) {
  if (live.timer) clearTimeout(live.timer);
  live.timer = null;
  const timeouts = live.timeouts;
  const deadline = nextDeadline(live.store.state.conn, timeouts);
  if (deadline === null) return;
  live.timer = setTimeout(() => {
    live.timer = null;
    live.store.set({ conn: tick(live.store.state.conn, live.now(), timeouts) });
    schedule(live);
  }, Math.max(0, deadline - live.now()) + 1);
}

// src/heatmap/live/store.js
function createLiveStore(conn, model) {
  const state = {
    conn,
    sent: [],
    pickerOpen: false,
    describe: { pending: -1, cell: "", text: "" },
    prompts: model.get("prompts"),
    targets: model.get("targets"),
    live_status: model.get("live_status"),
    patch: model.get("patch"),
    patchVersion: 0
  };
  return createStore(state);
}

// src/heatmap/live/dom.js
function buildLive(id) {
  const panel = h("section", "murano-live", { hidden: "", "aria-label": "Live: ask the kernel" });
  const controls = h("div", "murano-live-controls");
  const textBox = (className, label, attrs = {}) => h("input", `murano-live-input ${className}`, { type: "text", placeholder: label, "aria-label": label, autocomplete: "off", spellcheck: "false", ...attrs });
  const promptRow = h("div", "murano-live-row");
  const promptInput = textBox("murano-live-prompt", "Type a prompt and press Enter");
  const removeButton = h("button", "murano-live-button murano-live-remove", { type: "button" }, "Remove this prompt");
  promptRow.append(promptInput, removeButton);
  const trackRow = h("div", "murano-live-row");
  const trackInput = textBox("murano-live-track", "Track a token", {
    title: "A token's text, spaces included: ' Paris' (with its leading space) is not 'Paris'"
  });
  const pickerId = `${id}-picker`;
  const pickerButton = h("button", "murano-live-button murano-picker-toggle", { type: "button", "aria-expanded": "false", "aria-controls": pickerId }, "Pick a token…");
  const chips = h("ul", "murano-chips", { "aria-label": "Tracked tokens" });
  const groupInput = textBox("murano-live-group", "Track a word", {
    title: "A word: every token that starts it, with and without a leading space, summed into one group"
  });
  trackRow.append(trackInput, pickerButton, chips, groupInput);
  const picker = h("div", "murano-picker", { id: pickerId, hidden: "" });
  const pickerHead = h("div", "murano-picker-head");
  const pickerList = h("ul", "murano-picker-list", { "aria-label": "Tokens in the top-k at any layer, by their best probability" });
  picker.append(pickerHead, pickerList);
  const pinRow = h("div", "murano-live-row murano-pin-topk", { hidden: "" });
  const pinTokens = h("div", "murano-pin-tokens", { role: "group", "aria-label": "The pinned cell's top-k: press one to track it" });
  pinRow.append(h("span", "murano-label", {}, "Pinned top-k"), pinTokens);
  const patchRow = h("div", "murano-live-row murano-patch-control", { hidden: "" });
  const patchWhere = h("span", "murano-patch-where");
  const patchSourceLabel = h("label", "murano-patch-source-label");
  const patchSource = h("select", "murano-patch-source", { "aria-label": "Patch the pinned cell with" });
  patchSourceLabel.append(h("span", "murano-label", {}, "with"), patchSource);
  const patchRun = h("button", "murano-live-button murano-patch-run", { type: "button" }, "Run");
  const patchReason = h("span", "murano-patch-reason", { hidden: "" });
  patchRow.append(h("span", "murano-label", {}, "Patch this cell"), patchWhere, patchSourceLabel, patchRun, patchReason);
  const status = h("div", "murano-live-status", { role: "status", "aria-live": "polite" });
  const statusText = h("span", "murano-live-status-text");
  status.append(h("span", "murano-live-spinner", { "aria-hidden": "true" }), statusText);
  const error = h("div", "murano-live-error", { role: "alert", hidden: "" });
  const errorText = h("span", "murano-live-error-text");
  const dismissButton = h("button", "murano-live-dismiss", { type: "button", "aria-label": "Dismiss the message", title: "Dismiss" }, "×");
  error.append(errorText, dismissButton);
  controls.append(promptRow, trackRow, picker);
  const noKernel2 = h("div", "murano-live-nokernel", { role: "note", hidden: "" });
  const line = h("div", "murano-live-line");
  line.append(status, error);
  panel.append(controls, line, noKernel2);
  const pinPanel = h("div", "murano-live murano-live-pinned", { hidden: "", role: "group", "aria-label": "The pinned cell: track its tokens, patch it" });
  const describe = buildDescribe();
  pinPanel.append(pinRow, patchRow, describe.row);
  const patchPanel = h("section", "murano-patch", { hidden: "", "aria-label": "The patch: patched lens minus clean lens" });
  const patchHead = h("div", "murano-patch-head");
  const patchTitle = h("div", "murano-patch-title");
  const patchAnswer = h("div", "murano-patch-answer");
  const patchClear = h("button", "murano-live-button murano-patch-clear", { type: "button" }, "Clear patch");
  const patchText = h("div", "murano-patch-text");
  patchText.append(patchTitle, patchAnswer);
  patchHead.append(patchText, patchClear);
  const patchDiff = h("div", "murano-patch-diff");
  patchPanel.append(patchHead, patchDiff);
  return {
    panel,
    controls,
    promptInput,
    removeButton,
    trackInput,
    groupInput,
    pickerButton,
    chips,
    picker,
    pickerHead,
    pickerList,
    pinPanel,
    pinRow,
    pinTokens,
    patchRow,
    patchWhere,
    patchSource,
    patchRun,
    patchReason,
    line,
    status,
    statusText,
    error,
    errorText,
    dismissButton,
    noKernel: noKernel2,
    patchPanel,
    patchTitle,
    patchAnswer,
    patchClear,
    patchDiff,
    describe
  };
}

// src/heatmap/live/view.js
var PARTS = [
  [/* @__PURE__ */ new Set(["dataVersion"]), (live) => keepChartLines(live)],
  [/* @__PURE__ */ new Set(["conn", "live_status"]), (live) => showStatus(live)],
  [/* @__PURE__ */ new Set(["conn", "prompt", "dataVersion"]), (live, offered) => offered && showPromptControls(live)],
  [/* @__PURE__ */ new Set(["conn", "targets", "dataVersion"]), (live, offered) => offered && showChips(live)],
  [/* @__PURE__ */ new Set(["conn", "selected", "targets", "dataVersion"]), (live, offered) => offered && showPinTokens(live)],
  [/* @__PURE__ */ new Set(["conn", "selected", "prompts", "dataVersion"]), (live, offered) => offered && showPatchControl(live)],
  [
    /* @__PURE__ */ new Set(["conn", "pickerOpen", "prompt", "focus", "focused", "selected", "targets", "dataVersion"]),
    (live, offered) => offered && showPickerBox(live)
  ],
  [/* @__PURE__ */ new Set(["conn", "selected", "describe", "dataVersion"]), (live, offered) => followDescribe(live, offered)],
  [/* @__PURE__ */ new Set(["conn", "patch", "patchVersion", "prompts", "dataVersion"]), (live, offered) => showPatch(live, offered)]
];
var LiveView = class {
  /**
   * @param {LensView} lens the heatmap's view
   * @param {LiveUi} ui
   * @param {{now?: () => number}} [options]
   */
  constructor(lens, ui, { now = () => Date.now() } = {}) {
    this.lens = lens;
    this.model = lens.model;
    this.ui = ui;
    this.now = now;
    this.timeouts = {};
    this.store = createLiveStore(this.initial(), this.model);
    this.timer = null;
    this.lastTargets = null;
    this.patchModel = null;
    this.diff = null;
    this.abort = new AbortController();
    const follow = (changed) => this.follow(changed);
    this.unsubscribe = [this.store.subscribe(follow), lens.store.subscribe(follow)];
    this.bind();
    startHello(this);
    this.follow(["conn"]);
  }
  /** @returns {LiveState} */
  initial() {
    return initialState({
      live: this.model.get("live") === true,
      canSend: typeof this.model.send === "function",
      firstId: 1 + Math.floor(Math.random() * 2 ** 30)
    });
  }
  /**
   * Draws the parts that follow any of the keys that changed.
   * @param {(LiveKey | StateKey)[]} changed
   */
  follow(changed) {
    const offered = controlsOffered(this);
    let drawn = false;
    for (const [keys, draw2] of PARTS) {
      if (!changed.some((key) => keys.has(key))) continue;
      draw2(this, offered);
      drawn = true;
    }
    if (!drawn) return;
    const { ui } = this;
    ui.pinPanel.hidden = !offered || ui.pinRow.hidden && ui.patchRow.hidden && ui.describe.row.hidden;
  }
  destroy() {
    this.abort.abort();
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    for (const [event, fn] of this.handlers) this.model.off(event, fn);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    closePatch(this);
  }
  // ---- Requests from the controls ------------------------------------------------------------
  removePrompt() {
    const data = this.lens.data;
    if (!data || data.P < 2) return;
    ask(this, "remove_prompt", { index: this.lens.state.prompt });
  }
  /**
   * Tracks a token and asks Python to show it (`show`): Python sets the `target` and `metric`
   * traits with the new payload, and the heatmap, its token menu and the chart's line follow
   * them as they follow any change of those traits.
   * @param {string} text
   */
  track(text) {
    if (text) ask(this, "track", { text, show: true });
  }
  runPatch() {
    const target = patchTarget(this.lens.data, this.lens.state.selected);
    if (!target.ok || !this.ui.patchSource.value) return;
    ask(this, "patch", { prompt: target.prompt, layer: target.layer, position: target.position, source: sourceOf(this.ui.patchSource.value) });
  }
  /** Asks the kernel to describe the pinned cell. */
  runDescribe() {
    const target = describeTarget(this.lens.data, this.lens.state.selected);
    if (!target.ok) return;
    const cell = cellKey(target);
    this.store.set({ describe: { pending: -1, cell, text: "" } });
    const pending = ask(this, DESCRIBE_ACTION, { prompt: target.prompt, layer: target.layer, position: target.position });
    this.store.set({ describe: { pending, cell, text: "" } });
  }
  /** Opens or closes the token picker. */
  togglePicker() {
    const open = !this.store.state.pickerOpen;
    if (open) requestDetails(this.lens);
    this.store.set({ pickerOpen: open });
  }
  // ---- Events --------------------------------------------------------------------------------
  bind() {
    const { ui, model } = this;
    const signal = this.abort.signal;
    const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
    const onEnter = (box, send2) => on(box, "keydown", (event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      send2(box.value);
    });
    onEnter(ui.promptInput, (text) => text.trim() && askFromBox(this, ui.promptInput, "add_prompt", { text }));
    onEnter(ui.trackInput, (text) => text && askFromBox(this, ui.trackInput, "track", { text, show: true }));
    onEnter(ui.groupInput, (text) => text.trim() && askFromBox(this, ui.groupInput, "group", { text }));
    on(ui.removeButton, "click", () => this.removePrompt());
    on(ui.pickerButton, "click", () => this.togglePicker());
    const onToken = (list, selector, fn) => on(list, "click", (event) => {
      const button = tokenButton(event, selector);
      if (button) fn(button.dataset.token || "");
    });
    onToken(ui.chips, "button.murano-chip-remove", (text) => ask(this, "untrack", { text }));
    onToken(ui.pickerList, "button.murano-picker-item", (text) => this.track(text));
    onToken(ui.pinTokens, "button.murano-pin-token", (text) => this.track(text));
    on(ui.patchRun, "click", () => this.runPatch());
    on(ui.describe.button, "click", () => this.runDescribe());
    on(ui.patchClear, "click", () => ask(this, "clear_patch", {}));
    on(ui.dismissButton, "click", () => this.store.set({ conn: dismiss(this.store.state.conn) }));
    const trait = (name) => () => this.store.set({ [name]: model.get(name) });
    const patchPayload = () => this.store.set({ patchVersion: this.store.state.patchVersion + 1 });
    this.handlers = [
      ["msg:custom", (msg) => onMessage(this, msg)],
      [
        "change:live",
        () => {
          this.store.set({ conn: this.initial() });
          startHello(this);
        }
      ],
      ["change:live_status", trait("live_status")],
      ["change:prompts", trait("prompts")],
      ["change:targets", trait("targets")],
      ["change:patch", trait("patch")],
      ["change:_patch_meta", patchPayload],
      ["change:_patch_sections", patchPayload]
    ];
    for (const [event, fn] of this.handlers) model.on(event, fn);
  }
  /** The test hook's part (`__muranoDebug.live`). */
  debugApi() {
    const live = this;
    return {
      get state() {
        const s2 = live.store.state;
        const c = s2.conn;
        return { kernel: c.kernel, latest: c.latest, open: [...c.open], status: statusLine(c, s2.live_status), pickerOpen: s2.pickerOpen };
      },
      /** @param {{hello?: number, reply?: number}} timeouts */
      setTimeouts(timeouts) {
        Object.assign(live.timeouts, timeouts);
        schedule(live);
      },
      get diff() {
        return live.diff ? live.ui.patchDiff : null;
      }
    };
  }
};
function followDescribe(live, offered) {
  const s2 = live.store.state;
  const now = showDescribe(live.ui.describe, s2.describe, offered, live.lens.data, live.lens.state.selected);
  if (now !== s2.describe) live.store.set({ describe: now });
}
function keepChartLines(live) {
  const data = live.lens.data;
  if (!data) return;
  const before = live.lastTargets;
  live.lastTargets = [...data.targets];
  if (!before || before.join("\0") === data.targets.join("\0")) return;
  const toggled = live.lens.trajectory.toggled;
  const moved = [];
  for (const [key, shown] of toggled) {
    if (!key.startsWith("target:")) continue;
    toggled.delete(key);
    const j = data.targets.indexOf(before[Number(key.slice("target:".length))]);
    if (j >= 0) moved.push([`target:${j}`, shown]);
  }
  for (const [key, shown] of moved) toggled.set(key, shown);
  live.lens.trajectory.rerender();
}
function tokenButton(event, selector) {
  const target = (
    /** @type {Element | null} */
    event.target
  );
  const button = target && target.closest ? target.closest(selector) : null;
  return button instanceof HTMLElement && !(button instanceof HTMLButtonElement && button.disabled) ? button : null;
}

// src/heatmap/trajectory.js
var DEFAULT_VISIBLE_TARGETS = 6;
function chartColumn(state, length) {
  const clamp = (p) => Math.min(Math.max(0, length - 1), Math.max(0, p));
  if (state.hover) return { position: clamp(state.hover.position), source: "hover" };
  if (state.focused && state.focus) return { position: clamp(state.focus.position), source: "focus" };
  const sel = state.selected;
  if (sel && sel.prompt === state.prompt) return { position: clamp(sel.position), source: "pinned" };
  return { position: Math.max(0, length - 1), source: "last" };
}
function described(data, name) {
  return Boolean(data.meta.sections && data.meta.sections[name]) || Boolean(data.arrays[name]);
}
function chartModeFor(spec) {
  if (!spec) return "prob";
  if (spec.unit === "rank") return "rank";
  return spec.unit === "probability" ? "prob" : "metric";
}
function metricSeries(data, prompt, position, metric) {
  const spec = metricSpec(data, metric);
  if (!spec) return [];
  const loaded = Boolean(data.arrays[spec.field]);
  const values = Array.from({ length: data.L }, (_, i) => {
    const v = metricValue(data, metric, cellIndex(data, prompt, i, position));
    return Number.isFinite(v) ? v : null;
  });
  return [{ key: `metric:${metric}`, kind: "metric", index: 0, label: shortLabel(spec.label), token: null, note: spec.description, section: spec.field, loaded, values }];
}
function trajectorySeries(data, prompt, position, mode, metric = "") {
  if (mode === "metric") return metricSeries(data, prompt, position, metric);
  const L = data.L;
  const col = data.offsets[prompt] + position;
  const cells = Array.from({ length: L }, (_, i) => cellIndex(data, prompt, i, position));
  const rowMissing = cells.map((idx) => isMissing(data, idx));
  const rank = mode === "rank";
  const out = [];
  const add = (base, index, finalBased = false) => {
    const loaded = Boolean(data.arrays[base.section]);
    const noValue = finalBased && isFinalMissing(data, col);
    const values = cells.map((_, i) => {
      if (!loaded || rowMissing[i] || noValue) return null;
      const v = sectionValue(data, base.section, index(i));
      return Number.isFinite(v) ? v : null;
    });
    out.push({ ...base, loaded, values });
  };
  if (!rank) {
    add({ key: "top1", kind: "top1", index: 0, label: "top-1", token: null, note: "each layer's own most likely token", section: "max_probs" }, (i) => cells[i]);
  }
  const last = position === data.lengths[prompt] - 1;
  const cellSection = rank ? "final_token_ranks" : "final_token_probs";
  const lastSection = LAST_POSITION_SECTIONS[cellSection];
  const fromLast = last && !data.arrays[cellSection] && Boolean(data.arrays[lastSection]);
  if ((fromLast || described(data, cellSection)) && data.arrays.final_tokens) {
    add(
      {
        key: "final",
        kind: "final",
        index: 0,
        label: "final prediction",
        token: data.tokens[data.arrays.final_tokens[col]] ?? null,
        note: "the token the model finally predicts here",
        section: fromLast ? lastSection : cellSection
      },
      fromLast ? (i) => lastPositionIndex(data, i, prompt) : (i) => cells[i],
      true
    );
  }
  const sets = data.answerSets;
  if (last) {
    const section = rank ? "answer_ranks" : "answer_probs";
    if (described(data, section)) {
      sets.forEach((set, s2) => {
        const answer = set.answers[prompt];
        if (answer === null) return;
        const n = set.nTokens[prompt];
        const forms = set.nAccepted[prompt];
        const summed = forms > 1 ? `, summed over ${forms} accepted forms` : "";
        const note = rank ? `rank of the answer's first token at the prompt's last position${forms > 1 ? " (the best form's)" : ""}` : n && n > 1 ? `probability of the whole answer (teacher-forced over its tokens${summed})` : `probability of the answer as the next token${summed}`;
        add({ key: `answer:${s2}`, kind: "answer", index: s2, label: set.name, token: answer, note, section }, (i) => promptSetIndex(data, i, prompt, s2));
      });
    }
  } else if (sets.length && sets[0].answers[prompt] !== null) {
    const section = rank ? "answer_token_ranks" : "answer_token_probs";
    if (described(data, section) && !promptHasNoValue(data, section, prompt)) {
      const n = sets[0].nTokens[prompt];
      const note = `${rank ? "rank" : "probability"} of the answer's first token as the next token here${n && n > 1 ? ` (of ${n})` : ""}`;
      add({ key: "answer:0", kind: "answer", index: 0, label: sets[0].name, token: sets[0].answers[prompt], note, section }, (i) => cells[i]);
    }
  }
  const targetSection = rank ? "target_ranks" : "target_probs";
  if (data.targets.length && described(data, targetSection)) {
    data.targets.forEach((target, j) => {
      add(
        { key: `target:${j}`, kind: "target", index: j, label: "target", token: target, note: `${rank ? "rank" : "probability"} of the target's first token as the next token`, section: targetSection },
        (i) => cellTargetIndex(data, prompt, i, position, j)
      );
    });
  }
  if (!rank) out.push(...groupSeries(data, cells, rowMissing));
  return out;
}
function groupSeries(data, cells, rowMissing) {
  const n = data.groups.length;
  const array = data.arrays.group_probs;
  if (!n || !array) return [];
  const scale = data.scales.group_probs ?? 1;
  const note = "probability that the next token is one of the group's tokens";
  const out = data.groups.map((name, j) => ({
    key: `group:${j}`,
    kind: (
      /** @type {SeriesKind} */
      "group"
    ),
    index: j,
    label: name,
    token: null,
    note,
    section: "group_probs",
    loaded: true,
    values: cells.map((idx, i) => {
      const v = array[idx * n + j] * scale;
      return rowMissing[i] || !Number.isFinite(v) ? null : v;
    })
  }));
  if (n > 1) {
    const values = cells.map((_, i) => {
      const parts = out.map((line) => line.values[i]);
      return parts.some((v) => v === null) ? null : parts.reduce((sum, v) => (
        /** @type {number} */
        sum + /** @type {number} */
        v
      ), 0);
    });
    out.push({ key: "group:sum", kind: "group_sum", index: n, label: "sum of groups", token: null, note: "the groups' probabilities added up", section: "group_probs", loaded: true, values });
  }
  return out;
}
function lensSeries(others, prompt, position, mode) {
  const out = [];
  others.forEach((other, k) => {
    const lines = trajectorySeries(other.data, prompt, position, mode);
    const line = lines.find((s2) => s2.kind === "answer") || lines.find((s2) => s2.kind === "final");
    if (!line) return;
    out.push({
      ...line,
      key: `lens:${other.name}`,
      kind: "lens",
      index: k,
      label: `${line.label} · ${lensMenuText(other.name, other.title)}`,
      note: `${line.note}, under the ${lensMenuText(other.name, other.title)}`
    });
  });
  return out;
}
function rankAxisMax(data) {
  let top = 0;
  for (const name of ["final_token_ranks", "final_last_ranks", "answer_ranks", "answer_token_ranks", "target_ranks"]) {
    if (data.arrays[name]) top = Math.max(top, sectionMax(data, name));
  }
  return niceRankMax(top);
}
function niceRankMax(rank) {
  if (!(rank > 9)) return 9;
  if (rank >= RANK_CAP) return RANK_CAP;
  return Math.min(RANK_CAP, 10 ** Math.ceil(Math.log10(rank + 1)) - 1);
}
function valueScale(mode, rankMax = 9, metric) {
  if (mode === "metric" && metric) {
    const spec = (
      /** @type {import("./payload.js").MetricSpec} */
      metricSpec(metric.data, metric.name)
    );
    const domain = metricDomain(metric.data, metric.name);
    const span = domain.max - domain.min || 1;
    const toUnit2 = (v) => Math.min(1, Math.max(0, domain.log ? Math.log1p(Math.max(0, v - domain.min)) / Math.log1p(span) : (v - domain.min) / span));
    return {
      mode,
      max: domain.max,
      toUnit: toUnit2,
      ticks: legendTicks(spec, domain).map((tick2) => ({ value: NaN, t: tick2.t, label: tick2.label })),
      title: `${shortLabel(spec.label)} →`
    };
  }
  if (mode === "metric") mode = "prob";
  if (mode === "prob") {
    const toUnit2 = (v) => Math.min(1, Math.max(0, v));
    return {
      mode,
      max: 1,
      toUnit: toUnit2,
      ticks: [0, 0.25, 0.5, 0.75, 1].map((v) => ({ value: v, t: v, label: `${Math.round(v * 100)}%` })),
      title: "probability →"
    };
  }
  const max = Math.max(1, rankMax);
  mode = "rank";
  const den = Math.log10(max + 1);
  const toUnit = (v) => 1 - Math.min(1, Math.max(0, Math.log10(Math.max(0, v) + 1) / den));
  const values = [0, 1];
  for (let v = 10; v <= max; v *= 10) values.push(v);
  if (max >= RANK_CAP || toUnit(values[values.length - 1]) - toUnit(max) > 0.12) values.push(max);
  return {
    mode,
    max,
    toUnit,
    ticks: values.map((v) => ({ value: v, t: toUnit(v), label: rankTick(v) })),
    title: "← rank (log scale; 0 = top-1)"
  };
}
function rankTick(v) {
  if (v >= RANK_CAP) return `≥${RANK_CAP}`;
  if (v >= 1e3 && v % 1e3 === 0) return `${v / 1e3}k`;
  if (v >= 1e3) return `${Number((v / 1e3).toFixed(1))}k`;
  return String(v);
}
function seriesShown(series, toggled) {
  const choice = toggled.get(series.key);
  if (choice !== void 0) return choice;
  return series.kind !== "target" || series.index < DEFAULT_VISIBLE_TARGETS;
}
function seriesSummary(series, layers, row, format, names = layers.map((layer) => `L${layer}`)) {
  const first = series.values.findIndex((v) => v !== null);
  if (first < 0) return series.loaded ? "no value" : "loading";
  let lastRow = first;
  series.values.forEach((v, i) => {
    if (v !== null) lastRow = i;
  });
  const at = series.values[row];
  const parts = [`${names[first]} ${format(
    /** @type {number} */
    series.values[first]
  )}`];
  if (lastRow !== first) parts.push(`${names[lastRow]} ${format(
    /** @type {number} */
    series.values[lastRow]
  )}`);
  return `${parts.join(" → ")}; at ${names[row]}: ${at === null ? "no value" : format(at)}`;
}

// src/heatmap/trajectory_view.js
function formatValue(mode, v) {
  return mode === "rank" ? formatRank(v) : formatProb(v);
}
var SOURCE_TEXT = { hover: "hovered", focus: "focused", pinned: "pinned", last: "last position" };
var TrajectoryView = class {
  /**
   * @param {HTMLElement} panel the element the chart fills
   * @param {string} id a page-unique prefix for element ids
   * @param {{onLayer: (row: number) => void, onInteract: () => void}} callbacks
   *   `onLayer`: a click on the plot chose a layer; `onInteract`: the user turned to the chart
   *   (the view loads the detail sections then)
   */
  constructor(panel, id, callbacks) {
    this.panel = panel;
    this.callbacks = callbacks;
    this.mode = "prob";
    this.toggled = /* @__PURE__ */ new Map();
    this.input = null;
    this.renderKey = "";
    this.dataSeen = null;
    this.geometry = null;
    this.debug = null;
    this.waiting = false;
    const descId = `${id}-traj-desc`;
    this.svg = /** @type {SVGSVGElement} */
    s("svg", { class: "murano-traj-svg", role: "img", "aria-labelledby": descId });
    this.desc = s("desc", { id: descId });
    this.svg.append(this.desc);
    const controls = h("div", "murano-traj-controls");
    this.titleEl = h("span", "murano-traj-title");
    const modes = h("div", "murano-traj-mode", { role: "group", "aria-label": "Chart values" });
    this.probButton = h("button", "murano-traj-mode-button", { type: "button", "aria-pressed": "true", "data-mode": "prob" }, "Probability");
    this.rankButton = h("button", "murano-traj-mode-button", { type: "button", "aria-pressed": "false", "data-mode": "rank" }, "Rank (log)");
    this.metricButton = h("button", "murano-traj-mode-button", { type: "button", "aria-pressed": "false", "data-mode": "metric", hidden: "" });
    modes.append(this.probButton, this.rankButton, this.metricButton);
    this.metricSeen = "";
    controls.append(this.titleEl, modes);
    this.legend = h("ul", "murano-traj-legend", { "aria-label": "Lines (press to show or hide); values at the chosen layer" });
    this.note = h("div", "murano-traj-note", { hidden: "" });
    panel.append(this.svg, controls, this.legend, this.note);
    const abort = new AbortController();
    this.abort = abort;
    const signal = abort.signal;
    for (const button of [this.probButton, this.rankButton, this.metricButton]) {
      button.addEventListener("click", () => this.setMode(
        /** @type {TrajectoryMode} */
        button.dataset.mode
      ), { signal });
    }
    this.legend.addEventListener(
      "click",
      (event) => {
        const target = (
          /** @type {Element | null} */
          event.target
        );
        const button = target && target.closest ? target.closest("button[data-series]") : null;
        if (!(button instanceof HTMLElement)) return;
        const key = button.dataset.series || "";
        const pressed = button.getAttribute("aria-pressed") === "true";
        this.toggled.set(key, !pressed);
        this.rerender();
      },
      { signal }
    );
    this.svg.addEventListener(
      "click",
      (event) => {
        if (!this.geometry) return;
        const box = this.svg.getBoundingClientRect();
        const row = rowAtY(this.geometry, event.clientY - box.top);
        if (row >= 0) this.callbacks.onLayer(row);
      },
      { signal }
    );
    panel.addEventListener("pointerenter", () => this.callbacks.onInteract(), { signal });
    panel.addEventListener("focusin", () => this.callbacks.onInteract(), { signal });
  }
  destroy() {
    this.abort.abort();
  }
  /**
   * The part of the chart a tooltip should leave visible, in viewport coordinates: the panel
   * from the plot's left edge on (the lines, the axis and the legend's values follow the hovered
   * column). Its layer-number margin may be covered: a tooltip beside a cell next to the chart
   * then stays on the cell's right instead of flipping over the cells on its left.
   * @returns {{x: number, y: number, w: number, h: number}}
   */
  keepVisibleRect() {
    const r = this.panel.getBoundingClientRect();
    const inset = Math.min(r.width, this.geometry ? this.geometry.plotX : 0);
    return { x: r.left + inset, y: r.top, w: r.width - inset, h: r.height };
  }
  /**
   * Probability or rank.
   * @param {TrajectoryMode} mode
   */
  setMode(mode) {
    this.showMode(mode);
    this.callbacks.onInteract();
    this.rerender();
  }
  /**
   * The mode and its buttons' state ("metric" only where the metric button is offered).
   * @param {TrajectoryMode} mode
   */
  showMode(mode) {
    this.mode = mode === "rank" ? "rank" : mode === "metric" && !this.metricButton.hidden ? "metric" : "prob";
    this.probButton.setAttribute("aria-pressed", String(this.mode === "prob"));
    this.rankButton.setAttribute("aria-pressed", String(this.mode === "rank"));
    this.metricButton.setAttribute("aria-pressed", String(this.mode === "metric"));
  }
  /**
   * Follows the heatmap's metric: the metric button names it (offered for a metric in bits), and
   * a change of metric sets the mode to the one that reads it (`chartModeFor`); the user's own
   * choice holds until the metric changes again.
   * @param {LensData} data
   * @param {string} metric
   */
  followMetric(data, metric) {
    const spec = metricSpec(data, metric);
    const own = chartModeFor(spec) === "metric" && spec ? spec : null;
    this.metricButton.hidden = !own;
    this.metricButton.textContent = own ? shortLabel(own.label) : "";
    if (own) this.metricButton.setAttribute("title", `The heatmap's colours: ${own.description}`);
    if (metric !== this.metricSeen) {
      this.metricSeen = metric;
      this.showMode(chartModeFor(spec));
    } else if (this.mode === "metric" && !own) {
      this.showMode("prob");
    }
  }
  rerender() {
    this.renderKey = "";
    if (this.input) this.update(this.input);
  }
  /**
   * Draws the chart for `input` (skipped when nothing it shows changed).
   * Over 100 lines on purpose: one pass from the input to the SVG in drawing order (scales, the
   * axes, a line per token or group, the sum, the cursor), each part a few lines that read the
   * same locals; split, each piece would take most of them as arguments.
   * @param {ChartInput} input
   */
  update(input) {
    this.input = input;
    const { data, prompt, position, source, row, rowH, heatY, heightBelow, detailsRequested, detailsLate = false } = input;
    const others = input.others || [];
    const width = this.panel.clientWidth || 280;
    const loaded = [data, ...others.map((o) => o.data)].reduce((n, d) => n + Object.keys(d.arrays).length, 0);
    const metric = input.metric || "";
    if (metric) this.followMetric(data, metric);
    const key = [prompt, position, source, row, rowH, heatY, heightBelow, width, this.mode, metric, loaded, data.L, detailsRequested, detailsLate, others.length].join("|");
    if (key === this.renderKey && this.dataSeen === data) return;
    this.renderKey = key;
    this.dataSeen = data;
    const mode = this.mode;
    const g = trajectoryRowsGeometry({ width, nLayers: data.L, rowH, heatY, heightBelow });
    this.geometry = g;
    const scale = valueScale(mode, mode === "rank" ? Math.max(rankAxisMax(data), ...others.map((o) => rankAxisMax(o.data))) : 9, { data, name: metric });
    const series = trajectorySeries(data, prompt, position, mode, metric);
    const firstTarget = series.findIndex((s2) => s2.kind === "target");
    if (mode !== "metric") series.splice(firstTarget < 0 ? series.length : firstTarget, 0, ...lensSeries(others, prompt, position, mode));
    const shown = series.map((s2) => seriesShown(s2, this.toggled));
    const root = this.svg;
    root.setAttribute("width", String(g.width));
    root.setAttribute("height", String(g.height));
    root.setAttribute("viewBox", `0 0 ${g.width} ${g.height}`);
    const children = [this.desc];
    const grid = s("g", { class: "murano-traj-grid" });
    for (const tick2 of scale.ticks) {
      const x = valueX(g, tick2.t);
      grid.append(s("line", { x1: x, x2: x, y1: g.plotY, y2: g.plotY + g.plotH }));
    }
    const ticks = s("g", { class: "murano-traj-ticks", "aria-hidden": "true" });
    scale.ticks.forEach((tick2, i) => {
      const anchor = i === 0 && tick2.t < 0.05 ? "start" : tick2.t > 0.95 ? "end" : "middle";
      ticks.append(s("text", { x: valueX(g, tick2.t), y: g.plotY - 4, "text-anchor": anchor }, tick2.label));
    });
    const frame = s("rect", { class: "murano-traj-frame", x: g.plotX, y: g.plotY, width: g.plotW, height: g.plotH });
    const bandY = g.plotY + (data.L - 1 - row) * g.rowH;
    const band = s("rect", { class: "murano-traj-band", x: g.plotX, y: bandY, width: g.plotW, height: g.rowH });
    const labels = s("g", { class: "murano-traj-layers", "aria-hidden": "true" });
    for (let i = 0; i < data.L; i++) {
      const chosen = i === row;
      if (!chosen && !rowLabelled(data, i, g.labelStride)) continue;
      if (!chosen && Math.abs(i - row) * g.rowH < 11) continue;
      labels.append(s("text", { x: g.labelX, y: rowCentreY(g, i), class: chosen ? "murano-traj-chosen" : "" }, rowLabel(data, i, "axis")));
    }
    labels.append(s("text", { x: g.labelX, y: g.plotY - 4, class: "murano-traj-axis-name" }, "layer"));
    const lines = s("g", { class: "murano-traj-lines" });
    const markers = s("g", { class: "murano-traj-markers" });
    const drawn = [];
    const r = Math.max(2.5, Math.min(4.5, g.rowH / 3));
    const styles = series.map((s2) => seriesStyle(s2));
    const segmentsOf = series.map((s2) => seriesSegments(s2, scale, g));
    series.forEach((s2, k) => {
      drawn.push({ key: s2.key, kind: s2.kind, label: s2.label, token: s2.token, loaded: s2.loaded, shown: shown[k], values: s2.values, segments: segmentsOf[k] });
    });
    for (const k of drawOrder(styles)) {
      if (!shown[k]) continue;
      const s2 = series[k];
      const style = styles[k];
      const group = s("g", { "data-series": s2.key, style: `color: ${style.colour}` });
      for (const points of segmentsOf[k]) {
        if (points.length === 1) {
          const [x, y] = points[0];
          group.append(s("line", { class: "murano-traj-line", x1: x - 3, x2: x + 3, y1: y, y2: y, "stroke-width": style.width }));
          continue;
        }
        group.append(s("polyline", { class: "murano-traj-line", points: points.map(([x, y]) => `${x},${y}`).join(" "), ...strokeAttributes(style) }));
      }
      lines.append(group);
      const v = s2.values[row];
      if (v !== null) {
        const x = valueX(g, scale.toUnit(v));
        const y = rowCentreY(g, row);
        markers.append(s("path", { class: `murano-traj-marker murano-traj-${style.marker}`, d: markerPath(style.marker, x, y, r * style.markerScale), style: `color: ${style.colour}; opacity: ${style.opacity}`, "data-series": s2.key }));
      }
    }
    const axisTitle = s("text", { class: "murano-traj-axis-title", x: g.plotX + g.plotW / 2, y: g.plotY + g.plotH + 16, "text-anchor": "middle" }, scale.title);
    children.push(grid, band, frame, lines, markers, labels, ticks, axisTitle);
    root.replaceChildren(...children);
    const col = data.offsets[prompt] + position;
    const input0 = displayToken(data.tokens[data.arrays.input_ids[col]] ?? "");
    const where = `position ${position} · ${truncateText(input0, 16)} · ${SOURCE_TEXT[source]}`;
    this.titleEl.textContent = where;
    this.titleEl.setAttribute("title", `Values across layers at position ${position} (input ${input0}), ${SOURCE_TEXT[source]}. Hover, focus or pin a cell to choose the column.`);
    const spec = metricSpec(data, metric);
    const format = (v) => mode === "metric" && spec ? formatMetric(spec, v) : formatValue(mode, v);
    const items = series.map((s2, k) => this.legendItem(s2, shown[k], row, format, data));
    const active = document.activeElement;
    const focusedKey = active instanceof HTMLElement && this.legend.contains(active) ? active.dataset.series : void 0;
    this.legend.replaceChildren(...items);
    if (focusedKey !== void 0) {
      const next = items.map((li) => li.firstElementChild).find((b) => b instanceof HTMLElement && b.dataset.series === focusedKey);
      if (next instanceof HTMLElement) next.focus({ preventScroll: true });
    }
    const waitingFor = { target: "targets", answer: "the answer", lens: "the other lenses" };
    const waiting = series.filter((s2) => !s2.loaded).map((s2) => waitingFor[s2.kind] || "the final prediction");
    const unique = [...new Set(waiting)];
    this.waiting = unique.length > 0;
    this.note.hidden = unique.length === 0;
    const what = unique.join(", ");
    this.note.textContent = !unique.length ? "" : detailsRequested ? waitingNote(what, detailsLate) : `Hover or focus a cell, or point at this chart, to load ${what}.`;
    const summary = series.filter((_, k) => shown[k]).map((s2) => `${s2.label}${s2.token !== null ? ` ${displayToken(s2.token)}` : ""}: ${seriesSummary(s2, data.layers, row, format, rowNames(data))}`).join(". ");
    this.desc.textContent = `${mode === "rank" ? "Rank" : mode === "metric" && spec ? shortLabel(spec.label) : "Probability"} across ${data.L} layers at ${where}. ${summary}.`;
    this.debug = { prompt, position, source, mode, row, geometry: g, series: drawn };
  }
  /**
   * One legend entry: a button that shows or hides its line, with a swatch, the line's name, its
   * token and its value at the chosen layer.
   * @param {Series} s
   * @param {boolean} shown
   * @param {number} row
   * @param {(v: number) => string} format
   * @param {LensData} data
   */
  legendItem(s2, shown, row, format, data) {
    const style = seriesStyle(s2);
    const li = h("li", "murano-traj-entry");
    const button = h("button", "murano-traj-item", { type: "button", "aria-pressed": String(shown), "data-series": s2.key });
    const swatch = s("svg", { class: "murano-traj-swatch", width: 26, height: 12, viewBox: "0 0 26 12", "aria-hidden": "true", style: `color: ${style.colour}` });
    swatch.append(
      s("line", { class: "murano-traj-line", ...swatchLine(style) }),
      s("path", { class: `murano-traj-marker murano-traj-${style.marker}`, d: markerPath(style.marker, 13, 6, Math.min(5, 3 * style.markerScale)), style: `opacity: ${style.opacity}` })
    );
    const name = h("span", "murano-traj-name", {}, s2.label);
    const value = s2.values[row];
    const valueText = !s2.loaded ? "loading…" : value === null ? "–" : format(value);
    const valueEl = h("span", "murano-traj-value", { "data-value": value === null ? "" : String(value) }, valueText);
    button.append(swatch, name);
    if (s2.token !== null) button.append(h("span", "murano-token murano-traj-token", {}, displayToken(s2.token)));
    button.append(valueEl);
    button.setAttribute("title", `${s2.note}. ${shown ? "Press to hide" : "Press to show"} this line. ${seriesSummary(s2, data.layers, row, format, rowNames(data))}`);
    button.setAttribute(
      "aria-label",
      `${s2.label}${s2.token !== null ? ` ${displayToken(s2.token)}` : ""}: ${valueText} at ${rowLabel(data, row, "long")}${shown ? "" : " (hidden)"}`
    );
    li.append(button);
    return li;
  }
};

// src/heatmap/view/store.js
function initialState2() {
  return { prompt: 0, layer: 0, metric: "", target: "", group: "", selected: null, hover: null, focus: null, focused: false, hide_template: false, lens: "", lens_beside: "", view: "layers", explain: "top1", heads: false, dataVersion: 0 };
}
function createStore2(state = initialState2()) {
  return createStore(state);
}

// src/heatmap/throttle.js
function throttle(fn, ms, { now = () => Date.now(), setTimer = setTimeout, clearTimer = clearTimeout } = {}) {
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

// src/heatmap/view/sync.js
var SYNC_INTERVAL_MS = 100;
function send(view, name, value) {
  const model = view.model;
  if (model.get(name) === value) return;
  model.set(name, value);
  model.save_changes();
}
function syncers(view) {
  return {
    syncPrompt: throttle((v) => send(view, "prompt", v), SYNC_INTERVAL_MS),
    syncLayer: throttle((row) => {
      if (view.data) send(view, "layer", view.data.layers[row]);
    }, SYNC_INTERVAL_MS)
  };
}

// src/heatmap/view/selection.js
function clampCellTo(data, prompt, columns, cell) {
  const position = clampIndex(cell.position, data.lengths[prompt]);
  return { layerIndex: clampIndex(cell.layerIndex, data.L), position: nearestShown(columns, position) };
}
function clampCell(view, cell) {
  return clampCellTo(
    /** @type {LensData} */
    view.data,
    view.state.prompt,
    shownColumns(view),
    cell
  );
}
function shownColumns(view) {
  const data = view.data;
  return data ? shownPositions(data, view.state.prompt, view.state.hide_template) : null;
}
function keyboardStart(s2, firstPosition2) {
  const sel = s2.selected;
  return sel && sel.prompt === s2.prompt ? { layerIndex: sel.layer_index, position: sel.position } : { layerIndex: s2.layer, position: firstPosition2 };
}
function setSelected(view, value, sync) {
  view.store.set({ selected: value });
  if (sync) send(view, "selected", value);
  showPin(view.ui, view.data, value);
  updateTooltip(view);
  view.updateWhy();
  view.requestDraw();
}
function setHover(view, cell) {
  if (sameCell(view.state.hover, cell)) return;
  view.store.set({ hover: cell });
  if (cell) {
    view.chartHover = cell;
    view.whyHover = cell;
    requestDetails(view);
  }
  updateTooltip(view);
  view.updateWhy();
  view.requestDraw();
}
function setFocus(view, cell, announceIt = true) {
  view.store.set({ focus: cell, hover: null });
  view.chartHover = null;
  view.whyHover = null;
  const { layout, ui } = view;
  if (layout) {
    const scroll = revealColumn(layout, ui.scroller.scrollLeft, Math.max(0, columnOf(layout, cell.position)));
    if (scroll !== ui.scroller.scrollLeft) ui.scroller.scrollLeft = scroll;
  }
  if (announceIt) announce(view, cell);
  updateTooltip(view);
  view.requestDraw();
}
function announce(view, cell) {
  if (!view.data) return;
  const s2 = view.state;
  const details = cellDetails(view.data, s2.prompt, cell.layerIndex, cell.position, view.targetIndex());
  view.ui.readout.textContent = readoutText(details, { pinned: isSelected(s2.selected, s2.prompt, cell.layerIndex, cell.position), metric: view.shownMetric });
}
function togglePin(view, cell) {
  if (!view.data) return;
  const s2 = view.state;
  const next = toggleSelection(s2.selected, s2.prompt, cell.layerIndex, cell.position);
  setSelected(view, next, true);
  view.ui.readout.textContent = next ? readoutText(cellDetails(view.data, s2.prompt, cell.layerIndex, cell.position, view.targetIndex()), { pinned: true, metric: view.shownMetric }) : "Unpinned.";
}
function showKeyboardFocus(view) {
  const s2 = view.state;
  const layout = view.layout;
  if (!view.data || !layout) return;
  view.store.set({ focused: true });
  requestDetails(view);
  if (!s2.focus) {
    const first = Math.min(layout.nPositions - 1, Math.ceil(view.scrollLeft() / layout.cellW));
    view.store.set({ focus: clampCell(view, keyboardStart(s2, positionAt(layout, first))) });
  }
  setFocus(
    view,
    /** @type {Cell} */
    s2.focus
  );
}
function setHideTemplate(view, hide, sync) {
  const s2 = view.state;
  if (sync) send(view, "hide_template", hide);
  view.ui.hideTemplate.checked = hide;
  if (s2.hide_template === hide) return;
  view.store.set({ hide_template: hide, hover: null });
  view.chartHover = null;
  if (s2.focus) view.store.set({ focus: clampCell(view, s2.focus) });
  if (view.data) showControls(view.ui, view.data, s2);
  view.layoutKey = null;
  view.relayout();
  updateTooltip(view);
}
function readoutFollowsTarget(view) {
  return view.store.subscribe((changed, s2) => {
    if (changed.includes("target") && s2.focused && s2.focus) announce(view, clampCell(view, s2.focus));
  });
}

// src/heatmap/view/navigation.js
function setPrompt(view, value, sync) {
  const { data, ui, store, components } = view;
  if (!data) return;
  const prompt = clampIndex(value, data.P);
  if (sync === "throttled") view.syncPrompt(prompt);
  if (prompt === store.state.prompt) {
    ui.promptUi.input.value = String(prompt);
    return;
  }
  store.set({ prompt, hover: null });
  view.chartHover = null;
  view.whyHover = null;
  components.hover = null;
  components.focus = null;
  components.revealPending = true;
  const s2 = store.state;
  if (s2.focus) store.set({ focus: clampCell(view, s2.focus) });
  showControls(ui, data, s2);
  showPin(ui, data, s2.selected);
  view.revealPending = true;
  view.relayout();
  updateTooltip(view);
  view.updateWhy();
}
function setLayer(view, value, sync) {
  const { data, ui, store } = view;
  if (!data) return;
  const row = clampIndex(value, data.L);
  if (sync === "throttled") view.syncLayer(row);
  if (row === store.state.layer) {
    ui.layerUi.input.value = String(row);
    return;
  }
  store.set({ layer: row });
  showControls(ui, data, store.state);
  view.relayoutComponents();
  view.updateWhy();
  view.requestDraw();
}
function setModelLayer(view, layer) {
  if (view.data) setLayer(view, rowOfModelLayer(view.data.layers, layer), false);
}

// src/heatmap/view/chart.js
function makeTrajectory(view, id) {
  return new TrajectoryView(view.ui.trajPanel, id, {
    onLayer: (row) => {
      setLayer(view, row, "throttled");
      view.syncLayer.flush();
    },
    onInteract: () => {
      if (view.detailsRequested) return;
      requestDetails(view);
      view.requestDraw();
    }
  });
}
function placeChart(view, charW) {
  const { ui, painter } = view;
  const data = (
    /** @type {LensData} */
    view.data
  );
  const available = ui.main.clientWidth || view.el.clientWidth || 800;
  const key = `${available}|${charW}`;
  if (key === view.chartPlaceKey) return;
  view.chartPlaceKey = key;
  const longest = Math.max(...data.lengths);
  const natural = computeLayout({ nLayers: data.L, nPositions: longest, width: 0, labelW: painter.labelWidth(data), charW, maxChars: 10 }).contentW;
  const beside = chartBeside(available, natural);
  ui.main.classList.toggle("murano-side", beside);
  ui.main.classList.toggle("murano-stacked", !beside);
  const widest = painter.labelWidth(data) + longest * GEOMETRY.maxCellW + GEOMETRY.rightPad;
  ui.left.style.maxWidth = beside ? `${widest}px` : "";
}
function drawTrajectory(view) {
  const { data, layout } = view;
  if (!data || !layout) return;
  const s2 = view.state;
  const column = chartColumn({ hover: view.chartHover, focus: s2.focus, focused: s2.focused, selected: s2.selected, prompt: s2.prompt }, data.lengths[s2.prompt]);
  view.trajectory.update({
    data,
    metric: s2.view === "components" ? "" : view.shownMetric,
    others: view.lenses.filter((lens) => lens !== data).map((lens) => ({ name: lens.lensName, title: lensTitle(lens), data: lens })),
    prompt: s2.prompt,
    position: column.position,
    source: column.source,
    row: s2.layer,
    rowH: layout.rowH,
    // Under a caption (two grids), the heatmap's rows start that much lower.
    heatY: layout.heatY + view.ui.canvas.offsetTop,
    // Beside the heatmap, as tall as it; below it, only room for the axis title.
    heightBelow: view.ui.main.classList.contains("murano-side") ? layout.height - layout.heatY - layout.heatH : 0,
    detailsRequested: view.detailsRequested,
    detailsLate: view.detailsLate
  });
  if (view.trajectory.waiting && !view.detailsRequested) {
    requestDetails(view);
    if (view.detailsRequested) drawTrajectory(view);
  }
}

// src/heatmap/attribution.js
var WHY_TOP = 8;
var HEAD = /^L(\d+)\.H(\d+)$/;
var PART = /^L(\d+)\.(attn|mlp|attn_bias)$/;
function hasAttribution(data) {
  return data.components.length > 0 && Boolean(data.meta.sections && data.meta.sections.contributions);
}
function answerAttribution(data) {
  const specs = data.meta.sections || {};
  if (specs.answer_token_contributions) return "cells";
  if (specs.answer_row_contributions) return "last";
  return null;
}
function hasHeads(components) {
  return components.some((label) => HEAD.test(label));
}
function componentName(label, form = "short") {
  const head = HEAD.exec(label);
  if (head) return form === "long" ? `layer ${head[1]} head ${head[2]}` : `L${head[1]} H${head[2]}`;
  const part = PART.exec(label);
  if (part) {
    const words = { attn: ["attn", "attention"], mlp: ["MLP", "MLP"], attn_bias: ["attn bias", "attention output bias"] }[part[2]] || [part[2], part[2]];
    return form === "long" ? `layer ${part[1]} ${words[1]}` : `L${part[1]} ${words[0]}`;
  }
  if (label === "embed") return form === "long" ? "embeddings" : "embed";
  return label;
}
function componentUnits(components, heads) {
  const units = [];
  const attention = /* @__PURE__ */ new Map();
  components.forEach((label, index) => {
    const head = HEAD.exec(label);
    const part = PART.exec(label);
    const layer = head ? head[1] : part && part[2] === "attn_bias" ? part[1] : null;
    if (!heads && layer !== null) {
      let unit = attention.get(layer);
      if (!unit) {
        unit = { label: `L${layer} attn`, long: `layer ${layer} attention`, members: [] };
        attention.set(layer, unit);
        units.push(unit);
      }
      unit.members.push(index);
      return;
    }
    units.push({ label: componentName(label), long: componentName(label, "long"), members: [index] });
  });
  return units;
}
function unitValue2(values, unit) {
  let sum = 0;
  let any = false;
  for (const i of unit.members) {
    const v = values[i];
    if (Number.isFinite(v)) {
      sum += v;
      any = true;
    }
  }
  return any ? sum : NaN;
}
function parseExplain(data, value) {
  if (value === "answer" && data.answerSets.length && answerAttribution(data)) return { kind: "answer" };
  if (typeof value === "string" && value.startsWith("target:") && data.meta.sections?.target_contributions) {
    const index = data.targets.indexOf(value.slice("target:".length));
    if (index >= 0) return { kind: "target", index };
  }
  return { kind: "top1" };
}
function explainValue(data, explain) {
  if (explain.kind === "target") return `target:${data.targets[explain.index]}`;
  return explain.kind;
}
function explainOptions(data, show) {
  const specs = data.meta.sections || {};
  const set = data.answerSets[0];
  const foiled = data.foils && data.foils.some((f) => f !== null);
  const where = answerAttribution(data);
  const options = [{ value: "top1", label: "the cell's top-1 token", available: true, reason: "" }];
  options.push({
    value: "answer",
    label: set ? `the answer${foiled ? " against the foil" : ""}${where === "last" ? " (last position)" : ""}` : "the answer",
    available: Boolean(set && where),
    reason: set ? "this result has no attribution of the answer" : "no answers were given"
  });
  data.targets.forEach((target) => {
    options.push({ value: `target:${target}`, label: `target ${show(target)}`, available: Boolean(specs.target_contributions), reason: "this result has no attribution of its targets" });
  });
  return options;
}
function explainedLogit(data, explain, prompt, row, position) {
  const a = data.arrays;
  const C = data.components.length;
  if (!C) return null;
  const parts = (array, at) => (
    /** @type {Float32Array} */
    array.subarray(at * C, at * C + C)
  );
  const set = data.answerSets[0];
  const answer = explain.kind === "answer" && set ? set.answers[prompt] : null;
  const foil = data.foils ? data.foils[prompt] : null;
  if (explain.kind === "answer" && answerAttribution(data) === "last") {
    const values2 = a.answer_row_contributions;
    const bias2 = a.answer_row_bias;
    if (answer === null || !values2 || !bias2) return null;
    const at = lastPositionIndex(data, row, prompt);
    return withTotal({ token: answer, foil, position: data.lengths[prompt] - 1, values: parts(values2, at), bias: bias2[at], total: NaN });
  }
  const idx = cellIndex(data, prompt, row, position);
  if (isMissing(data, idx)) return null;
  if (explain.kind === "answer") {
    const values2 = a.answer_token_contributions;
    const bias2 = a.answer_token_bias;
    if (answer === null || !values2 || !bias2) return null;
    return withTotal({ token: answer, foil, position, values: parts(values2, idx), bias: bias2[idx], total: NaN });
  }
  if (explain.kind === "target") {
    const values2 = a.target_contributions;
    const bias2 = a.target_bias;
    if (!values2 || !bias2) return null;
    const at = cellTargetIndex(data, prompt, row, position, explain.index);
    return withTotal({ token: data.targets[explain.index], foil: null, position, values: parts(values2, at), bias: bias2[at], total: NaN });
  }
  const values = a.contributions;
  const bias = a.contribution_bias;
  if (!values || !bias) return null;
  const total = a.top1_logits ? a.top1_logits[idx] : NaN;
  return withTotal({ token: data.tokens[a.predicted_tokens[idx]] ?? "", foil: null, position, values: parts(values, idx), bias: bias[idx], total });
}
function nothingExplained(data, explain, prompt, position) {
  if (explain.kind === "answer") {
    const set = data.answerSets[0];
    if (!set || set.answers[prompt] === null) return "this prompt has no answer";
    if (data.foils && data.foils[prompt] === null) return "this prompt has no foil, where other prompts have one";
    if (answerAttribution(data) === "last" && position !== data.lengths[prompt] - 1) return "the answer is explained at the prompt's last position";
  }
  return "this cell has no value (not finite)";
}
function withTotal(explained) {
  let sum = 0;
  let any = false;
  for (let i = 0; i < explained.values.length; i++) {
    const v = explained.values[i];
    if (Number.isFinite(v)) {
      sum += v;
      any = true;
    }
  }
  if (!any && !Number.isFinite(explained.bias)) return null;
  const total = Number.isFinite(explained.total) ? explained.total : sum + (Number.isFinite(explained.bias) ? explained.bias : 0);
  return { ...explained, total };
}
function formatLogit(value) {
  if (!Number.isFinite(value)) return "–";
  const text = Math.abs(value).toFixed(2);
  if (Number(text) === 0) return "0.00";
  return `${value < 0 ? "−" : "+"}${text}`;
}
function whyModel(data, { explain, prompt, row, position, heads, top = WHY_TOP, show }) {
  const explained = explainedLogit(data, explain, prompt, row, position);
  if (!explained) return null;
  const units = componentUnits(data.components, heads);
  const parts = units.map((unit) => unitValue2(explained.values, unit));
  const held = parts.map((_, i) => i).filter((i) => Number.isFinite(parts[i]));
  const shown = new Set([...held].sort((i, j) => Math.abs(parts[j]) - Math.abs(parts[i]) || i - j).slice(0, top));
  const bars = held.filter((i) => shown.has(i)).map((i) => ({ kind: (
    /** @type {const} */
    "unit"
  ), label: units[i].label, long: units[i].long, value: parts[i], unit: i, count: units[i].members.length }));
  const rest = held.filter((i) => !shown.has(i));
  if (rest.length) {
    const value = rest.reduce((sum, i) => sum + parts[i], 0);
    bars.push({ kind: "other", label: `other (${rest.length})`, long: `${rest.length} other components`, value, unit: -1, count: rest.length });
  }
  const bias = Number.isFinite(explained.bias) ? explained.bias : 0;
  bars.push({ kind: "bias", label: "bias", long: "bias (no component: the norm's and unembedding's biases)", value: bias, unit: -1, count: 0 });
  const scale = Math.max(1e-9, ...bars.map((b) => Math.abs(b.value)));
  const token = show(explained.token);
  const foil = explained.foil !== null ? show(explained.foil) : null;
  const softcap = data.logitSoftcap !== null;
  const totalLabel = `${foil !== null ? "logit difference" : "logit"}${softcap ? " before the soft-cap" : ""}`;
  const what = explain.kind === "answer" ? "the answer " : explain.kind === "target" ? "target " : "";
  const where = [rowLabel(data, row), `position ${explained.position}`];
  if (explain.kind === "answer" && answerAttribution(data) === "last") where.push("the prompt's last");
  const after = units.length - held.length;
  const notes = [];
  if (after > 0) notes.push(`Components after ${rowLabel(data, row)} have no part in it.`);
  if (softcap) notes.push(`The model soft-caps its logits at ${data.logitSoftcap}: the parts sum to the logit before the cap.`);
  return {
    heading: `Why ${what}${token}${foil !== null ? ` rather than ${foil}` : ""}?`,
    where: where.join(" · "),
    caption: whyCaption(data, explain, explained, prompt, row, show),
    totalLabel,
    total: explained.total,
    bars,
    scale,
    note: notes.join(" ")
  };
}
function whyCaption(data, explain, explained, prompt, row, show) {
  const token = show(explained.token);
  const set = data.answerSets[0];
  const several = set && (set.nTokens[prompt] ?? 1) > 1;
  const which = explain.kind === "answer" ? `the answer ${token}${several ? " (its first token)" : ""}` : explain.kind === "target" ? `the tracked token ${token}` : `${token}, this cell's top-1 token`;
  const logit = explained.foil !== null ? `the logit of ${which} minus that of the foil ${show(explained.foil)}` : `the logit of ${which}`;
  const layer = data.layers[row];
  const mid = isSublayerRow(data, row);
  const cell = mid ? `layer ${layer} after its attention` : `layer ${layer}'s output`;
  const column = data.offsets[prompt] + explained.position;
  const ids = data.arrays.input_ids;
  const input = ids && column < ids.length ? data.tokens[ids[column]] : void 0;
  const at = `${cell}, position ${explained.position}${input !== void 0 ? ` (input ${show(input)})` : ""}`;
  const norm = "the final norm (its scale held at this cell's value) and the unembedding";
  const own = !mid && data.nModelLayers !== null && layer === data.nModelLayers - 1;
  const kind = data.lensKind || "logit";
  const lens = data.lensTitle || `${kind.charAt(0).toUpperCase()}${kind.slice(1)} lens`;
  const readout = own ? `the model's own, as every lens reads the last layer: ${norm}` : kind === "logit" ? `${lens}: ${norm}` : `${lens}, then ${norm}`;
  const foil = explained.foil !== null ? "Each part is the answer's share minus the foil's." : "No foil: a raw logit, so a part that raises every token alike counts too.";
  return `Each bar is one component's direct share of ${logit}, at ${at}. Readout: ${readout}. ${foil}`;
}
function componentGrid(data, { explain, prompt, row, heads }) {
  const units = componentUnits(data.components, heads);
  const n = data.lengths[prompt];
  const values = new Float64Array(units.length * n).fill(NaN);
  const tokens = new Array(n).fill("");
  let top = 0;
  const lastOnly = explain.kind === "answer" && answerAttribution(data) === "last";
  for (let j = 0; j < n; j++) {
    if (lastOnly && j !== n - 1) continue;
    const explained = explainedLogit(data, explain, prompt, row, j);
    if (!explained) continue;
    tokens[j] = explained.token;
    units.forEach((unit, u) => {
      const v = unitValue2(explained.values, unit);
      values[u * n + j] = v;
      if (Number.isFinite(v)) top = Math.max(top, Math.abs(v));
    });
  }
  return { units, n, values, max: top > 0 ? niceCeil(top) : 1, tokens };
}
function partColour(value, max) {
  const m = max > 0 ? max : 1;
  return interpolateStops(DIVERGING_STOPS, 0.5 + 0.5 * Math.max(-1, Math.min(1, value / m)));
}
function componentImage(grid, columns = null) {
  const width = columns ? columns.length : grid.n;
  const height = grid.units.length;
  const data = new Uint8ClampedArray(width * height * 4);
  for (let u = 0; u < height; u++) {
    const y = height - 1 - u;
    for (let c = 0; c < width; c++) {
      const j = columns ? columns[c] : c;
      const v = grid.values[u * grid.n + j];
      if (!Number.isFinite(v)) continue;
      const rgb = partColour(v, grid.max);
      const o = (y * width + c) * 4;
      data[o] = rgb[0];
      data[o + 1] = rgb[1];
      data[o + 2] = rgb[2];
      data[o + 3] = 255;
    }
  }
  return { width, height, data };
}

// src/heatmap/view/components.js
var VALUE_CHARS = 5;
function buildComponents(id) {
  const box = document.createElement("div");
  box.className = "murano-components";
  box.hidden = true;
  const caption = document.createElement("div");
  caption.className = "murano-comp-caption";
  const scroller = document.createElement("div");
  scroller.className = "murano-scroll";
  const track = document.createElement("div");
  track.className = "murano-track";
  const canvas = document.createElement("canvas");
  canvas.className = "murano-comp-canvas";
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute("aria-roledescription", "component heatmap");
  canvas.setAttribute("aria-describedby", `${id}-readout`);
  track.append(canvas);
  scroller.append(track);
  box.append(caption, scroller);
  return { box, caption, scroller, track, canvas };
}
function componentCaption(data, explain, row) {
  const what = explain.kind === "answer" ? `the answer${data.foils ? " (minus the foil's)" : ""}${answerAttribution(data) === "last" ? ", at the last position" : " as each position's next token"}` : explain.kind === "target" ? `target ${displayToken(data.targets[explain.index])}` : "each position's top-1 token";
  const cap = data.logitSoftcap !== null ? " before the soft-cap" : "";
  return `Each component's direct part of the logit${cap} of ${what}, read at ${rowLabel(data, row)} (the layer slider). Orange raises it, blue lowers it.`;
}
var ComponentView = class {
  /**
   * @param {ComponentUi} ui
   * @param {LensView} view
   * @param {AbortSignal} signal
   */
  constructor(ui, view, signal) {
    this.ui = ui;
    this.view = view;
    this.grid = null;
    this.layout = null;
    this.key = "";
    this.image = null;
    this.hover = null;
    this.focus = null;
    this.focused = false;
    this.revealPending = true;
    bindGrid(ui.canvas, this.gridApi(), signal);
    ui.scroller.addEventListener(
      "scroll",
      () => {
        if (this.hover) this.setHover(null);
        this.draw();
      },
      { signal, passive: true }
    );
  }
  get shown() {
    return !this.ui.box.hidden;
  }
  /** Recomputes the values (what is explained, the prompt, the row or the heads changed). */
  invalidate() {
    this.key = "";
  }
  /** The grid for the view's current state (cached by what it depends on). */
  currentGrid() {
    const view = this.view;
    const data = view.data;
    if (!data) return null;
    const s2 = view.state;
    const explain = view.explainChoice();
    const key = `${data.lensName}|${s2.prompt}|${s2.layer}|${JSON.stringify(explain)}|${s2.heads}|${Boolean(data.arrays.contributions)}|${s2.hide_template}`;
    if (key !== this.key || !this.grid) {
      this.grid = componentGrid(data, { explain, prompt: s2.prompt, row: s2.layer, heads: s2.heads });
      this.key = key;
      this.layout = null;
      const columns = shownColumns(view);
      const image = componentImage(this.grid, columns);
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, image.width);
      canvas.height = Math.max(1, image.height);
      if (image.width > 0 && image.height > 0) context2d(canvas).putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
      this.image = canvas;
      this.ui.caption.textContent = componentCaption(data, explain, s2.layer);
      if (this.hover) this.hover = this.clamp(this.hover);
      if (this.focus) this.focus = this.clamp(this.focus);
    }
    return this.grid;
  }
  /**
   * @param {Cell} cell
   * @returns {Cell}
   */
  clamp(cell) {
    const grid = (
      /** @type {ComponentGrid} */
      this.grid
    );
    const columns = shownColumns(this.view);
    const last = grid.n - 1;
    let position = Math.max(0, Math.min(last, cell.position));
    if (columns && !columns.includes(position)) position = columns[columns.length - 1] ?? 0;
    return { layerIndex: Math.max(0, Math.min(grid.units.length - 1, cell.layerIndex)), position };
  }
  /** Lays the view out for the current width, then draws it. */
  relayout() {
    const view = this.view;
    const data = view.data;
    const grid = this.currentGrid();
    if (!this.shown || !data || !grid) return;
    const theme = view.painter.readTheme();
    const ctx = context2d(this.ui.canvas);
    ctx.font = theme.labelFont;
    const labelW = Math.ceil(Math.max(ctx.measureText("component").width, ...grid.units.map((u) => ctx.measureText(u.label).width))) + 16;
    const columns = shownColumns(view);
    const n = columns ? columns.length : grid.n;
    const width = this.ui.scroller.clientWidth || view.el.clientWidth || 800;
    let maxChars = VALUE_CHARS;
    const offset = data.offsets[view.state.prompt];
    for (let j = 0; j < n && maxChars < 10; j++) {
      maxChars = Math.max(maxChars, [...view.painter.tokenText(data.arrays.input_ids[offset + (columns ? columns[j] : j)])].length);
    }
    this.layout = computeLayout({ nLayers: grid.units.length, nPositions: n, width, labelW, charW: theme.charW, maxChars: Math.min(10, maxChars), columns, strips: 1 });
    this.ui.track.style.width = `${this.layout.contentW}px`;
    this.ui.track.style.height = `${this.layout.height}px`;
    const prompt = view.state.prompt;
    this.ui.canvas.setAttribute(
      "aria-label",
      `Component view: ${grid.units.length} components (the embeddings at the bottom, the last layer's MLP at the top) by ${n} tokens of ${promptName(prompt)}, colour the direct part of the logit read at ${rowLabel(data, view.state.layer)}. Arrow keys move between cells, Enter pins the position, Escape unpins.`
    );
    if (this.revealPending && this.ui.scroller.clientWidth > 0) {
      const sel = view.state.selected;
      const position = sel && sel.prompt === prompt ? sel.position : data.lengths[prompt] - 1;
      this.ui.scroller.scrollLeft = revealColumn(this.layout, 0, Math.max(0, columnOf(this.layout, position)));
      this.revealPending = false;
    }
    this.draw();
  }
  scrollLeft() {
    return this.layout ? clampScroll(this.layout, this.ui.scroller.scrollLeft) : 0;
  }
  /** Draws the visible columns, their labels, the input tokens and the marks. */
  draw() {
    const view = this.view;
    const data = view.data;
    const grid = this.grid;
    const layout = this.layout;
    if (!this.shown || !data || !grid || !layout || !this.image) return;
    const theme = view.painter.readTheme();
    const canvas = this.ui.canvas;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(layout.width * dpr) || canvas.height !== Math.round(layout.height * dpr)) {
      canvas.width = Math.round(layout.width * dpr);
      canvas.height = Math.round(layout.height * dpr);
      canvas.style.width = `${layout.width}px`;
      canvas.style.height = `${layout.height}px`;
    }
    const ctx = context2d(canvas);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, layout.width, layout.height);
    ctx.direction = "ltr";
    const scroll = this.scrollLeft();
    const [c0, c1] = visibleColumns(layout, scroll);
    const { cellW, rowH, heatY, heatH, labelW, inputY, stripH } = layout;
    const U = grid.units.length;
    const x0 = columnX(layout, c0, scroll);
    const span = (c1 - c0) * cellW;
    const columns = layout.columns;
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, 0, layout.width - labelW, layout.height);
    ctx.clip();
    const hatch = hatchPattern(ctx, theme.hatch);
    if (hatch) {
      ctx.fillStyle = hatch;
      ctx.fillRect(x0, heatY, span, heatH);
    }
    if (c1 > c0) {
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(this.image, c0, 0, c1 - c0, U, x0, heatY, span, heatH);
    }
    ctx.fillStyle = theme.grid;
    if (cellW >= 10) for (let j = c0; j <= c1; j++) ctx.fillRect(columnX(layout, j, scroll) - 0.5, heatY, 1, heatH);
    if (rowH >= 9) for (let r = 1; r < U; r++) ctx.fillRect(x0, heatY + r * rowH - 0.5, span, 1);
    if (layout.showCellText) {
      ctx.font = theme.cellFont;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      for (let u = 0; u < U; u++) {
        const y = heatY + (U - 1 - u) * rowH;
        for (let j = c0; j < c1; j++) {
          const p = columns ? columns[j] : j;
          const v = grid.values[u * grid.n + p];
          if (!Number.isFinite(v)) continue;
          ctx.fillStyle = textColourOn(partColour(v, grid.max));
          ctx.fillText(cellValue(v), columnX(layout, j, scroll) + cellW / 2, y + rowH / 2 + 0.5);
        }
      }
    }
    ctx.fillStyle = theme.stripBg;
    ctx.fillRect(x0, inputY, span, stripH);
    ctx.font = theme.cellFont;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillStyle = theme.fg;
    const offset = data.offsets[view.state.prompt];
    for (let j = c0; j < c1; j++) {
      const p = columns ? columns[j] : j;
      const text = isolateLtr(truncateText(view.painter.tokenText(data.arrays.input_ids[offset + p]), layout.cellChars));
      ctx.fillText(text, columnX(layout, j, scroll) + cellW / 2, inputY + stripH / 2 + 0.5);
    }
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    const stride = niceCeil(Math.max(1, 28 / cellW));
    for (let j = c0 - c0 % stride; j < c1; j += stride) {
      ctx.fillText(String(columns ? columns[j] : j), columnX(layout, j, scroll) + cellW / 2, heatY - 4);
    }
    this.drawMarks(ctx, layout, scroll, c0, c1);
    ctx.restore();
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.font = theme.labelFont;
    ctx.fillStyle = theme.muted;
    const every = labelStride(rowH, 12);
    for (let u = 0; u < U; u++) {
      if (every > 1 && u % every !== 0) continue;
      ctx.fillText(grid.units[u].label, labelW - 8, heatY + (U - 1 - u) * rowH + rowH / 2 + 0.5);
    }
    ctx.fillText("input", labelW - 8, inputY + stripH / 2 + 0.5);
    ctx.font = theme.axisFont;
    ctx.textBaseline = "alphabetic";
    ctx.fillText("component", labelW - 8, heatY - 4);
  }
  /**
   * The pinned position's column, the hovered and the focused cell.
   * @param {CanvasRenderingContext2D} ctx
   * @param {Layout} layout
   * @param {number} scroll
   * @param {number} c0
   * @param {number} c1
   */
  drawMarks(ctx, layout, scroll, c0, c1) {
    const theme = this.view.painter.readTheme();
    const s2 = this.view.state;
    const box = (column, y, h2, style, width, dash = []) => {
      if (column < c0 || column >= c1) return;
      const x = columnX(layout, column, scroll);
      ctx.strokeStyle = style;
      ctx.lineWidth = width;
      ctx.setLineDash(dash);
      ctx.strokeRect(x + width / 2, y + width / 2, layout.cellW - width, h2 - width);
      ctx.setLineDash([]);
    };
    const sel = s2.selected;
    if (sel && sel.prompt === s2.prompt && sel.layer_index === s2.layer) {
      const column = columnOf(layout, sel.position);
      box(column, layout.heatY, layout.heatH, theme.bg, 4);
      box(column, layout.heatY, layout.heatH, theme.fg, 2);
    }
    const outline = (cell, style, width, dash) => {
      if (!cell) return;
      const r = cellRect(layout, cell.layerIndex, columnOf(layout, cell.position), scroll);
      box(columnOf(layout, cell.position), r.y, r.h, style, width, dash);
    };
    outline(this.hover, theme.fg, 1);
    outline(this.focused ? this.focus : null, theme.focus, 2, [3, 2]);
  }
  /**
   * The cell under a pointer event.
   * @param {MouseEvent} event
   * @returns {Cell | null}
   */
  cellAt(event) {
    if (!this.layout) return null;
    const rect = this.ui.canvas.getBoundingClientRect();
    const hit = hitTest(this.layout, event.clientX - rect.left, event.clientY - rect.top, this.scrollLeft(), 0);
    return hit && hit.area === "cells" ? { layerIndex: hit.layerIndex, position: positionAt(this.layout, hit.position) } : null;
  }
  /** @param {Cell | null} cell */
  setHover(cell) {
    const old = this.hover;
    if (old === cell || old && cell && old.layerIndex === cell.layerIndex && old.position === cell.position) return;
    this.hover = cell;
    this.view.componentCellChanged(cell);
    this.draw();
  }
  /** @param {Cell} cell */
  setFocus(cell) {
    this.focus = cell;
    this.hover = null;
    if (this.layout) {
      const scroll = revealColumn(this.layout, this.ui.scroller.scrollLeft, Math.max(0, columnOf(this.layout, cell.position)));
      if (scroll !== this.ui.scroller.scrollLeft) this.ui.scroller.scrollLeft = scroll;
    }
    this.view.ui.readout.textContent = this.readout(cell);
    this.view.componentCellChanged(cell);
    this.draw();
  }
  /**
   * One sentence about a cell for the aria-live readout.
   * @param {Cell} cell
   */
  readout(cell) {
    const view = this.view;
    const data = view.data;
    const grid = this.grid;
    if (!data || !grid) return "";
    const unit = grid.units[cell.layerIndex];
    const v = grid.values[cell.layerIndex * grid.n + cell.position];
    const input = displayToken(data.tokens[data.arrays.input_ids[data.offsets[view.state.prompt] + cell.position]] ?? "");
    const token = grid.tokens[cell.position];
    const row = rowLabel(data, view.state.layer);
    const foil = view.explainChoice().kind === "answer" && data.foils ? data.foils[view.state.prompt] : null;
    const logit = `the logit of ${displayToken(token)}${foil !== null ? ` minus that of ${displayToken(foil)}` : ""}`;
    const value = Number.isFinite(v) ? `${formatLogit(v)} to ${logit} at ${row}` : `no part at ${row}`;
    return `${unit.long[0].toUpperCase()}${unit.long.slice(1)}, position ${cell.position}, input ${input}: ${value}.`;
  }
  /**
   * The cell's tooltip as `TooltipView` takes it.
   * @param {Cell} cell
   * @returns {import("../details.js").TooltipContent}
   */
  tooltipContent(cell) {
    const view = this.view;
    const data = (
      /** @type {import("../payload.js").LensData} */
      view.data
    );
    const grid = (
      /** @type {ComponentGrid} */
      this.grid
    );
    const unit = grid.units[cell.layerIndex];
    const v = grid.values[cell.layerIndex * grid.n + cell.position];
    const input = data.tokens[data.arrays.input_ids[data.offsets[view.state.prompt] + cell.position]] ?? "";
    const token = grid.tokens[cell.position];
    const rows = [{ label: "input", value: displayToken(input), token: true }];
    if (token) rows.push({ label: "explained", value: displayToken(token), token: true });
    rows.push({ label: "read at", value: rowLabel(data, view.state.layer), token: false });
    rows.push({ label: "part of the logit", value: formatLogit(v), token: false });
    const note = Number.isFinite(v) ? "" : token ? `No part: ${unit.label} comes after ${rowLabel(data, view.state.layer)}.` : `Nothing explained here: ${nothingExplained(data, view.explainChoice(), view.state.prompt, cell.position)}.`;
    return { title: `${unit.label} · position ${cell.position}`, badge: "", rows, top: [], note };
  }
  /**
   * The rectangle (viewport coordinates) of a cell, for the tooltip and the tests.
   * @param {number} unit
   * @param {number} position
   */
  cellClientRect(unit, position) {
    if (!this.layout) return null;
    const column = columnOf(this.layout, position);
    if (column < 0) return null;
    const r = cellRect(this.layout, unit, column, this.scrollLeft());
    const c = this.ui.canvas.getBoundingClientRect();
    return { x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h };
  }
  /** @returns {Grid} */
  gridApi() {
    const self = this;
    const view = this.view;
    return {
      get ready() {
        return Boolean(view.data && self.grid && self.layout);
      },
      get focus() {
        return self.focus;
      },
      set focus(cell) {
        self.focus = cell;
      },
      get focused() {
        return self.focused;
      },
      set focused(value) {
        self.focused = value;
      },
      get pinned() {
        return Boolean(view.state.selected);
      },
      cellAt: (event) => self.cellAt(event),
      setHover: (cell) => self.setHover(cell),
      setFocus: (cell) => self.setFocus(cell),
      move: (cell, key) => {
        const layout = self.layout;
        if (!layout) return null;
        const column = Math.max(0, columnOf(layout, cell.position));
        const next = moveFocus({ layerIndex: cell.layerIndex, position: column }, key, layout.nLayers, layout.nPositions);
        return next && { layerIndex: next.layerIndex, position: positionAt(layout, next.position) };
      },
      togglePin: (cell) => togglePin(view, { layerIndex: view.state.layer, position: cell.position }),
      unpin: () => {
        setSelected(view, null, true);
        view.ui.readout.textContent = "Unpinned.";
      },
      showKeyboardFocus: () => {
        if (!self.layout || !self.grid) return;
        self.focused = true;
        if (!self.focus) {
          const s2 = view.state;
          const sel = s2.selected;
          const position = sel && sel.prompt === s2.prompt ? sel.position : (view.data?.lengths[s2.prompt] ?? 1) - 1;
          self.focus = self.clamp({ layerIndex: self.grid.units.length - 1, position });
        }
        self.setFocus(self.focus);
      },
      blurred: () => {
        view.componentCellChanged(null);
        self.draw();
      }
    };
  }
};
function cellValue(v) {
  const text = Math.abs(v).toFixed(1);
  if (Number(text) === 0) return "0.0";
  return `${v < 0 ? "−" : "+"}${text}`;
}

// src/heatmap/side_by_side.js
function besideLens(lenses, shown, wanted) {
  if (typeof wanted !== "string" || !wanted || wanted === shown) return null;
  return lenses.find((lens) => lens.lensName === wanted) || null;
}
function besideOptions(lenses, shown, title) {
  return [
    { value: "", label: "none (one grid)" },
    ...lenses.filter((lens) => lens.lensName !== shown).map((lens) => ({ value: lens.lensName, label: lensMenuText(lens.lensName, title(lens)) }))
  ];
}
function besideAfterSwitch(previous, next, beside) {
  return beside && beside === next ? previous : beside;
}
function besideMetric(beside, metric) {
  return metricAvailable(beside, metric) ? metric : null;
}
function sharedDomain(a, b, metric) {
  const own = metricDomain(a, metric);
  if (!b || !metricSpec(b, metric) || !metricAvailable(b, metric)) return own;
  const other = metricDomain(b, metric);
  return { min: Math.min(own.min, other.min), max: Math.max(own.max, other.max), log: own.log };
}
function gridCaption(data, title, coloured) {
  const text = lensMenuText(data.lensName, title);
  return coloured ? text : `${text}: no values of this colouring under this lens`;
}

// src/heatmap/view/grid.js
function eventCell(view, event) {
  if (!view.layout) return null;
  const rect = view.ui.canvas.getBoundingClientRect();
  const hit = hitTest(view.layout, event.clientX - rect.left, event.clientY - rect.top, view.scrollLeft(), view.state.layer);
  return hit && hit.area !== "input" ? { layerIndex: hit.layerIndex, position: positionAt(view.layout, hit.position) } : null;
}
function heatmapGrid(view) {
  return {
    get ready() {
      return Boolean(view.data);
    },
    get focus() {
      return view.state.focus;
    },
    set focus(cell) {
      view.store.set({ focus: cell });
    },
    get focused() {
      return view.state.focused;
    },
    set focused(value) {
      view.store.set({ focused: value });
    },
    get pinned() {
      return Boolean(view.state.selected);
    },
    cellAt: (event) => eventCell(view, event),
    setHover: (cell) => {
      const moved = view.hoverGrid !== 0;
      view.hoverGrid = 0;
      setHover(view, cell);
      if (moved) updateTooltip(view);
    },
    setFocus: (cell) => setFocus(view, cell),
    move: (cell, key) => {
      const layout = view.layout;
      if (!layout || !view.data) return null;
      const column = Math.max(0, columnOf(layout, cell.position));
      const next = moveFocus({ layerIndex: cell.layerIndex, position: column }, key, view.data.L, layout.nPositions);
      return next && { layerIndex: next.layerIndex, position: positionAt(layout, next.position) };
    },
    togglePin: (cell) => togglePin(view, cell),
    unpin: () => {
      setSelected(view, null, true);
      view.ui.readout.textContent = "Unpinned.";
    },
    showKeyboardFocus: () => showKeyboardFocus(view),
    blurred: () => {
      updateTooltip(view);
      view.requestDraw();
    }
  };
}

// src/heatmap/view/beside.js
function showBeside(view) {
  const { ui, data } = view;
  const s2 = view.state;
  const beside = data ? besideLens(view.lenses, data.lensName, s2.lens_beside) : null;
  if (beside !== view.beside) {
    view.beside = beside;
    if (beside) view.besidePainter.setData(beside);
    view.layoutKey = null;
  }
  ui.besideLabel.hidden = view.lenses.length < 2;
  const options = data ? besideOptions(view.lenses, data.lensName, lensTitle) : [];
  const key = options.map((o) => `${o.value}\0${o.label}`).join("");
  if (ui.besideSelect.dataset.key !== key) {
    ui.besideSelect.replaceChildren(...options.map((o) => h("option", "", { value: o.value }, o.label)));
    ui.besideSelect.dataset.key = key;
  }
  ui.besideSelect.value = beside ? beside.lensName : "";
  ui.root.classList.toggle("murano-two-grids", Boolean(beside));
  ui.gridCaption.hidden = !beside;
  ui.besideCaption.hidden = !beside;
  ui.besideCanvas.hidden = !beside;
  showCaptions(view);
}
function showCaptions(view) {
  const { ui, data, beside } = view;
  if (!data || !beside) return;
  ui.gridCaption.textContent = gridCaption(data, lensTitle(data), true);
  ui.besideCaption.textContent = gridCaption(beside, lensTitle(beside), besideMetric(beside, view.shownMetric) !== null);
  ui.besideCanvas.setAttribute("aria-label", `${lensTitle(beside)} heatmap, beside the ${lensTitle(data)}: the same cells, the same cursor`);
}
function setBeside(view, value, sync) {
  const name = typeof value === "string" && (value === "" || view.lenses.some((lens) => lens.lensName === value)) ? value : view.state.lens_beside;
  if (sync && name === value) send(view, "lens_beside", name);
  view.store.set({ lens_beside: name });
  showBeside(view);
  view.refreshMetric();
  view.relayout();
  updateTooltip(view);
}
function gridDomain(view) {
  const { data, beside } = view;
  if (!data || !beside) return null;
  return sharedDomain(data, beside, view.shownMetric);
}
function besideLayout(layout, beside, compute) {
  if (beside.L === layout.nLayers) return layout;
  return compute({ nLayers: beside.L, nPositions: layout.nPositions, width: layout.width, labelW: layout.labelW, charW: layout.charW, maxChars: layout.cellChars, columns: layout.columns, cellW: layout.cellW, rowH: layout.rowH });
}
function drawBeside(view, scene, scroll) {
  const { beside, besideLayoutShown } = view;
  if (!beside || !besideLayoutShown) return;
  const metric = besideMetric(beside, scene.metric);
  view.besidePainter.draw(besideLayoutShown, { ...scene, metric: metric ?? scene.metric, loading: scene.loading || metric === null }, scroll);
}
function besideEventCell(view, event) {
  const layout = view.besideLayoutShown;
  if (!layout) return null;
  const rect = view.ui.besideCanvas.getBoundingClientRect();
  const hit = hitTest(layout, event.clientX - rect.left, event.clientY - rect.top, view.scrollLeft(), view.state.layer);
  return hit && hit.area !== "input" ? { layerIndex: hit.layerIndex, position: positionAt(layout, hit.position) } : null;
}
function besideGrid(view) {
  const grid = heatmapGrid(view);
  return Object.defineProperties(grid, {
    cellAt: { value: (event) => besideEventCell(view, event) },
    setHover: {
      value: (cell) => {
        const moved = view.hoverGrid !== 1;
        view.hoverGrid = 1;
        setHover(view, cell);
        if (moved) updateTooltip(view);
      }
    }
  });
}

// src/heatmap/view/overview_pool.js
var POOL_MODES = Object.freeze(
  /** @type {const} */
  ["max", "mean"]
);
function bucketStart(k, n, width) {
  return Math.floor(k * n / width);
}
function poolColumns(values, L, n, width, mode) {
  if (!Number.isInteger(L) || L < 0 || !Number.isInteger(n) || n < 0) throw new Error(`poolColumns: L and n must be sizes, got ${L} and ${n}`);
  if (values.length !== L * n) throw new Error(`poolColumns: ${values.length} values for ${L} rows of ${n}`);
  if (!Number.isInteger(width) || width < 1 || width > Math.max(1, n)) throw new Error(`poolColumns: width must be an int from 1 to ${n}, got ${width}`);
  if (!POOL_MODES.includes(mode)) throw new Error(`poolColumns: mode must be one of ${POOL_MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  const out = new Float32Array(L * width);
  const max = mode === "max";
  for (let i = 0; i < L; i++) {
    const row = i * n;
    for (let k = 0; k < width; k++) {
      const start = bucketStart(k, n, width);
      const end = bucketStart(k + 1, n, width);
      let acc = max ? -Infinity : 0;
      let count = 0;
      for (let j = start; j < end; j++) {
        const v = values[row + j];
        if (v !== v) continue;
        count += 1;
        if (max) {
          if (v > acc) acc = v;
        } else acc += v;
      }
      out[i * width + k] = count === 0 ? NaN : max ? acc : acc / count;
    }
  }
  return out;
}
function overviewWidth(n, pixels) {
  return Math.max(1, Math.min(n, Math.floor(pixels)));
}
function runStarts(n, hit) {
  const out = [];
  let before = false;
  for (let j = 0; j < n; j++) {
    const now = hit(j);
    if (now && !before) out.push(j);
    before = now;
  }
  return out;
}

// src/heatmap/view/overview_marks.js
function traceMarks(data, prompt, columns, target, threshold) {
  const offset = data.offsets[prompt];
  const n = columns ? columns.length : data.lengths[prompt];
  const at = (j) => offset + (columns ? columns[j] : j);
  const marks = [];
  const missing = data.arrays.missing;
  const anyLayer = (values, stride, k, min) => (j) => {
    for (let i = 0; i < data.L; i++) {
      const idx = i * data.T + at(j);
      if (values[idx * stride + k] >= min && !(missing && missing[idx])) return true;
    }
    return false;
  };
  const answerTop1 = data.arrays.answer_top1;
  if (answerTop1 && !promptHasNoValue(data, "answer_top1", prompt)) {
    for (const column of runStarts(n, anyLayer(answerTop1, 1, 0, 1))) marks.push({ column, kind: "answer", role: -1 });
  }
  const probs = data.arrays.target_probs;
  if (probs && target >= 0 && target < data.targets.length) {
    const raw = threshold / (data.scales.target_probs ?? 1);
    for (const column of runStarts(n, anyLayer(probs, data.targets.length, target, raw))) marks.push({ column, kind: "target", role: -1 });
  }
  const roles = data.arrays.token_roles;
  if (roles) {
    for (let j = 0; j < n; j++) if (j === 0 || roles[at(j)] !== roles[at(j - 1)]) marks.push({ column: j, kind: "role", role: roles[at(j)] });
  }
  const generated = generationColumn(data, prompt, columns);
  if (generated >= 0) marks.push({ column: generated, kind: "generated", role: -1 });
  return marks;
}

// src/heatmap/view/search.js
function matchingTokens(tokens, query) {
  const needle = query.toLowerCase();
  const mask = new Uint8Array(tokens.length);
  if (!needle) return mask;
  for (let t = 0; t < tokens.length; t++) if (tokens[t].toLowerCase().includes(needle)) mask[t] = 1;
  return mask;
}
function findHits(data, prompt, query, columns = null, limit = 1e5) {
  if (typeof query !== "string") throw new Error(`findHits: query must be a string, got ${typeof query}`);
  const mask = matchingTokens(data.tokens, query);
  const hits = [];
  if (!mask.includes(1)) return hits;
  const offset = data.offsets[prompt];
  const n = columns ? columns.length : data.lengths[prompt];
  const input = data.arrays.input_ids;
  const predicted = data.arrays.predicted_tokens;
  for (let c = 0; c < n && hits.length < limit; c++) {
    const p = columns ? columns[c] : c;
    const col = offset + p;
    if (mask[input[col]]) hits.push({ position: p, layerIndex: -1, token: input[col] });
    for (let i = 0; i < data.L && hits.length < limit; i++) {
      const idx = i * data.T + col;
      if (mask[predicted[idx]] && !isMissing(data, idx)) hits.push({ position: p, layerIndex: i, token: predicted[idx] });
    }
  }
  return hits;
}
function firstAnswerTop1(data, prompt, columns = null) {
  const mask = data.arrays.answer_top1;
  const none = data.noValue.answer_top1;
  if (!mask || none && none[prompt]) return null;
  const offset = data.offsets[prompt];
  const n = columns ? columns.length : data.lengths[prompt];
  for (let c = 0; c < n; c++) {
    const p = columns ? columns[c] : c;
    for (let i = 0; i < data.L; i++) {
      const idx = i * data.T + offset + p;
      if (mask[idx] && !isMissing(data, idx)) return { position: p, layerIndex: i };
    }
  }
  return null;
}
function stepHit(count, current, step) {
  if (count === 0) return -1;
  if (current < 0) return step === 1 ? 0 : count - 1;
  return (current + step + count) % count;
}

// src/heatmap/view/overview.js
var LONG_TRACE_COLUMNS = 64;
var OVERVIEW_MARKS_H = 7;
var OVERVIEW_IMAGE_H = 44;
var MARK_THRESHOLD = 0.5;
function makeOverview(view) {
  const box = h("div", "murano-longtrace", { hidden: "" });
  const head = h("div", "murano-longtrace-head");
  const poolLabel = h("label", "murano-overview-pool");
  poolLabel.append(h("span", "murano-label", {}, "Overview"));
  const poolSelect = h("select", "murano-overview-pool-select", { "aria-label": "Overview pooling per pixel column" });
  for (const mode of POOL_MODES) poolSelect.append(h("option", "", { value: mode }, `${mode} per pixel column`));
  poolLabel.append(poolSelect);
  const search = h("input", "murano-find", { type: "search", placeholder: "find a token", "aria-label": "Find in the input tokens and the predictions", spellcheck: "false" });
  const prev = h("button", "murano-find-prev", { type: "button", "aria-label": "Previous match", title: "Previous match (Shift+Enter)" }, "‹");
  const next = h("button", "murano-find-next", { type: "button", "aria-label": "Next match", title: "Next match (Enter)" }, "›");
  const count = h("span", "murano-find-count", { "aria-live": "polite" });
  const answer = h("button", "murano-find-answer", { type: "button", hidden: "" }, "answer first top-1");
  const found = h("span", "murano-find-found", { role: "status" });
  head.append(poolLabel, search, prev, next, count, answer, found);
  const strip = h("div", "murano-overview", {
    role: "slider",
    tabindex: 0,
    "aria-label": "Trace overview: the grid's place in the whole prompt",
    "aria-valuemin": 0,
    "aria-valuemax": 0,
    "aria-valuenow": 0
  });
  const canvas = h("canvas", "murano-overview-canvas", { "aria-hidden": "true" });
  const viewport = h("div", "murano-overview-viewport", { "aria-hidden": "true" });
  strip.append(canvas, viewport);
  box.append(head, strip);
  view.ui.left.insertBefore(box, view.ui.body);
  return {
    box,
    poolSelect,
    search,
    prev,
    next,
    count,
    answer,
    found,
    strip,
    canvas,
    viewport,
    /** @type {PoolMode} */
    mode: "max",
    /** @type {OverviewImage | null} */
    image: null,
    /** The canvas as last drawn (the image's key and the CSS width). */
    drawnKey: "",
    /** @type {Hit[]} */
    hits: [],
    hitIndex: -1,
    hitsKey: "",
    /** The scroll the view set itself (not reported to Python as the user's). */
    ownScroll: NaN,
    /** A position Python asked for before the grid was laid out. */
    pendingPosition: -1,
    /** The view's reports of the user's scrolls, throttled. */
    report: throttle((p) => send(view, "position", p), SYNC_INTERVAL_MS),
    /** Test and bench counters: pooled images made. */
    pooled: 0
  };
}
function isLongTrace(layout) {
  return layout.nPositions > LONG_TRACE_COLUMNS && layout.contentW > layout.width;
}
function firstPosition(view) {
  const layout = view.layout;
  if (!layout || layout.nPositions === 0) return 0;
  const [first] = visibleColumns(layout, view.scrollLeft());
  return positionAt(layout, Math.min(first, layout.nPositions - 1));
}
function scrollToPosition(view, position, report) {
  const { layout, ui, overview } = view;
  if (!layout || !view.data || ui.scroller.clientWidth === 0) {
    overview.pendingPosition = position;
    return;
  }
  overview.pendingPosition = -1;
  const column = columnAtOrAfter(layout, position);
  ui.scroller.scrollLeft = clampScroll(layout, column * layout.cellW);
  overview.ownScroll = ui.scroller.scrollLeft;
  if (report) overview.report(firstPosition(view));
  view.draw();
}
function columnAtOrAfter(layout, position) {
  const p = Math.max(0, Math.round(Number(position)) || 0);
  if (!layout.columns) return Math.min(p, Math.max(0, layout.nPositions - 1));
  const column = layout.columns.findIndex((c) => c >= p);
  return column < 0 ? Math.max(0, layout.nPositions - 1) : column;
}
function onGridScroll(view) {
  const { overview, ui } = view;
  if (ui.scroller.scrollLeft === overview.ownScroll) {
    overview.ownScroll = NaN;
    return true;
  }
  overview.ownScroll = NaN;
  if (view.layout && view.data) overview.report(firstPosition(view));
  return false;
}
function positionChanged(view) {
  view.overview.report.cancel();
  const value = Number(view.model.get("position"));
  if (!Number.isFinite(value) || value === firstPosition(view)) return;
  scrollToPosition(view, value, false);
}
function applyPendingPosition(view) {
  const p = view.overview.pendingPosition;
  if (p >= 0 && view.layout && view.ui.scroller.clientWidth > 0) scrollToPosition(view, p, false);
}
function metricRows(view, layout) {
  const data = (
    /** @type {import("../payload.js").LensData} */
    view.data
  );
  const s2 = view.state;
  const n = layout.nPositions;
  const out = new Float32Array(data.L * n).fill(NaN);
  const spec = metricSpec(data, view.shownMetric);
  const array = spec && data.arrays[spec.field];
  if (!spec || !array || promptHasNoValue(data, spec.field, s2.prompt)) return out;
  const { stride, offset: at } = metricLayout(data, spec, view.targetIndex());
  if (stride === 0) return out;
  const scale = data.scales[spec.field] ?? 1;
  const missing = data.arrays.missing;
  const finalMissing = spec.finalBased ? data.arrays.final_missing : void 0;
  const offset = data.offsets[s2.prompt];
  const columns = layout.columns;
  for (let i = 0; i < data.L; i++) {
    const base = i * data.T + offset;
    for (let j = 0; j < n; j++) {
      const p = columns ? columns[j] : j;
      const idx = base + p;
      if (missing && missing[idx] || finalMissing && finalMissing[offset + p]) continue;
      out[i * n + j] = array[idx * stride + at] * scale;
    }
  }
  return out;
}
function overviewMarks(view, layout) {
  const data = (
    /** @type {import("../payload.js").LensData} */
    view.data
  );
  const theme = view.painter.readTheme();
  const styles = roleStyles(roleNames(data));
  const colours = { answer: theme.accent, target: theme.fg, generated: theme.generated };
  const pick = view.targetIndex();
  const target = typeof pick === "number" ? pick : pick.target;
  return traceMarks(data, view.state.prompt, layout.columns, target, MARK_THRESHOLD).map((mark) => ({
    column: mark.column,
    kind: mark.kind,
    colour: mark.kind === "role" ? styles[mark.role]?.colour ?? theme.muted : colours[mark.kind]
  }));
}
function overviewImage(view, layout, cssWidth) {
  const { overview } = view;
  const data = (
    /** @type {import("../payload.js").LensData} */
    view.data
  );
  const width = overviewWidth(layout.nPositions, cssWidth);
  const domain = gridDomain(view) ?? (metricSpec(data, view.shownMetric) ? metricDomain(data, view.shownMetric) : null);
  const key = `${view.layoutKey}|${data.lensName}|${view.shownMetric}|${JSON.stringify(view.targetIndex())}|${overview.mode}|${width}|${domain ? `${domain.min}:${domain.max}` : ""}`;
  if (overview.image && overview.image.key === key && overview.image.data === data) return overview.image;
  const L = data.L;
  const pooled = poolColumns(metricRows(view, layout), L, layout.nPositions, width, overview.mode);
  overview.pooled += 1;
  const pixels = new Uint8ClampedArray(width * L * 4);
  const spec = metricSpec(data, view.shownMetric);
  if (spec && domain) {
    const lut = colourLut(spec.scale, spec.reverse);
    const logDen = domain.log ? Math.log1p(domain.max - domain.min) : 0;
    const span = domain.max - domain.min || 1;
    for (let i = 0; i < L; i++) {
      const row = L - 1 - i;
      for (let k = 0; k < width; k++) {
        const v = pooled[i * width + k];
        if (v !== v) continue;
        const d = v - domain.min;
        let t = domain.log ? Math.log1p(d > 0 ? d : 0) / logDen : d / span;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        const c = Math.round(t * 255) * 3;
        const o = (row * width + k) * 4;
        pixels[o] = lut[c];
        pixels[o + 1] = lut[c + 1];
        pixels[o + 2] = lut[c + 2];
        pixels[o + 3] = 255;
      }
    }
  }
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = Math.max(1, L);
  const ctx = canvas.getContext("2d");
  if (ctx && L > 0) ctx.putImageData(new ImageData(pixels, width, L), 0, 0);
  overview.image = { key, canvas, marks: overviewMarks(view, layout), data };
  overview.drawnKey = "";
  return overview.image;
}
function updateOverview(view) {
  const { overview, layout, data } = view;
  const show = Boolean(data && layout && view.state.view === "layers" && isLongTrace(layout));
  if (overview.box.hidden === show) overview.box.hidden = !show;
  if (!show || !data || !layout) return;
  const margin = `${layout.labelW}px`;
  if (overview.strip.style.marginLeft !== margin) overview.strip.style.marginLeft = margin;
  const cssWidth = overview.strip.clientWidth;
  if (cssWidth <= 0) return;
  const image = overviewImage(view, layout, cssWidth);
  const drawnKey = `${image.key}|${cssWidth}`;
  if (overview.drawnKey !== drawnKey) {
    drawImage(view, image, cssWidth);
    overview.drawnKey = drawnKey;
  }
  const n = layout.nPositions;
  const [first, last] = visibleColumns(layout, view.scrollLeft());
  const left = first / n * cssWidth;
  const w = Math.max(3, (last - first) / n * cssWidth);
  overview.viewport.style.left = `${Math.min(cssWidth - w, left)}px`;
  overview.viewport.style.width = `${w}px`;
  const firstShown = positionAt(layout, Math.min(first, n - 1));
  const lastShown = positionAt(layout, Math.max(first, last - 1));
  overview.strip.setAttribute("aria-valuemax", String(positionAt(layout, n - 1)));
  overview.strip.setAttribute("aria-valuenow", String(firstShown));
  overview.strip.setAttribute("aria-valuetext", `positions ${firstShown}–${lastShown} of ${data.lengths[view.state.prompt]}`);
  showAnswerButton(view);
}
function drawImage(view, image, cssWidth) {
  const { canvas } = view.overview;
  const dpr = window.devicePixelRatio || 1;
  const height = OVERVIEW_MARKS_H + OVERVIEW_IMAGE_H;
  canvas.width = Math.round(cssWidth * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${cssWidth}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, cssWidth, height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(image.canvas, 0, OVERVIEW_MARKS_H, cssWidth, OVERVIEW_IMAGE_H);
  const n = view.layout ? view.layout.nPositions : 1;
  for (const mark of image.marks) {
    const x = Math.floor(mark.column / n * cssWidth);
    ctx.fillStyle = mark.colour;
    if (mark.kind === "role" || mark.kind === "generated") ctx.fillRect(x, 0, 2, height);
    else ctx.fillRect(x, 0, 2, OVERVIEW_MARKS_H - 1);
  }
}
function columnAtX(view, x) {
  const layout = (
    /** @type {Layout} */
    view.layout
  );
  const w = view.overview.strip.clientWidth || 1;
  return Math.max(0, Math.min(layout.nPositions - 1, Math.floor(x / w * layout.nPositions)));
}
function moveToColumn(view, column) {
  const layout = view.layout;
  if (!layout) return;
  const c = Math.max(0, Math.min(layout.nPositions - 1, Math.round(column)));
  scrollToPosition(view, positionAt(layout, c), true);
}
function shownCount(view) {
  const layout = (
    /** @type {Layout} */
    view.layout
  );
  const [first, last] = visibleColumns(layout, view.scrollLeft());
  return Math.max(1, last - first);
}
function bindOverview(view, signal) {
  const o = view.overview;
  const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
  let grip = -1;
  on(o.strip, "pointerdown", (event) => {
    if (!view.layout || event.button !== 0) return;
    const rect = o.strip.getBoundingClientRect();
    const column = columnAtX(view, event.clientX - rect.left);
    const [first] = visibleColumns(view.layout, view.scrollLeft());
    const shown = shownCount(view);
    grip = column >= first && column < first + shown ? column - first : Math.floor(shown / 2);
    moveToColumn(view, column - grip);
    try {
      o.strip.setPointerCapture(event.pointerId);
    } catch {
    }
    o.strip.focus({ preventScroll: true });
    event.preventDefault();
  });
  on(o.strip, "pointermove", (event) => {
    if (grip < 0 || !view.layout) return;
    const rect = o.strip.getBoundingClientRect();
    moveToColumn(view, columnAtX(view, event.clientX - rect.left) - grip);
  });
  const release = () => {
    if (grip < 0) return;
    grip = -1;
    o.report.flush();
  };
  on(o.strip, "pointerup", release);
  on(o.strip, "pointercancel", release);
  on(o.strip, "keydown", (event) => {
    const layout = view.layout;
    if (!layout) return;
    const [first] = visibleColumns(layout, view.scrollLeft());
    const page = shownCount(view);
    const to = {
      ArrowLeft: first - 1,
      ArrowDown: first - 1,
      ArrowRight: first + 1,
      ArrowUp: first + 1,
      PageUp: first - page,
      PageDown: first + page,
      Home: 0,
      End: layout.nPositions - 1
    };
    if (!(event.key in to)) return;
    event.preventDefault();
    event.stopPropagation();
    moveToColumn(view, to[event.key]);
  });
  on(o.poolSelect, "change", () => {
    o.mode = /** @type {PoolMode} */
    POOL_MODES.includes(
      /** @type {PoolMode} */
      o.poolSelect.value
    ) ? o.poolSelect.value : "max";
    view.draw();
  });
  on(o.search, "input", () => {
    o.hitsKey = "";
    o.hitIndex = -1;
    showFind(view, false);
  });
  on(o.search, "keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    findStep(view, event.shiftKey ? -1 : 1);
  });
  on(o.next, "click", () => findStep(view, 1));
  on(o.prev, "click", () => findStep(view, -1));
  on(o.answer, "click", () => jumpToAnswer(view));
}
function currentHits(view) {
  const o = view.overview;
  const layout = view.layout;
  if (!view.data || !layout) return [];
  const key = `${view.data.lensName}|${view.state.prompt}|${view.layoutKey}|${o.search.value}`;
  if (o.hitsKey !== key) {
    o.hits = o.search.value ? findHits(view.data, view.state.prompt, o.search.value, layout.columns) : [];
    o.hitsKey = key;
    o.hitIndex = -1;
  }
  return o.hits;
}
function showFind(view, stepped) {
  const o = view.overview;
  const hits = currentHits(view);
  o.count.textContent = o.search.value ? `${o.hitIndex >= 0 ? o.hitIndex + 1 : 0} / ${hits.length}` : "";
  if (!stepped) o.found.textContent = o.search.value && hits.length === 0 ? "no match" : "";
}
function findStep(view, step) {
  const o = view.overview;
  const hits = currentHits(view);
  o.hitIndex = stepHit(hits.length, o.hitIndex, step);
  showFind(view, true);
  if (o.hitIndex < 0 || !view.data) return;
  const hit = hits[o.hitIndex];
  const where = hit.layerIndex < 0 ? "input" : `layer ${view.data.layers[hit.layerIndex]} top-1`;
  o.found.textContent = `${quoteToken(view.data.tokens[hit.token])} at position ${hit.position} (${where})`;
  goTo(view, hit.position, hit.layerIndex < 0 ? view.state.layer : hit.layerIndex);
}
function goTo(view, position, layerIndex) {
  const layout = view.layout;
  if (!layout) return;
  const column = Math.max(0, columnOf(layout, position));
  moveToColumn(view, column - Math.floor(shownCount(view) / 2));
  view.store.set({ focused: true });
  setFocus(view, { layerIndex, position });
}
function jumpToAnswer(view) {
  const o = view.overview;
  if (!view.data || !view.layout) return;
  const first = firstAnswerTop1(view.data, view.state.prompt, view.layout.columns);
  if (!first) {
    o.found.textContent = "the answer is never top-1 in this prompt";
    return;
  }
  o.found.textContent = `the answer is first top-1 at position ${first.position}, layer ${view.data.layers[first.layerIndex]}`;
  goTo(view, first.position, first.layerIndex);
}
function showAnswerButton(view) {
  const data = view.data;
  const has = Boolean(data && data.arrays.answer_top1 && !promptHasNoValue(data, "answer_top1", view.state.prompt));
  if (view.overview.answer.hidden === has) view.overview.answer.hidden = !has;
}

// src/heatmap/view/debug.js
function clientRect(layout, canvas, layerIndex, position, scroll) {
  if (!layout) return null;
  const column = columnOf(layout, position);
  if (column < 0) return null;
  const r = cellRect(layout, layerIndex, column, scroll);
  const c = canvas.getBoundingClientRect();
  return { x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h };
}
function debugApi(view) {
  return {
    get state() {
      const s2 = view.state;
      const layers = view.data ? view.data.layers : [];
      return {
        prompt: s2.prompt,
        layer: s2.layer,
        modelLayer: layers[s2.layer],
        metric: s2.metric,
        shownMetric: view.shownMetric,
        target: s2.target,
        group: s2.group,
        selected: s2.selected,
        hover: s2.hover,
        focus: s2.focus,
        focused: s2.focused,
        hideTemplate: s2.hide_template,
        lens: s2.lens,
        lenses: view.lenses.map((lens) => lens.lensName),
        beside: view.beside ? view.beside.lensName : "",
        hoverGrid: view.hoverGrid,
        view: s2.view,
        explain: s2.explain,
        heads: s2.heads
      };
    },
    /** The long-trace bar: shown, the pooling, pooled images made, the first position shown. */
    get overview() {
      const o = view.overview;
      return { shown: !o.box.hidden, mode: o.mode, pooled: o.pooled, firstPosition: firstPosition(view), hits: o.hits.length, hitIndex: o.hitIndex, marks: o.image ? o.image.marks.map((m) => ({ column: m.column, kind: m.kind })) : [] };
    },
    /** The live controls: the kernel's state, the latest request, the status line shown. */
    get live() {
      return view.live ? view.live.debugApi() : null;
    },
    /** What the "why" panel shows: the cell it explains and its content (bars, total), or null. */
    get why() {
      return view.whyShown;
    },
    /** The component view: its state, geometry and values. */
    components: {
      get state() {
        const c = view.components;
        return { shown: c.shown, hover: c.hover, focus: c.focus, focused: c.focused };
      },
      get layout() {
        const c = view.components;
        return c.layout && { ...c.layout, scrollLeft: c.scrollLeft() };
      },
      get units() {
        const grid = view.components.grid;
        return grid ? grid.units.map((u) => u.label) : [];
      },
      /** Unit `u`'s part at position `j` (null: none), and the scale's half-width. */
      value(u, j) {
        const grid = view.components.grid;
        if (!grid) return null;
        const v = grid.values[u * grid.n + j];
        return Number.isFinite(v) ? v : null;
      },
      get max() {
        return view.components.grid ? view.components.grid.max : null;
      },
      cellClientRect: (u, j) => view.components.cellClientRect(u, j)
    },
    get layout() {
      return view.layout && { ...view.layout, scrollLeft: view.scrollLeft() };
    },
    /** The grid beside, as a grid of cells (its layout and cell rectangles; null layout: none). */
    besideGrid: {
      get layout() {
        return view.beside && view.besideLayoutShown && { ...view.besideLayoutShown, scrollLeft: view.scrollLeft() };
      },
      cellClientRect: (i, j) => view.beside ? clientRect(view.besideLayoutShown, view.ui.besideCanvas, i, j, view.scrollLeft()) : null
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
    /** What the trajectory chart drew last: its column, mode, row, geometry and every line. */
    get trajectory() {
      return view.trajectory.debug;
    },
    /**
     * A cell's rectangle in viewport (client) coordinates.
     * @param {number} layerIndex
     * @param {number} position
     */
    cellClientRect(layerIndex, position) {
      return clientRect(view.layout, view.ui.canvas, layerIndex, position, view.scrollLeft());
    },
    /**
     * A cell's rectangle in the grid beside (null without one).
     * @param {number} layerIndex
     * @param {number} position
     */
    besideCellClientRect(layerIndex, position) {
      return view.beside ? clientRect(view.besideLayoutShown, view.ui.besideCanvas, layerIndex, position, view.scrollLeft()) : null;
    },
    /**
     * The colour the cell should have under the shown metric ([r, g, b, a]; a = 0: missing), on
     * the scale the grids share.
     * @param {number} layerIndex
     * @param {number} position
     */
    cellColour(layerIndex, position) {
      if (!view.data) return null;
      const image = view.painter.colourCanvas(view.state.prompt, view.shownMetric, null, view.itemIndex(view.shownMetric), gridDomain(view));
      const o = ((view.data.L - 1 - layerIndex) * image.width + position) * 4;
      return Array.from(image.data.slice(o, o + 4));
    },
    /**
     * The same in the grid beside (null without one, or when its lens lacks the metric).
     * @param {number} layerIndex
     * @param {number} position
     */
    besideCellColour(layerIndex, position) {
      const beside = view.beside;
      const metric = beside && besideMetric(beside, view.shownMetric);
      if (!beside || !metric) return null;
      const image = view.besidePainter.colourCanvas(view.state.prompt, metric, null, view.itemIndex(metric), gridDomain(view));
      const o = ((beside.L - 1 - layerIndex) * image.width + position) * 4;
      return Array.from(image.data.slice(o, o + 4));
    },
    /**
     * @param {number} layerIndex
     * @param {number} position
     */
    cellDetails: (layerIndex, position) => view.data ? cellDetails(view.data, view.state.prompt, layerIndex, position, view.targetIndex()) : null,
    drawNow: () => view.relayout(),
    /** @param {boolean} hide as the control does: the `hide_template` trait follows */
    setHideTemplate: (hide) => setHideTemplate(view, hide, true),
    /** @returns {Promise<number>} the duration of the next draw */
    nextDraw: () => new Promise((resolve) => view.debug.drawListeners.push(resolve))
  };
}

// src/heatmap/view/why.js
function buildWhy() {
  const panel = h("section", "murano-why", { hidden: "", "aria-label": "Why: the components that wrote the logit" });
  const head = h("div", "murano-why-head");
  const title = h("span", "murano-why-title murano-token", {}, "Why");
  const where = h("span", "murano-why-where");
  const explainLabel = h("label", "murano-why-explain");
  explainLabel.append(h("span", "murano-label", {}, "Explain"));
  const explainSelect = h("select", "murano-why-select", { "aria-label": "What the why panel and the component view explain" });
  explainLabel.append(explainSelect);
  const headsLabel = h("label", "murano-why-heads", { hidden: "" });
  const heads = h("input", "murano-why-heads-box", { type: "checkbox" });
  headsLabel.append(heads, h("span", "", {}, "split attention into heads"));
  head.append(title, where, explainLabel, headsLabel);
  const caption = h("p", "murano-why-caption");
  const bars = h("div", "murano-why-bars", { role: "list", "aria-label": "Parts of the logit, in model order" });
  const total = h("div", "murano-why-total");
  const totalLabel = h("span", "murano-why-total-label", {}, "logit");
  const totalValue = h("span", "murano-why-total-value");
  total.append(totalLabel, totalValue);
  const note = h("div", "murano-why-note");
  panel.append(head, caption, bars, total, note);
  return { panel, title, where, caption, explainSelect, headsLabel, heads, bars, total, totalLabel, totalValue, note };
}
function showExplainMenu(ui, options, value) {
  ui.explainSelect.replaceChildren(
    ...options.map((option) => {
      const text = option.available ? option.label : `${option.label} (${option.reason})`;
      const element = h("option", "", { value: option.value }, text);
      element.disabled = !option.available;
      return element;
    })
  );
  ui.explainSelect.value = value;
}
function showWhy(ui, model, { message = "", current = -1 } = {}) {
  if (!model) {
    ui.title.textContent = "Why";
    ui.where.textContent = "";
    ui.caption.textContent = "";
    ui.caption.hidden = true;
    ui.bars.replaceChildren();
    ui.total.hidden = true;
    ui.note.textContent = message;
    ui.note.hidden = !message;
    return;
  }
  ui.title.textContent = model.heading;
  ui.where.textContent = model.where;
  ui.caption.textContent = model.caption;
  ui.caption.hidden = false;
  const scale = model.scale > 0 ? model.scale : 1;
  ui.bars.replaceChildren(
    ...model.bars.map((bar) => {
      const text = formatLogit(bar.value);
      const row = h("div", `murano-why-row murano-why-${bar.kind}`, {
        role: "listitem",
        "aria-label": `${bar.long}: ${text}`,
        "data-kind": bar.kind,
        "data-label": bar.label,
        "data-value": String(bar.value)
      });
      if (bar.unit >= 0 && bar.unit === current) row.classList.add("murano-why-current");
      const track = h("span", "murano-why-bar", { "aria-hidden": "true" });
      const fill2 = h("span", `murano-why-fill ${bar.value < 0 ? "murano-why-neg" : "murano-why-pos"}`);
      const half = Math.abs(bar.value) / scale * 50;
      fill2.style.width = `${half.toFixed(2)}%`;
      fill2.style.left = `${(bar.value < 0 ? 50 - half : 50).toFixed(2)}%`;
      track.append(fill2);
      row.append(h("span", "murano-why-label", {}, bar.label), track, h("span", "murano-why-value", {}, text));
      return row;
    })
  );
  ui.total.hidden = false;
  ui.totalLabel.textContent = model.totalLabel;
  ui.totalValue.textContent = formatLogit(model.total);
  ui.totalValue.setAttribute("data-value", String(model.total));
  ui.note.textContent = model.note;
  ui.note.hidden = !model.note;
}

// src/heatmap/view/group.js
function groupMenu() {
  const groupLabel = (
    /** @type {HTMLLabelElement} */
    h("label", "murano-group", { hidden: "" })
  );
  groupLabel.append(h("span", "murano-label", {}, "Group"));
  const groupSelect = (
    /** @type {HTMLSelectElement} */
    h("select", "murano-group-select", { "aria-label": "Token group shown" })
  );
  groupLabel.append(groupSelect);
  return { groupLabel, groupSelect };
}
function showGroupMenu(ui, data, metric, group) {
  const spec = metricSpec(data, metric);
  ui.groupLabel.hidden = !(spec && spec.perGroup && data.groups.length > 0);
  const key = data.groups.join("\0");
  if (ui.groupSelect.dataset.key !== key) {
    ui.groupSelect.replaceChildren(...data.groups.map((name) => h("option", "", { value: name, title: name }, name)));
    ui.groupSelect.dataset.key = key;
  }
  ui.groupSelect.value = group;
  ui.groupSelect.title = spec && spec.perGroup && group ? metricLabel(data, spec, { target: 0, group: data.groups.indexOf(group) }) : "";
}
function setGroup(view, value, sync) {
  const data = view.data;
  if (!data) return;
  if (!sync && typeof value === "string" && value && !data.groups.includes(value)) return;
  const group = resolveGroup(data, value);
  if (sync) send(view, "group", group);
  view.ui.groupSelect.value = group;
  if (group === view.state.group) return;
  view.store.set({ group });
  view.refreshMetric();
  updateTooltip(view);
  const s2 = view.state;
  if (s2.focused && s2.focus) announce(view, s2.focus);
  view.drawTrajectory();
  view.requestDraw();
}
function shownPick(data, state) {
  if (!data) return { target: 0, group: 0 };
  return { target: targetIndex(data, state.target), group: Math.max(0, data.groups.indexOf(resolveGroup(data, state.group))) };
}
function pickFor(data, name, pick) {
  const spec = data ? metricSpec(data, name) : void 0;
  return spec ? pickIndex(spec, pick) : 0;
}

// src/heatmap/view/dom.js
var LAYER_HINT = "highlighted row; its predictions appear under the tokens";
var READOUT_HINT = "Hover or focus a cell for details; click or Enter pins it. Arrow keys move inside the heatmap.";
function buildDom(el, id) {
  const root = h("div", "murano-root", { role: "group", "aria-label": "Logit lens" });
  const header = h("div", "murano-header");
  const titleEl = h("span", "murano-title", {}, "Logit lens");
  const modelEl = h("span", "murano-model");
  const dimsEl = h("span", "murano-dims");
  const metricLabel2 = h("label", "murano-metric");
  metricLabel2.append(h("span", "murano-label", {}, "Colour"));
  const metricSelect = h("select", "murano-select", { "aria-label": "Colour cells by" });
  metricLabel2.append(metricSelect);
  const targetLabel = h("label", "murano-target", { hidden: "" });
  targetLabel.append(h("span", "murano-label", {}, "Token"));
  const targetSelect = h("select", "murano-target-select", { "aria-label": "Tracked token shown" });
  targetLabel.append(targetSelect);
  const lensLabel = h("label", "murano-lens", { hidden: "" });
  lensLabel.append(h("span", "murano-label", {}, "Lens"));
  const lensSelect = h("select", "murano-lens-select", { "aria-label": "Lens shown" });
  lensLabel.append(lensSelect);
  const besideLabel = h("label", "murano-beside", { hidden: "" });
  besideLabel.append(h("span", "murano-label", {}, "beside"));
  const besideSelect = h("select", "murano-beside-select", { "aria-label": "Lens drawn as a second grid" });
  besideLabel.append(besideSelect);
  const viewLabel = h("label", "murano-view", { hidden: "" });
  viewLabel.append(h("span", "murano-label", {}, "View"));
  const viewSelect = h("select", "murano-view-select", { "aria-label": "View" });
  viewSelect.append(
    h("option", "", { value: "layers", title: "The heatmap: rows are layers" }, "layers"),
    h("option", "", { value: "components", title: "Rows are the model's components, colour each one's direct part of the explained logit" }, "components")
  );
  viewLabel.append(viewSelect);
  const colourGroup = h("div", "murano-colour");
  const { groupLabel, groupSelect } = groupMenu();
  colourGroup.append(metricLabel2, targetLabel, groupLabel);
  header.append(titleEl, modelEl, dimsEl, colourGroup, viewLabel, lensLabel, besideLabel);
  const controls = h("div", "murano-controls");
  const slider = (name, label, accessibleName) => {
    const row = h("div", `murano-control murano-${name}-control`);
    const labelEl = h("label", "murano-label", { for: `${id}-${name}` }, label);
    const input = h("input", "murano-slider", { type: "range", id: `${id}-${name}`, min: 0, max: 0, step: 1, value: 0, "aria-label": accessibleName });
    const output = h("output", "murano-value", { for: `${id}-${name}` });
    const extra = h("span", `murano-${name}-text`);
    row.append(labelEl, input, output, extra);
    controls.append(row);
    return { row, label: labelEl, input, output, extra };
  };
  const promptUi = slider("prompt", "Prompt", "Prompt shown");
  const hideTemplateLabel = h("label", "murano-hide-template", { hidden: "" });
  const hideTemplate = h("input", "murano-hide-template-box", { type: "checkbox" });
  hideTemplateLabel.append(hideTemplate, h("span", "", {}, "hide chat-template tokens"));
  const layerUi = slider("layer", "Layer", "Layer highlighted");
  layerUi.extra.textContent = LAYER_HINT;
  controls.append(hideTemplateLabel);
  const body = h("div", "murano-heatmap");
  const scroller = h("div", "murano-scroll");
  const track = h("div", "murano-track");
  const canvas = h("canvas", "murano-canvas", {
    tabindex: 0,
    role: "application",
    "aria-roledescription": "heatmap",
    "aria-describedby": `${id}-readout`
  });
  const gridCaption2 = h("div", "murano-grid-caption", { hidden: "" });
  const besideCaption = h("div", "murano-grid-caption", { hidden: "" });
  const besideCanvas = h("canvas", "murano-canvas-beside", { role: "img", hidden: "" });
  track.append(gridCaption2, canvas, besideCaption, besideCanvas);
  scroller.append(track);
  body.append(scroller);
  const trajPanel = h("div", "murano-trajectory", { role: "group", "aria-label": "Trajectory across layers of the chosen column" });
  const comp = buildComponents(id);
  const main = h("div", "murano-main");
  const left = h("div", "murano-left");
  main.append(left, trajPanel);
  const why = buildWhy();
  const tooltip = h("div", "murano-tooltip", { role: "tooltip", id: `${id}-tooltip`, hidden: "" });
  const footer = h("div", "murano-footer");
  const legend = h("div", "murano-legend");
  const legendTitle = h("span", "murano-legend-title");
  const scale = h("span", "murano-legend-scale");
  const legendBar = h("canvas", "murano-legend-bar", { width: 256, height: 1, "aria-hidden": "true" });
  const legendTicks2 = h("span", "murano-legend-ticks", { "aria-hidden": "true" });
  scale.append(legendBar, legendTicks2);
  const legendChange = h("span", "murano-legend-change", { role: "status", hidden: "" });
  const settledKey = h("span", "murano-key murano-key-settled");
  settledKey.append(h("span", "murano-key-dot", { "aria-hidden": "true" }), h("span", "", {}, "top-1 = final prediction"));
  const missingKey = h("span", "murano-key murano-key-missing", { hidden: "" });
  missingKey.append(h("span", "murano-key-hatch", { "aria-hidden": "true" }), h("span", "", {}, "no value (not finite)"));
  const answerKey = h("span", "murano-key murano-key-answer", { hidden: "" });
  answerKey.append(h("span", "murano-key-corner", { "aria-hidden": "true" }), h("span", "", {}, "top-1 = the answer"));
  const generatedKey = h("span", "murano-key murano-key-generated", { hidden: "" });
  generatedKey.append(h("span", "murano-key-rule", { "aria-hidden": "true" }), h("span", "", {}, "generated from here (italic tokens)"));
  const roleKeys = h("span", "murano-role-keys", { hidden: "" });
  const compKey = h("span", "murano-key murano-key-comp", { hidden: "" });
  compKey.append(h("span", "murano-key-hatch", { "aria-hidden": "true" }), h("span", "", {}, "no part (after the row read), or nothing explained"));
  legend.append(legendTitle, scale, legendChange, settledKey, answerKey, missingKey, generatedKey, roleKeys, compKey);
  const pinEl = h("span", "murano-pin", { hidden: "" });
  const pinText = h("span", "murano-pin-text");
  const unpinButton = h("button", "murano-unpin", { type: "button", "aria-label": "Unpin the cell", title: "Unpin" }, "×");
  pinEl.append(pinText, unpinButton);
  const readout = h("div", "murano-readout", { id: `${id}-readout`, role: "status", "aria-live": "polite" }, READOUT_HINT);
  footer.append(legend, pinEl, readout);
  left.append(body, comp.box, footer);
  const errorEl = h("div", "murano-error", { role: "alert", hidden: "" });
  const live = buildLive(id);
  root.append(header, controls, live.panel, main, live.pinPanel, live.patchPanel, why.panel, errorEl, tooltip);
  el.append(root);
  return {
    root,
    titleEl,
    modelEl,
    dimsEl,
    lensLabel,
    lensSelect,
    besideLabel,
    besideSelect,
    gridCaption: gridCaption2,
    besideCaption,
    besideCanvas,
    metricSelect,
    targetLabel,
    targetSelect,
    groupLabel,
    groupSelect,
    viewLabel,
    viewSelect,
    comp,
    why,
    compKey,
    promptUi,
    layerUi,
    main,
    left,
    body,
    trajPanel,
    scroller,
    track,
    canvas,
    tooltip,
    legendTitle,
    legendBar,
    legendTicks: legendTicks2,
    legendChange,
    missingKey,
    settledKey,
    answerKey,
    generatedKey,
    roleKeys,
    hideTemplateLabel,
    hideTemplate,
    pinEl,
    pinText,
    unpinButton,
    readout,
    errorEl,
    live
  };
}

// src/heatmap/view/metric.js
function followKey(data, metric, target) {
  const spec = data ? metricSpec(data, metric) : void 0;
  return spec && spec.perTarget && target ? `${metric}\0${target}` : "";
}
function setMetric(view, value, sync) {
  const data = view.data;
  if (!data) return;
  const metric = resolveMetric(data, value);
  if (sync) send(view, "metric", metric);
  view.ui.metricSelect.value = metric;
  view.store.set({ metric });
}
function setTarget(view, value, sync) {
  const data = view.data;
  if (!data) return;
  if (!sync && typeof value === "string" && value && !data.targets.includes(value)) return;
  const target = resolveTarget(data, value);
  if (sync) send(view, "target", target);
  view.ui.targetSelect.value = target;
  view.store.set({ target });
}
function followMetric(view) {
  return view.store.subscribe((changed) => {
    if (!changed.includes("metric") && !changed.includes("target")) return;
    refreshMetric(view);
    followTarget(view);
  });
}
function targetIndex2(view) {
  return shownPick(view.data, view.state);
}
function followTarget(view) {
  const data = view.data;
  const s2 = view.state;
  const key = followKey(data, s2.metric, s2.target);
  if (key === view.followedTarget) return;
  view.followedTarget = key;
  if (!key || !data) return;
  view.trajectory.toggled.set(`target:${data.targets.indexOf(s2.target)}`, true);
  view.trajectory.rerender();
  requestDetails(view);
}
function refreshMetric(view) {
  const { data, ui } = view;
  if (!data) return;
  const s2 = view.state;
  const available = metricAvailable(data, s2.metric);
  if (available) view.shownMetric = s2.metric;
  else requestDetails(view);
  ui.root.classList.toggle("murano-loading", !available && s2.view !== "components");
  showTargetMenu(ui, data, s2.metric, s2.target);
  showGroupMenu(ui, data, s2.metric, s2.group);
  if (s2.view === "components") showComponentLegend(ui, view.components.currentGrid(), data.logitSoftcap !== null);
  else showLegend(ui, data, view.shownMetric, s2.metric, targetIndex2(view), gridDomain(view));
  showCaptions(view);
  if (view.scaleNote && view.scaleNote.metric !== view.shownMetric) view.scaleNote = null;
  const note = s2.view === "components" || !view.scaleNote ? "" : view.scaleNote.text;
  ui.legendChange.textContent = note;
  ui.legendChange.hidden = !note;
}

// src/heatmap/view/explain.js
function whyCellOf(data, s2, pointed) {
  if (s2.view === "components") {
    const c = pointed.components;
    const cell = c.hover || (c.focused ? c.focus : null);
    if (cell) return { row: s2.layer, position: cell.position, unit: cell.layerIndex, source: c.hover ? "hover" : "focus" };
  } else {
    const hover = s2.hover || pointed.whyHover;
    if (hover) return { row: hover.layerIndex, position: hover.position, unit: -1, source: "hover" };
    if (s2.focused && s2.focus) return { row: s2.focus.layerIndex, position: s2.focus.position, unit: -1, source: "focus" };
  }
  const sel = s2.selected;
  if (sel && sel.prompt === s2.prompt && sel.layer_index < data.L && sel.position < data.lengths[s2.prompt]) {
    return { row: sel.layer_index, position: sel.position, unit: -1, source: "pinned" };
  }
  return { row: s2.layer, position: data.lengths[s2.prompt] - 1, unit: -1, source: "default" };
}
function whyCell(view) {
  return view.data ? whyCellOf(view.data, view.state, { whyHover: view.whyHover, components: view.components }) : null;
}
function explainChoice(view) {
  return view.data ? parseExplain(view.data, view.state.explain) : (
    /** @type {const} */
    { kind: "top1" }
  );
}
function showAttribution(view) {
  const { data, ui, store } = view;
  if (!data) return;
  const s2 = store.state;
  const offered = hasAttribution(data);
  store.set({
    view: offered ? s2.view : "layers",
    explain: explainValue(data, parseExplain(data, s2.explain)),
    heads: hasHeads(data.components) ? s2.heads : false
  });
  ui.viewLabel.hidden = !offered;
  ui.viewSelect.value = s2.view;
  ui.why.panel.hidden = !offered;
  ui.why.headsLabel.hidden = !hasHeads(data.components);
  ui.why.heads.checked = s2.heads;
  showExplainMenu(ui.why, explainOptions(data, (t) => displayToken(t)), s2.explain);
  view.components.invalidate();
  applyView(view);
  updateWhy(view);
}
function applyView(view) {
  const { ui } = view;
  const components = view.state.view === "components";
  ui.body.hidden = components;
  ui.trajPanel.hidden = components;
  ui.comp.box.hidden = !components;
  ui.root.classList.toggle("murano-components-view", components);
  ui.compKey.hidden = !components;
  ui.layerUi.extra.textContent = components ? "the row whose logits the components are read at" : LAYER_HINT;
  view.refreshMetric();
}
function setView(view, value, sync) {
  const data = view.data;
  if (!data) return;
  const shown = value === "components" && hasAttribution(data) ? "components" : "layers";
  if (sync) send(view, "view", shown);
  view.ui.viewSelect.value = shown;
  if (shown === view.state.view) return;
  view.store.set({ view: shown, hover: null });
  view.components.hover = null;
  view.components.revealPending = true;
  applyView(view);
  view.relayout();
  updateTooltip(view);
}
function setExplain(view, value, sync) {
  const data = view.data;
  if (!data) return;
  const explain = explainValue(data, parseExplain(data, value));
  if (sync) send(view, "explain", explain);
  view.ui.why.explainSelect.value = explain;
  if (explain === view.state.explain) return;
  view.store.set({ explain });
  relayoutComponents(view);
  updateWhy(view);
  updateTooltip(view);
}
function setHeads(view, heads) {
  view.ui.why.heads.checked = heads;
  if (heads === view.state.heads) return;
  view.store.set({ heads });
  view.components.hover = null;
  view.components.focus = null;
  relayoutComponents(view);
  updateWhy(view);
}
function relayoutComponents(view) {
  if (view.components.shown) view.components.relayout();
}
function componentCellChanged(view, cell) {
  if (cell) requestDetails(view);
  updateTooltip(view);
  updateWhy(view);
}
function updateWhy(view) {
  const { data, ui } = view;
  if (!data || !hasAttribution(data) || ui.why.panel.hidden) {
    view.whyShown = { cell: null, model: null };
    return;
  }
  const cell = whyCell(view);
  const s2 = view.state;
  const explain = explainChoice(view);
  const model = cell && data.arrays.contributions ? whyModel(data, { explain, prompt: s2.prompt, row: cell.row, position: cell.position, heads: s2.heads, show: (t) => displayToken(t) }) : null;
  let message = "";
  if (!data.arrays.contributions) message = waitingNote("the attribution", view.detailsLate);
  else if (!model && cell) message = `Nothing to explain: ${nothingExplained(data, explain, s2.prompt, cell.position)}.`;
  showWhy(ui.why, model, { message, current: cell ? cell.unit : -1 });
  view.whyShown = { cell, model };
}

// src/heatmap/view/load.js
var RELOAD_GRACE_MS = 2e3;
function stateForPayload(data, trait, s2, previous, first) {
  if (first) {
    const layer = trait("layer");
    return {
      prompt: clampIndex(trait("prompt"), data.P),
      layer: layer === null || layer === void 0 ? data.L - 1 : rowOfModelLayer(data.layers, layer),
      metric: resolveMetric(data, trait("metric")),
      target: resolveTarget(data, trait("target")),
      group: resolveGroup(data, trait("group")),
      selected: trait("selected") ?? null,
      hide_template: trait("hide_template") === true,
      view: trait("view") === "components" ? "components" : "layers",
      explain: typeof trait("explain") === "string" ? trait("explain") : "top1"
    };
  }
  const metric = trait("metric");
  const target = trait("target");
  return {
    prompt: clampIndex(previous && previous.P !== data.P ? trait("prompt") : s2.prompt, data.P),
    layer: clampIndex(s2.layer, data.L),
    metric: resolveMetric(data, typeof metric === "string" && metricOffered(data, metric) ? metric : s2.metric),
    target: resolveTarget(data, typeof target === "string" && data.targets.includes(target) ? target : s2.target),
    group: resolveGroup(data, typeof trait("group") === "string" && data.groups.includes(trait("group")) ? trait("group") : s2.group)
  };
}
function shownMetricFor(data, shown, requested) {
  if (metricAvailable(data, shown)) return shown;
  return metricAvailable(data, requested) ? requested : (data.metrics.find((m) => metricAvailable(data, m.name)) || data.metrics[0]).name;
}
function reload(view) {
  const { ui, model, store } = view;
  let lenses;
  try {
    lenses = decodeLenses(model.get("_meta"), model.get("_sections"));
  } catch (error) {
    const message = `Cannot show this logit lens: ${error instanceof Error ? error.message : String(error)}`;
    if (view.data) {
      view.reloadError = message;
      if (!view.reloadTimer) view.reloadTimer = setTimeout(() => failReload(view), RELOAD_GRACE_MS);
      return;
    }
    view.data = null;
    view.lenses = [];
    showError(view, message);
    return;
  }
  if (view.reloadTimer) clearTimeout(view.reloadTimer);
  view.reloadTimer = null;
  const s2 = store.state;
  const wanted = view.loaded ? s2.lens : model.get("lens");
  const data = lenses.find((lens) => lens.lensName === wanted) || lenses[0];
  const previous = view.data;
  attachTopkBlocks(view, lenses);
  view.lenses = lenses;
  view.data = data;
  store.set({ lens: data.lensName });
  if (!view.loaded) store.set({ lens_beside: typeof model.get("lens_beside") === "string" ? model.get("lens_beside") : "" });
  view.beside = null;
  showBeside(view);
  ui.errorEl.hidden = true;
  ui.main.hidden = false;
  view.painter.setData(data);
  view.layoutKey = null;
  view.chartPlaceKey = "";
  showData(ui, data);
  showLensMenu(ui, lenses, s2.lens);
  store.set(stateForPayload(data, (name) => model.get(name), s2, previous, !view.loaded));
  view.loaded = true;
  if (data.answerSets.length || data.targets.length || hasAttribution(data)) requestDetails(view);
  view.shownMetric = shownMetricFor(data, view.shownMetric, s2.metric);
  if (s2.focus) store.set({ focus: clampCell(view, s2.focus) });
  if (s2.hover) store.set({ hover: clampCell(view, s2.hover) });
  ui.metricSelect.value = s2.metric;
  ui.hideTemplate.checked = s2.hide_template;
  showControls(ui, data, s2);
  const change = previous && previous !== data ? scaleChange(previous, data, view.shownMetric) : "";
  if (change) view.scaleNote = { metric: view.shownMetric, text: change };
  view.refreshMetric();
  showPin(ui, data, s2.selected);
  showAttribution(view);
  view.relayout();
  updateTooltip(view);
  store.set({ dataVersion: s2.dataVersion + 1 });
  followTarget(view);
}
function failReload(view) {
  view.reloadTimer = null;
  view.data = null;
  view.lenses = [];
  showError(view, view.reloadError);
}
function showError(view, message) {
  view.ui.errorEl.textContent = message;
  view.ui.errorEl.hidden = false;
  view.ui.main.hidden = true;
  view.tooltip.hide();
}
function setLens(view, name, sync) {
  const { ui, store } = view;
  const data = view.lenses.find((lens) => lens.lensName === name);
  if (!data) {
    ui.lensSelect.value = store.state.lens;
    return;
  }
  const s2 = store.state;
  const beside = besideAfterSwitch(s2.lens, data.lensName, s2.lens_beside);
  if (sync) {
    send(view, "lens", data.lensName);
    if (beside !== s2.lens_beside) send(view, "lens_beside", beside);
  }
  ui.lensSelect.value = data.lensName;
  if (data === view.data) return;
  view.data = data;
  store.set({ lens: data.lensName, lens_beside: beside });
  showBeside(view);
  view.painter.setData(data);
  showData(ui, data);
  store.set({ metric: resolveMetric(data, s2.metric) });
  if (!metricAvailable(data, view.shownMetric)) view.shownMetric = s2.metric;
  ui.metricSelect.value = s2.metric;
  showControls(ui, data, s2);
  view.refreshMetric();
  showPin(ui, data, s2.selected);
  showAttribution(view);
  view.layoutKey = null;
  view.relayout();
  updateTooltip(view);
  if (s2.focused && s2.focus) announce(view, s2.focus);
  store.set({ dataVersion: s2.dataVersion + 1 });
}

// src/heatmap/view/events.js
function bindEvents(view) {
  const abort = new AbortController();
  const signal = abort.signal;
  const on = (target, type, fn, options = {}) => target.addEventListener(type, fn, { signal, ...options });
  const { ui, model } = view;
  on(ui.promptUi.input, "input", () => setPrompt(view, Number(ui.promptUi.input.value), "throttled"));
  on(ui.promptUi.input, "change", () => view.syncPrompt.flush());
  on(ui.layerUi.input, "input", () => setLayer(view, Number(ui.layerUi.input.value), "throttled"));
  on(ui.layerUi.input, "change", () => view.syncLayer.flush());
  on(ui.metricSelect, "change", () => setMetric(view, ui.metricSelect.value, true));
  on(ui.targetSelect, "change", () => setTarget(view, ui.targetSelect.value, true));
  on(ui.groupSelect, "change", () => setGroup(view, ui.groupSelect.value, true));
  on(ui.lensSelect, "change", () => setLens(view, ui.lensSelect.value, true));
  on(ui.besideSelect, "change", () => setBeside(view, ui.besideSelect.value, true));
  on(ui.viewSelect, "change", () => setView(view, ui.viewSelect.value, true));
  on(ui.why.explainSelect, "change", () => setExplain(view, ui.why.explainSelect.value, true));
  on(ui.why.heads, "change", () => setHeads(view, ui.why.heads.checked));
  on(ui.root, "pointerleave", () => {
    if (!view.whyHover) return;
    view.whyHover = null;
    view.updateWhy();
  });
  on(ui.scroller, "scroll", () => {
    if (view.state.hover) setHover(view, null);
    if (!onGridScroll(view)) view.requestDraw();
  }, { passive: true });
  bindOverview(view, signal);
  bindGrid(ui.canvas, heatmapGrid(view), signal);
  bindGrid(ui.besideCanvas, besideGrid(view), signal);
  keepControlKeys(ui.root, signal);
  on(ui.main, "pointerleave", () => {
    view.chartHover = null;
    view.requestDraw();
  });
  on(ui.unpinButton, "click", () => setSelected(view, null, true));
  on(ui.hideTemplate, "change", () => setHideTemplate(view, ui.hideTemplate.checked, true));
  const handlers = {
    // The view traits' changes: view_state.js, from their one table.
    "change:selected": () => setSelected(view, model.get("selected") ?? null, false),
    "change:_sections": () => reload(view),
    "change:_meta": () => reload(view)
  };
  for (const [event, fn] of Object.entries(handlers)) model.on(event, fn);
  let resizeObserver;
  if (typeof ResizeObserver !== "undefined") {
    resizeObserver = new ResizeObserver(() => view.relayout());
    resizeObserver.observe(ui.scroller);
    resizeObserver.observe(ui.comp.scroller);
  }
  const stopWatchingTheme = watchTheme(() => {
    view.painter.forgetTheme();
    view.besidePainter.forgetTheme();
    view.relayout();
  });
  return () => {
    abort.abort();
    for (const [event, fn] of Object.entries(handlers)) model.off(event, fn);
    resizeObserver?.disconnect();
    stopWatchingTheme();
  };
}

// src/heatmap/view/redraw.js
function relayout(view) {
  const { data, painter, ui } = view;
  if (!data) return;
  const theme = painter.readTheme();
  const s2 = view.state;
  const n = data.lengths[s2.prompt];
  placeChart(view, theme.charW);
  const width = ui.scroller.clientWidth || view.el.clientWidth || 800;
  const beside = view.beside;
  const key = `${s2.prompt}|${width}|${theme.charW}|${theme.uiFont}|${s2.hide_template}|${beside ? beside.lensName : ""}`;
  if (key !== view.layoutKey) {
    let maxChars = 1;
    const a = data.arrays;
    const offset = data.offsets[s2.prompt];
    const lastRow = (data.L - 1) * data.T + offset;
    const columns = shownColumns(view);
    const shown = columns ? columns.length : n;
    for (let j = 0; j < shown; j++) {
      const p = columns ? columns[j] : j;
      maxChars = Math.max(maxChars, charCount(painter.tokenText(a.input_ids[offset + p])), charCount(painter.tokenText(a.predicted_tokens[lastRow + p])));
      if (maxChars >= 10) break;
    }
    const labelW = Math.max(painter.labelWidth(data), beside ? view.besidePainter.labelWidth(beside) : 0);
    const maxHeight = beside ? 300 : 460;
    view.layout = computeLayout({ nLayers: data.L, nPositions: shown, width, labelW, charW: theme.charW, maxChars: Math.min(10, maxChars), maxHeight, columns });
    view.besideLayoutShown = beside ? besideLayout(view.layout, beside, computeLayout) : null;
    view.layoutKey = key;
    ui.track.style.width = `${view.layout.contentW}px`;
    ui.track.style.height = beside ? "" : `${view.layout.height}px`;
  }
  if (view.revealPending) revealPromptEnd(view);
  applyPendingPosition(view);
  draw(view);
  view.relayoutComponents();
  if (view.state.view === "components") showComponentLegend(ui, view.components.currentGrid(), data.logitSoftcap !== null);
}
function revealPromptEnd(view) {
  const layout = view.layout;
  const scroller = view.ui.scroller;
  if (!layout || !scroller.isConnected || scroller.clientWidth === 0) return;
  const s2 = view.state;
  const sel = s2.selected;
  const position = sel && sel.prompt === s2.prompt ? sel.position : view.data ? view.data.lengths[s2.prompt] - 1 : 0;
  const column = Math.max(0, columnOf(layout, clampCell(view, { layerIndex: 0, position }).position));
  scroller.scrollLeft = revealColumn(layout, 0, column);
  view.overview.ownScroll = scroller.scrollLeft;
  view.revealPending = false;
}
function scrollLeft(view) {
  return view.layout ? clampScroll(view.layout, view.ui.scroller.scrollLeft) : 0;
}
function requestDraw(view) {
  if (view.frame || typeof requestAnimationFrame !== "function") return;
  view.frame = requestAnimationFrame(() => {
    view.frame = 0;
    if (!view.layout || view.layoutKey === null) relayout(view);
    else draw(view);
  });
}
function draw(view) {
  if (view.frame) {
    cancelAnimationFrame(view.frame);
    view.frame = 0;
  }
  const { data, layout, debug } = view;
  if (!data || !layout) return;
  const t0 = performance.now();
  const s2 = view.state;
  const scene = {
    prompt: s2.prompt,
    layer: s2.layer,
    metric: view.shownMetric,
    target: view.itemIndex(view.shownMetric),
    loading: s2.metric !== view.shownMetric,
    selected: s2.selected,
    hover: s2.hover,
    focus: s2.focused ? s2.focus : null,
    domain: gridDomain(view)
  };
  const scroll = scrollLeft(view);
  debug.visible = view.painter.draw(layout, scene, scroll);
  drawBeside(view, scene, scroll);
  updateOverview(view);
  const tipCell = tooltipCell(view);
  if (tipCell && !view.tooltip.hidden) placeTooltip2(view, tipCell);
  if (view.state.view === "components") view.components.draw();
  else drawTrajectory(view);
  debug.frames += 1;
  debug.lastDrawMs = performance.now() - t0;
  for (const fn of debug.drawListeners.splice(0)) fn(debug.lastDrawMs);
}
var DRAWN_KEYS = /* @__PURE__ */ new Set(["metric", "target"]);
function followColouring(view) {
  return view.store.subscribe((changed) => {
    if (changed.some((key) => DRAWN_KEYS.has(key))) requestDraw(view);
  });
}

// src/heatmap/view/view_state.js
var VIEW_TRAITS = Object.freeze({
  lens: (view, value) => setLens(view, value, false),
  lens_beside: (view, value) => setBeside(view, value ?? "", false),
  prompt: (view, value) => {
    view.syncPrompt.cancel();
    setPrompt(view, value, false);
  },
  layer: (view, value) => {
    view.syncLayer.cancel();
    setModelLayer(view, value);
  },
  metric: (view, value) => setMetric(view, value, false),
  target: (view, value) => setTarget(view, value, false),
  group: (view, value) => setGroup(view, value, false),
  hide_template: (view, value) => setHideTemplate(view, value === true, false),
  explain: (view, value) => setExplain(view, value, false),
  view: (view, value) => setView(view, value, false),
  // The grid's first position shown: the scroller holds it (not the store), and reports it back.
  position: (view) => positionChanged(view)
});
function listenToTraits(view) {
  const model = view.model;
  const handlers = Object.entries(VIEW_TRAITS).map(([name, show]) => (
    /** @type {[string, () => void]} */
    [`change:${name}`, () => show(view, model.get(name))]
  ));
  for (const [event, fn] of handlers) model.on(event, fn);
  return () => {
    for (const [event, fn] of handlers) model.off(event, fn);
  };
}

// src/heatmap/view/view.js
var COMPONENT_KEYS = /* @__PURE__ */ new Set(["prompt", "layer", "explain", "heads", "hide_template"]);
var viewCounter = 0;
var LensView = class {
  /**
   * Over 100 lines on purpose: the view's fields declared once, each with what it holds (about
   * 70 of its lines), then its parts made in the order they depend on one another and the store
   * subscriptions that tie them; no branch but the first draw's.
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.store = createStore2();
    this.data = null;
    this.lenses = [];
    this.beside = null;
    this.besideLayoutShown = null;
    this.hoverGrid = 0;
    this.loaded = false;
    this.reloadTimer = null;
    this.reloadError = "";
    this.shownMetric = "";
    this.scaleNote = null;
    this.followedTarget = "";
    this.detailsRequested = false;
    this.detailsLate = false;
    this.detailsTimer = 0;
    this.topkStore = null;
    this.layout = null;
    this.layoutKey = null;
    this.revealPending = true;
    this.frame = 0;
    this.debug = { frames: 0, lastDrawMs: 0, visible: [0, 0], drawListeners: [] };
    this.whyHover = null;
    this.whyShown = { cell: null, model: null };
    this.chartHover = null;
    this.chartPlaceKey = "";
    const { syncPrompt, syncLayer } = syncers(this);
    this.syncPrompt = syncPrompt;
    this.syncLayer = syncLayer;
    const id = `murano-${++viewCounter}`;
    this.ui = buildDom(el, id);
    this.overview = makeOverview(this);
    if (Number(model.get("position")) > 0) this.overview.pendingPosition = Number(model.get("position"));
    this.painter = new Painter(this.ui.canvas, this.ui.root);
    this.besidePainter = new Painter(this.ui.besideCanvas, this.ui.root);
    this.trajectory = makeTrajectory(this, id);
    this.tooltip = makeTooltip(this);
    this.componentsAbort = new AbortController();
    this.components = new ComponentView(this.ui.comp, this, this.componentsAbort.signal);
    const unsubscribers = [
      this.store.subscribe((changed) => {
        if (changed.some((key) => COMPONENT_KEYS.has(key))) this.components.invalidate();
      }),
      followMetric(this),
      tipFollowsTarget(this),
      readoutFollowsTarget(this),
      followColouring(this)
    ];
    this.unsubscribe = () => unsubscribers.forEach((unsubscribe) => unsubscribe());
    const unbindEvents = bindEvents(this);
    const stopListening = listenToTraits(this);
    this.unbind = () => {
      unbindEvents();
      stopListening();
    };
    this.onTopkBlock = (msg, buffers) => receiveTopkBlock(this, msg, buffers);
    model.on("msg:custom", this.onTopkBlock);
    this.live = null;
    reload(this);
    this.live = new LiveView(this, this.ui.live);
    this.removeDebug = installDebug(el, "heatmap", debugApi(this));
    if (this.ui.scroller.clientWidth > 0) draw(this);
    else this.requestDraw();
  }
  /** @returns {ViewState} the view's state (the store's object) */
  get state() {
    return this.store.state;
  }
  destroy() {
    this.unbind();
    this.model.off("msg:custom", this.onTopkBlock);
    this.unsubscribe();
    this.live?.destroy();
    if (this.reloadTimer) clearTimeout(this.reloadTimer);
    if (this.detailsTimer) clearTimeout(this.detailsTimer);
    this.componentsAbort.abort();
    this.trajectory.destroy();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.syncPrompt.flush();
    this.syncLayer.flush();
    this.overview.report.flush();
    this.painter.images.clear();
    this.besidePainter.images.clear();
    this.ui.root.remove();
    this.removeDebug();
  }
  // What a module calls on a module above it (the one that imports it, directly or not): bound
  // here, late, since a direct import would close a circle. Every other operation is its
  // module's function, imported where it is called; what follows a state key subscribes to it.
  // metric.js (the metric module reads the grid beside, which reads the heatmap's grid)
  targetIndex() {
    return targetIndex2(this);
  }
  /** @param {string} metric @returns {number} the index of the token or group `metric` shows */
  itemIndex(metric) {
    return pickFor(this.data, metric, targetIndex2(this));
  }
  refreshMetric() {
    refreshMetric(this);
  }
  // explain.js (it sends through sync.js, which the prompt and row use; its DOM holds the
  // component view, which asks it what is explained)
  explainChoice() {
    return explainChoice(this);
  }
  updateWhy() {
    updateWhy(this);
  }
  relayoutComponents() {
    relayoutComponents(this);
  }
  /** @param {Cell | null} cell */
  componentCellChanged(cell) {
    componentCellChanged(this, cell);
  }
  // chart.js (it moves the row, navigation.js, whose cells ask for the detail sections)
  drawTrajectory() {
    drawTrajectory(this);
  }
  // cell_tip.js (it asks topk_blocks.js for a long payload's block, which shows it when it comes)
  updateTooltip() {
    updateTooltip(this);
  }
  // redraw.js (it reads the tooltip, the chart, the grid beside and the overview, which call it)
  relayout() {
    relayout(this);
  }
  requestDraw() {
    requestDraw(this);
  }
  draw() {
    draw(this);
  }
  scrollLeft() {
    return scrollLeft(this);
  }
};

// src/heatmap/index.js
function render({ model, el }) {
  const view = new LensView(model, el);
  return () => view.destroy();
}
function renderStandalone(el, state) {
  const model = createLocalModel(state);
  const destroy = render({ model, el });
  return { model, destroy };
}
var index_default = { render };
export {
  cellIndex,
  colourImage,
  createLocalModel,
  decodePayload,
  index_default as default,
  displayToken,
  metricAvailable,
  metricDomain,
  metricValue,
  renderStandalone,
  scaleColour,
  toBytes,
  unitValue
};
