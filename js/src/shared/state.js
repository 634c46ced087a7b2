// @ts-check
/** Pure helpers of the view's state: indices, keyboard focus, the pinned cell. */

/**
 * @typedef {import("./layout.js").Cell} Cell
 * @typedef {{prompt: number, layer_index: number, position: number, [key: string]: unknown}} Selected
 *   The `selected` trait: the front end sends prompt, layer_index (a row) and position; Python
 *   adds the rest (`layer` is the model layer).
 */

/**
 * The cell a key press moves the focus to, or null for keys that do not move it.
 * @param {Cell} focus
 * @param {string} key
 * @param {number} nLayers
 * @param {number} nPositions
 * @returns {Cell | null}
 */
export function moveFocus(focus, key, nLayers, nPositions) {
  let { layerIndex, position } = focus;
  switch (key) {
    case "ArrowUp": layerIndex += 1; break; // up the screen = deeper layer
    case "ArrowDown": layerIndex -= 1; break;
    case "ArrowLeft": position -= 1; break;
    case "ArrowRight": position += 1; break;
    case "Home": position = 0; break;
    case "End": position = nPositions - 1; break;
    case "PageUp": layerIndex = nLayers - 1; break;
    case "PageDown": layerIndex = 0; break;
    default: return null;
  }
  return {
    layerIndex: Math.min(nLayers - 1, Math.max(0, layerIndex)),
    position: Math.min(nPositions - 1, Math.max(0, position)),
  };
}

/**
 * Clamps an index received from elsewhere into [0, n).
 * @param {unknown} value
 * @param {number} n
 */
export function clampIndex(value, n) {
  const v = Number.isInteger(value) ? /** @type {number} */ (value) : Math.round(Number(value)) || 0;
  return Math.min(Math.max(0, n - 1), Math.max(0, v));
}

/**
 * Whether `selected` (the `selected` trait) names this cell.
 * @param {Selected | null | undefined} selected
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 */
export function isSelected(selected, prompt, layerIndex, position) {
  return Boolean(
    selected && selected.prompt === prompt && selected.layer_index === layerIndex && selected.position === position,
  );
}

/**
 * The `selected` value after clicking a cell: the cell, or null when it was already pinned.
 * @param {Selected | null | undefined} selected
 * @param {number} prompt
 * @param {number} layerIndex
 * @param {number} position
 * @returns {Selected | null}
 */
export function toggleSelection(selected, prompt, layerIndex, position) {
  if (isSelected(selected, prompt, layerIndex, position)) return null;
  return { prompt, layer_index: layerIndex, position };
}
