// @ts-check
/**
 * Cell details as values, the tooltip's content as plain strings, and the screen-reader readout.
 * Pure functions: the DOM side (`view/tooltip.js`) only lays the strings out.
 */

import { formatProb, formatRank } from "./format.js";
import { formatMetric, metricValue, shortLabel } from "./metrics.js";
import { cellIndex, isAnswerTop1, isFinalMissing, isMissing, promptSetIndex, sectionValue } from "./payload.js";
import { displayToken } from "./tokens.js";

/**
 * @typedef {import("./payload.js").Lens} Lens
 * @typedef {import("./payload.js").MetricSpec} MetricSpec
 *
 * @typedef {object} CellDetails Everything known about one cell, as values (token strings raw,
 *   numbers unformatted; null where there is no value).
 * @property {number} prompt
 * @property {number} layerIndex the row
 * @property {number} layer the model layer
 * @property {boolean} isLastRow
 * @property {boolean} isLastPosition the prompt's last position (where the answer follows)
 * @property {number} position among the prompt's real tokens
 * @property {string} input
 * @property {string | null} finalToken the model's own prediction (null: the result has none)
 * @property {boolean} finalMissing the final distribution here was not finite
 * @property {boolean} missing the layer's distribution here was not finite
 * @property {boolean} settled top-1 = the final prediction
 * @property {{token: string, prob: number}[]} top the top tokens, top-1 first
 * @property {{spec: MetricSpec, value: number | null}[]} metrics every offered metric whose
 *   section has arrived (value null when missing)
 * @property {number | null} finalRank rank of the final prediction (0 = top-1), when a rank metric
 *   is loaded
 * @property {boolean} detailsLoaded every detail section has arrived
 * @property {boolean} answerTop1 the layer's top-1 is the (first set's) answer
 * @property {CellAnswer | null} answer the first answer set's answer here (null: none)
 *
 * @typedef {object} CellAnswer The answer at one cell: at the prompt's last position the whole
 *   answer (teacher-forced), elsewhere its first token as the next token.
 * @property {string} text the answer (display form, raw)
 * @property {number | null} prob null while its section has not arrived
 * @property {number | null} rank 0 = top-1
 * @property {boolean} whole `prob` is the whole answer's (teacher-forced, forms summed) and
 *   differs from its first token's
 */

/**
 * The first answer set's answer at a cell, or null when the prompt has none.
 * @param {Lens} lens
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 * @returns {CellAnswer | null}
 */
export function cellAnswer(lens, prompt, layerIndex, position) {
  const set = lens.answerSets[0];
  const text = set ? set.answers[prompt] : null;
  if (!set || text === null) return null;
  const idx = cellIndex(lens, prompt, layerIndex, position);
  if (isMissing(lens, idx)) return { text, prob: null, rank: null, whole: false };
  const last = position === lens.lengths[prompt] - 1;
  const at = last ? promptSetIndex(lens, layerIndex, prompt, 0) : idx;
  const prob = sectionValue(lens, last ? "answer_probs" : "answer_token_probs", at);
  const rank = sectionValue(lens, last ? "answer_ranks" : "answer_token_ranks", at);
  // At the last position the probability is the whole answer's; it differs from the first
  // token's (the "answer" metric's row) for a multi-token answer or several accepted forms.
  const whole = last && ((set.nTokens[prompt] ?? 1) > 1 || set.nAccepted[prompt] > 1);
  return { text, prob: Number.isFinite(prob) ? prob : null, rank: Number.isFinite(rank) ? rank : null, whole };
}

/**
 * @param {Lens} lens
 * @param {number} index
 */
function tokenAt(lens, index) {
  return lens.tokens[index] ?? "";
}

/**
 * Everything known about one cell.
 * @param {Lens} lens
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 * @returns {CellDetails}
 */
export function cellDetails(lens, prompt, layerIndex, position) {
  const idx = cellIndex(lens, prompt, layerIndex, position);
  const col = lens.offsets[prompt] + position;
  const a = lens.arrays;
  const missing = isMissing(lens, idx);
  const finalMissing = isFinalMissing(lens, col);
  /** @type {{token: string, prob: number}[]} */
  const top = [];
  if (!missing) {
    const probs = a.max_probs;
    top.push({ token: tokenAt(lens, a.predicted_tokens[idx]), prob: probs ? probs[idx] * (lens.scales.max_probs ?? 1) : NaN });
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
  const metrics = [];
  let finalRank = null;
  for (const spec of lens.metrics) {
    if (!spec.available || !a[spec.field]) continue;
    const v = metricValue(lens, spec.name, idx);
    const value = Number.isFinite(v) ? v : null;
    metrics.push({ spec, value });
    if (finalRank === null && spec.unit === "rank" && spec.finalBased) finalRank = value;
  }
  const finalTokens = a.final_tokens;
  return {
    prompt,
    layerIndex,
    layer: lens.layers[layerIndex],
    isLastRow: layerIndex === lens.L - 1,
    isLastPosition: position === lens.lengths[prompt] - 1,
    position,
    input: tokenAt(lens, a.input_ids[col]),
    finalToken: finalTokens ? tokenAt(lens, finalTokens[col]) : null,
    finalMissing,
    missing,
    settled: Boolean(finalTokens) && !missing && !finalMissing && a.predicted_tokens[idx] === finalTokens[col],
    top,
    metrics,
    finalRank,
    detailsLoaded: lens.detailSections.every((name) => !lens.meta.sections?.[name] || Boolean(a[name])),
    answerTop1: isAnswerTop1(lens, prompt, layerIndex, position),
    answer: cellAnswer(lens, prompt, layerIndex, position),
  };
}

/** What a missing value reads as. */
export const NO_VALUE = "no value (non-finite)";

/**
 * @typedef {object} TooltipContent
 * @property {string} title
 * @property {string} badge
 * @property {{label: string, value: string, token?: boolean, title?: string}[]} rows
 * @property {{rank: number, text: string, prob: string, width: number}[]} top
 * @property {string} note
 */

/**
 * The tooltip as plain strings: a title, the top-k list (rank 0 = top-1) with bar widths, then
 * label/value rows (the input, the final prediction, one per metric of the registry).
 * @param {CellDetails} details
 * @returns {TooltipContent}
 */
export function tooltipModel(details) {
  const rows = [];
  rows.push({ label: "input", value: displayToken(details.input), token: true });
  if (details.finalToken !== null) {
    rows.push(details.finalMissing
      ? { label: "final prediction", value: NO_VALUE }
      : { label: "final prediction", value: displayToken(details.finalToken), token: true });
  }
  if (details.answer && !details.missing) {
    const { text, prob, rank, whole } = details.answer;
    rows.push({ label: "answer", value: displayToken(text), token: true, title: "The prompt's answer (its first accepted form)" });
    if (rank !== null) rows.push({ label: "answer rank", value: formatRank(rank), title: "Where the answer's first token stands in this layer's ranking (0 = top-1)" });
    if (whole && prob !== null) {
      rows.push({ label: "whole answer", value: formatProb(prob), title: "The probability of the whole answer after the prompt: all its tokens, teacher-forced, its accepted forms summed" });
    }
  }
  if (!details.missing) {
    for (const { spec, value } of details.metrics) {
      rows.push({
        label: shortLabel(spec.label),
        value: value === null ? "–" : formatMetric(spec, value),
        title: spec.description || spec.label,
      });
    }
  }
  let note = "";
  if (details.missing) note = `No value (non-finite): this layer's output was not finite here.`;
  else if (details.finalMissing && details.finalToken !== null) note = "The model's final distribution was not finite here: no value for what is measured against it.";
  else if (!details.detailsLoaded) note = "Loading details…";
  return {
    title: `Layer ${details.layer} · position ${details.position}`,
    badge: [details.settled ? "= final" : "", details.answerTop1 ? "= answer" : ""].filter(Boolean).join(" · "),
    rows,
    top: details.top.map((entry, rank) => ({
      rank,
      text: displayToken(entry.token),
      prob: formatProb(entry.prob),
      width: Number.isFinite(entry.prob) ? Math.max(0, Math.min(1, entry.prob)) : 0,
    })),
    note,
  };
}

/**
 * One sentence about a cell for the aria-live readout.
 * @param {CellDetails} details
 * @param {{pinned?: boolean}} [options]
 */
export function readoutText(details, { pinned = false } = {}) {
  const parts = [`Layer ${details.layer}, position ${details.position}, input ${displayToken(details.input)}`];
  if (details.missing) parts.push(NO_VALUE);
  else {
    const top = details.top[0];
    parts.push(`top-1 ${displayToken(top.token)} ${formatProb(top.prob)}`);
    if (details.answerTop1) parts.push("the answer");
    if (details.settled) parts.push("equals the final prediction");
    else if (details.finalToken !== null && details.finalMissing) parts.push(`final prediction: ${NO_VALUE}`);
    else if (details.finalToken !== null) {
      const rank = details.finalRank !== null ? ` at ${formatRank(details.finalRank)}` : "";
      parts.push(`final prediction ${displayToken(details.finalToken)}${rank}`);
    }
  }
  if (pinned) parts.push("pinned");
  return `${parts.join("; ")}.`;
}
