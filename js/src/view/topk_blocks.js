// @ts-check
/**
 * A long payload's top-k (ranks 2..k) by blocks of positions (Python's
 * murano_widgets/payload/long.py): `meta.topk_window` positions a block, asked of Python when a
 * cell of the block is shown (`{action: "topk_window", start}`), kept per lens for as long as
 * the payload is the same. Each block brings its own strings, so the synced table never grows
 * with cells x k. An export holds the whole top-k instead (no block is asked for).
 */

import { LENS_DTYPES } from "../payload.js";
import { readSection } from "../shared/codec.js";

/** @typedef {import("./view.js").LensView} LensView */
/** @typedef {import("../payload.js").LensData} LensData */
/** @typedef {import("../payload.js").TopkBlock} TopkBlock */

/**
 * Gives each lens of a new payload its blocks: those already here while the payload (`_meta`)
 * is the same, none for a new one.
 * @param {LensView} view
 * @param {LensData[]} lenses
 */
export function attachTopkBlocks(view, lenses) {
  const meta = view.model.get("_meta");
  if (!view.topkStore || view.topkStore.meta !== meta) view.topkStore = { meta, byLens: new Map(), asked: new Set() };
  for (const data of lenses) {
    if (!data.topkWindow) continue;
    let blocks = view.topkStore.byLens.get(data.lensName);
    if (!blocks) view.topkStore.byLens.set(data.lensName, (blocks = new Map()));
    data.topkBlocks = blocks;
  }
}

/**
 * Asks Python once for the block holding column `col` (the flattened position), if the lens
 * comes by blocks and does not hold it yet.
 * @param {LensView} view
 * @param {LensData} data
 * @param {number} col
 */
export function requestTopkBlock(view, data, col) {
  const store = view.topkStore;
  if (!data.topkWindow || !data.topkBlocks || !store || typeof view.model.send !== "function") return;
  const start = col - (col % data.topkWindow);
  if (data.topkBlocks.has(start) || store.asked.has(start)) return;
  store.asked.add(start);
  view.model.send({ action: "topk_window", start });
}

/**
 * A `topk_window` reply: its block goes to every lens it holds the top-k of, and the tooltip is
 * drawn again. Other messages are not this module's (false).
 * @param {LensView} view
 * @param {unknown} msg
 * @param {unknown[]} [buffers]
 * @returns {boolean}
 */
export function receiveTopkBlock(view, msg, buffers = []) {
  if (!msg || typeof msg !== "object") return false;
  const reply = /** @type {Record<string, any>} */ (msg);
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
    const names = /** @type {string[]} */ (reply.names);
    const at = (/** @type {string} */ name) => names.indexOf(`${lens.prefix}${name}`);
    const t = at("topk_tokens");
    const p = at("topk_probs");
    if (!blocks || t < 0 || p < 0) continue;
    const read = (/** @type {number} */ i) => {
      const spec = reply.sections[names[i]];
      const n = spec.shape.reduce((/** @type {number} */ a, /** @type {number} */ b) => a * b, 1);
      return /** @type {import("../payload.js").RawArray} */ (readSection(buffers[i], spec.dtype, n, names[i], LENS_DTYPES));
    };
    blocks.set(reply.start, {
      start: reply.start,
      width: reply.stop - reply.start,
      strings: reply.strings,
      tokens: read(t),
      probs: read(p),
      scale: reply.sections[names[p]].scale,
    });
  }
  view.updateTooltip();
  return true;
}
