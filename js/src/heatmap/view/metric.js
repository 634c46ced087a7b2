// @ts-check
/**
 * The metric and its colour scale: the metric requested (the menu, the `metric` trait) and the
 * one the cells show while the requested one's sections load, the tracked token a per-target
 * metric shows (the Token menu, the `target` trait), the legend with its scale-change note, and
 * the chart's line that follows the token shown.
 */

import { metricAvailable, metricSpec, resolveMetric, resolveTarget } from "../metrics.js";
import { showComponentLegend, showLegend, showTargetMenu } from "./controls.js";
import { gridDomain, showCaptions } from "./beside.js";
import { send } from "./sync.js";
import { requestDetails } from "./details_request.js";
import { showGroupMenu, shownPick } from "./group.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../payload.js").LensData} LensData
 */

/**
 * What the chart follows: the metric and token while a per-target metric shows a token, else ""
 * (nothing to follow).
 * @param {LensData | null} data
 * @param {string} metric
 * @param {string} target
 */
export function followKey(data, metric, target) {
  const spec = data ? metricSpec(data, metric) : undefined;
  return spec && spec.perTarget && target ? `${metric}\u0000${target}` : "";
}

/**
 * @param {LensView} view
 * @param {unknown} value
 * @param {boolean} sync
 */
export function setMetric(view, value, sync) {
  const data = view.data;
  if (!data) return;
  const metric = resolveMetric(data, value);
  if (sync) send(view, "metric", metric);
  view.ui.metricSelect.value = metric;
  // What follows the metric subscribes to it (`followMetric` here, the redraw).
  view.store.set({ metric });
}

/**
 * Which tracked token a per-target metric shows (the token menu, or the `target` trait).
 * @param {LensView} view
 * @param {unknown} value
 * @param {boolean} sync tell Python (the user chose it in the menu)
 */
export function setTarget(view, value, sync) {
  const data = view.data;
  if (!data) return;
  // Python's token for a payload not decoded yet (tracked and shown at once): `reload` takes it
  // with that payload.
  if (!sync && typeof value === "string" && value && !data.targets.includes(value)) return;
  const target = resolveTarget(data, value);
  if (sync) send(view, "target", target);
  view.ui.targetSelect.value = target;
  // What follows the token shown subscribes to `target`: the legend and the chart's line
  // (`followMetric` here), the tooltip (`cell_tip.js`), the readout (`selection.js`), the redraw.
  view.store.set({ target });
}

/**
 * The metric module's subscription: a change of the metric or of the token shown refreshes the
 * legend and the Token menu, and switches the chart's line of the token shown on.
 * @param {LensView} view
 * @returns {() => void} unsubscribes
 */
export function followMetric(view) {
  return view.store.subscribe((changed) => {
    if (!changed.includes("metric") && !changed.includes("target")) return;
    refreshMetric(view);
    followTarget(view);
  });
}

/**
 * The tracked token and the token group shown, as their indices among the data's targets and
 * groups (a per-target metric reads the first, a per-group one the second).
 * @param {LensView} view
 * @returns {import("../metrics.js").Pick}
 */
export function targetIndex(view) {
  return shownPick(view.data, view.state);
}

/**
 * The trajectory chart follows the tracked token the heatmap shows: when a per-target metric is
 * chosen, or shows another token (tracked and shown from the box, the menu, Python), that token's
 * line is switched on (the chart shows only the first few targets by default).
 * @param {LensView} view
 */
export function followTarget(view) {
  const data = view.data;
  const s = view.state;
  const key = followKey(data, s.metric, s.target);
  if (key === view.followedTarget) return;
  view.followedTarget = key;
  if (!key || !data) return;
  view.trajectory.toggled.set(`target:${data.targets.indexOf(s.target)}`, true);
  view.trajectory.rerender();
  requestDetails(view);
}

/**
 * Which metric the cells show; asks for the detail sections when the requested one lacks its.
 * The legend (the metric's, or the component view's) and the Token menu follow.
 * @param {LensView} view
 */
export function refreshMetric(view) {
  const { data, ui } = view;
  if (!data) return;
  const s = view.state;
  const available = metricAvailable(data, s.metric);
  if (available) view.shownMetric = s.metric;
  else requestDetails(view);
  ui.root.classList.toggle("murano-loading", !available && s.view !== "components");
  showTargetMenu(ui, data, s.metric, s.target);
  showGroupMenu(ui, data, s.metric, s.group);
  if (s.view === "components") showComponentLegend(ui, view.components.currentGrid(), data.logitSoftcap !== null);
  else showLegend(ui, data, view.shownMetric, s.metric, targetIndex(view), gridDomain(view));
  showCaptions(view);
  // The scale-change line holds for the metric it is about, until the metric changes.
  if (view.scaleNote && view.scaleNote.metric !== view.shownMetric) view.scaleNote = null;
  const note = s.view === "components" || !view.scaleNote ? "" : view.scaleNote.text;
  ui.legendChange.textContent = note;
  ui.legendChange.hidden = !note;
}
