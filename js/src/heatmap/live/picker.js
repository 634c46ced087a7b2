// @ts-check
/**
 * The token picker's list: for one column (a prompt's position), every token that reaches the
 * top-k at any row, ranked by its best probability over the rows (not the last row's), each with
 * that probability and the row where it has it. A pure function of the decoded payload: the
 * top-1 (`predicted_tokens`, `max_probs`, base sections) and ranks 2..k (`topk_tokens`,
 * `topk_probs`, detail sections; without them the list holds the top-1s alone and says it is not
 * complete).
 */

import { cellIndex, isMissing } from "../payload.js";

/**
 * @typedef {import("../payload.js").LensData} LensData
 *
 * @typedef {object} PickedToken
 * @property {string} token the token's text (raw: what `track` sends)
 * @property {number} tokenIndex its index in the payload's string table
 * @property {number} prob its best probability over the rows (as the payload stores it)
 * @property {number} row the row where it has it (the first such row on a tie)
 * @property {number} layer that row's model layer
 *
 * @typedef {object} Picked
 * @property {PickedToken[]} tokens best first
 * @property {boolean} complete ranks 2..k were read too (the detail sections had arrived)
 */

/**
 * The column the picker lists: the keyboard focus's (while the heatmap has it), else the pinned
 * cell's (on the prompt shown), else the prompt's last position. The hovered cell does not count:
 * the pointer leaves the heatmap to reach the picker.
 * @param {{focus: {position: number} | null, focused: boolean, selected: {prompt: number, position: number} | null, prompt: number}} state
 * @param {number} length the prompt's real tokens
 * @returns {{position: number, source: "focus" | "pinned" | "last"}}
 */
export function pickerColumn(state, length) {
  const clamp = (/** @type {number} */ p) => Math.min(Math.max(0, length - 1), Math.max(0, p));
  if (state.focused && state.focus) return { position: clamp(state.focus.position), source: "focus" };
  const sel = state.selected;
  if (sel && sel.prompt === state.prompt) return { position: clamp(sel.position), source: "pinned" };
  return { position: Math.max(0, length - 1), source: "last" };
}

/**
 * Orders two picked tokens: the higher best probability first; on a tie the one that reaches it
 * at the earlier row, then by text (so the order never depends on the string table's order).
 * @param {PickedToken} a
 * @param {PickedToken} b
 */
export function comparePicked(a, b) {
  if (a.prob !== b.prob) return b.prob - a.prob;
  if (a.row !== b.row) return a.row - b.row;
  return a.token < b.token ? -1 : a.token > b.token ? 1 : 0;
}

/**
 * Every token that reaches the top-k at any row of a column, ranked by its best probability.
 * Cells with no value (a distribution that was not finite) add nothing.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} position among the prompt's real tokens
 * @returns {Picked}
 */
export function pickerTokens(data, prompt, position) {
  const a = data.arrays;
  const k1 = data.topK - 1;
  // The top-k is described but has not arrived (`topK` is 1 until it does).
  const complete = Boolean(a.topk_tokens && a.topk_probs) || !data.meta.sections?.topk_tokens;
  /** @type {Map<number, PickedToken>} */
  const best = new Map();
  /**
   * @param {number} tokenIndex
   * @param {number} prob
   * @param {number} row
   */
  const offer = (tokenIndex, prob, row) => {
    if (!Number.isFinite(prob) || tokenIndex >= data.tokens.length) return;
    const seen = best.get(tokenIndex);
    if (seen && seen.prob >= prob) return; // rows run upwards: a tie keeps the earlier row
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
