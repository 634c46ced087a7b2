// @ts-check
/**
 * Payload decoding: the widget's `_meta` (JSON) and `_sections` (name → binary buffer) as typed
 * arrays, checked against each other. The format is written by `murano_widgets/payload/lens.py`
 * (version 3; version 2, one lens, still reads): section names are the result's field names,
 * and the metric registry (labels, units, colour scales, domains) comes in `meta.metrics`, so
 * nothing here lists metrics. Several lenses side by side share the token table and the
 * per-position sections (`meta.shared_sections`); lens `i`'s own sections are named
 * `meta.lenses[i].prefix + name` (the first lens's prefix is empty). `decodeLenses` gives each
 * lens as a `LensData` of its own, so everything downstream reads one lens at a time.
 */

import { COLOUR_STOPS } from "./colour_stops.js";
import { readSection, toBytes } from "./shared/codec.js";

/** The payload version Python writes now. */
export const PAYLOAD_VERSION = 3;

/** The payload versions this front end reads: 2 (one lens, no `meta.lenses`) and 3. */
export const PAYLOAD_VERSIONS = Object.freeze([2, 3]);

/** The dtypes the encoder writes (their sizes: `shared/codec.js`'s DTYPE_SIZES): float32 for the
 * direct logit attribution's sections only (`ATTRIBUTION_SHAPES`). */
export const LENS_DTYPES = Object.freeze(["uint8", "uint16", "uint32", "float32"]);

/**
 * The direct logit attribution's sections (`LogitLens(..., decompose=True)`; Python's
 * `metrics.ATTRIBUTION_SECTIONS`), float32 with NaN kept, by their shape: `C` is the number of
 * components (`meta.components`), the last axis of those that have it.
 */
export const ATTRIBUTION_SHAPES = Object.freeze({
  contributions: "cell_component",
  contribution_bias: "cell",
  top1_logits: "cell",
  answer_token_contributions: "cell_component",
  answer_token_bias: "cell",
  answer_row_contributions: "last_component",
  answer_row_bias: "last",
  target_contributions: "cell_target_component",
  target_bias: "cell_target",
});

/** Where a row reads the residual stream (`meta.addresses`), in model order within a layer. */
export const SITES = Object.freeze(["resid_mid", "resid_post"]);

/** Sections holding indices into `meta.tokens`. */
export const TOKEN_SECTIONS = Object.freeze(["input_ids", "final_tokens", "predicted_tokens", "topk_tokens"]);

/**
 * Cell sections (`[L, T]`) read for the first answer set: a prompt without an answer has no value
 * in them. `answer_top1` marks cells whose top-1 is that answer.
 */
export const ANSWER_CELL_SECTIONS = Object.freeze(["answer_token_probs", "answer_token_ranks", "answer_top1"]);

/** Per-prompt sections, shape "prompt_set" `[L, P, S]` (S answer sets). */
export const PROMPT_SET_SECTIONS = Object.freeze(["answer_probs", "answer_ranks"]);

/**
 * The final prediction's probability and rank at each prompt's last position only, shape "last"
 * `[L, P]`: base sections, so the trajectory chart's first column (the last position) has its
 * final-prediction line before the detail sections (`final_token_probs` / `_ranks`) arrive.
 */
export const LAST_POSITION_SECTIONS = Object.freeze({ final_token_probs: "final_last_probs", final_token_ranks: "final_last_ranks" });

/** Per-cell, per-target sections, shape "cell_target" `[L, T, n_targets]`. */
export const CELL_TARGET_SECTIONS = Object.freeze(["target_probs", "target_ranks"]);

/** Sections the view cannot draw without, whatever `meta.base_sections` says. */
export const REQUIRED_SECTIONS = Object.freeze(["input_ids", "predicted_tokens"]);

/**
 * @typedef {Uint8Array | Uint16Array | Uint32Array | Float32Array} RawArray
 * @typedef {"uint8" | "uint16" | "uint32" | "float32"} Dtype
 * @typedef {{dtype: string, shape: number[], scale?: number}} SectionSpec
 *
 * @typedef {object} MetricSpec One entry of `meta.metrics` (normalised).
 * @property {string} name the `metric` trait's value ("prob", "entropy", ...)
 * @property {string} field the payload section (= the result's field) holding the values
 * @property {string} label
 * @property {string} unit "probability", "bits" or "rank"
 * @property {string} scale colour scale name
 * @property {boolean} reverse flip the scale, so that "confident / close to final" is bright
 * @property {boolean} log log1p scale
 * @property {[number, number]} domain the colour domain [min, max]
 * @property {string} description one sentence on how a person reads it
 * @property {boolean} finalBased measured against the model's final prediction
 * @property {boolean} perTarget a value per tracked token (its section is "cell_target",
 *   `[L, T, n_targets]`): one token is shown at a time, the `target` trait
 * @property {boolean} perGroup a value per token group (its section is "cell_group",
 *   `[L, T, n_groups]`): one group is shown at a time, the `group` trait
 * @property {string | null} targetLabel for a per-target metric, the label naming the token
 *   shown, "{target}" where it goes (`label` names none: the menu's)
 * @property {boolean} available whether the result has it
 * @property {string | null} unavailableReason why not, when not
 *
 * @typedef {object} LensData The decoded result of the lens step: the heatmap's payload, as
 *   `decodePayload` returns it. ("Lens" names the translator only; `lensKind` / `lensTitle` describe it.)
 * @property {Record<string, any>} meta
 * @property {number} L rows (shown layers)
 * @property {number} T positions of all prompts laid end to end
 * @property {number} P prompts
 * @property {number[]} layers model layer number of each row (ascending)
 * @property {number | null} nModelLayers the model's depth, when known
 * @property {number[]} lengths real tokens per prompt
 * @property {number[]} offsets start of each prompt on the position axis
 * @property {string[]} tokens the distinct token strings
 * @property {string[]} prompts
 * @property {string} modelName
 * @property {string} lensName the lens's name among lenses side by side (`meta.lenses[i].name`;
 *   one lens: its kind)
 * @property {string} lensKind the lens's kind: "logit", "tuned", or a kind of the user's
 * @property {string | null} lensTitle what the views call the lens (`meta.lens_title`, Python's
 *   `Lens.title`); null in payloads written before it was sent
 * @property {number} topK number of top tokens available (top-1 included)
 * @property {number} topkWindow a long payload's top-k (ranks 2..k) comes by blocks of this many
 *   positions, asked for when shown (`view/topk_blocks.js`); 0: it is in `arrays`, or not sent
 * @property {Map<number, TopkBlock> | null} topkBlocks the blocks arrived, by first position
 *   (set by the view; null until then)
 * @property {number} maxEntropy log2(vocab) in bits (0 when unknown)
 * @property {MetricSpec[]} metrics the registry, in menu order
 * @property {string[]} baseSections
 * @property {string[]} detailSections
 * @property {Record<string, RawArray>} arrays raw values by section name
 * @property {Record<string, number>} scales value = raw * scale
 * @property {Record<string, number>} maxima per-section maximum raw value, filled lazily
 * @property {AnswerSet[]} answerSets the named answer sets (`meta.answer_sets`), [] without answers
 * @property {string[]} targets the tracked target strings (`meta.targets`), [] without targets
 * @property {string[]} groups the token groups' names (`meta.groups`), [] without groups
 * @property {Record<string, Uint8Array>} noValue per section, 1 for each prompt that has no value
 *   in it at all (a prompt without an answer has none in the answer's cell sections)
 * @property {string[] | null} sites where each row reads the residual stream ("resid_mid": after
 *   its layer's attention; "resid_post": the block's output), from `meta.addresses`; null when
 *   every row is a block output (the payload then sends no addresses)
 * @property {string[]} components the direct logit attribution's components in model order
 *   (`meta.components`: "embed", "L0.attn", "L0.mlp", ...; with heads "L0.H0", ...,
 *   "L0.attn_bias"), [] without attribution
 * @property {number | null} logitSoftcap the final soft-cap the attributed logits stop before
 * @property {(string | null)[] | null} foils each prompt's foil (the answer's attribution is then
 *   the answer's logit minus the foil's), null without foils
 *
 * @typedef {object} TopkBlock A long payload's top-k over positions `start .. start + width`.
 * @property {number} start
 * @property {number} width
 * @property {string[]} strings the block's own token strings, which `tokens` index
 * @property {RawArray} tokens `[L, width, topK - 1]`
 * @property {RawArray} probs `[L, width, topK - 1]`, value = raw * scale
 * @property {number} scale
 *
 * @typedef {object} AnswerSet One entry of `meta.answer_sets`.
 * @property {string} name "answer" for a plain list of answers
 * @property {(string | null)[]} answers per prompt, the display form (null: no answer)
 * @property {(number | null)[]} nTokens per prompt, the answer's token count (the longest
 *   accepted form's; null: unknown)
 * @property {number[]} nAccepted per prompt, how many accepted forms are summed (0: no answer)
 */

/** @param {number[]} shape */
function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * @param {unknown} value
 * @returns {value is number[]}
 */
function isIntArray(value) {
  return Array.isArray(value) && value.every((x) => Number.isInteger(x) && x >= 0);
}

/**
 * @param {unknown} value
 * @returns {value is string[]}
 */
function isStringArray(value) {
  return Array.isArray(value) && value.every((x) => typeof x === "string");
}

/**
 * One `meta.metrics` entry, checked and with defaults.
 * @param {any} raw
 * @param {number} index
 * @returns {MetricSpec}
 */
export function normaliseMetric(raw, index) {
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
    unavailableReason: typeof raw.unavailable_reason === "string" && raw.unavailable_reason ? raw.unavailable_reason : null,
  };
}

/**
 * The strings of a `detail_tokens` section: a JSON list, UTF-8.
 * @param {RawArray} bytes
 * @returns {string[]}
 */
export function detailTokens(bytes) {
  const list = JSON.parse(new TextDecoder().decode(/** @type {Uint8Array} */ (bytes)));
  if (!isStringArray(list)) throw new Error("section detail_tokens must be a list of strings");
  return list;
}

/**
 * Checks `_meta` and decodes `_sections` into typed arrays.
 *
 * Sections that `_meta` describes but `_sections` lacks are left out (a detail section not sent
 * yet reads as "not loaded"), except the base sections, without which nothing can be drawn.
 * @param {any} meta the `_meta` trait
 * @param {Record<string, unknown> | null | undefined} sections the `_sections` trait
 * @returns {LensData}
 * @throws {Error} naming what is wrong when the payload is inconsistent
 */
export function decodePayload(meta, sections) {
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
    // Sublayer rows repeat a layer: then (layer, site) ascends.
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
  if (meta.total !== undefined && meta.total !== T) throw new Error(`_meta.total is ${meta.total} but the lengths add up to ${T}`);
  if (!isStringArray(tokens)) throw new Error("_meta.tokens must be a list of strings");
  if (!Array.isArray(meta.metrics) || meta.metrics.length === 0) throw new Error("_meta.metrics must list the metrics");
  const metrics = meta.metrics.map(normaliseMetric);
  const L = layers.length;
  const topK = Math.max(1, Number(meta.top_k) || 1);
  /** @type {Record<string, number[]>} */
  const expectedShapes = {
    input_ids: [T],
    final_tokens: [T],
    final_missing: [T],
    predicted_tokens: [L, T],
    missing: [L, T],
    topk_tokens: [L, T, topK - 1],
    topk_probs: [L, T, topK - 1],
    generated: [T],
    token_roles: [T],
  };
  const answerSets = normaliseAnswerSets(meta.answer_sets, lengths.length);
  const targets = meta.targets === undefined || meta.targets === null ? [] : meta.targets;
  if (!isStringArray(targets)) throw new Error("_meta.targets must be a list of strings");
  const groups = meta.groups === undefined || meta.groups === null ? [] : meta.groups;
  if (!isStringArray(groups)) throw new Error("_meta.groups must be a list of group names");
  for (const metric of metrics) expectedShapes[metric.field] = metric.perTarget ? [L, T, targets.length] : metric.perGroup ? [L, T, groups.length] : [L, T];
  for (const name of ANSWER_CELL_SECTIONS) expectedShapes[name] = [L, T];
  for (const name of PROMPT_SET_SECTIONS) expectedShapes[name] = [L, lengths.length, answerSets.length];
  for (const name of CELL_TARGET_SECTIONS) expectedShapes[name] = [L, T, targets.length];
  for (const name of Object.values(LAST_POSITION_SECTIONS)) expectedShapes[name] = [L, lengths.length];
  const components = meta.components === undefined || meta.components === null ? [] : meta.components;
  if (!isStringArray(components)) throw new Error("_meta.components must be a list of component labels");
  const C = components.length;
  /** @type {Record<string, number[]>} */
  const attributionShapes = {
    cell: [L, T],
    cell_component: [L, T, C],
    last: [L, lengths.length],
    last_component: [L, lengths.length, C],
    cell_target: [L, T, targets.length],
    cell_target_component: [L, T, targets.length, C],
  };
  for (const [name, shape] of Object.entries(ATTRIBUTION_SHAPES)) expectedShapes[name] = attributionShapes[shape];
  // A metric in logits (the logit difference) is signed: sent as float32, as computed.
  const signedFields = new Set(metrics.filter((/** @type {MetricSpec} */ metric) => metric.unit === "logit").map((/** @type {MetricSpec} */ metric) => metric.field));
  const baseSections = isStringArray(meta.base_sections) ? meta.base_sections : [];
  const detailSections = isStringArray(meta.detail_sections) ? meta.detail_sections : [];
  /** @type {Record<string, SectionSpec>} */
  const specs = meta.sections && typeof meta.sections === "object" ? meta.sections : {};
  /** @type {Record<string, RawArray>} */
  const arrays = {};
  /** @type {Record<string, number>} */
  const scales = {};
  for (const [name, spec] of Object.entries(specs)) {
    const data = sections ? sections[name] : undefined;
    if (data === undefined || data === null) continue;
    const shape = spec && spec.shape;
    if (!isIntArray(shape)) throw new Error(`section ${name}: shape must be a list of sizes`);
    if (name in ATTRIBUTION_SHAPES && C === 0) throw new Error(`section ${name}: _meta.components does not name its components`);
    if ((spec.dtype === "float32") !== (name in ATTRIBUTION_SHAPES || signedFields.has(name))) throw new Error(`section ${name}: dtype ${spec.dtype} is not this section's`);
    const expected = expectedShapes[name];
    if (expected && (expected.length !== shape.length || expected.some((n, i) => n !== shape[i]))) {
      throw new Error(`section ${name}: shape ${JSON.stringify(shape)} disagrees with the layers and lengths (expected ${JSON.stringify(expected)})`);
    }
    arrays[name] = /** @type {RawArray} */ (readSection(data, spec.dtype, product(shape), name, LENS_DTYPES));
    scales[name] = typeof spec.scale === "number" && Number.isFinite(spec.scale) ? spec.scale : 1;
  }
  for (const name of REQUIRED_SECTIONS) {
    if (!arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  }
  for (const name of baseSections) {
    if (specs[name] && !arrays[name]) throw new Error(`the payload lacks the ${name} section`);
  }
  // A long payload's token section past 65,535 strings: its low 16 bits, and bits 16..23 in
  // the uint8 section `<name>_high` (3 bytes an index, not 4).
  for (const name of TOKEN_SECTIONS) {
    const low = arrays[name];
    const high = arrays[`${name}_high`];
    if (!low || !high) continue;
    if (high.length !== low.length) throw new Error(`section ${name}_high: ${high.length} values for ${low.length}`);
    arrays[name] = Uint32Array.from(low, (value, i) => value + high[i] * 65536);
  }
  // A long payload's top-k strings beyond the base table come as a detail section (Python's
  // murano_widgets/payload/long.py): the table and it are one list to the token sections.
  const allTokens = arrays.detail_tokens ? tokens.concat(detailTokens(arrays.detail_tokens)) : tokens;
  const nTokens = allTokens.length;
  for (const name of TOKEN_SECTIONS) {
    const array = arrays[name];
    if (!array) continue;
    for (let i = 0; i < array.length; i++) {
      if (array[i] >= nTokens) throw new Error(`section ${name}: token index ${array[i]} is outside the table of ${nTokens} strings`);
    }
  }
  const roles = meta.roles === undefined || meta.roles === null ? [] : meta.roles;
  if (!isStringArray(roles)) throw new Error("_meta.roles must be a list of role names");
  const roleCodes = arrays.token_roles;
  if (roleCodes) {
    for (let i = 0; i < roleCodes.length; i++) {
      if (roleCodes[i] >= roles.length) throw new Error(`section token_roles: role ${roleCodes[i]} is outside _meta.roles (${roles.length} names)`);
    }
  }
  const nModel = Number(meta.n_model_layers);
  // A long live payload's top-k comes by blocks (an export's is in the sections, whole).
  const topkWindow = Number(meta.topk_window) > 0 && !arrays.topk_tokens && specs.topk_tokens ? Number(meta.topk_window) : 0;
  /** @type {Record<string, Uint8Array>} */
  const noValue = {};
  if (answerSets.length) {
    const without = Uint8Array.from(answerSets[0].answers, (a) => (a === null ? 1 : 0));
    if (without.some(Boolean)) for (const name of ANSWER_CELL_SECTIONS) noValue[name] = without;
  }
  return {
    meta,
    L,
    T,
    P: lengths.length,
    layers,
    nModelLayers: Number.isInteger(nModel) && nModel > 0 ? nModel : null,
    lengths,
    offsets,
    tokens: allTokens,
    prompts: isStringArray(meta.prompts) ? meta.prompts : [],
    modelName: typeof meta.model_name === "string" ? meta.model_name : "",
    lensName: typeof meta.lens_name === "string" && meta.lens_name ? meta.lens_name : typeof meta.lens_kind === "string" && meta.lens_kind ? meta.lens_kind : "logit",
    lensKind: typeof meta.lens_kind === "string" && meta.lens_kind ? meta.lens_kind : "logit",
    lensTitle: typeof meta.lens_title === "string" && meta.lens_title ? meta.lens_title : null,
    topK: (arrays.topk_tokens && arrays.topk_probs) || topkWindow ? topK : 1,
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
    sites,
    components,
    logitSoftcap: Number.isFinite(meta.logit_softcap) && meta.logit_softcap > 0 ? Number(meta.logit_softcap) : null,
    foils: Array.isArray(meta.foils) && meta.foils.length === lengths.length ? meta.foils.map((/** @type {unknown} */ f) => (typeof f === "string" ? f : null)) : null,
  };
}

/**
 * Each row's site from `meta.addresses` ("L3.resid_mid" → "resid_mid"), checked against the
 * rows' layers; null when the payload sends no addresses (every row a block output).
 * @param {unknown} addresses
 * @param {number[]} layers
 * @returns {string[] | null}
 */
export function rowSites(addresses, layers) {
  if (addresses === undefined || addresses === null) return null;
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

/**
 * Every lens of a payload, each decoded as a `LensData` of its own (in `meta.lenses` order): its
 * sections without their prefix, the shared per-position sections, its metrics, top-k, kind and
 * title. A payload of one lens (version 2, or 3 with one entry) gives one.
 * @param {any} meta the `_meta` trait
 * @param {Record<string, unknown> | null | undefined} sections the `_sections` trait
 * @returns {LensData[]}
 * @throws {Error} naming what is wrong when the payload is inconsistent
 */
export function decodeLenses(meta, sections) {
  if (!meta || typeof meta !== "object" || meta.lenses === undefined || meta.lenses === null) {
    return [decodePayload(meta, sections)];
  }
  const entries = meta.lenses;
  if (!Array.isArray(entries) || entries.length === 0) throw new Error("_meta.lenses must be a non-empty list");
  const shared = isStringArray(meta.shared_sections) ? meta.shared_sections : [];
  /** @type {Set<string>} */
  const names = new Set();
  // Shared sections as bytes once (base64 text in an export would be decoded once per lens).
  /** @type {Record<string, Uint8Array>} */
  const sharedBytes = {};
  for (const name of shared) if (sections && sections[name] !== undefined && sections[name] !== null) sharedBytes[name] = toBytes(sections[name]);
  return entries.map((entry, i) => {
    if (!entry || typeof entry.name !== "string" || !entry.name || typeof entry.prefix !== "string" || (i > 0) !== Boolean(entry.prefix)) {
      throw new Error(`_meta.lenses[${i}] must have a name and a prefix (empty for the first lens only)`);
    }
    if (names.has(entry.name)) throw new Error(`_meta.lenses names ${JSON.stringify(entry.name)} twice`);
    names.add(entry.name);
    /** @type {Record<string, SectionSpec>} */
    const specs = {};
    /** @type {Record<string, unknown>} */
    const own = {};
    for (const [name, spec] of Object.entries(meta.sections && typeof meta.sections === "object" ? meta.sections : {})) {
      const mine = ownSection(name, entry.prefix, shared);
      if (mine === null) continue;
      specs[mine] = spec;
      if (sections && sections[name] !== undefined) own[mine] = sharedBytes[name] ?? sections[name];
    }
    const lensMeta = {
      ...meta,
      sections: specs,
      lens_name: entry.name,
      lens_kind: entry.kind,
      lens_title: entry.title,
      metrics: Array.isArray(entry.metrics) ? entry.metrics : meta.metrics,
      top_k: entry.top_k ?? meta.top_k,
    };
    return decodePayload(lensMeta, own);
  });
}

/**
 * The name of section `name` for the lens of `prefix`, or null when it is another lens's.
 * @param {string} name
 * @param {string} prefix
 * @param {string[]} shared the per-position sections every lens reads
 * @returns {string | null}
 */
function ownSection(name, prefix, shared) {
  if (!prefix) return name.includes("/") ? null : name;
  if (name.startsWith(prefix)) return name.slice(prefix.length);
  return shared.includes(name.replace(/_high$/, "")) ? name : null;
}

/**
 * `meta.answer_sets`, checked: one answer (or null) and one token count (or null) per prompt.
 * @param {unknown} raw
 * @param {number} P prompts
 * @returns {AnswerSet[]}
 */
export function normaliseAnswerSets(raw, P) {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new Error("_meta.answer_sets must be a list");
  return raw.map((entry, s) => {
    const answers = entry && entry.answers;
    if (!entry || typeof entry.name !== "string" || !Array.isArray(answers) || answers.length !== P) {
      throw new Error(`_meta.answer_sets[${s}] must have a name and one answer (or null) per prompt (${P})`);
    }
    if (!answers.every((a) => a === null || typeof a === "string")) {
      throw new Error(`_meta.answer_sets[${s}].answers must hold strings or null`);
    }
    const counts = Array.isArray(entry.n_tokens) && entry.n_tokens.length === P ? entry.n_tokens : answers.map(() => null);
    const accepted = Array.isArray(entry.accepted) && entry.accepted.length === P ? entry.accepted : answers.map((a) => (a === null ? null : [a]));
    return {
      name: entry.name,
      answers,
      nAccepted: accepted.map((/** @type {unknown} */ forms) => (Array.isArray(forms) ? forms.length : 0)),
      nTokens: counts.map((/** @type {unknown} */ n) => (Number.isInteger(n) && /** @type {number} */ (n) > 0 ? /** @type {number} */ (n) : null)),
    };
  });
}

/**
 * Index of cell (row `layerIndex`, prompt `prompt`, position `position`) in an [L, T] section.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 */
export function cellIndex(data, prompt, layerIndex, position) {
  return layerIndex * data.T + data.offsets[prompt] + position;
}

/**
 * Index of (row `layerIndex`, prompt `prompt`, answer set `set`) in a "prompt_set" section
 * (`[L, P, S]`).
 * @param {LensData} data
 * @param {number} layerIndex
 * @param {number} prompt
 * @param {number} set
 */
export function promptSetIndex(data, layerIndex, prompt, set) {
  return (layerIndex * data.P + prompt) * data.answerSets.length + set;
}

/**
 * Index of (row `layerIndex`, prompt `prompt`) in a "last" section (`[L, P]`: at each prompt's
 * last position).
 * @param {LensData} data
 * @param {number} layerIndex
 * @param {number} prompt
 */
export function lastPositionIndex(data, layerIndex, prompt) {
  return layerIndex * data.P + prompt;
}

/**
 * Index of target `target` at a cell in a "cell_target" section (`[L, T, n_targets]`).
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 * @param {number} target
 */
export function cellTargetIndex(data, prompt, layerIndex, position, target) {
  return cellIndex(data, prompt, layerIndex, position) * data.targets.length + target;
}

/**
 * The prompt whose positions include column `col` of the flattened position axis.
 * @param {LensData} data
 * @param {number} col
 */
export function promptOfColumn(data, col) {
  const offsets = data.offsets;
  let lo = 0;
  let hi = offsets.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (offsets[mid] <= col) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Whether section `name` has no value at all for `prompt` (e.g. the prompt has no answer).
 * @param {LensData} data
 * @param {string} name
 * @param {number} prompt
 */
export function promptHasNoValue(data, name, prompt) {
  const flags = data.noValue[name];
  return Boolean(flags && flags[prompt]);
}

/**
 * A section's value at `idx` (raw × scale), or NaN when the section has not arrived.
 * @param {LensData} data
 * @param {string} name
 * @param {number} idx
 */
export function sectionValue(data, name, idx) {
  const array = data.arrays[name];
  return array ? array[idx] * (data.scales[name] ?? 1) : NaN;
}

/**
 * Whether the cell's top-1 token is the (first set's) answer: `answer_top1` is set there.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 */
export function isAnswerTop1(data, prompt, layerIndex, position) {
  const mask = data.arrays.answer_top1;
  if (!mask || promptHasNoValue(data, "answer_top1", prompt)) return false;
  const idx = cellIndex(data, prompt, layerIndex, position);
  return Boolean(mask[idx]) && !isMissing(data, idx);
}

/**
 * The largest raw value of a section (cached), or 0 when absent.
 * @param {LensData} data
 * @param {string} name
 */
export function sectionMax(data, name) {
  if (data.maxima[name] !== undefined) return data.maxima[name];
  const array = data.arrays[name];
  let max = 0;
  if (array) for (let i = 0; i < array.length; i++) if (array[i] > max) max = array[i];
  data.maxima[name] = max;
  return max;
}

/**
 * Whether the whole cell `idx` of an [L, T] section is missing (the layer's distribution was not
 * finite there).
 * @param {LensData} data
 * @param {number} idx
 */
export function isMissing(data, idx) {
  const missing = data.arrays.missing;
  return Boolean(missing && missing[idx]);
}

/**
 * Whether the model's final distribution at position `col` (on the flattened axis) was not
 * finite: every final-based value there is missing, in every row.
 * @param {LensData} data
 * @param {number} col
 */
export function isFinalMissing(data, col) {
  const missing = data.arrays.final_missing;
  return Boolean(missing && missing[col]);
}

/**
 * Whether the layer's top-1 at this cell already equals the model's final prediction.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 */
export function isSettled(data, prompt, layerIndex, position) {
  const idx = cellIndex(data, prompt, layerIndex, position);
  const col = data.offsets[prompt] + position;
  const final = data.arrays.final_tokens;
  if (!final || isMissing(data, idx) || isFinalMissing(data, col)) return false;
  return data.arrays.predicted_tokens[idx] === final[col];
}

/**
 * The lowest row from which the top-1 equals the final prediction in every row above, or -1.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} position
 */
export function settleRow(data, prompt, position) {
  let row = -1;
  for (let i = data.L - 1; i >= 0; i--) {
    if (!isSettled(data, prompt, i, position)) break;
    row = i;
  }
  return row;
}

/**
 * The row showing model layer `layer` (the `layer` trait); the nearest row when no row shows
 * exactly that layer, row 0 when `layer` is not a number. A layer with a sublayer row too (after
 * its attention) is shown by its block output, its last row.
 * @param {number[]} layers model layer of each row, ascending (a layer repeats for its sublayers)
 * @param {unknown} layer
 * @returns {number}
 */
export function rowOfModelLayer(layers, layer) {
  const value = Number(layer);
  if (layer === null || layer === undefined || !Number.isFinite(value)) return 0;
  let best = 0;
  let exact = -1;
  for (let i = 0; i < layers.length; i++) {
    if (layers[i] === value) exact = i;
    if (Math.abs(layers[i] - value) < Math.abs(layers[best] - value)) best = i;
  }
  return exact >= 0 ? exact : best;
}
