// @ts-check
/**
 * The metric registry as the front end uses it. Every fact about a metric (its section, label,
 * unit, colour scale, direction, log scale, colour domain, whether it is measured against the
 * final prediction, whether the result has it) comes from Python in `meta.metrics`; nothing here
 * names a metric.
 */

import { formatUnit, niceCeil } from "./format.js";
import { isFinalMissing, isMissing, promptHasNoValue, promptOfColumn } from "./payload.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {import("./payload.js").MetricSpec} MetricSpec
 * @typedef {{min: number, max: number, log: boolean}} Domain
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
  return Boolean(data && spec && spec.available && data.arrays[spec.field]);
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
 * The value of metric `name` at cell `idx` of an [L, T] section: NaN when the cell is missing,
 * when the metric is measured against a final distribution that was not finite there, when the
 * prompt has no value in its section at all (a prompt without an answer), or when its section has
 * not arrived.
 * @param {LensData} data
 * @param {string} name
 * @param {number} idx
 */
export function metricValue(data, name, idx) {
  const spec = metricSpec(data, name);
  const array = spec && data.arrays[spec.field];
  if (!spec || !array || isMissing(data, idx)) return NaN;
  if (spec.finalBased && isFinalMissing(data, idx % data.T)) return NaN;
  if (data.noValue[spec.field] && promptHasNoValue(data, spec.field, promptOfColumn(data, idx % data.T))) return NaN;
  return array[idx] * (data.scales[spec.field] ?? 1);
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
