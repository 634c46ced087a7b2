// @ts-check
/**
 * The heatmap's view traits on this side: the names of Python's one table
 * (`murano_widgets/widgets/view_state.py`, `VIEW_TRAITS`; `tests/test_house.py` holds the two lists
 * equal), each with the feature module's function that shows a value Python sent. The store
 * (`store.js`) holds each under the same name (`layer` as the row; the trait holds its model
 * layer), `listenToTraits` listens to each trait's change from this table, and a feature module that
 * follows a trait subscribes to its key (`metric.js`, `cell_tip.js`, `selection.js`,
 * `redraw.js` follow `target`).
 *
 * A new view trait: its line in Python's table, its line here, and its feature module (its
 * setter: check, `send` when the user chose it, `store.set`; its subscribers).
 */

import { setBeside } from "./beside.js";
import { setExplain, setView } from "./explain.js";
import { setLens } from "./load.js";
import { setMetric, setTarget } from "./metric.js";
import { setGroup } from "./group.js";
import { setModelLayer, setPrompt } from "./navigation.js";
import { positionChanged } from "./overview.js";
import { setHideTemplate } from "./selection.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {(view: LensView, value: unknown) => void} ShowTrait shows a value of the trait that
 *   came from Python (not sent back)
 */

/** @type {Readonly<Record<string, ShowTrait>>} */
export const VIEW_TRAITS = Object.freeze({
  lens: (view, value) => setLens(view, value, false),
  lens_beside: (view, value) => setBeside(view, value ?? "", false),
  prompt: (view, value) => {
    view.syncPrompt.cancel();
    setPrompt(view, value, false);
  },
  layer: (view, value) => {
    view.syncLayer.cancel();
    setModelLayer(view, value);
  },
  metric: (view, value) => setMetric(view, value, false),
  target: (view, value) => setTarget(view, value, false),
  group: (view, value) => setGroup(view, value, false),
  hide_template: (view, value) => setHideTemplate(view, value === true, false),
  explain: (view, value) => setExplain(view, value, false),
  view: (view, value) => setView(view, value, false),
  // The grid's first position shown: the scroller holds it (not the store), and reports it back.
  position: (view) => positionChanged(view),
});

/**
 * Shows each view trait's change that Python sends (the model's `change:<name>`).
 * @param {LensView} view
 * @returns {() => void} stops listening
 */
export function listenToTraits(view) {
  const model = view.model;
  const handlers = Object.entries(VIEW_TRAITS).map(([name, show]) => /** @type {[string, () => void]} */ ([`change:${name}`, () => show(view, model.get(name))]));
  for (const [event, fn] of handlers) model.on(event, fn);
  return () => {
    for (const [event, fn] of handlers) model.off(event, fn);
  };
}
