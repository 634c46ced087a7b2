// @ts-check
/**
 * Two lenses side by side, as values: which lens the second grid shows (`besideLens`, the
 * `lens_beside` trait), what its menu offers (`besideOptions`), what becomes of it when the lens
 * shown changes (`besideAfterSwitch`: choosing the lens beside swaps the two), the one colour
 * scale both grids share (`sharedDomain`), the metric the second grid can show
 * (`besideMetric`) and each grid's caption (`gridCaption`). No DOM: the view (`view/beside.js`)
 * draws the second grid under the first, in the same scroller, with the same cursor.
 */

import { metricAvailable, metricDomain, metricSpec } from "./metrics.js";
import { lensMenuText } from "../shared/lens_names.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {{min: number, max: number, log: boolean}} Domain
 */

/**
 * The lens the second grid shows: the one `wanted` names, unless it is none of the lenses, or
 * the lens shown itself (one grid then).
 * @param {LensData[]} lenses every lens of the payload
 * @param {string} shown the name of the lens shown (the first grid)
 * @param {unknown} wanted the `lens_beside` trait ("" for one grid)
 * @returns {LensData | null}
 */
export function besideLens(lenses, shown, wanted) {
  if (typeof wanted !== "string" || !wanted || wanted === shown) return null;
  return lenses.find((lens) => lens.lensName === wanted) || null;
}

/**
 * The "beside" menu: one grid, or each lens other than the one shown beside it.
 * @param {LensData[]} lenses
 * @param {string} shown
 * @param {(data: LensData) => string} title what a lens is called (its title)
 * @returns {{value: string, label: string}[]}
 */
export function besideOptions(lenses, shown, title) {
  return [
    { value: "", label: "none (one grid)" },
    ...lenses.filter((lens) => lens.lensName !== shown).map((lens) => ({ value: lens.lensName, label: lensMenuText(lens.lensName, title(lens)) })),
  ];
}

/**
 * The lens beside after the lens shown changes from `previous` to `next`: choosing the lens that
 * was beside swaps the two grids; otherwise the lens beside stays.
 * @param {string} previous
 * @param {string} next
 * @param {string} beside
 */
export function besideAfterSwitch(previous, next, beside) {
  return beside && beside === next ? previous : beside;
}

/**
 * The metric the second grid shows: the first grid's, when that lens has its values; null when
 * it has none (its grid then shows no colours, and says why).
 * @param {LensData} beside
 * @param {string} metric the metric the first grid shows
 */
export function besideMetric(beside, metric) {
  return metricAvailable(beside, metric) ? metric : null;
}

/**
 * One colour scale for both grids, so that one colour means one value in either: the span of
 * the two lenses' domains of `metric` (a probability's is 0 to 1 in both; KL and ranks are
 * scaled to each lens's largest value, and the larger wins). A lens without the metric leaves the
 * other's domain as it is.
 * @param {LensData} a the lens shown
 * @param {LensData | null} b the lens beside (null: `a`'s own domain)
 * @param {string} metric
 * @returns {Domain}
 */
export function sharedDomain(a, b, metric) {
  const own = metricDomain(a, metric);
  if (!b || !metricSpec(b, metric) || !metricAvailable(b, metric)) return own;
  const other = metricDomain(b, metric);
  return { min: Math.min(own.min, other.min), max: Math.max(own.max, other.max), log: own.log };
}

/**
 * A grid's caption: the lens's title (its name where it differs), and why it has no colours
 * when the other grid's metric is not among its values.
 * @param {LensData} data
 * @param {string} title the lens's title
 * @param {boolean} coloured the grid shows the metric
 */
export function gridCaption(data, title, coloured) {
  const text = lensMenuText(data.lensName, title);
  return coloured ? text : `${text}: no values of this colouring under this lens`;
}
