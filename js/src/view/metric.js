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
  if (sync) view.send("metric", metric);
  view.ui.metricSelect.value = metric;
  if (metric === view.state.metric) return;
  view.store.set({ metric });
  refreshMetric(view);
  followTarget(view);
  view.requestDraw();
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
  if (sync) view.send("target", target);
  view.ui.targetSelect.value = target;
  if (target === view.state.target) return;
  view.store.set({ target });
  refreshMetric(view);
  view.updateTooltip();
  const s = view.state;
  if (s.focused && s.focus) view.announce(s.focus);
  followTarget(view);
  view.requestDraw();
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
  view.requestDetails();
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
  else view.requestDetails();
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
