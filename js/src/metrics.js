// @ts-check
/**
 * The metric registry as the front end uses it. Every fact about a metric (its section, label,
 * unit, colour scale, direction, log scale, colour domain, whether it is measured against the
 * final prediction, whether the result has it) comes from Python in `meta.metrics`; nothing here
 * names a metric.
 */

import { formatUnit, niceCeil } from "./format.js";
import { isFinalMissing, isMissing, promptHasNoValue, promptOfColumn } from "./payload.js";
import { displayToken } from "./tokens.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {import("./payload.js").MetricSpec} MetricSpec
 * @typedef {{min: number, max: number, log: boolean}} Domain
 * @typedef {number | {target: number, group: number}} Pick which tracked token a per-target
 *   metric and which token group a per-group metric shows: both indices, or one index for
 *   whichever the metric has
 */

/**
 * The registry entry of `name`, or undefined.
 * @param {LensData | null | undefined} data
 * @param {string} name
 * @returns {MetricSpec | undefined}
 */
export function metricSpec(data, name) {
  return data ? data.metrics.find((m) => m.name === name) : undefined;
}

/**
 * The metric names in menu order.
 * @param {LensData} data
 * @returns {string[]}
 */
export function metricNames(data) {
  return data.metrics.map((m) => m.name);
}

/**
 * Whether the result has `name` (the menu offers it).
 * @param {LensData | null | undefined} data
 * @param {string} name
 */
export function metricOffered(data, name) {
  const spec = metricSpec(data, name);
  return Boolean(spec && spec.available);
}

/**
 * Whether `name` can be drawn now: offered, and its section has arrived.
 * @param {LensData | null | undefined} data
 * @param {string} name
 */
export function metricAvailable(data, name) {
  const spec = metricSpec(data, name);
  if (!data || !spec || !spec.available || !data.arrays[spec.field]) return false;
  const items = itemsOf(data, spec);
  return !items || items.length > 0;
}

/**
 * What a metric has one value of per cell: the tracked tokens (per-target), the token groups
 * (per-group), or null (one value a cell).
 * @param {LensData} data
 * @param {MetricSpec} spec
 * @returns {string[] | null}
 */
export function itemsOf(data, spec) {
  if (spec.perGroup) return data.groups;
  return spec.perTarget ? data.targets : null;
}

/**
 * The index `pick` gives a metric: its group's for a per-group metric, else its token's.
 * @param {MetricSpec} spec
 * @param {Pick} pick
 */
export function pickIndex(spec, pick) {
  if (typeof pick === "number") return pick;
  return spec.perGroup ? pick.group : pick.target;
}

/**
 * The token group a per-group metric shows: `value` (the `group` trait) while it is one of the
 * payload's groups, else the first; "" without groups.
 * @param {LensData | null | undefined} data
 * @param {unknown} value
 * @returns {string}
 */
export function resolveGroup(data, value) {
  if (!data || data.groups.length === 0) return "";
  return typeof value === "string" && data.groups.includes(value) ? value : data.groups[0];
}

/**
 * The tracked token a per-target metric shows: `value` (the `target` trait) while it is one of
 * the payload's targets, else the first; "" when none is tracked.
 * @param {LensData | null | undefined} data
 * @param {unknown} value
 * @returns {string}
 */
export function resolveTarget(data, value) {
  if (!data || data.targets.length === 0) return "";
  return typeof value === "string" && data.targets.includes(value) ? value : data.targets[0];
}

/**
 * The index among the payload's targets of the token `value` shows (`resolveTarget`); 0 when
 * none is tracked (a per-target value then reads NaN).
 * @param {LensData} data
 * @param {unknown} value
 */
export function targetIndex(data, value) {
  return Math.max(0, data.targets.indexOf(resolveTarget(data, value)));
}

/**
 * What the legend, the tooltip and the readout call the metric: its label, naming the tracked
 * token shown for a per-target metric (as the package shows tokens: "Probability of “␣Tokyo”").
 * `short` drops a trailing parenthesis of the label (never of the token).
 * @param {LensData} data
 * @param {MetricSpec} spec
 * A per-group metric's names its group (as given: a name, not a token).
 * @param {LensData} data
 * @param {MetricSpec} spec
 * @param {Pick} [target] the token's index among `data.targets` (the group's among
 *   `data.groups`)
 * @param {boolean} [short]
 */
export function metricLabel(data, spec, target = 0, short = false) {
  const items = itemsOf(data, spec);
  const item = items ? items[pickIndex(spec, target)] : undefined;
  if (!spec.targetLabel || item === undefined) return short ? shortLabel(spec.label) : spec.label;
  const label = short ? shortLabel(spec.targetLabel) : spec.targetLabel;
  // A function, so that "$&" in a token stays text.
  return label.replace("{target}", () => (spec.perGroup ? item : displayToken(item)));
}

/**
 * The metric shown when the requested one is not offered: the first offered one.
 * @param {LensData} data
 * @param {unknown} name
 * @returns {string}
 */
export function resolveMetric(data, name) {
  if (typeof name === "string" && metricOffered(data, name)) return name;
  const first = data.metrics.find((m) => m.available);
  return (first || data.metrics[0]).name;
}

/**
 * A label without its trailing parenthesis ("Entropy (bits)" → "Entropy"), for tight places.
 * @param {string} label
 */
export function shortLabel(label) {
  return label.replace(/\s*\([^()]*\)\s*$/, "") || label;
}

/**
 * The value range the metric's colours span (the registry's domain).
 * @param {LensData} data
 * @param {string} name
 * @returns {Domain}
 */
export function metricDomain(data, name) {
  const spec = metricSpec(data, name);
  if (!spec) throw new Error(`unknown metric ${JSON.stringify(name)}`);
  return { min: spec.domain[0], max: spec.domain[1], log: spec.log };
}

/**
 * Position of `value` in the domain, in [0, 1] (log1p for log domains); NaN stays NaN.
 * @param {number} value
 * @param {{min: number, max: number, log?: boolean}} domain
 */
export function unitValue(value, domain) {
  if (!Number.isFinite(value)) return NaN;
  let t;
  if (domain.log) t = Math.log1p(Math.max(0, value - domain.min)) / Math.log1p(domain.max - domain.min);
  else t = (value - domain.min) / (domain.max - domain.min);
  return Math.min(1, Math.max(0, t));
}

/**
 * The value of metric `name` at cell `idx` of an [L, T] section (a per-target metric's at
 * `idx * n_targets + target` of its [L, T, n_targets] section): NaN when the cell is missing,
 * when the metric is measured against a final distribution that was not finite there, when the
 * prompt has no value in its section at all (a prompt without an answer), when no such target is
 * tracked, or when its section has not arrived.
 * @param {LensData} data
 * @param {string} name
 * @param {number} idx
 * @param {Pick} [target] for a per-target metric, the token's index among `data.targets` (a
 *   per-group one's: the group's)
 */
export function metricValue(data, name, idx, target = 0) {
  const spec = metricSpec(data, name);
  const array = spec && data.arrays[spec.field];
  if (!spec || !array || isMissing(data, idx)) return NaN;
  if (spec.finalBased && isFinalMissing(data, idx % data.T)) return NaN;
  if (data.noValue[spec.field] && promptHasNoValue(data, spec.field, promptOfColumn(data, idx % data.T))) return NaN;
  const { stride, offset } = metricLayout(data, spec, target);
  if (stride === 0) return NaN;
  return array[idx * stride + offset] * (data.scales[spec.field] ?? 1);
}

/**
 * Where a metric's values sit in its section: cell `idx`'s at `idx * stride + offset`
 * (`stride` 0: it has none, a per-target metric with no such target).
 * @param {LensData} data
 * @param {MetricSpec} spec
 * @param {Pick} [pick]
 * @returns {{stride: number, offset: number}}
 */
export function metricLayout(data, spec, pick = 0) {
  const items = itemsOf(data, spec);
  if (!items) return { stride: 1, offset: 0 };
  const n = items.length;
  const target = pickIndex(spec, pick);
  return Number.isInteger(target) && target >= 0 && target < n ? { stride: n, offset: target } : { stride: 0, offset: 0 };
}

/**
 * A metric value as text (`short` for legend ticks), by the metric's unit.
 * @param {MetricSpec} spec
 * @param {number} value
 * @param {boolean} [short]
 * @param {number} [step] the quantum of the value's section (`data.scales[spec.field]`), so
 *   that no digit finer than it is printed; 0 for an exact value (a legend tick)
 */
export function formatMetric(spec, value, short = false, step = 0) {
  return formatUnit(spec.unit, value, short, step);
}

/**
 * Tick marks for the legend: [{t, label}] with t in [0, 1] along the bar (low value on the left).
 * Log domains get 0 and the powers of ten; linear ones about four nice steps and the top end.
 * @param {MetricSpec} spec
 * @param {Domain} domain
 * @returns {{t: number, label: string}[]}
 */
export function legendTicks(spec, domain) {
  const values = [];
  if (domain.log) {
    values.push(domain.min);
    for (let v = 10; v <= domain.max; v *= 10) if (v > domain.min) values.push(v);
    const last = values[values.length - 1];
    if (unitValue(domain.max, domain) - unitValue(last, domain) > 0.15) values.push(domain.max);
  } else {
    const step = niceCeil((domain.max - domain.min) / 4);
    for (let v = domain.min; v <= domain.max + 1e-9; v += step) values.push(v);
    // Label the top end too unless a tick already sits close to it.
    if (domain.max - values[values.length - 1] > 0.25 * step) values.push(domain.max);
  }
  return values.map((v) => ({ t: unitValue(v, domain), label: formatMetric(spec, v, true) }));
}

/**
 * What a new payload did to the colour scale of metric `name`: "" when its domain is the same
 * (or either payload lacks the metric), else a line saying so, with both ranges ("Colour scale
 * changed: now 0–20.0 bits (was 0–10.0 bits)"), so that a colour that now means another value does
 * not pass unnoticed (the registry fits a metric's domain to the data: adding a prompt can widen
 * it).
 * @param {LensData | null} before
 * @param {LensData} after
 * @param {string} name
 */
export function scaleChange(before, after, name) {
  const a = metricSpec(before, name);
  const b = metricSpec(after, name);
  if (!a || !b || (a.domain[0] === b.domain[0] && a.domain[1] === b.domain[1])) return "";
  const range = (/** @type {MetricSpec} */ spec) => `${formatMetric(spec, spec.domain[0], true)}–${formatMetric(spec, spec.domain[1])}`;
  return `Colour scale changed: now ${range(b)} (was ${range(a)})`;
}
