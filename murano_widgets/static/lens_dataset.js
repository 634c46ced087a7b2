// Built by `npm run build` (js/build.mjs) from js/src with esbuild; do not edit: edit js/src.

// src/shared/codec.js
var DTYPE_SIZES = Object.freeze({ uint8: 1, int16: 2, uint16: 2, uint32: 4, int32: 4, float32: 4 });
var CONSTRUCTORS = Object.freeze({
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  int32: Int32Array,
  float32: Float32Array
});
var HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
function decodeBase64(text) {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
function toBytes(buffer) {
  if (buffer instanceof Uint8Array) return buffer;
  if (ArrayBuffer.isView(buffer)) {
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  if (typeof buffer === "string") return decodeBase64(buffer);
  if (buffer && typeof buffer === "object" && typeof /** @type {any} */
  buffer.byteLength === "number") {
    return new Uint8Array(
      /** @type {ArrayBuffer} */
      buffer
    );
  }
  throw new TypeError(`expected binary data (DataView, ArrayBuffer or base64), got ${typeof buffer}`);
}
function readTypedArray(buffer, dtype, length, accepted = Object.keys(DTYPE_SIZES)) {
  const size = accepted.includes(dtype) ? (
    /** @type {Record<string, number>} */
    DTYPE_SIZES[dtype]
  ) : void 0;
  if (!size) throw new Error(`unsupported dtype ${JSON.stringify(dtype)} (expected ${accepted.join(", ")})`);
  const Ctor = CONSTRUCTORS[
    /** @type {Dtype} */
    dtype
  ];
  const bytes = toBytes(buffer);
  if (length !== void 0 && bytes.byteLength !== length * size) {
    throw new Error(`expected ${length} ${dtype} values (${length * size} bytes), got ${bytes.byteLength} bytes`);
  }
  if (bytes.byteLength % size !== 0) {
    throw new Error(`${bytes.byteLength} bytes is not a whole number of ${dtype} values`);
  }
  const n = bytes.byteLength / size;
  if (size === 1 || HOST_LITTLE_ENDIAN && bytes.byteOffset % size === 0) {
    return new Ctor(
      /** @type {ArrayBuffer} */
      bytes.buffer,
      bytes.byteOffset,
      n
    );
  }
  const out = new Ctor(n);
  if (HOST_LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes);
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const get = {
      int16: (i) => view.getInt16(i * 2, true),
      uint16: (i) => view.getUint16(i * 2, true),
      uint32: (i) => view.getUint32(i * 4, true),
      int32: (i) => view.getInt32(i * 4, true),
      float32: (i) => view.getFloat32(i * 4, true)
    }[
      /** @type {Exclude<Dtype, "uint8">} */
      dtype
    ];
    for (let i = 0; i < n; i++) out[i] = get(i);
  }
  return out;
}
function readSection(buffer, dtype, length, name, accepted) {
  try {
    return readTypedArray(buffer, dtype, length, accepted);
  } catch (error) {
    throw new Error(`section ${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// src/local_model.js
function kernelFreeModel(values) {
  const listeners = /* @__PURE__ */ new Map();
  return {
    get: (name) => values[name],
    set(name, value) {
      if (Object.is(values[name], value)) return;
      values[name] = value;
      for (const fn of [...listeners.get(`change:${name}`) || []]) fn();
    },
    on(event, fn) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, set = /* @__PURE__ */ new Set());
      set.add(fn);
    },
    off(event, fn) {
      if (!event) listeners.clear();
      else if (!fn) listeners.delete(event);
      else listeners.get(event)?.delete(fn);
    },
    save_changes() {
    }
  };
}

// src/shared/dom.js
var SVG_NS = "http://www.w3.org/2000/svg";
function fill(element, attrs, text) {
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (text !== void 0) element.textContent = text;
  return element;
}
function h(tag, className, attrs = {}, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  return fill(element, attrs, text);
}
function s(tag, attrs = {}, text) {
  return fill(
    /** @type {SVGElement} */
    document.createElementNS(SVG_NS, tag),
    attrs,
    text
  );
}

// src/shared/debug.js
var DEBUG_HOOKS = Object.freeze({ heatmap: "__muranoDebug", diff: "__muranoDiffDebug", dataset: "__muranoDataset" });
function installDebug(el, widget, api) {
  const name = DEBUG_HOOKS[widget];
  const host = (
    /** @type {Record<string, unknown>} */
    /** @type {unknown} */
    el
  );
  host[name] = api;
  return () => {
    if (host[name] === api) delete host[name];
  };
}

// src/shared/lens_names.js
function lensMenuText(name, title) {
  const plain = (t) => t.toLowerCase().replace(/ lens$/, "");
  return plain(title) === plain(name) ? title : `${title} (${name})`;
}

// src/shared/keys.js
var NAVIGATION = /* @__PURE__ */ new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);
var PRESS = /* @__PURE__ */ new Set(["Enter", " "]);
function controlKind(target) {
  if (!target || typeof target.tagName !== "string") return null;
  const tag = target.tagName.toLowerCase();
  const type = String(target.type ?? "").toLowerCase();
  if (tag === "input") {
    if (type === "range") return "range";
    if (type === "checkbox" || type === "radio" || type === "button" || type === "submit" || type === "reset") return "button";
    return "text";
  }
  if (tag === "textarea" || target.isContentEditable === true) return "text";
  if (tag === "select") return "select";
  if (tag === "button" || tag === "summary") return "button";
  const tabindex = typeof target.getAttribute === "function" ? target.getAttribute("tabindex") : null;
  if (tabindex !== null && tabindex !== "-1") return "composite";
  return null;
}
function keepsKey(kind, event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return false;
  const key = event.key;
  if (key === "Enter" && event.shiftKey) return false;
  switch (kind) {
    case "range":
      return NAVIGATION.has(key);
    case "select":
      return NAVIGATION.has(key) || PRESS.has(key) || key.length === 1;
    case "button":
      return PRESS.has(key);
    case "text":
      return key !== "Escape" && key !== "Tab";
    case "composite":
      return NAVIGATION.has(key) || PRESS.has(key);
    default:
      return false;
  }
}
function keepControlKeys(root, signal) {
  root.addEventListener(
    "keydown",
    (event) => {
      const kind = controlKind(event.target);
      if (kind && keepsKey(kind, event)) event.stopPropagation();
    },
    { signal }
  );
}

// src/format.js
var RANK_CAP = 65535;
function realDigits(digits, step, unit = 1) {
  let d = digits;
  while (d > 0 && 10 ** -d * unit < step) d -= 1;
  return d;
}
function formatProb(p, step = 0) {
  if (!Number.isFinite(p)) return "–";
  if (p > 0 && p < 1e-3) return "<0.1%";
  if (p >= 0.9995) return "100%";
  const digits = realDigits(p >= 0.1 ? 1 : 2, step, 0.01);
  const text = (p * 100).toFixed(digits);
  return `${(digits ? text.replace(/\.?0+$/, "") : text) || "0"}%`;
}
function formatBits(b, short = false, step = 0) {
  if (!Number.isFinite(b)) return "–";
  const digits = realDigits(b >= 10 ? 1 : 2, step);
  const text = short ? String(Number(b.toFixed(digits))) : b.toFixed(digits);
  return short ? text : `${text} bits`;
}
function formatRank(rank, short = false) {
  if (!Number.isFinite(rank)) return "–";
  let text;
  if (rank >= RANK_CAP) text = `≥${RANK_CAP}`;
  else if (rank >= 1e4) text = `${Math.round(rank / 1e3)}k`;
  else if (rank >= 1e3 && short) text = `${Number((rank / 1e3).toFixed(1))}k`;
  else text = String(Math.round(rank));
  return short ? text : `rank ${text}`;
}
function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x - 1e-12 * p) return m * p;
  return 10 * p;
}

// src/dataset/chart.js
function datasetCurveGeometry(width, height, nLayers, margin = {}, high = 1) {
  const left = margin.left ?? 48;
  const right = width - (margin.right ?? 16);
  const top = margin.top ?? 12;
  const bottom = height - (margin.bottom ?? 34);
  const step = nLayers > 1 ? (right - left) / (nLayers - 1) : 0;
  const x = (index) => nLayers > 1 ? left + index * step : (left + right) / 2;
  const y = (value) => bottom - Math.min(Math.max(value / high, 0), 1) * (bottom - top);
  const layerAt = (px) => {
    if (nLayers <= 1) return 0;
    return Math.min(nLayers - 1, Math.max(0, Math.round((px - left) / step)));
  };
  return { width, height, left, right, top, bottom, x, y, layerAt };
}
function finite(v) {
  return v !== null && v !== void 0 && Number.isFinite(v);
}
function linePath(g, values) {
  let d = "";
  let pen = false;
  values.forEach((v, i) => {
    if (!finite(v)) {
      pen = false;
      return;
    }
    d += `${pen ? "L" : "M"}${g.x(i).toFixed(2)},${g.y(v).toFixed(2)}`;
    pen = true;
  });
  return d;
}
function bandPath(g, low, high) {
  const runs = [];
  let run = [];
  for (let i = 0; i < low.length; i++) {
    if (finite(low[i]) && finite(high[i])) run.push(i);
    else if (run.length) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length) runs.push(run);
  return runs.map((r) => {
    const up = r.map((i) => `${g.x(i).toFixed(2)},${g.y(
      /** @type {number} */
      high[i]
    ).toFixed(2)}`);
    const down = [...r].reverse().map((i) => `${g.x(i).toFixed(2)},${g.y(
      /** @type {number} */
      low[i]
    ).toFixed(2)}`);
    if (r.length === 1) {
      const x = g.x(r[0]);
      return `M${(x - 1).toFixed(2)},${g.y(
        /** @type {number} */
        high[r[0]]
      ).toFixed(2)}H${(x + 1).toFixed(2)}V${g.y(
        /** @type {number} */
        low[r[0]]
      ).toFixed(2)}H${(x - 1).toFixed(2)}Z`;
    }
    return `M${up.join("L")}L${down.join("L")}Z`;
  }).join("");
}
function labelColumns(nLayers, maxLabels) {
  if (nLayers <= maxLabels) return Array.from({ length: nLayers }, (_, i) => i);
  const every = Math.ceil(nLayers / maxLabels);
  const columns = [];
  for (let i = 0; i < nLayers; i += every) columns.push(i);
  if (columns[columns.length - 1] !== nLayers - 1) {
    if (nLayers - 1 - columns[columns.length - 1] < every / 2) columns.pop();
    columns.push(nLayers - 1);
  }
  return columns;
}
function chartScale(metric, summaries) {
  if (metric.unit === "probability" || metric.unit === "share") {
    return { high: 1, ticks: [0, 0.25, 0.5, 0.75, 1], label: (v) => `${Math.round(v * 100)}%` };
  }
  let top = 0;
  for (const summary of summaries) {
    for (const column of [metric.field, ...metric.interval || []]) {
      for (const v of summary[column] || []) if (finite(v) && v > top) top = v;
    }
  }
  const high = top > 0 ? niceCeil(top) : 1;
  const parts = Math.round(high / 10 ** Math.floor(Math.log10(high))) === 5 ? 5 : 4;
  const ticks = Array.from({ length: parts + 1 }, (_, k) => k * high / parts);
  if (metric.unit === "bits") return { high, ticks, label: (v) => formatBits(v, true) };
  return { high, ticks, label: (v) => String(Number(v.toFixed(1))) };
}

// src/theme.js
var THEME_PROPERTIES = Object.freeze({
  fg: "--murano-fg",
  muted: "--murano-muted",
  bg: "--murano-bg",
  surface: "--murano-surface",
  border: "--murano-border",
  accent: "--murano-accent",
  focus: "--murano-focus",
  grid: "--murano-grid",
  stripBg: "--murano-strip-bg",
  hatch: "--murano-hatch",
  shadow: "--murano-shadow",
  generated: "--murano-generated",
  generatedBg: "--murano-generated-bg",
  warn: "--murano-warn",
  error: "--murano-error"
});
var SERIES_COLOURS = Object.freeze([0, 1, 2, 3, 4, 5].map((k) => `var(--murano-series-${k})`));
var SERIES_DASHES = Object.freeze(["", "6 3", "1.5 3", "9 3 1.5 3"]);
function seriesLook(k) {
  const n = SERIES_COLOURS.length;
  const i = Math.max(0, Math.floor(k));
  return { colour: SERIES_COLOURS[i % n], dash: SERIES_DASHES[Math.floor(i / n) % SERIES_DASHES.length] };
}
var FALLBACK_THEME = Object.freeze({
  fg: "rgb(31, 35, 40)",
  muted: "rgb(89, 99, 110)",
  bg: "rgb(255, 255, 255)",
  surface: "rgb(246, 248, 250)",
  border: "rgb(209, 217, 224)",
  accent: "rgb(9, 105, 218)",
  focus: "rgb(9, 105, 218)",
  grid: "rgb(255, 255, 255)",
  stripBg: "rgba(127, 127, 127, 0.09)",
  hatch: "rgb(89, 99, 110)",
  shadow: "rgba(31, 35, 40, 0.16)",
  generated: "rgb(213, 94, 0)",
  generatedBg: "rgba(213, 94, 0, 0.13)",
  warn: "rgb(154, 103, 0)",
  error: "rgb(207, 34, 46)",
  font: "system-ui, sans-serif",
  mono: "monospace",
  live: false
});

// src/dataset/data.js
var DATASET_DTYPES = Object.freeze(["float32", "int32"]);
var GROUPS_METRIC = "groups";
function chartCurves(dataset, metric, setName) {
  if (metric.name !== GROUPS_METRIC) {
    const [low, high] = metric.interval || [metric.field, metric.field];
    return dataset.sets.map((set, i) => {
      const look = datasetSeriesLook(dataset, i);
      const s2 = set.summary;
      return { label: `${set.label} (n=${set.nPrompts})`, colour: look.colour, dash: look.dash, mean: s2[metric.field] || [], low: s2[low] || [], high: s2[high] || [], set: set.name, lens: set.lens ?? "", group: "" };
    });
  }
  const named = dataset.sets.filter((set) => set.name === setName);
  const series = named.length ? named : dataset.sets.filter((set) => set.name === dataset.sets[0]?.name);
  const curves = [];
  series.forEach((set, lensIndex) => {
    dataset.groups.forEach((group, k) => {
      const look = seriesLook(k);
      const s2 = set.summary;
      const lensText = set.lens === null ? "" : ` · ${set.label.split(" · ").slice(1).join(" · ")}`;
      curves.push({
        label: `${group}${lensText}`,
        colour: look.colour,
        dash: set.lens === null ? look.dash : SERIES_DASHES[lensIndex % SERIES_DASHES.length],
        mean: s2[`group_${group}_mean`] || [],
        low: s2[`group_${group}_ci_low`] || [],
        high: s2[`group_${group}_ci_high`] || [],
        set: set.name,
        lens: set.lens ?? "",
        group
      });
    });
  });
  return curves;
}
function chartMetrics(dataset) {
  return dataset.metrics.filter((m) => m.interval !== null);
}
function chartMetric(dataset, name) {
  const charted = chartMetrics(dataset);
  return charted.find((m) => m.name === name) || charted[0];
}
function decodeDataset(meta, data) {
  const layers = (
    /** @type {number[]} */
    meta.layers
  );
  const prompts = (
    /** @type {string[]} */
    meta.prompts
  );
  const size = layers.length * prompts.length;
  const lenses = Array.isArray(meta.lenses) ? meta.lenses.map((l) => ({ name: String(l.name), title: String(l.title ?? l.name) })) : [];
  const titles = new Map(lenses.map((l) => [l.name, l.title]));
  const sets = (
    /** @type {any[]} */
    meta.sets.map((set, i) => {
      const lens = typeof set.lens === "string" && lenses.length ? set.lens : null;
      return {
        name: String(set.name),
        lens,
        label: lens === null ? String(set.name) : `${set.name} · ${lensMenuText(lens, titles.get(lens) ?? lens)}`,
        answers: set.answers,
        nPrompts: Number(set.n_prompts),
        summary: set.summary,
        probs: (
          /** @type {Float32Array} */
          readSection(data[`prob_${i}`], "float32", size, `prob_${i}`, DATASET_DTYPES)
        ),
        ranks: (
          /** @type {Int32Array} */
          readSection(data[`rank_${i}`], "int32", size, `rank_${i}`, DATASET_DTYPES)
        )
      };
    })
  );
  return {
    layers,
    prompts,
    sets,
    lenses,
    title: String(meta.title ?? ""),
    ci: Number(meta.ci ?? 0.95),
    canOpen: Boolean(meta.can_open),
    reason: String(meta.cannot_open_reason ?? ""),
    metrics: (
      /** @type {any[]} */
      (meta.metrics ?? []).map((m) => ({
        name: String(m.name),
        field: String(m.field),
        label: String(m.label),
        short: String(m.short ?? m.label),
        unit: String(m.unit),
        interval: Array.isArray(m.interval) ? [String(m.interval[0]), String(m.interval[1])] : null
      }))
    ),
    groups: Array.isArray(meta.groups) ? meta.groups.map(String) : []
  };
}
function findSet(dataset, name, lens) {
  const several = dataset.lenses.length > 0;
  return dataset.sets.find((set) => set.name === name && (!several || set.lens === lens)) || dataset.sets.find((set) => !several || set.lens === lens) || dataset.sets[0];
}
function datasetSeriesLook(dataset, k) {
  const set = dataset.sets[k];
  if (!dataset.lenses.length || !set || set.lens === null) return seriesLook(k);
  const lensIndex = Math.max(0, dataset.lenses.findIndex((l) => l.name === set.lens));
  const names = [...new Set(dataset.sets.map((s2) => s2.name))];
  const setIndex = Math.max(0, names.indexOf(set.name));
  return { colour: SERIES_COLOURS[lensIndex % SERIES_COLOURS.length], dash: SERIES_DASHES[setIndex % SERIES_DASHES.length] };
}
function promptOrder(set, layerIndex, nLayers, worstFirst = false) {
  const indices = [];
  for (let p = 0; p < set.answers.length; p++) if (set.answers[p] !== null) indices.push(p);
  const sign = worstFirst ? -1 : 1;
  indices.sort((a, b) => {
    const ra = set.ranks[a * nLayers + layerIndex];
    const rb = set.ranks[b * nLayers + layerIndex];
    if (ra < 0 !== rb < 0) return ra < 0 ? 1 : -1;
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
function formatInterval(value, low, high, unit = "probability") {
  if (value === null || !Number.isFinite(value)) return "–";
  const shown = formatValue(value, unit);
  if (low === null || high === null || !Number.isFinite(low) || !Number.isFinite(high)) return shown;
  if (unit === "bits") return `${shown} [${formatBits(low, true)}, ${formatBits(high, true)}]`;
  return `${shown} [${formatValue(low, unit)}, ${formatValue(high, unit)}]`;
}
function layerReadout(dataset, layerIndex) {
  const ci = `${Math.round(dataset.ci * 100)}% interval`;
  return {
    layer: dataset.layers[layerIndex],
    rows: dataset.sets.map((set) => {
      const s2 = set.summary;
      const at = (column) => s2[column]?.[layerIndex] ?? null;
      const cells = dataset.metrics.filter((m) => m.name !== GROUPS_METRIC).map((m) => {
        const cell = m.interval ? [`${m.short} (${ci})`, formatInterval(at(m.field), at(m.interval[0]), at(m.interval[1]), m.unit)] : [m.short, formatValue(at(m.field), m.unit)];
        return cell;
      });
      return { set: set.label, cells: [...cells, ["prompts", String(set.nPrompts)]] };
    })
  };
}
function formatValue(value, unit) {
  if (value === null || !Number.isFinite(value)) return "–";
  if (unit === "bits") return formatBits(value);
  if (unit === "rank") return String(Number(value.toFixed(1)));
  return formatProb(value);
}

// src/dataset/view.js
var WIDTH = 640;
var HEIGHT = 260;
var PAGE = 100;
var DatasetView = class {
  /**
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.dataset = decodeDataset(model.get("_meta"), model.get("_data"));
    this.geometry = datasetCurveGeometry(WIDTH, HEIGHT, this.dataset.layers.length);
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
    this.listeners = [
      ["change:layer", () => {
        this.shown = PAGE;
        this.drawChart();
        this.drawReadout();
        this.drawPrompts();
      }],
      ["change:answer_set", () => {
        this.shown = PAGE;
        this.drawChart();
        this.drawPrompts();
      }],
      ["change:lens_name", () => {
        this.shown = PAGE;
        this.drawPrompts();
      }],
      ["change:order", () => {
        this.shown = PAGE;
        this.drawPrompts();
      }],
      ["change:metric", () => this.drawChart()],
      ["change:status", () => this.drawStatus()]
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
    const index = layer === null || layer === void 0 ? -1 : this.dataset.layers.indexOf(layer);
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
      "aria-label": "mean per layer with intervals; arrow keys move between layers, Enter chooses one"
    });
    svg.addEventListener("mousemove", (event) => this.setHover(this.layerAtClient(
      /** @type {MouseEvent} */
      event.clientX
    )));
    svg.addEventListener("mouseleave", () => this.setHover(null));
    svg.addEventListener("click", (event) => this.choose(this.layerAtClient(
      /** @type {MouseEvent} */
      event.clientX
    )));
    svg.addEventListener("keydown", (event) => this.onKey(
      /** @type {KeyboardEvent} */
      event
    ));
    svg.addEventListener("blur", () => this.setHover(null));
    root.append(svg);
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
    const px = rect.width > 0 ? (clientX - rect.left) * WIDTH / rect.width : 0;
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
    const scale = chartScale(metric, d.sets.map((set) => (
      /** @type {Record<string, (number | null)[]>} */
      /** @type {unknown} */
      set.summary
    )));
    const g = this.geometry = datasetCurveGeometry(WIDTH, HEIGHT, d.layers.length, {}, scale.high);
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
      })
    );
  }
  drawReadout() {
    const index = this.hover ?? this.chosenIndex();
    if (index === null) {
      this.ui.readout.replaceChildren(h("span", "murano-ds-hint", {}, "Hover over a layer to read its values; click it to list its prompts."));
      return;
    }
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
        h("span", "murano-ds-answer", {}, `→ ${set.answers[p] ?? ""}`)
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
    this.send({ open_request: { prompt, answer_set: answerSet, ...lens === null ? {} : { lens }, n: this.requests } });
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
      drawNow: () => view.drawChart()
    };
  }
};
function swatch(look) {
  const mark = s("svg", { class: "murano-ds-swatch", width: 18, height: 6, viewBox: "0 0 18 6", "aria-hidden": "true", style: `color: ${look.colour}` });
  mark.append(s("line", { x1: 0, x2: 18, y1: 3, y2: 3, "stroke-dasharray": look.dash || "none" }));
  return mark;
}

// src/dataset/index.js
function render({ model, el }) {
  const view = new DatasetView(model, el);
  return () => view.destroy();
}
function renderStandalone(el, state) {
  const data = {};
  for (const [name, value] of Object.entries(state._data || {})) {
    data[name] = typeof value === "string" ? decodeBase64(value) : value;
  }
  const values = { layer: null, answer_set: "", lens_name: "", order: "best", metric: "answer_prob", status: "", open_request: null, ...state, _data: data };
  values._meta = { ...values._meta, can_open: false, cannot_open_reason: "Cannot open a heatmap here: this page has no Python kernel to run the lens." };
  const model = kernelFreeModel(values);
  return { model, destroy: render({ model, el }) };
}
var index_default = { render };
export {
  bandPath,
  datasetCurveGeometry,
  datasetSeriesLook,
  decodeDataset,
  index_default as default,
  findSet,
  formatInterval,
  labelColumns,
  layerReadout,
  linePath,
  promptOrder,
  renderStandalone
};
