// @ts-check
/**
 * Patching a cell from the widget, as values: which cell the "Patch this cell" control patches
 * (`patchTarget`), the sources it offers (`patchSources`), what the patch shown is called
 * (`patchSummary`), and `patchModel`, the adapter that lets the lens diff's own view
 * (`../diff/view.js`'s `DiffView`) show the patch inside the lens widget: a model that serves the
 * diff's traits (`_meta`, `_sections`, `prompt`, `metric`, `selected`) from the lens widget's
 * `_patch_meta` and `_patch_sections`. No DOM.
 */

import { decodeDiff } from "../../diff/payload.js";
import { formatProb, promptName } from "../../shared/format.js";
import { kernelFreeModel } from "../../shared/local_model.js";
import { rowLabel } from "../rows.js";
import { clampIndex } from "../../shared/state.js";
import { displayToken, truncateText } from "../../shared/tokens.js";

/**
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../../shared/state.js").Selected} Selected
 * @typedef {import("../../shared/local_model.js").WidgetModel} WidgetModel
 *
 * @typedef {object} Patch The `patch` trait.
 * @property {number} prompt
 * @property {number} layer a model layer
 * @property {number} position among the prompt's real tokens
 * @property {"zero" | "mean" | number} source a prompt's index, or an ablation
 * @property {string | null} [answer]
 * @property {number | null} [answer_prob_clean]
 * @property {number | null} [answer_prob_patched]
 * @property {string | null} [target] the tracked token the change follows
 * @property {number | null} [target_prob_clean] its probability as the next token, before
 * @property {number | null} [target_prob_patched] and after
 *
 * @typedef {{ok: true, prompt: number, row: number, layer: number, position: number, label: string}
 *   | {ok: false, reason: string}} PatchTarget
 */

/**
 * The cell the "Patch this cell" control patches: the pinned cell, on a row that is a block's
 * output (a patch overwrites a block's output; a row read after a layer's attention is not one).
 * @param {LensData | null} data
 * @param {Selected | null} selected
 * @returns {PatchTarget}
 */
export function patchTarget(data, selected) {
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

/**
 * The sources offered for a patch of `prompt`: the same cell of each other prompt, zero, the
 * mean. The values are what the menu's options hold (a prompt's index as text).
 * @param {string[]} prompts the prompts' texts
 * @param {number} prompt the prompt patched
 * @returns {{value: string, label: string}[]}
 */
export function patchSources(prompts, prompt) {
  const others = prompts.flatMap((text, i) =>
    i === prompt ? [] : [{ value: String(i), label: `${promptName(i)}: ${truncateText(displayToken(text, { spaces: false }), 40)}` }],
  );
  return [...others, { value: "zero", label: "zero (ablate)" }, { value: "mean", label: "mean (ablate)" }];
}

/**
 * A menu value as the `patch` message's `source`.
 * @param {string} value
 * @returns {"zero" | "mean" | number}
 */
export function sourceOf(value) {
  return value === "zero" || value === "mean" ? value : Number(value);
}

/**
 * Whether a value is a `patch` trait naming a patch.
 * @param {unknown} value
 * @returns {value is Patch}
 */
export function isPatch(value) {
  if (!value || typeof value !== "object") return false;
  const v = /** @type {Record<string, unknown>} */ (value);
  return Number.isInteger(v.prompt) && Number.isInteger(v.layer) && Number.isInteger(v.position) && (v.source === "zero" || v.source === "mean" || Number.isInteger(v.source));
}

/**
 * What the patch shown is, in words, and the answer's and the tracked token's probabilities
 * before → after (one line, `answer`; "" without either).
 * @param {Patch} patch
 * @param {string[]} prompts the prompts' texts (for a prompt source)
 * @param {string | null} [token] the patched position's input token, named in the title
 * @returns {{title: string, answer: string}}
 */
export function patchSummary(patch, prompts, token = null) {
  const source =
    patch.source === "zero"
      ? "set to zero"
      : patch.source === "mean"
        ? "set to its mean"
        : `replaced by ${promptName(patch.source)}'s${prompts[patch.source] !== undefined ? ` (${truncateText(displayToken(prompts[patch.source], { spaces: false }), 40)})` : ""}`;
  const where = prompts.length > 1 ? `Prompt ${patch.prompt}: block` : "Block";
  const at = typeof token === "string" ? ` (${truncateText(displayToken(token), 24)})` : "";
  const title = `${where} ${patch.layer}'s output at position ${patch.position}${at} ${source}.`;
  /** @type {(label: string, token: unknown, clean: unknown, patched: unknown) => string[]} */
  const change = (label, token, clean, patched) =>
    typeof token === "string" && typeof clean === "number" && typeof patched === "number" ? [`${label} ${displayToken(token)}: ${formatProb(clean)} → ${formatProb(patched)}`] : [];
  const answer = [
    ...change("Answer", patch.answer, patch.answer_prob_clean, patch.answer_prob_patched),
    ...change("Tracked", patch.target, patch.target_prob_clean, patch.target_prob_patched),
  ].join(" · ");
  return { title, answer };
}

/**
 * A model for `DiffView` over the lens widget's patch traits. `_meta` and `_sections` are a
 * snapshot of `_patch_meta` and `_patch_sections` taken when the two decode together (Python
 * sets them one after the other: the diff never sees one patch's metadata with another's
 * sections, and keeps the last good patch meanwhile); `prompt` is 0 (a patch compares one
 * prompt); `metric` and `selected` are the diff's own, kept here (the lens widget's traits of the
 * same names are the heatmap's). It sends nothing.
 * @param {WidgetModel} model the lens widget's model
 * @returns {WidgetModel & {ready: () => boolean, dispose: () => void}}
 */
export function patchModel(model) {
  /** @type {Record<string, any>} */
  const values = { _meta: {}, _sections: {}, prompt: 0, metric: "delta_prob", selected: null };
  const local = kernelFreeModel(values);
  /** The patch traits' values last taken (the snapshot is a copy of the metadata). */
  let taken = { meta: /** @type {unknown} */ (null), sections: /** @type {unknown} */ (null) };
  const changed = () => {
    const meta = model.get("_patch_meta");
    const sections = model.get("_patch_sections");
    if (meta === taken.meta && sections === taken.sections) return;
    const empty = !meta || typeof meta !== "object" || Object.keys(meta).length === 0;
    if (!empty) {
      try {
        decodeDiff(meta, sections || {});
      } catch {
        return; // the other trait has not arrived yet: keep the last good patch
      }
    }
    taken = { meta, sections };
    // The sections first, quietly, then the metadata (a new object each time): the diff hears
    // one change, and reads both.
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
    },
  };
}
