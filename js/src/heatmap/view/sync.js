// @ts-check
/**
 * How the view tells Python: `send` sets a trait the user chose, `syncers` throttle a slider's
 * changes while it is dragged.
 */

import { throttle } from "../throttle.js";

/** @typedef {import("./view.js").LensView} LensView */

/** Sync to Python at most this often while a slider is dragged. */
export const SYNC_INTERVAL_MS = 100;

/**
 * Sets a trait (unless it holds the value already) and saves it: what the user chose, for Python.
 * @param {LensView} view
 * @param {string} name
 * @param {unknown} value
 */
export function send(view, name, value) {
  const model = view.model;
  if (model.get(name) === value) return;
  model.set(name, value);
  model.save_changes();
}

/**
 * The sliders' throttled syncs: the prompt, and the row (Python hears the row's model layer).
 * @param {LensView} view
 */
export function syncers(view) {
  return {
    syncPrompt: throttle((/** @type {number} */ v) => send(view, "prompt", v), SYNC_INTERVAL_MS),
    syncLayer: throttle((/** @type {number} */ row) => {
      if (view.data) send(view, "layer", view.data.layers[row]);
    }, SYNC_INTERVAL_MS),
  };
}
