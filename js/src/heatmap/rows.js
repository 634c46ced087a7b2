// @ts-check
/**
 * What a row of the heatmap is called. A row reads the residual stream at a layer's block output
 * ("resid_post": the layer itself, "L3"), or, with `sites=("resid_mid", "resid_post")`, also
 * after the layer's attention, before its MLP ("resid_mid": "L3 attn"). One function names rows
 * for the axis, the slider, the tooltip, the readout, the pinned chip and the chart.
 */

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {"axis" | "short" | "long"} RowLabelForm "axis": the heatmap's row labels, under the
 *   axis title "layer" ("3", "3 attn"); "short": "L3", "L3 attn"; "long": "layer 3", "layer 3
 *   after attention"
 */

/**
 * Whether row `row` reads the stream after its layer's attention (a sublayer row).
 * @param {LensData} data
 * @param {number} row
 */
export function isSublayerRow(data, row) {
  return Boolean(data.sites && data.sites[row] === "resid_mid");
}

/**
 * Whether the payload has sublayer rows at all.
 * @param {LensData} data
 */
export function hasSublayerRows(data) {
  return Boolean(data.sites && data.sites.includes("resid_mid"));
}

/**
 * A row's name.
 * @param {LensData} data
 * @param {number} row
 * @param {RowLabelForm} [form]
 * @returns {string}
 */
export function rowLabel(data, row, form = "short") {
  const layer = data.layers[row];
  const mid = isSublayerRow(data, row);
  if (form === "axis") return mid ? `${layer} attn` : String(layer);
  if (form === "long") return mid ? `layer ${layer} after attention` : `layer ${layer}`;
  return mid ? `L${layer} attn` : `L${layer}`;
}

/**
 * Which rows get a label on an axis whose rows are too close for all of them: every row when
 * `stride` is 1; else the block outputs of every `stride`-th layer (a sublayer row is labelled
 * only when every row is).
 * @param {LensData} data
 * @param {number} row
 * @param {number} stride every how many layers a label fits
 */
export function rowLabelled(data, row, stride) {
  if (stride <= 1) return true;
  return !isSublayerRow(data, row) && data.layers[row] % stride === 0;
}

/**
 * Every row's short name, bottom row first ("L0", "L0 attn", ...).
 * @param {LensData} data
 * @returns {string[]}
 */
export function rowNames(data) {
  return data.layers.map((_, row) => rowLabel(data, row));
}
