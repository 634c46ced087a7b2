// @ts-check
/**
 * The one test hook of the three widgets: each view puts an object that reports its state and
 * geometry on its element, under its widget's property, and takes it away when destroyed (unless a
 * newer view on the same element has put its own there). Browser tests, the notebook tests and
 * the benchmark read these properties: keep the names.
 *
 * What each object holds is the view's own (`view/debug.js` for the heatmap, `DiffView.debugApi`,
 * `DatasetView.debugApi`); all have `state` and `drawNow()`, and the two heatmaps
 * `cellClientRect(i, j)` and `cellColour(i, j)`.
 */

/** The element property of each widget's hook. */
export const DEBUG_HOOKS = Object.freeze({ heatmap: "__muranoDebug", diff: "__muranoDiffDebug", dataset: "__muranoDataset" });

/**
 * Puts `api` on `el` as `widget`'s hook.
 * @param {HTMLElement} el
 * @param {keyof typeof DEBUG_HOOKS} widget
 * @param {object} api
 * @returns {() => void} takes the hook away again (when it is still this one)
 */
export function installDebug(el, widget, api) {
  const name = DEBUG_HOOKS[widget];
  const host = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (el));
  host[name] = api;
  return () => {
    if (host[name] === api) delete host[name];
  };
}
