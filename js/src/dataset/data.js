// @ts-check
/**
 * The data-set widget's data: decoding what Python sends (`_meta` JSON and `_data` bytes) and
 * the pure questions the view asks of it (which prompts, in which order; a layer's readout).
 *
 * `_data` holds, per series `i` (an answer set; with several lenses side by side, a lens and an
 * answer set, lens by lens), `prob_i` (float32) and `rank_i` (int32), each
 * `[n_prompts, n_layers]` row-major, little-endian; rank 0 is the top-1 token, -1 no value.
 */

import { formatBits, formatProb } from "../format.js";
import { readSection } from "../shared/codec.js";
import { lensMenuText } from "../shared/lens_names.js";
import { SERIES_COLOURS, SERIES_DASHES, seriesLook } from "../theme.js";

/** The dtypes of `_data`. */
export const DATASET_DTYPES = Object.freeze(["float32", "int32"]);

/**
 * Per-layer summary of one answer set (null: no value): `LensDataset.summary`'s columns, by
 * their names ("answer_prob_mean", "answer_prob_ci_low", ...), those the metrics read.
 * @typedef {Record<string, (number | null)[]>} Summary
 */

/**
 * One of the data set's metrics (`meta.metrics`, Python's `DATASET_METRICS`): what it is
 * called and which summary columns hold it.
 * @typedef {object} DatasetMetric
 * @property {string} name "answer_prob", "top1_accuracy", "committed", ...
 * @property {string} field the summary column of its value
 * @property {string} label the menu's text
 * @property {string} short the readout's
 * @property {string} unit "probability", "share", "rank" or "bits"
 * @property {[string, string] | null} interval the columns of its interval (the chart draws
 *   those that have one)
 */

/**
 * @typedef {object} DatasetSet One series: an answer set (under one lens, with several).
 * @property {string} name the answer set's name
 * @property {string | null} lens the lens's name (null: a data set of one lens)
 * @property {string} label what the legend and the readout call it ("capital", or
 *   "capital · Tuned lens" with several lenses)
 * @property {(string | null)[]} answers the answer shown per prompt, null: none
 * @property {number} nPrompts prompts with an answer
 * @property {Summary} summary
 * @property {Float32Array} probs [n_prompts * n_layers]
 * @property {Int32Array} ranks [n_prompts * n_layers]
 */

/**
 * @typedef {object} Dataset
 * @property {number[]} layers model layers of the columns
 * @property {string[]} prompts
 * @property {DatasetSet[]} sets every series, lens by lens
 * @property {{name: string, title: string}[]} lenses the lenses side by side ([] for one)
 * @property {string} title
 * @property {number} ci interval coverage, e.g. 0.95
 * @property {boolean} canOpen whether a prompt's heatmap can be opened
 * @property {string} reason why not, when it cannot
 * @property {DatasetMetric[]} metrics every metric, in the readout's order
 * @property {string[]} groups the token groups' names ([] without groups): each is a metric
 *   ("group:<name>", its summary columns "group_<name>_mean", ...), and GROUPS_METRIC draws all
 */

/** The chart's metric that draws every token group at once (Python's `ALL_GROUPS`). */
export const GROUPS_METRIC = "groups";

/**
 * @typedef {object} Curve One line of the chart, with its band.
 * @property {string} label the legend's text
 * @property {string} colour
 * @property {string} dash
 * @property {(number | null)[]} mean
 * @property {(number | null)[]} low
 * @property {(number | null)[]} high
 * @property {string} set the answer set's name (data-set on the line)
 * @property {string} lens the lens's name, "" for one lens (data-lens)
 * @property {string} group the group's name, "" for a series' curve (data-group)
 */

/**
 * The chart's curves for `metric`: one per series (answer set, lens) in its look; for
 * GROUPS_METRIC, one per token group (its colour) of the listed answer set `setName` under each
 * lens (the lens's dash), from that series' `group_<name>_*` columns: Wendler's figure.
 * @param {Dataset} dataset
 * @param {DatasetMetric} metric
 * @param {unknown} setName the `answer_set` trait
 * @returns {Curve[]}
 */
export function chartCurves(dataset, metric, setName) {
  if (metric.name !== GROUPS_METRIC) {
    const [low, high] = metric.interval || [metric.field, metric.field];
    return dataset.sets.map((set, i) => {
      const look = datasetSeriesLook(dataset, i);
      const s = set.summary;
      return { label: `${set.label} (n=${set.nPrompts})`, colour: look.colour, dash: look.dash, mean: s[metric.field] || [], low: s[low] || [], high: s[high] || [], set: set.name, lens: set.lens ?? "", group: "" };
    });
  }
  const named = dataset.sets.filter((set) => set.name === setName);
  const series = named.length ? named : dataset.sets.filter((set) => set.name === dataset.sets[0]?.name);
  /** @type {Curve[]} */
  const curves = [];
  series.forEach((set, lensIndex) => {
    dataset.groups.forEach((group, k) => {
      const look = seriesLook(k);
      const s = set.summary;
      const lensText = set.lens === null ? "" : ` · ${set.label.split(" · ").slice(1).join(" · ")}`;
      curves.push({
        label: `${group}${lensText}`,
        colour: look.colour,
        dash: set.lens === null ? look.dash : SERIES_DASHES[lensIndex % SERIES_DASHES.length],
        mean: s[`group_${group}_mean`] || [],
        low: s[`group_${group}_ci_low`] || [],
        high: s[`group_${group}_ci_high`] || [],
        set: set.name,
        lens: set.lens ?? "",
        group,
      });
    });
  });
  return curves;
}

/**
 * The metrics the chart can draw: those with an interval.
 * @param {Dataset} dataset
 * @returns {DatasetMetric[]}
 */
export function chartMetrics(dataset) {
  return dataset.metrics.filter((m) => m.interval !== null);
}

/**
 * The chart's metric named `name`, or the first one.
 * @param {Dataset} dataset
 * @param {unknown} name the `metric` trait
 * @returns {DatasetMetric}
 */
export function chartMetric(dataset, name) {
  const charted = chartMetrics(dataset);
  return charted.find((m) => m.name === name) || charted[0];
}

/**
 * The data set from the widget's traits.
 * @param {any} meta `_meta`
 * @param {Record<string, unknown>} data `_data`
 * @returns {Dataset}
 */
export function decodeDataset(meta, data) {
  const layers = /** @type {number[]} */ (meta.layers);
  const prompts = /** @type {string[]} */ (meta.prompts);
  const size = layers.length * prompts.length;
  const lenses = Array.isArray(meta.lenses) ? meta.lenses.map((/** @type {any} */ l) => ({ name: String(l.name), title: String(l.title ?? l.name) })) : [];
  const titles = new Map(lenses.map((/** @type {{name: string, title: string}} */ l) => [l.name, l.title]));
  const sets = /** @type {any[]} */ (meta.sets).map((set, i) => {
    const lens = typeof set.lens === "string" && lenses.length ? set.lens : null;
    return {
      name: String(set.name),
      lens,
      label: lens === null ? String(set.name) : `${set.name} · ${lensMenuText(lens, titles.get(lens) ?? lens)}`,
      answers: set.answers,
      nPrompts: Number(set.n_prompts),
      summary: set.summary,
      probs: /** @type {Float32Array} */ (readSection(data[`prob_${i}`], "float32", size, `prob_${i}`, DATASET_DTYPES)),
      ranks: /** @type {Int32Array} */ (readSection(data[`rank_${i}`], "int32", size, `rank_${i}`, DATASET_DTYPES)),
    };
  });
  return {
    layers,
    prompts,
    sets,
    lenses,
    title: String(meta.title ?? ""),
    ci: Number(meta.ci ?? 0.95),
    canOpen: Boolean(meta.can_open),
    reason: String(meta.cannot_open_reason ?? ""),
    metrics: /** @type {any[]} */ (meta.metrics ?? []).map((m) => ({
      name: String(m.name),
      field: String(m.field),
      label: String(m.label),
      short: String(m.short ?? m.label),
      unit: String(m.unit),
      interval: Array.isArray(m.interval) ? [String(m.interval[0]), String(m.interval[1])] : null,
    })),
    groups: Array.isArray(meta.groups) ? meta.groups.map(String) : [],
  };
}

/**
 * The series whose prompts the list shows: answer set `name` under lens `lens` (the lens is
 * ignored for a data set of one); the first series when there is no such one.
 * @param {Dataset} dataset
 * @param {unknown} name the `answer_set` trait
 * @param {unknown} lens the `lens_name` trait
 * @returns {DatasetSet}
 */
export function findSet(dataset, name, lens) {
  const several = dataset.lenses.length > 0;
  return dataset.sets.find((set) => set.name === name && (!several || set.lens === lens)) || dataset.sets.find((set) => !several || set.lens === lens) || dataset.sets[0];
}

/**
 * The colour and dash of series `k`: with one lens, the k-th series look (`seriesLook`); with
 * several lenses side by side, the lens's colour (its place among the lenses) and the answer
 * set's dash (its place among the sets), so a lens keeps its colour across sets (Python's
 * `plot_dataset` draws the same: `lens_look`).
 * @param {Dataset} dataset
 * @param {number} k
 * @returns {{colour: string, dash: string}}
 */
export function datasetSeriesLook(dataset, k) {
  const set = dataset.sets[k];
  if (!dataset.lenses.length || !set || set.lens === null) return seriesLook(k);
  const lensIndex = Math.max(0, dataset.lenses.findIndex((l) => l.name === set.lens));
  const names = [...new Set(dataset.sets.map((s) => s.name))];
  const setIndex = Math.max(0, names.indexOf(set.name));
  return { colour: SERIES_COLOURS[lensIndex % SERIES_COLOURS.length], dash: SERIES_DASHES[setIndex % SERIES_DASHES.length] };
}

/**
 * The prompts of `set` that have an answer, ordered by the answer's rank at layer column
 * `layerIndex`: best (rank 0) first, or worst first. Ties go to the higher probability, then
 * the lower prompt index; prompts whose rank has no value come last either way.
 * @param {DatasetSet} set
 * @param {number} layerIndex
 * @param {number} nLayers
 * @param {boolean} [worstFirst]
 * @returns {number[]}
 */
export function promptOrder(set, layerIndex, nLayers, worstFirst = false) {
  const indices = [];
  for (let p = 0; p < set.answers.length; p++) if (set.answers[p] !== null) indices.push(p);
  const sign = worstFirst ? -1 : 1;
  indices.sort((a, b) => {
    const ra = set.ranks[a * nLayers + layerIndex];
    const rb = set.ranks[b * nLayers + layerIndex];
    if ((ra < 0) !== (rb < 0)) return ra < 0 ? 1 : -1;
    if (ra !== rb) return sign * (ra - rb);
    const pa = set.probs[a * nLayers + layerIndex];
    const pb = set.probs[b * nLayers + layerIndex];
    const fa = Number.isFinite(pa) ? pa : -1;
    const fb = Number.isFinite(pb) ? pb : -1;
    if (fa !== fb) return sign * (fb - fa);
    return a - b;
  });
  return indices;
}

/**
 * A value with its interval in the metric's unit: "42.1% [38.0%, 46.3%]", "2.31 bits [2.10,
 * 2.52]" (the unit once), "14.2 [11.5, 17.9]" for a rank; "–" without a value.
 * @param {number | null} value
 * @param {number | null} low
 * @param {number | null} high
 * @param {string} [unit] "probability" (the default) or "share", "bits", "rank"
 * @returns {string}
 */
export function formatInterval(value, low, high, unit = "probability") {
  if (value === null || !Number.isFinite(value)) return "–";
  const shown = formatValue(value, unit);
  if (low === null || high === null || !Number.isFinite(low) || !Number.isFinite(high)) return shown;
  if (unit === "bits") return `${shown} [${formatBits(low, true)}, ${formatBits(high, true)}]`;
  return `${shown} [${formatValue(low, unit)}, ${formatValue(high, unit)}]`;
}

/**
 * What hovering layer column `layerIndex` shows: one row of labelled values per answer set.
 * @param {Dataset} dataset
 * @param {number} layerIndex
 * @returns {{layer: number, rows: {set: string, cells: [string, string][]}[]}} `set`: the
 *   series' label
 */
export function layerReadout(dataset, layerIndex) {
  const ci = `${Math.round(dataset.ci * 100)}% interval`;
  return {
    layer: dataset.layers[layerIndex],
    rows: dataset.sets.map((set) => {
      const s = set.summary;
      /** @param {string} column */
      const at = (column) => s[column]?.[layerIndex] ?? null;
      // The all-groups metric has no value of its own: each group's metric has a row.
      const cells = dataset.metrics.filter((m) => m.name !== GROUPS_METRIC).map((m) => {
        /** @type {[string, string]} */
        const cell = m.interval ? [`${m.short} (${ci})`, formatInterval(at(m.field), at(m.interval[0]), at(m.interval[1]), m.unit)] : [m.short, formatValue(at(m.field), m.unit)];
        return cell;
      });
      return { set: set.label, cells: [...cells, ["prompts", String(set.nPrompts)]] };
    }),
  };
}

/**
 * One value as the readout writes it, by its unit: a probability or share as a percentage, a
 * rank to one decimal (a median may fall between two), bits with their unit; "–" for none.
 * @param {number | null} value
 * @param {string} unit
 * @returns {string}
 */
export function formatValue(value, unit) {
  if (value === null || !Number.isFinite(value)) return "–";
  if (unit === "bits") return formatBits(value);
  if (unit === "rank") return String(Number(value.toFixed(1)));
  return formatProb(value);
}
