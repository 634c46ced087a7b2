// @ts-check
/**
 * The trajectory chart's DOM: an SVG built with DOM calls (text only through `textContent`), a
 * probability / rank switch and a legend whose entries switch lines on and off and give each
 * line's value at the chosen layer. The data and the geometry come from the pure modules
 * `trajectory.js` and `trajectory_layout.js`.
 */

import { h, s as svg } from "../shared/dom.js"; // `s` is a series here
import { waitingNote } from "./details.js";
import { formatProb, formatRank } from "../shared/format.js";
import { chartModeFor, lensSeries, rankAxisMax, seriesShown, seriesSummary, trajectorySeries, valueScale } from "./trajectory.js";
import { formatMetric, metricSpec, shortLabel } from "./metrics.js";
import { drawOrder, markerPath, rowAtY, rowCentreY, seriesSegments, seriesStyle, strokeAttributes, swatchLine, trajectoryRowsGeometry, valueX } from "./trajectory_layout.js";
import { displayToken, truncateText } from "../shared/tokens.js";
import { rowLabel, rowLabelled, rowNames } from "./rows.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {import("./trajectory.js").Series} Series
 * @typedef {import("./trajectory.js").TrajectoryMode} TrajectoryMode
 * @typedef {import("./trajectory_layout.js").ChartGeometry} ChartGeometry
 *
 * @typedef {object} ChartInput What the chart shows (from the view's state and the heatmap's layout).
 * @property {LensData} data the lens shown
 * @property {import("./trajectory.js").OtherLens[]} [others] the lenses side by side with it
 *   (their answer's lines are drawn too)
 * @property {string} [metric] the metric the heatmap's colours show: the chart's mode follows it
 *   when it changes (`chartModeFor`), a metric in bits getting a mode of its own
 * @property {number} prompt
 * @property {number} position
 * @property {"hover" | "focus" | "pinned" | "last"} source why this column
 * @property {number} row the layer slider's row
 * @property {number} rowH the heatmap's row height
 * @property {number} heatY the heatmap's first row's top
 * @property {number} heightBelow the heatmap's height under its rows
 * @property {boolean} detailsRequested the detail sections were asked for
 * @property {boolean} [detailsLate] asked for, and not come in time (see `waitingNote`)
 *
 * @typedef {object} ChartDebug What the chart drew last, for tests.
 * @property {number} prompt
 * @property {number} position
 * @property {string} source
 * @property {TrajectoryMode} mode
 * @property {number} row
 * @property {ChartGeometry} geometry
 * @property {{key: string, kind: string, label: string, token: string | null, loaded: boolean,
 *   shown: boolean, values: (number | null)[], segments: [number, number][][]}[]} series
 */

/**
 * A value as text in the chart's mode.
 * @param {TrajectoryMode} mode
 * @param {number} v
 */
function formatValue(mode, v) {
  return mode === "rank" ? formatRank(v) : formatProb(v);
}

const SOURCE_TEXT = { hover: "hovered", focus: "focused", pinned: "pinned", last: "last position" };

export class TrajectoryView {
  /**
   * @param {HTMLElement} panel the element the chart fills
   * @param {string} id a page-unique prefix for element ids
   * @param {{onLayer: (row: number) => void, onInteract: () => void}} callbacks
   *   `onLayer`: a click on the plot chose a layer; `onInteract`: the user turned to the chart
   *   (the view loads the detail sections then)
   */
  constructor(panel, id, callbacks) {
    this.panel = panel;
    this.callbacks = callbacks;
    /** @type {TrajectoryMode} */
    this.mode = "prob";
    /** @type {Map<string, boolean>} key → shown, where the user switched a line */
    this.toggled = new Map();
    /** @type {ChartInput | null} */
    this.input = null;
    this.renderKey = "";
    /** @type {LensData | null} */
    this.dataSeen = null;
    /** @type {ChartGeometry | null} */
    this.geometry = null;
    /** @type {ChartDebug | null} */
    this.debug = null;
    /** Some line drawn last waits for a section that has not arrived (the view asks for it). */
    this.waiting = false;

    const descId = `${id}-traj-desc`;
    this.svg = /** @type {SVGSVGElement} */ (svg("svg", { class: "murano-traj-svg", role: "img", "aria-labelledby": descId }));
    this.desc = svg("desc", { id: descId });
    this.svg.append(this.desc);

    const controls = h("div", "murano-traj-controls");
    this.titleEl = h("span", "murano-traj-title");
    const modes = h("div", "murano-traj-mode", { role: "group", "aria-label": "Chart values" });
    this.probButton = h("button", "murano-traj-mode-button", { type: "button", "aria-pressed": "true", "data-mode": "prob" }, "Probability");
    this.rankButton = h("button", "murano-traj-mode-button", { type: "button", "aria-pressed": "false", "data-mode": "rank" }, "Rank (log)");
    // The heatmap's metric itself, when it is neither a probability nor a rank (KL, entropy).
    this.metricButton = h("button", "murano-traj-mode-button", { type: "button", "aria-pressed": "false", "data-mode": "metric", hidden: "" });
    modes.append(this.probButton, this.rankButton, this.metricButton);
    /** The heatmap metric the mode last followed ("" before the first). */
    this.metricSeen = "";
    controls.append(this.titleEl, modes);
    this.legend = h("ul", "murano-traj-legend", { "aria-label": "Lines (press to show or hide); values at the chosen layer" });
    this.note = h("div", "murano-traj-note", { hidden: "" });
    panel.append(this.svg, controls, this.legend, this.note);

    const abort = new AbortController();
    this.abort = abort;
    const signal = abort.signal;
    for (const button of [this.probButton, this.rankButton, this.metricButton]) {
      button.addEventListener("click", () => this.setMode(/** @type {TrajectoryMode} */ (button.dataset.mode)), { signal });
    }
    this.legend.addEventListener(
      "click",
      (event) => {
        const target = /** @type {Element | null} */ (event.target);
        const button = target && target.closest ? target.closest("button[data-series]") : null;
        if (!(button instanceof HTMLElement)) return;
        const key = button.dataset.series || "";
        const pressed = button.getAttribute("aria-pressed") === "true";
        this.toggled.set(key, !pressed);
        this.rerender();
      },
      { signal },
    );
    this.svg.addEventListener(
      "click",
      (event) => {
        if (!this.geometry) return;
        const box = this.svg.getBoundingClientRect();
        const row = rowAtY(this.geometry, event.clientY - box.top);
        if (row >= 0) this.callbacks.onLayer(row);
      },
      { signal },
    );
    panel.addEventListener("pointerenter", () => this.callbacks.onInteract(), { signal });
    panel.addEventListener("focusin", () => this.callbacks.onInteract(), { signal });
  }

  destroy() {
    this.abort.abort();
  }

  /**
   * The part of the chart a tooltip should leave visible, in viewport coordinates: the panel
   * from the plot's left edge on (the lines, the axis and the legend's values follow the hovered
   * column). Its layer-number margin may be covered: a tooltip beside a cell next to the chart
   * then stays on the cell's right instead of flipping over the cells on its left.
   * @returns {{x: number, y: number, w: number, h: number}}
   */
  keepVisibleRect() {
    const r = this.panel.getBoundingClientRect();
    const inset = Math.min(r.width, this.geometry ? this.geometry.plotX : 0);
    return { x: r.left + inset, y: r.top, w: r.width - inset, h: r.height };
  }

  /**
   * Probability or rank.
   * @param {TrajectoryMode} mode
   */
  setMode(mode) {
    this.showMode(mode);
    this.callbacks.onInteract();
    this.rerender();
  }

  /**
   * The mode and its buttons' state ("metric" only where the metric button is offered).
   * @param {TrajectoryMode} mode
   */
  showMode(mode) {
    this.mode = mode === "rank" ? "rank" : mode === "metric" && !this.metricButton.hidden ? "metric" : "prob";
    this.probButton.setAttribute("aria-pressed", String(this.mode === "prob"));
    this.rankButton.setAttribute("aria-pressed", String(this.mode === "rank"));
    this.metricButton.setAttribute("aria-pressed", String(this.mode === "metric"));
  }

  /**
   * Follows the heatmap's metric: the metric button names it (offered for a metric in bits), and
   * a change of metric sets the mode to the one that reads it (`chartModeFor`); the user's own
   * choice holds until the metric changes again.
   * @param {LensData} data
   * @param {string} metric
   */
  followMetric(data, metric) {
    const spec = metricSpec(data, metric);
    const own = chartModeFor(spec) === "metric" && spec ? spec : null;
    this.metricButton.hidden = !own;
    this.metricButton.textContent = own ? shortLabel(own.label) : "";
    if (own) this.metricButton.setAttribute("title", `The heatmap's colours: ${own.description}`);
    if (metric !== this.metricSeen) {
      this.metricSeen = metric;
      this.showMode(chartModeFor(spec));
    } else if (this.mode === "metric" && !own) {
      this.showMode("prob");
    }
  }

  rerender() {
    this.renderKey = "";
    if (this.input) this.update(this.input);
  }

  /**
   * Draws the chart for `input` (skipped when nothing it shows changed).
   * Over 100 lines on purpose: one pass from the input to the SVG in drawing order (scales, the
   * axes, a line per token or group, the sum, the cursor), each part a few lines that read the
   * same locals; split, each piece would take most of them as arguments.
   * @param {ChartInput} input
   */
  update(input) {
    this.input = input;
    const { data, prompt, position, source, row, rowH, heatY, heightBelow, detailsRequested, detailsLate = false } = input;
    const others = input.others || [];
    const width = this.panel.clientWidth || 280;
    const loaded = [data, ...others.map((o) => o.data)].reduce((n, d) => n + Object.keys(d.arrays).length, 0);
    const metric = input.metric || "";
    if (metric) this.followMetric(data, metric);
    const key = [prompt, position, source, row, rowH, heatY, heightBelow, width, this.mode, metric, loaded, data.L, detailsRequested, detailsLate, others.length].join("|");
    if (key === this.renderKey && this.dataSeen === data) return;
    this.renderKey = key;
    this.dataSeen = data;

    const mode = this.mode;
    const g = trajectoryRowsGeometry({ width, nLayers: data.L, rowH, heatY, heightBelow });
    this.geometry = g;
    const scale = valueScale(mode, mode === "rank" ? Math.max(rankAxisMax(data), ...others.map((o) => rankAxisMax(o.data))) : 9, { data, name: metric });
    const series = trajectorySeries(data, prompt, position, mode, metric);
    // Targets stay last in the legend: the other lenses' answer lines go before them.
    const firstTarget = series.findIndex((s) => s.kind === "target");
    if (mode !== "metric") series.splice(firstTarget < 0 ? series.length : firstTarget, 0, ...lensSeries(others, prompt, position, mode));
    const shown = series.map((s) => seriesShown(s, this.toggled));

    const root = this.svg;
    root.setAttribute("width", String(g.width));
    root.setAttribute("height", String(g.height));
    root.setAttribute("viewBox", `0 0 ${g.width} ${g.height}`);
    const children = [this.desc];

    // Grid and value ticks (above the plot, where the heatmap writes its position numbers).
    const grid = svg("g", { class: "murano-traj-grid" });
    for (const tick of scale.ticks) {
      const x = valueX(g, tick.t);
      grid.append(svg("line", { x1: x, x2: x, y1: g.plotY, y2: g.plotY + g.plotH }));
    }
    const ticks = svg("g", { class: "murano-traj-ticks", "aria-hidden": "true" });
    scale.ticks.forEach((tick, i) => {
      const anchor = i === 0 && tick.t < 0.05 ? "start" : tick.t > 0.95 ? "end" : "middle";
      ticks.append(svg("text", { x: valueX(g, tick.t), y: g.plotY - 4, "text-anchor": anchor }, tick.label));
    });
    const frame = svg("rect", { class: "murano-traj-frame", x: g.plotX, y: g.plotY, width: g.plotW, height: g.plotH });

    // The layer slider's row: a band across the plot, as the heatmap outlines its row.
    const bandY = g.plotY + (data.L - 1 - row) * g.rowH;
    const band = svg("rect", { class: "murano-traj-band", x: g.plotX, y: bandY, width: g.plotW, height: g.rowH });

    // Layer labels at the left, the chosen one bold.
    const labels = svg("g", { class: "murano-traj-layers", "aria-hidden": "true" });
    for (let i = 0; i < data.L; i++) {
      const chosen = i === row;
      if (!chosen && !rowLabelled(data, i, g.labelStride)) continue;
      if (!chosen && Math.abs(i - row) * g.rowH < 11) continue;
      labels.append(svg("text", { x: g.labelX, y: rowCentreY(g, i), class: chosen ? "murano-traj-chosen" : "" }, rowLabel(data, i, "axis")));
    }
    labels.append(svg("text", { x: g.labelX, y: g.plotY - 4, class: "murano-traj-axis-name" }, "layer"));

    // The lines, then the markers at the chosen layer.
    const lines = svg("g", { class: "murano-traj-lines" });
    const markers = svg("g", { class: "murano-traj-markers" });
    /** @type {ChartDebug["series"]} */
    const drawn = [];
    const r = Math.max(2.5, Math.min(4.5, g.rowH / 3));
    const styles = series.map((s) => seriesStyle(s));
    const segmentsOf = series.map((s) => seriesSegments(s, scale, g));
    series.forEach((s, k) => {
      drawn.push({ key: s.key, kind: s.kind, label: s.label, token: s.token, loaded: s.loaded, shown: shown[k], values: s.values, segments: segmentsOf[k] });
    });
    // The widest line first: one running along another stays visible on top of it.
    for (const k of drawOrder(styles)) {
      if (!shown[k]) continue;
      const s = series[k];
      const style = styles[k];
      const group = svg("g", { "data-series": s.key, style: `color: ${style.colour}` });
      for (const points of segmentsOf[k]) {
        if (points.length === 1) {
          // A lone value (its neighbours have none): a short tick so it still shows.
          const [x, y] = points[0];
          group.append(svg("line", { class: "murano-traj-line", x1: x - 3, x2: x + 3, y1: y, y2: y, "stroke-width": style.width }));
          continue;
        }
        group.append(svg("polyline", { class: "murano-traj-line", points: points.map(([x, y]) => `${x},${y}`).join(" "), ...strokeAttributes(style) }));
      }
      lines.append(group);
      const v = s.values[row];
      if (v !== null) {
        const x = valueX(g, scale.toUnit(v));
        const y = rowCentreY(g, row);
        markers.append(svg("path", { class: `murano-traj-marker murano-traj-${style.marker}`, d: markerPath(style.marker, x, y, r * style.markerScale), style: `color: ${style.colour}; opacity: ${style.opacity}`, "data-series": s.key }));
      }
    }
    const axisTitle = svg("text", { class: "murano-traj-axis-title", x: g.plotX + g.plotW / 2, y: g.plotY + g.plotH + 16, "text-anchor": "middle" }, scale.title);
    children.push(grid, band, frame, lines, markers, labels, ticks, axisTitle);
    root.replaceChildren(...children);

    // The column, the legend and the description.
    const col = data.offsets[prompt] + position;
    const input0 = displayToken(data.tokens[data.arrays.input_ids[col]] ?? "");
    const where = `position ${position} · ${truncateText(input0, 16)} · ${SOURCE_TEXT[source]}`;
    this.titleEl.textContent = where;
    this.titleEl.setAttribute("title", `Values across layers at position ${position} (input ${input0}), ${SOURCE_TEXT[source]}. Hover, focus or pin a cell to choose the column.`);
    const spec = metricSpec(data, metric);
    const format = (/** @type {number} */ v) => (mode === "metric" && spec ? formatMetric(spec, v) : formatValue(mode, v));
    const items = series.map((s, k) => this.legendItem(s, shown[k], row, format, data));
    // The entries are made anew: the one with the keyboard focus hands it to its successor.
    const active = document.activeElement;
    const focusedKey = active instanceof HTMLElement && this.legend.contains(active) ? active.dataset.series : undefined;
    this.legend.replaceChildren(...items);
    if (focusedKey !== undefined) {
      const next = items.map((li) => li.firstElementChild).find((b) => b instanceof HTMLElement && b.dataset.series === focusedKey);
      if (next instanceof HTMLElement) next.focus({ preventScroll: true });
    }
    /** @type {Record<string, string>} */
    const waitingFor = { target: "targets", answer: "the answer", lens: "the other lenses" };
    const waiting = series.filter((s) => !s.loaded).map((s) => waitingFor[s.kind] || "the final prediction");
    const unique = [...new Set(waiting)];
    this.waiting = unique.length > 0;
    this.note.hidden = unique.length === 0;
    const what = unique.join(", ");
    this.note.textContent = !unique.length ? "" : detailsRequested ? waitingNote(what, detailsLate) : `Hover or focus a cell, or point at this chart, to load ${what}.`;
    const summary = series
      .filter((_, k) => shown[k])
      .map((s) => `${s.label}${s.token !== null ? ` ${displayToken(s.token)}` : ""}: ${seriesSummary(s, data.layers, row, format, rowNames(data))}`)
      .join(". ");
    this.desc.textContent = `${mode === "rank" ? "Rank" : mode === "metric" && spec ? shortLabel(spec.label) : "Probability"} across ${data.L} layers at ${where}. ${summary}.`;
    this.debug = { prompt, position, source, mode, row, geometry: g, series: drawn };
  }

  /**
   * One legend entry: a button that shows or hides its line, with a swatch, the line's name, its
   * token and its value at the chosen layer.
   * @param {Series} s
   * @param {boolean} shown
   * @param {number} row
   * @param {(v: number) => string} format
   * @param {LensData} data
   */
  legendItem(s, shown, row, format, data) {
    const style = seriesStyle(s);
    const li = h("li", "murano-traj-entry");
    const button = h("button", "murano-traj-item", { type: "button", "aria-pressed": String(shown), "data-series": s.key });
    const swatch = svg("svg", { class: "murano-traj-swatch", width: 26, height: 12, viewBox: "0 0 26 12", "aria-hidden": "true", style: `color: ${style.colour}` });
    swatch.append(
      svg("line", { class: "murano-traj-line", ...swatchLine(style) }),
      svg("path", { class: `murano-traj-marker murano-traj-${style.marker}`, d: markerPath(style.marker, 13, 6, Math.min(5, 3 * style.markerScale)), style: `opacity: ${style.opacity}` }),
    );
    const name = h("span", "murano-traj-name", {}, s.label);
    const value = s.values[row];
    const valueText = !s.loaded ? "loading…" : value === null ? "–" : format(value);
    const valueEl = h("span", "murano-traj-value", { "data-value": value === null ? "" : String(value) }, valueText);
    button.append(swatch, name);
    if (s.token !== null) button.append(h("span", "murano-token murano-traj-token", {}, displayToken(s.token)));
    button.append(valueEl);
    button.setAttribute("title", `${s.note}. ${shown ? "Press to hide" : "Press to show"} this line. ${seriesSummary(s, data.layers, row, format, rowNames(data))}`);
    button.setAttribute(
      "aria-label",
      `${s.label}${s.token !== null ? ` ${displayToken(s.token)}` : ""}: ${valueText} at ${rowLabel(data, row, "long")}${shown ? "" : " (hidden)"}`,
    );
    li.append(button);
    return li;
  }
}
