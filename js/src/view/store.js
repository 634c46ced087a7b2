// @ts-check
/**
 * The heatmap's state as one plain object (`ViewState`), and the one way it changes: `set(patch)`
 * assigns the keys whose values differ and tells each subscriber which keys those were. The
 * object is changed in place, so whoever holds `store.state` (the view, its test hook, the live
 * lens) reads the current values. Pure: no DOM, no model.
 */

/**
 * @typedef {import("../layout.js").Cell} Cell
 * @typedef {import("../state.js").Selected} Selected
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
 * @property {boolean} hideTemplate the chat template's own tokens are hidden from view
 * @property {string} lens the name of the lens shown (the `lens_name` trait)
 * @property {string} beside the name of the lens drawn as a second grid under the first (the
 *   `lens_beside` trait; "" for one grid)
 * @property {"layers" | "components"} view the heatmap of layers, or the component view (the
 *   `view` trait; components only with direct logit attribution)
 * @property {string} explain what the "why" panel and the component view explain (the `explain`
 *   trait: "top1", "answer", "target:" + a target)
 * @property {boolean} heads each layer's attention split into its heads (the panel's box)
 *
 * @typedef {keyof ViewState} StateKey
 * @typedef {(changed: StateKey[], state: Readonly<ViewState>) => void} Subscriber
 *
 * @typedef {object} Store
 * @property {ViewState} state the current state (one object for the store's life)
 * @property {(patch: Partial<ViewState>) => StateKey[]} set assigns what differs (`Object.is`),
 *   then notifies the subscribers once with those keys; returns them ([] when nothing changed:
 *   no one is told)
 * @property {(fn: Subscriber) => () => void} subscribe returns the function that unsubscribes
 */

/**
 * The state before the first payload is read (`load.js` then takes the model's traits).
 * @returns {ViewState}
 */
export function initialState() {
  return { prompt: 0, layer: 0, metric: "", target: "", group: "", selected: null, hover: null, focus: null, focused: false, hideTemplate: false, lens: "", beside: "", view: "layers", explain: "top1", heads: false };
}

/**
 * @param {ViewState} [state] the object the store holds and changes (default `initialState()`)
 * @returns {Store}
 */
export function createStore(state = initialState()) {
  /** @type {Set<Subscriber>} */
  const subscribers = new Set();
  return {
    state,
    set(patch) {
      /** @type {StateKey[]} */
      const changed = [];
      for (const key of /** @type {StateKey[]} */ (Object.keys(patch))) {
        const value = patch[key];
        if (value === undefined || Object.is(state[key], value)) continue;
        /** @type {Record<string, unknown>} */ (state)[key] = value;
        changed.push(key);
      }
      if (changed.length) for (const fn of [...subscribers]) fn(changed, state);
      return changed;
    },
    subscribe(fn) {
      subscribers.add(fn);
      return () => {
        subscribers.delete(fn);
      };
    },
  };
}

/**
 * The same heatmap cell (or both none).
 * @param {Cell | null} a
 * @param {Cell | null} b
 */
export function sameCell(a, b) {
  return a === b || Boolean(a && b && a.layerIndex === b.layerIndex && a.position === b.position);
}
