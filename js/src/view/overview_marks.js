// @ts-check
/**
 * Where the long-trace overview puts its marks (issue 51): the start of each run of columns where
 * the answer is the top-1 prediction in some layer (a missing cell counts for none), where the tracked token shown reaches a
 * probability in some layer, where each chat role's run of tokens begins, and where generated
 * text begins. Pure: a decoded payload in, columns out (`overview.js` colours and draws them).
 */

import { promptHasNoValue } from "../payload.js";
import { generationColumn } from "../token_marks.js";
import { runStarts } from "./overview_pool.js";

/**
 * @typedef {import("../payload.js").LensData} LensData
 *
 * @typedef {object} TraceMark
 * @property {number} column the shown column (the position, unless template tokens are hidden)
 * @property {"answer" | "target" | "role" | "generated"} kind
 * @property {number} role for a role mark, its code (an index into `meta.roles`); else -1
 */

/**
 * The overview's marks of prompt `prompt`, kind by kind, each in column order.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number[] | null} columns the positions shown (null: all)
 * @param {number} target the tracked token shown (its index in `data.targets`), or -1
 * @param {number} threshold a tracked token is marked where its probability reaches this
 * @returns {TraceMark[]}
 */
export function traceMarks(data, prompt, columns, target, threshold) {
  const offset = data.offsets[prompt];
  const n = columns ? columns.length : data.lengths[prompt];
  const at = (/** @type {number} */ j) => offset + (columns ? columns[j] : j);
  /** @type {TraceMark[]} */
  const marks = [];
  const missing = data.arrays.missing;
  /** @param {ArrayLike<number>} values @param {number} stride @param {number} k @param {number} min */
  const anyLayer = (values, stride, k, min) => (/** @type {number} */ j) => {
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
    // The section holds raw integers: the threshold in its units.
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
