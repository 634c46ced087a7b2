// @ts-check
/**
 * The trajectory chart's data, as values: for one column (a prompt's position), each layer's
 * probability or rank of the top-1 token, of the model's final prediction, of the answer and of
 * each target, read from the decoded payload. Pure functions; `trajectory_layout.js` places them
 * and `trajectory_view.js` draws them.
 *
 * Where the values come from (the payload's sections, see `murano_widgets/metrics.py`):
 * - top-1: `max_probs` (base). Its rank is 0 by definition, so rank mode leaves it out.
 * - final prediction: `final_token_probs` / `final_token_ranks` (detail sections); at the
 *   prompt's last position, until those arrive, `final_last_probs` / `final_last_ranks` (base:
 *   the same values at that position only, so the chart's first column has the line at once).
 * - answer: at the prompt's last position, `answer_probs` / `answer_ranks` (one per answer set,
 *   teacher-forced: a multi-token answer's probability is the product over its tokens; base);
 *   at other positions, the first set's `answer_token_probs` / `answer_token_ranks` (the first
 *   answer token as the next token there; detail).
 * - targets: `target_probs` / `target_ranks` (detail), one line per target.
 * - token groups: `group_probs` (base), one line per group and one of their sum (probability
 *   mode only: a group has no rank); `groupSeries`.
 * - the other lenses (several side by side): the answer's line under each (the first answer
 *   set's; the final prediction's where the prompt has no answer), read from that lens's own
 *   sections as above (`lensSeries`).
 * Ranks count from 0 (rank 0 = top-1); a stored rank of 65535 reads "65535 or worse".
 */

import { RANK_CAP } from "./format.js";
import { legendTicks, metricDomain, metricSpec, metricValue, shortLabel } from "./metrics.js";
import { lensMenuText } from "./shared/lens_names.js";
import {
  cellIndex,
  cellTargetIndex,
  isFinalMissing,
  isMissing,
  LAST_POSITION_SECTIONS,
  lastPositionIndex,
  promptHasNoValue,
  promptSetIndex,
  sectionMax,
  sectionValue,
} from "./payload.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {"prob" | "rank" | "metric"} TrajectoryMode "metric": the heatmap's own metric, for
 *   one that is neither a probability nor a rank (KL, entropy: bits)
 * @typedef {"top1" | "final" | "answer" | "target" | "group" | "group_sum" | "lens" | "metric"} SeriesKind
 *
 * @typedef {object} Series One line of the chart.
 * @property {string} key stable across columns: "top1", "final", "answer:<set>", "target:<j>",
 *   "group:<j>", "group:sum", "lens:<name>"
 * @property {SeriesKind} kind
 * @property {number} index the answer set's, the target's or the other lens's index (0
 *   otherwise)
 * @property {string} label what the line is ("top-1", "final prediction", the answer set's
 *   name, "target"; under another lens, "<what> · <lens title>")
 * @property {string | null} token the tracked string, raw (null for the top-1, which differs by
 *   layer)
 * @property {string} note how it is measured, for the legend's title
 * @property {string} section the payload section the values come from
 * @property {boolean} loaded the section has arrived (else every value is null)
 * @property {(number | null)[]} values one per row (layer index), null where there is no value
 */

/** Targets drawn by default; the legend lists the others, switched off. */
export const DEFAULT_VISIBLE_TARGETS = 6;

/**
 * The column the chart follows, by priority: the hovered cell, the keyboard focus, the pinned cell
 * (on the prompt shown), else the prompt's last position (where the answer is read).
 * @param {{hover: {position: number} | null, focus: {position: number} | null, focused: boolean,
 *   selected: {prompt: number, position: number} | null, prompt: number}} state
 * @param {number} length the prompt's real tokens
 * @returns {{position: number, source: "hover" | "focus" | "pinned" | "last"}}
 */
export function chartColumn(state, length) {
  const clamp = (/** @type {number} */ p) => Math.min(Math.max(0, length - 1), Math.max(0, p));
  if (state.hover) return { position: clamp(state.hover.position), source: "hover" };
  if (state.focused && state.focus) return { position: clamp(state.focus.position), source: "focus" };
  const sel = state.selected;
  if (sel && sel.prompt === state.prompt) return { position: clamp(sel.position), source: "pinned" };
  return { position: Math.max(0, length - 1), source: "last" };
}

/**
 * Whether the payload describes a section (sent now or on request).
 * @param {LensData} data
 * @param {string} name
 */
function described(data, name) {
  return Boolean(data.meta.sections && data.meta.sections[name]) || Boolean(data.arrays[name]);
}

/**
 * The chart's mode for the heatmap's metric: the chart reads what the colours read. A metric in
 * bits (KL, entropy) is drawn itself ("metric"), a rank metric in rank mode, any probability in
 * probability mode.
 * @param {import("./payload.js").MetricSpec | undefined} spec
 * @returns {TrajectoryMode}
 */
export function chartModeFor(spec) {
  if (!spec) return "prob";
  if (spec.unit === "rank") return "rank";
  return spec.unit === "probability" ? "prob" : "metric";
}

/**
 * The line of the heatmap's metric at one column (mode "metric"): its value at every row, as the
 * cells' colours read it (`metricValue`), null where a cell has none.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} position
 * @param {string} metric
 * @returns {Series[]}
 */
export function metricSeries(data, prompt, position, metric) {
  const spec = metricSpec(data, metric);
  if (!spec) return [];
  const loaded = Boolean(data.arrays[spec.field]);
  const values = Array.from({ length: data.L }, (_, i) => {
    const v = metricValue(data, metric, cellIndex(data, prompt, i, position));
    return Number.isFinite(v) ? v : null;
  });
  return [{ key: `metric:${metric}`, kind: "metric", index: 0, label: shortLabel(spec.label), token: null, note: spec.description, section: spec.field, loaded, values }];
}

/**
 * Every line of the chart for one column, in legend order: top-1 (probability mode only), final
 * prediction, the answer(s), the targets; in "metric" mode the heatmap's metric alone.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} position among the prompt's real tokens
 * @param {TrajectoryMode} mode
 * @param {string} [metric] the heatmap's metric (mode "metric")
 * @returns {Series[]}
 */
export function trajectorySeries(data, prompt, position, mode, metric = "") {
  if (mode === "metric") return metricSeries(data, prompt, position, metric);
  const L = data.L;
  const col = data.offsets[prompt] + position;
  const cells = Array.from({ length: L }, (_, i) => cellIndex(data, prompt, i, position));
  const rowMissing = cells.map((idx) => isMissing(data, idx));
  const rank = mode === "rank";
  /** @type {Series[]} */
  const out = [];
  /**
   * @param {Omit<Series, "loaded" | "values">} base
   * @param {(i: number) => number} index the section index of row i
   * @param {boolean} [finalBased]
   */
  const add = (base, index, finalBased = false) => {
    const loaded = Boolean(data.arrays[base.section]);
    const noValue = finalBased && isFinalMissing(data, col);
    const values = cells.map((_, i) => {
      if (!loaded || rowMissing[i] || noValue) return null;
      const v = sectionValue(data, base.section, index(i));
      return Number.isFinite(v) ? v : null;
    });
    out.push({ ...base, loaded, values });
  };

  if (!rank) {
    add({ key: "top1", kind: "top1", index: 0, label: "top-1", token: null, note: "each layer's own most likely token", section: "max_probs" }, (i) => cells[i]);
  }
  const last = position === data.lengths[prompt] - 1;
  const cellSection = rank ? "final_token_ranks" : "final_token_probs";
  const lastSection = LAST_POSITION_SECTIONS[cellSection];
  // At the last position the base section serves until the cell section arrives (same values).
  const fromLast = last && !data.arrays[cellSection] && Boolean(data.arrays[lastSection]);
  if ((fromLast || described(data, cellSection)) && data.arrays.final_tokens) {
    add(
      {
        key: "final",
        kind: "final",
        index: 0,
        label: "final prediction",
        token: data.tokens[data.arrays.final_tokens[col]] ?? null,
        note: "the token the model finally predicts here",
        section: fromLast ? lastSection : cellSection,
      },
      fromLast ? (i) => lastPositionIndex(data, i, prompt) : (i) => cells[i],
      true,
    );
  }

  const sets = data.answerSets;
  if (last) {
    const section = rank ? "answer_ranks" : "answer_probs";
    if (described(data, section)) {
      sets.forEach((set, s) => {
        const answer = set.answers[prompt];
        if (answer === null) return;
        const n = set.nTokens[prompt];
        const forms = set.nAccepted[prompt];
        const summed = forms > 1 ? `, summed over ${forms} accepted forms` : "";
        const note = rank
          ? `rank of the answer's first token at the prompt's last position${forms > 1 ? " (the best form's)" : ""}`
          : n && n > 1
            ? `probability of the whole answer (teacher-forced over its tokens${summed})`
            : `probability of the answer as the next token${summed}`;
        add({ key: `answer:${s}`, kind: "answer", index: s, label: set.name, token: answer, note, section }, (i) => promptSetIndex(data, i, prompt, s));
      });
    }
  } else if (sets.length && sets[0].answers[prompt] !== null) {
    const section = rank ? "answer_token_ranks" : "answer_token_probs";
    if (described(data, section) && !promptHasNoValue(data, section, prompt)) {
      const n = sets[0].nTokens[prompt];
      const note = `${rank ? "rank" : "probability"} of the answer's first token as the next token here${n && n > 1 ? ` (of ${n})` : ""}`;
      add({ key: "answer:0", kind: "answer", index: 0, label: sets[0].name, token: sets[0].answers[prompt], note, section }, (i) => cells[i]);
    }
  }

  const targetSection = rank ? "target_ranks" : "target_probs";
  if (data.targets.length && described(data, targetSection)) {
    data.targets.forEach((target, j) => {
      add(
        { key: `target:${j}`, kind: "target", index: j, label: "target", token: target, note: `${rank ? "rank" : "probability"} of the target's first token as the next token`, section: targetSection },
        (i) => cellTargetIndex(data, prompt, i, position, j),
      );
    });
  }
  if (!rank) out.push(...groupSeries(data, cells, rowMissing));
  return out;
}

/**
 * The token groups' lines at one column (`cells`: its index in each row), and their sum: one
 * per group, then "sum of groups" (with two groups or more). The sum is of the lines as drawn
 * (a token in two groups counts twice: groups given as disjoint languages' words do not share).
 * @param {LensData} data
 * @param {number[]} cells
 * @param {boolean[]} rowMissing
 * @returns {Series[]}
 */
export function groupSeries(data, cells, rowMissing) {
  const n = data.groups.length;
  const array = data.arrays.group_probs;
  if (!n || !array) return [];
  const scale = data.scales.group_probs ?? 1;
  const note = "probability that the next token is one of the group's tokens";
  /** @type {Series[]} */
  const out = data.groups.map((name, j) => ({
    key: `group:${j}`,
    kind: /** @type {SeriesKind} */ ("group"),
    index: j,
    label: name,
    token: null,
    note,
    section: "group_probs",
    loaded: true,
    values: cells.map((idx, i) => {
      const v = array[idx * n + j] * scale;
      return rowMissing[i] || !Number.isFinite(v) ? null : v;
    }),
  }));
  if (n > 1) {
    const values = cells.map((_, i) => {
      const parts = out.map((line) => line.values[i]);
      return parts.some((v) => v === null) ? null : parts.reduce((sum, v) => /** @type {number} */ (sum) + /** @type {number} */ (v), 0);
    });
    out.push({ key: "group:sum", kind: "group_sum", index: n, label: "sum of groups", token: null, note: "the groups' probabilities added up", section: "group_probs", loaded: true, values });
  }
  return out;
}

/**
 * @typedef {object} OtherLens A lens side by side with the one shown.
 * @property {string} name
 * @property {string} title what the views call it ("Tuned lens")
 * @property {LensData} data its decoded sections
 */

/**
 * The answer's line under each of the other lenses, at one column: the first answer set's
 * (where the prompt has one), else the final prediction's: what says whether the lenses tell the
 * same story. Each comes from that lens's own sections, exactly as its own chart would draw it
 * (`trajectorySeries`), relabelled with the lens's title.
 * @param {OtherLens[]} others
 * @param {number} prompt
 * @param {number} position among the prompt's real tokens
 * @param {TrajectoryMode} mode
 * @returns {Series[]}
 */
export function lensSeries(others, prompt, position, mode) {
  /** @type {Series[]} */
  const out = [];
  others.forEach((other, k) => {
    const lines = trajectorySeries(other.data, prompt, position, mode);
    const line = lines.find((s) => s.kind === "answer") || lines.find((s) => s.kind === "final");
    if (!line) return;
    out.push({
      ...line,
      key: `lens:${other.name}`,
      kind: "lens",
      index: k,
      label: `${line.label} · ${lensMenuText(other.name, other.title)}`,
      note: `${line.note}, under the ${lensMenuText(other.name, other.title)}`,
    });
  });
  return out;
}

/**
 * The chart's rank axis ends at one less than a power of ten (at least 9, at most the stored cap),
 * from the largest rank in the rank sections that have arrived: the same for every column, so the
 * axis does not jump while the pointer moves.
 * @param {LensData} data
 */
export function rankAxisMax(data) {
  let top = 0;
  for (const name of ["final_token_ranks", "final_last_ranks", "answer_ranks", "answer_token_ranks", "target_ranks"]) {
    if (data.arrays[name]) top = Math.max(top, sectionMax(data, name));
  }
  return niceRankMax(top);
}

/**
 * One less than the smallest power of ten above `rank` (at least 9; the cap stays the cap).
 * @param {number} rank
 */
export function niceRankMax(rank) {
  if (!(rank > 9)) return 9;
  if (rank >= RANK_CAP) return RANK_CAP;
  return Math.min(RANK_CAP, 10 ** Math.ceil(Math.log10(rank + 1)) - 1);
}

/**
 * @typedef {object} ValueScale Where a value sits across the plot: t = 0 at the left, 1 at the
 *   right; "more likely" is always to the right (rank 0 at the right end); a metric's larger
 *   values to the right, as its colour bar.
 * @property {TrajectoryMode} mode
 * @property {number} max the largest probability (1) or rank on the axis
 * @property {(v: number) => number} toUnit
 * @property {{value: number, t: number, label: string}[]} ticks
 * @property {string} title the axis title
 */

/**
 * The value axis: probability 0–100 % (linear), or rank on a log scale (log10(rank + 1)) with
 * rank 0 at the right.
 * In "metric" mode, the metric's colour domain and its legend's ticks (`metric`: the payload and
 * the metric's name), so the chart and the colour bar share one scale.
 * @param {TrajectoryMode} mode
 * @param {number} [rankMax] the largest rank on the axis (see `rankAxisMax`)
 * @param {{data: LensData, name: string}} [metric]
 * @returns {ValueScale}
 */
export function valueScale(mode, rankMax = 9, metric) {
  if (mode === "metric" && metric) {
    const spec = /** @type {import("./payload.js").MetricSpec} */ (metricSpec(metric.data, metric.name));
    const domain = metricDomain(metric.data, metric.name);
    const span = domain.max - domain.min || 1;
    const toUnit = (/** @type {number} */ v) => Math.min(1, Math.max(0, domain.log ? Math.log1p(Math.max(0, v - domain.min)) / Math.log1p(span) : (v - domain.min) / span));
    return {
      mode,
      max: domain.max,
      toUnit,
      ticks: legendTicks(spec, domain).map((tick) => ({ value: NaN, t: tick.t, label: tick.label })),
      title: `${shortLabel(spec.label)} →`,
    };
  }
  if (mode === "metric") mode = "prob";
  if (mode === "prob") {
    const toUnit = (/** @type {number} */ v) => Math.min(1, Math.max(0, v));
    return {
      mode,
      max: 1,
      toUnit,
      ticks: [0, 0.25, 0.5, 0.75, 1].map((v) => ({ value: v, t: v, label: `${Math.round(v * 100)}%` })),
      title: "probability →",
    };
  }
  const max = Math.max(1, rankMax);
  mode = "rank";
  const den = Math.log10(max + 1);
  const toUnit = (/** @type {number} */ v) => 1 - Math.min(1, Math.max(0, Math.log10(Math.max(0, v) + 1) / den));
  const values = [0, 1];
  for (let v = 10; v <= max; v *= 10) values.push(v);
  if (max >= RANK_CAP || toUnit(values[values.length - 1]) - toUnit(max) > 0.12) values.push(max);
  return {
    mode,
    max,
    toUnit,
    ticks: values.map((v) => ({ value: v, t: toUnit(v), label: rankTick(v) })),
    title: "← rank (log scale; 0 = top-1)",
  };
}

/**
 * A rank as a short axis label: "0", "10", "1k", "≥65535".
 * @param {number} v
 */
function rankTick(v) {
  if (v >= RANK_CAP) return `≥${RANK_CAP}`;
  if (v >= 1000 && v % 1000 === 0) return `${v / 1000}k`;
  if (v >= 1000) return `${Number((v / 1000).toFixed(1))}k`;
  return String(v);
}

/**
 * Which series are drawn: all but the targets after the first `DEFAULT_VISIBLE_TARGETS`, unless
 * the user switched a line on or off (`toggled`: key → shown).
 * @param {Series} series
 * @param {Map<string, boolean>} toggled
 */
export function seriesShown(series, toggled) {
  const choice = toggled.get(series.key);
  if (choice !== undefined) return choice;
  return series.kind !== "target" || series.index < DEFAULT_VISIBLE_TARGETS;
}

/**
 * A one-line summary of a series for screen readers and the legend's title: where it starts,
 * where it ends, and its value at the chosen row.
 * @param {Series} series
 * @param {number[]} layers model layer of each row
 * @param {number} row the chosen row
 * @param {(v: number) => string} format
 * @param {string[]} [names] each row's name (default "L" and its layer; sublayer rows have
 *   names of their own: `rows.js`)
 */
export function seriesSummary(series, layers, row, format, names = layers.map((layer) => `L${layer}`)) {
  const first = series.values.findIndex((v) => v !== null);
  if (first < 0) return series.loaded ? "no value" : "loading";
  let lastRow = first;
  series.values.forEach((v, i) => {
    if (v !== null) lastRow = i;
  });
  const at = series.values[row];
  const parts = [`${names[first]} ${format(/** @type {number} */ (series.values[first]))}`];
  if (lastRow !== first) parts.push(`${names[lastRow]} ${format(/** @type {number} */ (series.values[lastRow]))}`);
  return `${parts.join(" → ")}; at ${names[row]}: ${at === null ? "no value" : format(at)}`;
}
