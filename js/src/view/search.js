// @ts-check
/**
 * Find and jump in a long trace (issue 51): where a string occurs in a prompt's input tokens and
 * in its layers' predictions (top-1 tokens), and where the answer is first top-1. Pure: a decoded
 * payload in, positions out; `overview.js` shows them (the found text only as `textContent`).
 */

import { isMissing } from "../payload.js";

/**
 * @typedef {import("../payload.js").LensData} LensData
 *
 * @typedef {object} Hit
 * @property {number} position among the prompt's real tokens
 * @property {number} layerIndex the row whose prediction matched; -1 for the input token
 * @property {number} token the matched token's index in the string table
 */

/**
 * Which entries of the string table contain `query` (case-blind), as a 0/1 mask.
 * @param {string[]} tokens
 * @param {string} query
 */
export function matchingTokens(tokens, query) {
  const needle = query.toLowerCase();
  const mask = new Uint8Array(tokens.length);
  if (!needle) return mask;
  for (let t = 0; t < tokens.length; t++) if (tokens[t].toLowerCase().includes(needle)) mask[t] = 1;
  return mask;
}

/**
 * Every place `query` occurs in prompt `prompt`: its input tokens, then each layer's top-1
 * prediction (a missing cell predicts nothing), in reading order (position, then the input before
 * the rows, rows bottom to top). Only the positions `columns` lists when some are hidden.
 * @param {LensData} data
 * @param {number} prompt
 * @param {string} query matched case-blind inside each token's text
 * @param {number[] | null} [columns] the positions shown (null: all)
 * @param {number} [limit] stop after this many hits
 * @returns {Hit[]}
 */
export function findHits(data, prompt, query, columns = null, limit = 100000) {
  if (typeof query !== "string") throw new Error(`findHits: query must be a string, got ${typeof query}`);
  const mask = matchingTokens(data.tokens, query);
  /** @type {Hit[]} */
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

/**
 * Where the (first set's) answer is first the top-1 prediction in prompt `prompt`: the earliest
 * position, at its lowest such row; null when never (or without answers).
 * @param {LensData} data
 * @param {number} prompt
 * @param {number[] | null} [columns] the positions shown (null: all)
 * @returns {{position: number, layerIndex: number} | null}
 */
export function firstAnswerTop1(data, prompt, columns = null) {
  const mask = data.arrays.answer_top1;
  const none = data.noValue.answer_top1;
  if (!mask || (none && none[prompt])) return null;
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

/**
 * The next hit's index after `current` (`step` 1) or before it (-1), wrapping around; -1 with
 * no hits.
 * @param {number} count
 * @param {number} current -1 before the first step
 * @param {1 | -1} step
 */
export function stepHit(count, current, step) {
  if (count === 0) return -1;
  if (current < 0) return step === 1 ? 0 : count - 1;
  return (current + step + count) % count;
}
