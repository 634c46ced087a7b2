// @ts-check
/**
 * Direct logit attribution, as values: which components wrote a logit (the "why" panel) and how
 * much each wrote at every position (the component view). Pure functions of the decoded payload
 * (`payload.js`: the `contributions`, `target_contributions` and `answer_token_contributions`
 * sections, float32, NaN where a component has no part: it comes after the row's point).
 *
 * What is explained (the `explain` trait): "top1" (the cell's own top-1 token), "answer" (the
 * first answer set's answer, its first token as the cell's next token; minus the foil's with
 * foils) or "target:" and a target's text (that target at the cell). A payload of a result made
 * before the step attributed the answer at every cell has it at each prompt's last position
 * only (`answer_row_contributions`): the answer is then explained there, whichever cell asks.
 *
 * Components are listed in model order ("embed", "L0.attn", "L0.mlp", ...). With heads
 * ("L0.H0", ..., "L0.attn_bias") a layer's attention is one unit, the sum of its heads and its
 * output bias, unless heads are asked for: then every head is a unit of its own.
 */

import { DIVERGING_STOPS, interpolateStops } from "../shared/colour.js";
import { niceCeil } from "../shared/format.js";
import { cellIndex, cellTargetIndex, isMissing, lastPositionIndex } from "./payload.js";
import { isSublayerRow, rowLabel } from "./rows.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 *
 * @typedef {{kind: "top1"} | {kind: "answer"} | {kind: "target", index: number}} Explain
 *
 * @typedef {object} ExplainOption One entry of the "explain" menu.
 * @property {string} value the `explain` trait's value
 * @property {string} label
 * @property {boolean} available
 * @property {string} reason why not, when not
 *
 * @typedef {object} Unit A row of the panel or of the component view: one component, or a
 *   layer's attention summed over its heads.
 * @property {string} label "embed", "L3 attn", "L3 MLP", "L3 H5", "L3 attn bias"
 * @property {string} long the label in words, for screen readers
 * @property {number[]} members the components (indices into `data.components`) it sums
 *
 * @typedef {object} Explained One explained logit.
 * @property {string} token what is explained (raw token text)
 * @property {string | null} foil the foil subtracted (the answer with foils), else null
 * @property {number} position the position it is explained at (the cell's; the answer from a
 *   payload that has it at the last position only: the last)
 * @property {ArrayLike<number>} values each component's part (NaN: none)
 * @property {number} bias the rest of the logit, which no component wrote
 * @property {number} total the logit (or logit difference), before a final soft-cap
 *
 * @typedef {object} Bar One bar of the panel.
 * @property {"unit" | "other" | "bias"} kind
 * @property {string} label
 * @property {string} long
 * @property {number} value
 * @property {number} unit the unit's index (-1 for other and bias)
 * @property {number} count components summed ("other": how many units)
 *
 * @typedef {object} WhyModel The "why" panel's content, as values.
 * @property {string} heading e.g. "Why ␣Paris?"
 * @property {string} where e.g. "L5 · position 8"
 * @property {string} caption the explained quantity in words: which logit (the cell's top-1, the
 *   answer, a target; minus a foil's), at which cell (the row, the position and its input token),
 *   read how (the lens, the final norm with its scale held at the cell's value, the
 *   unembedding), e.g. "Each bar is one component's direct share of the logit of ␣Paris, this
 *   cell's top-1 token, at layer 5's output, position 4 (input ␣is). Readout: the model's own,
 *   as every lens reads the last layer: the final norm (its scale held at this cell's value) and
 *   the unembedding. No foil: a raw logit, so a part that raises every token alike counts too."
 * @property {string} totalLabel "logit", "logit before the soft-cap", "logit difference"
 * @property {number} total
 * @property {Bar[]} bars the top units by |part| in model order, then "other" and "bias": they
 *   sum to `total`
 * @property {number} scale the largest |value| of the bars (the bars' full width)
 * @property {string} note what else a reader should know (components after the row, the
 *   soft-cap), or ""
 */

/** How many units the panel lists by name; the rest are summed as "other". */
export const WHY_TOP = 8;

const HEAD = /^L(\d+)\.H(\d+)$/;
const PART = /^L(\d+)\.(attn|mlp|attn_bias)$/;

/**
 * Whether the payload has direct logit attribution (its sections, loaded or not yet).
 * @param {LensData} data
 */
export function hasAttribution(data) {
  return data.components.length > 0 && Boolean(data.meta.sections && data.meta.sections.contributions);
}

/**
 * Whether the attribution's sections have arrived (they come with the detail sections).
 * @param {LensData} data
 */
export function attributionLoaded(data) {
  return Boolean(data.arrays.contributions);
}

/**
 * Where the payload attributes the first answer set's answer: at every cell ("cells":
 * `answer_token_contributions`), at each prompt's last position only ("last":
 * `answer_row_contributions`, from a result made before the step attributed every cell), or
 * nowhere (null).
 * @param {LensData} data
 * @returns {"cells" | "last" | null}
 */
export function answerAttribution(data) {
  const specs = data.meta.sections || {};
  if (specs.answer_token_contributions) return "cells";
  if (specs.answer_row_contributions) return "last";
  return null;
}

/**
 * Whether the components split attention into heads.
 * @param {readonly string[]} components
 */
export function hasHeads(components) {
  return components.some((label) => HEAD.test(label));
}

/**
 * A component's label as a person reads it: "L3 attn", "L3 MLP", "L3 H5", "L3 attn bias".
 * @param {string} label
 * @param {"short" | "long"} [form]
 */
export function componentName(label, form = "short") {
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

/**
 * The units of `components`: each component, except that without `heads` a layer's heads and
 * its attention bias are summed into one "L3 attn".
 * @param {readonly string[]} components
 * @param {boolean} heads split attention into heads
 * @returns {Unit[]}
 */
export function componentUnits(components, heads) {
  /** @type {Unit[]} */
  const units = [];
  /** @type {Map<string, Unit>} */
  const attention = new Map();
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

/**
 * A unit's part: the sum of its members' finite parts; NaN when none has one.
 * @param {ArrayLike<number>} values
 * @param {Unit} unit
 */
export function unitValue(values, unit) {
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

/**
 * The `explain` trait's value read: "top1", "answer" or "target:" + a target's text (an unknown
 * value, or one this payload cannot explain, reads as "top1").
 * @param {LensData} data
 * @param {unknown} value
 * @returns {Explain}
 */
export function parseExplain(data, value) {
  if (value === "answer" && data.answerSets.length && answerAttribution(data)) return { kind: "answer" };
  if (typeof value === "string" && value.startsWith("target:") && data.meta.sections?.target_contributions) {
    const index = data.targets.indexOf(value.slice("target:".length));
    if (index >= 0) return { kind: "target", index };
  }
  return { kind: "top1" };
}

/**
 * The `explain` trait's value of an `Explain`.
 * @param {LensData} data
 * @param {Explain} explain
 */
export function explainValue(data, explain) {
  if (explain.kind === "target") return `target:${data.targets[explain.index]}`;
  return explain.kind;
}

/**
 * The "explain" menu: the top-1, the answer, each target (those the payload cannot explain
 * disabled, saying why).
 * @param {LensData} data
 * @param {(token: string) => string} show a token as the page shows it
 * @returns {ExplainOption[]}
 */
export function explainOptions(data, show) {
  const specs = data.meta.sections || {};
  const set = data.answerSets[0];
  const foiled = data.foils && data.foils.some((f) => f !== null);
  const where = answerAttribution(data);
  /** @type {ExplainOption[]} */
  const options = [{ value: "top1", label: "the cell's top-1 token", available: true, reason: "" }];
  options.push({
    value: "answer",
    label: set ? `the answer${foiled ? " against the foil" : ""}${where === "last" ? " (last position)" : ""}` : "the answer",
    available: Boolean(set && where),
    reason: set ? "this result has no attribution of the answer" : "no answers were given",
  });
  data.targets.forEach((target) => {
    options.push({ value: `target:${target}`, label: `target ${show(target)}`, available: Boolean(specs.target_contributions), reason: "this result has no attribution of its targets" });
  });
  return options;
}

/**
 * The logit `explain` asks for at a cell, its parts and its total; null where there is none
 * (a cell without a value, a prompt without an answer, sections not loaded).
 * @param {LensData} data
 * @param {Explain} explain
 * @param {number} prompt
 * @param {number} row
 * @param {number} position
 * @returns {Explained | null}
 */
export function explainedLogit(data, explain, prompt, row, position) {
  const a = data.arrays;
  const C = data.components.length;
  if (!C) return null;
  /** @type {(array: ArrayLike<number>, at: number) => ArrayLike<number>} */
  const parts = (array, at) => /** @type {Float32Array} */ (array).subarray(at * C, at * C + C);
  const set = data.answerSets[0];
  const answer = explain.kind === "answer" && set ? set.answers[prompt] : null;
  const foil = data.foils ? data.foils[prompt] : null;
  if (explain.kind === "answer" && answerAttribution(data) === "last") {
    // A payload with the answer at each prompt's last position only: explained there.
    const values = a.answer_row_contributions;
    const bias = a.answer_row_bias;
    if (answer === null || !values || !bias) return null;
    const at = lastPositionIndex(data, row, prompt);
    return withTotal({ token: answer, foil, position: data.lengths[prompt] - 1, values: parts(values, at), bias: bias[at], total: NaN });
  }
  const idx = cellIndex(data, prompt, row, position);
  if (isMissing(data, idx)) return null;
  if (explain.kind === "answer") {
    const values = a.answer_token_contributions;
    const bias = a.answer_token_bias;
    if (answer === null || !values || !bias) return null;
    return withTotal({ token: answer, foil, position, values: parts(values, idx), bias: bias[idx], total: NaN });
  }
  if (explain.kind === "target") {
    const values = a.target_contributions;
    const bias = a.target_bias;
    if (!values || !bias) return null;
    const at = cellTargetIndex(data, prompt, row, position, explain.index);
    return withTotal({ token: data.targets[explain.index], foil: null, position, values: parts(values, at), bias: bias[at], total: NaN });
  }
  const values = a.contributions;
  const bias = a.contribution_bias;
  if (!values || !bias) return null;
  const total = a.top1_logits ? a.top1_logits[idx] : NaN;
  return withTotal({ token: data.tokens[a.predicted_tokens[idx]] ?? "", foil: null, position, values: parts(values, idx), bias: bias[idx], total });
}

/**
 * Why `explainedLogit` has nothing at a cell, as a clause ("this prompt has no answer").
 * @param {LensData} data
 * @param {Explain} explain
 * @param {number} prompt
 * @param {number} position
 */
export function nothingExplained(data, explain, prompt, position) {
  if (explain.kind === "answer") {
    const set = data.answerSets[0];
    if (!set || set.answers[prompt] === null) return "this prompt has no answer";
    if (data.foils && data.foils[prompt] === null) return "this prompt has no foil, where other prompts have one";
    if (answerAttribution(data) === "last" && position !== data.lengths[prompt] - 1) return "the answer is explained at the prompt's last position";
  }
  return "this cell has no value (not finite)";
}

/**
 * `explained` with its total: the one sent (the top-1's), else its parts' sum and the bias (the
 * contract's invariant, `nansum(contributions) + bias == logit`). Null when nothing is finite.
 * @param {Explained} explained
 * @returns {Explained | null}
 */
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

/**
 * A logit (or a part of one) as the panel prints it: a sign, two decimals ("+1.23", "−0.40").
 * @param {number} value
 */
export function formatLogit(value) {
  if (!Number.isFinite(value)) return "–";
  const text = Math.abs(value).toFixed(2);
  if (Number(text) === 0) return "0.00";
  return `${value < 0 ? "−" : "+"}${text}`;
}

/**
 * The "why" panel's content for one cell: the `top` units with the largest |part|, in model
 * order, then "other" (the rest's sum) and "bias", which together sum to the logit.
 * @param {LensData} data
 * @param {{explain: Explain, prompt: number, row: number, position: number, heads: boolean,
 *   top?: number, show: (token: string) => string}} options `show`: a token as the page shows it
 * @returns {WhyModel | null} null when the cell has nothing to explain
 */
export function whyModel(data, { explain, prompt, row, position, heads, top = WHY_TOP, show }) {
  const explained = explainedLogit(data, explain, prompt, row, position);
  if (!explained) return null;
  const units = componentUnits(data.components, heads);
  const parts = units.map((unit) => unitValue(explained.values, unit));
  const held = parts.map((_, i) => i).filter((i) => Number.isFinite(parts[i]));
  const shown = new Set([...held].sort((i, j) => Math.abs(parts[j]) - Math.abs(parts[i]) || i - j).slice(0, top));
  /** @type {Bar[]} */
  const bars = held
    .filter((i) => shown.has(i))
    .map((i) => ({ kind: /** @type {const} */ ("unit"), label: units[i].label, long: units[i].long, value: parts[i], unit: i, count: units[i].members.length }));
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
    note: notes.join(" "),
  };
}

/**
 * What the panel's number is, in words: which logit (of which token, minus which foil), at which
 * cell (the row, the position and the input token there), read through which lens and readout.
 * In Python the same numbers are `result.contributions` (the top-1), `answer_token_contributions`
 * (the answer) or `target_contributions` at that cell; at the last block's output and the last
 * position, the answer's are `answer_contributions` (what notebook 07's tables show).
 * @param {LensData} data
 * @param {Explain} explain
 * @param {Explained} explained
 * @param {number} prompt
 * @param {number} row
 * @param {(token: string) => string} show
 */
export function whyCaption(data, explain, explained, prompt, row, show) {
  const token = show(explained.token);
  const set = data.answerSets[0];
  const several = set && (set.nTokens[prompt] ?? 1) > 1;
  const which =
    explain.kind === "answer" ? `the answer ${token}${several ? " (its first token)" : ""}` : explain.kind === "target" ? `the tracked token ${token}` : `${token}, this cell's top-1 token`;
  const logit = explained.foil !== null ? `the logit of ${which} minus that of the foil ${show(explained.foil)}` : `the logit of ${which}`;
  const layer = data.layers[row];
  const mid = isSublayerRow(data, row);
  const cell = mid ? `layer ${layer} after its attention` : `layer ${layer}'s output`;
  const column = data.offsets[prompt] + explained.position;
  const ids = data.arrays.input_ids;
  const input = ids && column < ids.length ? data.tokens[ids[column]] : undefined;
  const at = `${cell}, position ${explained.position}${input !== undefined ? ` (input ${show(input)})` : ""}`;
  const norm = "the final norm (its scale held at this cell's value) and the unembedding";
  // Every lens reads the model's last block output as the model does (Lens.read in Python).
  const own = !mid && data.nModelLayers !== null && layer === data.nModelLayers - 1;
  const kind = data.lensKind || "logit";
  const lens = data.lensTitle || `${kind.charAt(0).toUpperCase()}${kind.slice(1)} lens`;
  const readout = own ? `the model's own, as every lens reads the last layer: ${norm}` : kind === "logit" ? `${lens}: ${norm}` : `${lens}, then ${norm}`;
  const foil = explained.foil !== null ? "Each part is the answer's share minus the foil's." : "No foil: a raw logit, so a part that raises every token alike counts too.";
  return `Each bar is one component's direct share of ${logit}, at ${at}. Readout: ${readout}. ${foil}`;
}

/**
 * @typedef {object} ComponentGrid The component view's values for one prompt, read at one row:
 *   `values[u * n + j]` is unit `u`'s part at position `j` (NaN: none).
 * @property {Unit[]} units
 * @property {number} n positions
 * @property {Float64Array} values
 * @property {number} max the colour scale's half-width (a round number above the largest |part|)
 * @property {string[]} tokens what is explained at each position (raw text; "" where nothing)
 */

/**
 * Every unit's part at every position of a prompt, read through row `row`'s lens: of the
 * position's top-1 token, a target, or the answer (at every position; at the last only where the
 * payload has it there only).
 * @param {LensData} data
 * @param {{explain: Explain, prompt: number, row: number, heads: boolean}} options
 * @returns {ComponentGrid}
 */
export function componentGrid(data, { explain, prompt, row, heads }) {
  const units = componentUnits(data.components, heads);
  const n = data.lengths[prompt];
  const values = new Float64Array(units.length * n).fill(NaN);
  /** @type {string[]} */
  const tokens = new Array(n).fill("");
  let top = 0;
  const lastOnly = explain.kind === "answer" && answerAttribution(data) === "last";
  for (let j = 0; j < n; j++) {
    if (lastOnly && j !== n - 1) continue;
    const explained = explainedLogit(data, explain, prompt, row, j);
    if (!explained) continue;
    tokens[j] = explained.token;
    units.forEach((unit, u) => {
      const v = unitValue(explained.values, unit);
      values[u * n + j] = v;
      if (Number.isFinite(v)) top = Math.max(top, Math.abs(v));
    });
  }
  return { units, n, values, max: top > 0 ? niceCeil(top) : 1, tokens };
}

/**
 * The colour of a part on the diverging scale of [-max, max] (0 is the near-white middle).
 * @param {number} value
 * @param {number} max
 * @returns {[number, number, number]}
 */
export function partColour(value, max) {
  const m = max > 0 ? max : 1;
  return interpolateStops(DIVERGING_STOPS, 0.5 + 0.5 * Math.max(-1, Math.min(1, value / m)));
}

/**
 * The component view's colour image: one pixel per unit and position, the last unit (the deepest
 * component) in the top row, as the heatmap puts the final layer on top; a part that is not
 * finite stays transparent (the hatch shows through).
 * @param {ComponentGrid} grid
 * @param {number[] | null} [columns] the positions shown (hidden template tokens left out)
 * @returns {{width: number, height: number, data: Uint8ClampedArray<ArrayBuffer>}}
 */
export function componentImage(grid, columns = null) {
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
