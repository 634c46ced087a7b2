// @ts-check
/**
 * Token groups (`groups={...}` in Python): which group a per-group metric shows (the Group menu
 * beside the colour menu, the `group` trait), as the Token menu does for a per-target metric.
 * A group's name is the user's text: it is shown as text (`textContent`, an option's label).
 */

import { metricLabel, metricSpec, pickIndex, resolveGroup, targetIndex } from "../metrics.js";
import { h } from "../shared/dom.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("./dom.js").Ui} Ui
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../metrics.js").Pick} Pick
 */

/**
 * The group menu: a label and its select, hidden until a per-group metric is chosen.
 * @returns {{groupLabel: HTMLLabelElement, groupSelect: HTMLSelectElement}}
 */
export function groupMenu() {
  const groupLabel = /** @type {HTMLLabelElement} */ (h("label", "murano-group", { hidden: "" }));
  groupLabel.append(h("span", "murano-label", {}, "Group"));
  const groupSelect = /** @type {HTMLSelectElement} */ (h("select", "murano-group-select", { "aria-label": "Token group shown" }));
  groupLabel.append(groupSelect);
  return { groupLabel, groupSelect };
}

/**
 * Shows the group menu while the requested metric is a per-group one, one entry per group.
 * @param {Ui} ui
 * @param {LensData} data
 * @param {string} metric the requested metric
 * @param {string} group the group shown (one of `data.groups`, or "")
 */
export function showGroupMenu(ui, data, metric, group) {
  const spec = metricSpec(data, metric);
  ui.groupLabel.hidden = !(spec && spec.perGroup && data.groups.length > 0);
  const key = data.groups.join("\u0000");
  if (ui.groupSelect.dataset.key !== key) {
    ui.groupSelect.replaceChildren(...data.groups.map((name) => h("option", "", { value: name, title: name }, name)));
    ui.groupSelect.dataset.key = key;
  }
  ui.groupSelect.value = group;
  ui.groupSelect.title = spec && spec.perGroup && group ? metricLabel(data, spec, { target: 0, group: data.groups.indexOf(group) }) : "";
}

/**
 * Which group a per-group metric shows (the group menu, or the `group` trait).
 * @param {LensView} view
 * @param {unknown} value
 * @param {boolean} sync tell Python (the user chose it in the menu)
 */
export function setGroup(view, value, sync) {
  const data = view.data;
  if (!data) return;
  // Python's group for a payload not decoded yet: `reload` takes it with that payload.
  if (!sync && typeof value === "string" && value && !data.groups.includes(value)) return;
  const group = resolveGroup(data, value);
  if (sync) view.send("group", group);
  view.ui.groupSelect.value = group;
  if (group === view.state.group) return;
  view.store.set({ group });
  view.refreshMetric();
  view.updateTooltip();
  const s = view.state;
  if (s.focused && s.focus) view.announce(s.focus);
  view.drawTrajectory();
  view.requestDraw();
}

/**
 * The tracked token and the token group shown, as indices.
 * @param {LensData | null} data
 * @param {{target: string, group: string}} state
 * @returns {{target: number, group: number}}
 */
export function shownPick(data, state) {
  if (!data) return { target: 0, group: 0 };
  return { target: targetIndex(data, state.target), group: Math.max(0, data.groups.indexOf(resolveGroup(data, state.group))) };
}

/**
 * The index of the item (tracked token or group) metric `name` shows: what the grid's painter
 * draws.
 * @param {LensData | null} data
 * @param {string} name
 * @param {Pick} pick
 */
export function pickFor(data, name, pick) {
  const spec = data ? metricSpec(data, name) : undefined;
  return spec ? pickIndex(spec, pick) : 0;
}
