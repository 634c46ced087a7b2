// @ts-check
/**
 * The heatmap's state as one plain object (`ViewState`) in a store (`shared/store.js`: `set(patch)`
 * assigns the keys whose values differ and tells each subscriber which keys those were); whoever
 * holds `store.state` (the view, its test hook, the live lens) reads the current values.
 */

import { createStore as createSharedStore } from "../../shared/store.js";

export { sameCell } from "../../shared/store.js";

/**
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../../shared/state.js").Selected} Selected
 *
 * @typedef {object} ViewState
 * @property {number} prompt
 * @property {number} layer the highlighted row (the `layer` trait holds its model layer)
 * @property {string} metric the requested metric
 * @property {string} target the tracked token a per-target metric shows (the `target` trait; ""
 *   when none is tracked)
 * @property {string} group the token group a per-group metric shows (the `group` trait; "" without
 *   groups)
 * @property {Selected | null} selected
 * @property {Cell | null} hover
 * @property {Cell | null} focus
 * @property {boolean} focused the focus cell is shown (keyboard focus)
 * @property {boolean} hide_template the chat template's own tokens are hidden from view
 * @property {string} lens the name of the lens shown (the `lens` trait)
 * @property {string} lens_beside the name of the lens drawn as a second grid under the first (the
 *   `lens_beside` trait; "" for one grid)
 * @property {"layers" | "components"} view the heatmap of layers, or the component view (the
 *   `view` trait; components only with direct logit attribution)
 * @property {string} explain what the "why" panel and the component view explain (the `explain`
 *   trait: "top1", "answer", "target:" + a target)
 * @property {boolean} heads each layer's attention split into its heads (the panel's box)
 * @property {number} dataVersion counts the payloads shown (each new `view.data`, set last when
 *   one is shown): what lists prompts or tokens, such as the live controls, follows it
 *
 * @typedef {keyof ViewState} StateKey
 * @typedef {(changed: StateKey[], state: Readonly<ViewState>) => void} Subscriber
 * @typedef {import("../../shared/store.js").Store<ViewState>} Store
 */

/**
 * The state before the first payload is read (`load.js` then takes the model's traits).
 * @returns {ViewState}
 */
export function initialState() {
  return { prompt: 0, layer: 0, metric: "", target: "", group: "", selected: null, hover: null, focus: null, focused: false, hide_template: false, lens: "", lens_beside: "", view: "layers", explain: "top1", heads: false, dataVersion: 0 };
}

/**
 * The heatmap's store (`shared/store.js`'s).
 * @param {ViewState} [state] the object the store holds and changes (default `initialState()`)
 * @returns {Store}
 */
export function createStore(state = initialState()) {
  return createSharedStore(state);
}
