// @ts-check
/** What the diff view says about one cell: the tooltip's content and the screen-reader line. */

import { formatBits, formatChange, formatProb, formatUnit } from "../shared/format.js";
import { displayToken } from "../shared/tokens.js";
import { changeAt, metricValueAt } from "./colour.js";
import { diffIndex, diffMetric, tokenAt } from "./payload.js";

/**
 * @typedef {import("./payload.js").Diff} Diff
 *
 * @typedef {{token: string, prob: number}} Candidate
 * @typedef {{label: string, rows: {token: string, prob: string}[]}} DiffColumn one side's top-k
 *   in the tooltip, its probabilities as text
 *
 * @typedef {object} DiffCell
 * @property {number} prompt
 * @property {number} layerIndex
 * @property {number} position
 * @property {number} layerA a's model layer
 * @property {number} layerB b's model layer paired with it
 * @property {boolean} aligned the cell has a partner and both hold a value
 * @property {string} inputA a's token at this position (display text)
 * @property {string | null} inputB the partner position's token in b (display text), or null
 * @property {number} positionB the partner's position among b's tokens, or -1
 * @property {string | null} token the chosen token (display text)
 * @property {number | null} delta b − a in the chosen token's probability
 * @property {number | null} probA
 * @property {number | null} probB
 * @property {number | null} kl KL(a ‖ b) in bits
 * @property {number} klStep the step KL is stored in (its largest value / 65535), which the
 *   printed digits keep to
 * @property {boolean | null} differs whether the top-1 tokens differ
 * @property {Candidate[]} topA a's top-k (display text)
 * @property {Candidate[]} topB b's top-k at the partner cell (empty when none)
 * @property {Record<string, CellChange>} changes each heatmap metric's change known at this cell,
 *   by the diff metric's name (every change metric of `meta.metrics` but the chosen token's,
 *   which is `delta`, `probA`, `probB`)
 *
 * @typedef {object} CellChange One metric's values at a cell: a's, b's and the change, in its unit.
 * @property {string} unit
 * @property {string} label the metric's short name
 * @property {number} a
 * @property {number} b
 * @property {number} delta
 * @property {{a: number, b: number, delta: number}} steps the quanta they were stored in
 */

/**
 * Everything about one cell, from the decoded payload.
 * @param {Diff} diff
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 * @returns {DiffCell}
 */
export function diffCell(diff, prompt, layerIndex, position) {
  const a = diff.arrays;
  const t = diff.offsets[prompt] + position;
  const index = diffIndex(diff, layerIndex, prompt, position);
  const aligned = Boolean(a.aligned[index]);
  /** @param {"a" | "b"} side */
  const topk = (side) => {
    /** @type {Candidate[]} */
    const out = [];
    const probs = a[`topk_probs_${side}`];
    const scale = diff.scales[`topk_probs_${side}`] ?? 1;
    for (let r = 0; r < diff.K; r++) {
      const text = tokenAt(diff, `topk_tokens_${side}`, index * diff.K + r);
      if (text !== null) out.push({ token: displayToken(text), prob: probs[index * diff.K + r] * scale });
    }
    return out;
  };
  /** @param {string} name a [T] token section */
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
    changes: cellChanges(diff, index),
  };
}

/**
 * The heatmap metrics' changes known at a cell (`DiffCell.changes`).
 * @param {Diff} diff
 * @param {number} index
 * @returns {Record<string, CellChange>}
 */
function cellChanges(diff, index) {
  /** @type {Record<string, CellChange>} */
  const out = {};
  for (const spec of diff.metrics) {
    if (!spec.change || spec.unit === "delta") continue;
    const values = changeAt(diff, spec.name, index);
    if (values) out[spec.name] = { unit: spec.unit, label: spec.short || spec.name, ...values };
  }
  return out;
}

/**
 * One change as the tooltip's line: "Δ entropy: 2.31 bits → 1.80 bits (−0.51 bits)".
 * @param {CellChange} change
 */
export function changeLine(change) {
  const side = (/** @type {number} */ value, /** @type {number} */ step) => formatUnit(change.unit, value, false, step);
  const label = change.label.startsWith("Δ") ? change.label : `Δ ${change.label}`;
  return `${label}: ${side(change.a, change.steps.a)} → ${side(change.b, change.steps.b)} (${formatChange(change.unit, change.delta, false, change.steps.delta)})`;
}

/**
 * A change in probability as signed percentage points: "+12.3 pts", "−0.4 pts", "0 pts".
 * @param {number | null} delta
 * @param {boolean} [short] the cell label form: "+12", "−0.4", "0"
 * @returns {string}
 */
export function formatDelta(delta, short = false) {
  return formatChange("probability", delta, short);
}

/**
 * The text drawn inside a cell for a metric ("" for none).
 * @param {DiffCell} cell
 * @param {string} metric
 * @returns {string}
 */
export function cellLabel(cell, metric) {
  if (!cell.aligned) return "";
  if (metric === "delta_prob") return cell.delta === null ? "" : formatDelta(cell.delta, true);
  if (metric === "kl") return cell.kl === null ? "" : formatBits(cell.kl, true, cell.klStep);
  if (metric === "top1_differs") return cell.differs && cell.topB.length ? cell.topB[0].token : "";
  const change = cell.changes[metric];
  return change ? formatChange(change.unit, change.delta, true, change.steps.delta) : "";
}

/**
 * The tooltip's content: a title, the metric lines (the chosen token's change, KL, top-1 and,
 * when the colour is a heatmap metric's change, a's value → b's and the change in its unit), and
 * both sides' top-k.
 * @param {Diff} diff
 * @param {DiffCell} cell
 * @param {string} [metric] the colouring shown
 * @returns {{title: string, lines: string[], columns: [DiffColumn, DiffColumn]}}
 */
export function tooltipContent(diff, cell, metric = "") {
  const layerB = diff.depthA === diff.depthB ? `layer ${cell.layerB}` : `layer ${cell.layerB} of ${diff.depthB}`;
  const title = `Layer ${cell.layerA} ↔ ${layerB} · position ${cell.position} ${cell.inputA}` +
    (cell.inputB !== null && cell.inputB !== cell.inputA ? ` (b: ${cell.inputB})` : "");
  /** @type {string[]} */
  const lines = [];
  if (!cell.aligned) {
    lines.push(diff.bHasRow[cell.layerIndex] ? (cell.positionB < 0 ? "No partner position in b: not compared." : "No value in one of the cells: not compared.") : `b has no layer ${cell.layerB}: not compared.`);
  } else {
    if (cell.token !== null) {
      lines.push(cell.delta === null
        ? `p(${cell.token}): unknown in one lens (not in its top-k)`
        : `Δ p(${cell.token}) = ${formatDelta(cell.delta)} (${formatProb(cell.probA ?? NaN, diff.scales.token_prob_a)} → ${formatProb(cell.probB ?? NaN, diff.scales.token_prob_b)})`);
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
      { label: `b: ${diff.labels[1]}`, rows: cell.topB.map((c) => ({ token: c.token, prob: formatProb(c.prob, diff.scales.topk_probs_b) })) },
    ],
  };
}

/**
 * One line for screen readers when the focus moves.
 * @param {Diff} diff
 * @param {DiffCell} cell
 * @param {boolean} pinned
 * @param {string} [metric] the colouring shown
 * @returns {string}
 */
export function readoutLine(diff, cell, pinned, metric = "") {
  const content = tooltipContent(diff, cell, metric);
  return `${content.title}. ${content.lines.join(". ")}${pinned ? " (pinned)" : ""}`;
}

/**
 * The header's sentence on how the two sides are paired (layers by relative depth when the
 * models' depths differ).
 * @param {Diff} diff
 * @returns {string}
 */
export function alignmentHeadline(diff) {
  const depth = diff.depthA === diff.depthB
    ? ""
    : `Layers aligned by relative depth: a has ${diff.depthA} layers, b has ${diff.depthB}. `;
  return `${depth}${diff.meta.alignment_note ?? ""}`;
}
