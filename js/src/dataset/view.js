// @ts-check
/**
 * The data-set widget's DOM: an SVG chart of the per-layer curves (one line and shaded interval
 * per answer set), a readout of the hovered layer, and the prompts behind a chosen layer, ordered
 * by the answer's rank there. Choosing a prompt asks Python to open its heatmap (`open_request`).
 * Text from the data reaches the page through `textContent` only.
 */

import { h, s } from "../shared/dom.js";
import { installDebug } from "../shared/debug.js";
import { lensMenuText } from "../shared/lens_names.js";
import { keepControlKeys } from "../shared/keys.js";
import { formatProb, formatRank } from "../format.js";
import { bandPath, chartScale, datasetCurveGeometry, labelColumns, linePath } from "./chart.js";
import { chartCurves, chartMetric, chartMetrics, datasetSeriesLook, decodeDataset, findSet, layerReadout, promptOrder } from "./data.js";

/** @typedef {import("../local_model.js").WidgetModel} WidgetModel */

const WIDTH = 640;
const HEIGHT = 260;
const PAGE = 100;

export class DatasetView {
  /**
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.dataset = decodeDataset(model.get("_meta"), model.get("_data"));
    this.geometry = datasetCurveGeometry(WIDTH, HEIGHT, this.dataset.layers.length);
    /** @type {number | null} */
    this.hover = null;
    this.shown = PAGE;
    this.requests = 0;
    this.abort = new AbortController();
    this.ui = this.build();
    keepControlKeys(this.ui.root, this.abort.signal);
    this.drawChart();
    this.drawReadout();
    this.drawPrompts();
    this.drawStatus();
    /** @type {[string, () => void][]} */
    this.listeners = [
      ["change:layer", () => { this.shown = PAGE; this.drawChart(); this.drawReadout(); this.drawPrompts(); }],
      ["change:answer_set", () => { this.shown = PAGE; this.drawChart(); this.drawPrompts(); }],
      ["change:lens_name", () => { this.shown = PAGE; this.drawPrompts(); }],
      ["change:order", () => { this.shown = PAGE; this.drawPrompts(); }],
      ["change:metric", () => this.drawChart()],
      ["change:status", () => this.drawStatus()],
    ];
    for (const [event, fn] of this.listeners) model.on(event, fn);
    this.removeDebug = installDebug(el, "dataset", this.debugApi());
  }

  destroy() {
    this.abort.abort();
    for (const [event, fn] of this.listeners) this.model.off(event, fn);
    this.ui.root.remove();
    this.removeDebug();
  }

  /** The chosen layer's column, or null. */
  chosenIndex() {
    const layer = this.model.get("layer");
    const index = layer === null || layer === undefined ? -1 : this.dataset.layers.indexOf(layer);
    return index < 0 ? null : index;
  }

  /** @returns {import("./data.js").DatasetSet} */
  currentSet() {
    return findSet(this.dataset, this.model.get("answer_set"), this.model.get("lens_name"));
  }

  /** Makes the elements (once). */
  build() {
    const d = this.dataset;
    const root = h("div", "murano-ds-root");
    const header = h("div", "murano-ds-header");
    header.append(h("span", "murano-ds-title", {}, d.title));
    const metricSelect = h("select", "murano-ds-select", { "aria-label": "what the chart shows" });
    for (const spec of chartMetrics(this.dataset)) {
      metricSelect.append(h("option", "", { value: spec.name }, spec.label));
    }
    metricSelect.value = this.model.get("metric") || "answer_prob";
    metricSelect.addEventListener("change", () => this.send({ metric: metricSelect.value }));
    header.append(metricSelect);
    root.append(header);

    const svg = s("svg", {
      class: "murano-ds-chart",
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      role: "img",
      tabindex: 0,
      "aria-label": "mean per layer with intervals; arrow keys move between layers, Enter chooses one",
    });
    svg.addEventListener("mousemove", (event) => this.setHover(this.layerAtClient(/** @type {MouseEvent} */ (event).clientX)));
    svg.addEventListener("mouseleave", () => this.setHover(null));
    svg.addEventListener("click", (event) => this.choose(this.layerAtClient(/** @type {MouseEvent} */ (event).clientX)));
    svg.addEventListener("keydown", (event) => this.onKey(/** @type {KeyboardEvent} */ (event)));
    svg.addEventListener("blur", () => this.setHover(null));
    root.append(svg);

    // Filled by drawChart: its curves (the series, or the token groups) name the legend.
    const legend = h("div", "murano-ds-legend");
    root.append(legend);

    const readout = h("div", "murano-ds-readout", { "aria-live": "polite" });
    root.append(readout);

    const panel = h("div", "murano-ds-prompts");
    const bar = h("div", "murano-ds-prompts-bar");
    const panelTitle = h("span", "murano-ds-prompts-title");
    const setSelect = h("select", "murano-ds-select", { "aria-label": "answer set" });
    const setNames = [...new Set(d.sets.map((set) => set.name))];
    for (const name of setNames) setSelect.append(h("option", "", { value: name }, name));
    setSelect.value = this.currentSet().name;
    setSelect.hidden = setNames.length < 2;
    setSelect.addEventListener("change", () => this.send({ answer_set: setSelect.value }));
    // Several lenses side by side: whose ranks order the list (and whose heatmap opens first).
    const lensSelect = h("select", "murano-ds-select murano-ds-lens", { "aria-label": "lens" });
    for (const lens of d.lenses) lensSelect.append(h("option", "", { value: lens.name }, lensMenuText(lens.name, lens.title)));
    lensSelect.hidden = d.lenses.length < 2;
    if (d.lenses.length) lensSelect.value = this.currentSet().lens ?? d.lenses[0].name;
    lensSelect.addEventListener("change", () => this.send({ lens_name: lensSelect.value }));
    const orderButton = h("button", "murano-ds-button", { type: "button" });
    orderButton.addEventListener("click", () => this.send({ order: this.model.get("order") === "worst" ? "best" : "worst" }));
    bar.append(panelTitle, setSelect, lensSelect, orderButton);
    const list = h("ol", "murano-ds-list");
    const more = h("button", "murano-ds-button murano-ds-more", { type: "button" });
    more.addEventListener("click", () => {
      this.shown += PAGE;
      this.drawPrompts();
    });
    panel.append(bar, list, more);
    root.append(panel);

    const status = h("div", "murano-ds-status", { role: "status" });
    root.append(status);
    this.el.append(root);
    return { root, metricSelect, svg, legend, readout, panel, panelTitle, setSelect, lensSelect, orderButton, list, more, status };
  }

  /**
   * @param {Record<string, any>} values
   */
  send(values) {
    for (const [name, value] of Object.entries(values)) this.model.set(name, value);
    this.model.save_changes();
  }

  /** @param {number} clientX */
  layerAtClient(clientX) {
    const rect = this.ui.svg.getBoundingClientRect();
    const px = rect.width > 0 ? ((clientX - rect.left) * WIDTH) / rect.width : 0;
    return this.geometry.layerAt(px);
  }

  /** @param {number | null} index */
  setHover(index) {
    if (index === this.hover) return;
    this.hover = index;
    this.drawChart();
    this.drawReadout();
  }

  /** @param {number} index */
  choose(index) {
    this.send({ layer: this.dataset.layers[index] });
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    const n = this.dataset.layers.length;
    const at = this.hover ?? this.chosenIndex() ?? n - 1;
    /** @type {Record<string, number>} */
    const moves = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: n - 1 };
    if (event.key in moves) {
      event.preventDefault();
      this.setHover(Math.min(n - 1, Math.max(0, moves[event.key])));
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      this.choose(at);
    }
  }

  drawChart() {
    const d = this.dataset;
    const metric = chartMetric(d, this.model.get("metric"));
    const curves = chartCurves(d, metric, this.model.get("answer_set"));
    // The value axis follows the metric: 0-100 % for a fraction, a round top for bits or ranks.
    const scale = chartScale(metric, d.sets.map((set) => /** @type {Record<string, (number | null)[]>} */ (/** @type {unknown} */ (set.summary))));
    const g = (this.geometry = datasetCurveGeometry(WIDTH, HEIGHT, d.layers.length, {}, scale.high));
    this.ui.svg.replaceChildren();
    const axes = s("g", { class: "murano-ds-axes" });
    for (const v of scale.ticks) {
      axes.append(s("line", { class: "murano-ds-grid", x1: g.left, x2: g.right, y1: g.y(v), y2: g.y(v) }));
      axes.append(s("text", { class: "murano-ds-tick", x: g.left - 6, y: g.y(v) + 4, "text-anchor": "end" }, scale.label(v)));
    }
    for (const i of labelColumns(d.layers.length, 16)) {
      axes.append(s("text", { class: "murano-ds-tick", x: g.x(i), y: g.bottom + 16, "text-anchor": "middle" }, String(d.layers[i])));
    }
    axes.append(s("text", { class: "murano-ds-axis-label", x: (g.left + g.right) / 2, y: g.height - 2, "text-anchor": "middle" }, "layer"));
    this.ui.svg.append(axes);
    const chosen = this.chosenIndex();
    if (chosen !== null) {
      this.ui.svg.append(s("line", { class: "murano-ds-chosen", x1: g.x(chosen), x2: g.x(chosen), y1: g.top, y2: g.bottom }));
    }
    if (this.hover !== null) {
      this.ui.svg.append(s("line", { class: "murano-ds-hover", x1: g.x(this.hover), x2: g.x(this.hover), y1: g.top, y2: g.bottom }));
    }
    curves.forEach((curve, i) => {
      // Curve i in its colour (band, line and dots take it as currentColor): set i in the
      // palette's colour i; with several lenses, the lens's colour and the set's dash; a token
      // group (the all-groups metric) in the group's colour and the lens's dash.
      const group = s("g", { class: "murano-ds-series", style: `color: ${curve.colour}`, "data-series": i });
      group.append(s("path", { class: "murano-ds-band", d: bandPath(g, curve.low, curve.high) }));
      group.append(s("path", { class: "murano-ds-line", d: linePath(g, curve.mean), "stroke-dasharray": curve.dash || "none", "data-set": curve.set, "data-lens": curve.lens, "data-group": curve.group }));
      curve.mean.forEach((v, j) => {
        if (v === null || !Number.isFinite(v)) return;
        group.append(s("circle", { class: "murano-ds-dot", cx: g.x(j), cy: g.y(v), r: j === this.hover ? 4 : 2.5 }));
      });
      this.ui.svg.append(group);
    });
    this.ui.legend.replaceChildren(
      ...curves.map((curve) => {
        const item = h("span", "murano-ds-legend-item");
        item.append(swatch({ colour: curve.colour, dash: curve.dash }), h("span", "", {}, curve.label));
        return item;
      }),
    );
  }

  drawReadout() {
    const index = this.hover ?? this.chosenIndex();
    if (index === null) {
      this.ui.readout.replaceChildren(h("span", "murano-ds-hint", {}, "Hover over a layer to read its values; click it to list its prompts."));
      return;
    }
    // One row per value, one column per series (answer set, lens): every metric the registry
    // sends fits the chart's width (a row per series and a column per value ran past it once
    // every heatmap metric came with an interval), and a few series stay side by side.
    const readout = layerReadout(this.dataset, index);
    const table = h("table", "murano-ds-table");
    const head = h("tr", "");
    head.append(h("th", "", {}, `Layer ${readout.layer}`));
    readout.rows.forEach((row, i) => {
      const name = h("th", "murano-ds-set");
      name.append(swatch(datasetSeriesLook(this.dataset, i)), h("span", "", {}, row.set));
      head.append(name);
    });
    table.append(head);
    readout.rows[0].cells.forEach(([label], k) => {
      const tr = h("tr", "");
      tr.append(h("th", "murano-ds-label", {}, label));
      for (const row of readout.rows) tr.append(h("td", "", {}, row.cells[k][1]));
      table.append(tr);
    });
    this.ui.readout.replaceChildren(table);
  }

  drawPrompts() {
    const index = this.chosenIndex();
    const set = this.currentSet();
    this.ui.setSelect.value = set.name;
    if (set.lens !== null) this.ui.lensSelect.value = set.lens;
    const worst = this.model.get("order") === "worst";
    this.ui.orderButton.textContent = worst ? "Worst first" : "Best first";
    this.ui.orderButton.setAttribute("aria-label", `order: ${worst ? "worst" : "best"} rank first; click to reverse`);
    if (index === null) {
      this.ui.panelTitle.textContent = "Choose a layer in the chart to list its prompts.";
      this.ui.list.replaceChildren();
      this.ui.more.hidden = true;
      return;
    }
    const layers = this.dataset.layers;
    const order = promptOrder(set, index, layers.length, worst);
    const lensTitle = this.dataset.lenses.find((l) => l.name === set.lens)?.title;
    const under = set.lens === null ? "" : ` under the ${lensMenuText(set.lens, lensTitle ?? set.lens)}`;
    // A plain list of answers is the one set "answer": "their answer", not "their answer answer".
    const whose = set.name === "answer" ? "answer" : `${set.name} answer`;
    this.ui.panelTitle.textContent = `Layer ${layers[index]}: ${order.length} prompts by the rank of their ${whose}${under}`;
    const items = order.slice(0, this.shown).map((p) => {
      const item = h("li", "murano-ds-item");
      const button = h("button", "murano-ds-prompt", { type: "button", "data-prompt": p });
      const rank = set.ranks[p * layers.length + index];
      const prob = set.probs[p * layers.length + index];
      button.append(
        h("span", "murano-ds-rank", {}, rank < 0 ? "–" : formatRank(rank)),
        h("span", "murano-ds-prob", {}, formatProb(prob)),
        h("span", "murano-ds-text", {}, this.dataset.prompts[p]),
        h("span", "murano-ds-answer", {}, `→ ${set.answers[p] ?? ""}`),
      );
      button.title = `open the heatmap of prompt ${p}`;
      button.addEventListener("click", () => this.open(p, set.name, set.lens));
      item.append(button);
      return item;
    });
    this.ui.list.replaceChildren(...items);
    this.ui.more.hidden = order.length <= this.shown;
    this.ui.more.textContent = `Show more (${Math.min(this.shown, order.length)} of ${order.length} shown)`;
  }

  /**
   * @param {number} prompt
   * @param {string} answerSet
   * @param {string | null} [lens] the lens shown first, among several
   */
  open(prompt, answerSet, lens = null) {
    if (!this.dataset.canOpen) {
      this.ui.status.textContent = this.dataset.reason;
      this.ui.status.classList.add("murano-ds-warn");
      return;
    }
    this.requests += 1;
    this.ui.status.classList.remove("murano-ds-warn");
    this.ui.status.textContent = `Opening prompt ${prompt}…`;
    this.send({ open_request: { prompt, answer_set: answerSet, ...(lens === null ? {} : { lens }), n: this.requests } });
  }

  drawStatus() {
    const text = this.model.get("status") || "";
    if (!text) return;
    this.ui.status.textContent = text;
    this.ui.status.classList.toggle("murano-ds-warn", text.startsWith("Cannot"));
  }

  /** The test hook's object (`el.__muranoDataset`, see `../shared/debug.js`). */
  debugApi() {
    const view = this;
    return {
      get state() {
        return { hover: view.hover, layer: view.model.get("layer"), shown: view.shown };
      },
      drawNow: () => view.drawChart(),
    };
  }
}

/**
 * The legend's and the readout's mark of a series: a short line in its colour and dash.
 * @param {{colour: string, dash: string}} look
 */
function swatch(look) {
  const mark = s("svg", { class: "murano-ds-swatch", width: 18, height: 6, viewBox: "0 0 18 6", "aria-hidden": "true", style: `color: ${look.colour}` });
  mark.append(s("line", { x1: 0, x2: 18, y1: 3, y2: 3, "stroke-dasharray": look.dash || "none" }));
  return mark;
}
