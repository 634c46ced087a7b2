// @ts-check
/**
 * `DiffView`: the lens-diff widget's DOM, canvas and events. Rows are a's layers (the deepest on
 * top), columns a's token positions; under them a's tokens and, when positions were paired by
 * end or prefix, the partner tokens of b. Token text reaches the page only as text
 * (`textContent`, canvas `fillText`), never as HTML. Its state (prompt, metric, pinned, hovered
 * and focus cells) is one object in a store (`shared/store.js`); `follow` shows what changed.
 */

import { textColourOn } from "../shared/colour.js";
import { moveFocus, clampIndex } from "../shared/state.js";
import { charCount, isolateLtr, truncateText } from "../shared/tokens.js";
import { cellColour, diffPalette } from "./colour.js";
import { alignmentHeadline, cellLabel, diffCell, readoutLine, tooltipContent } from "./details.js";
import { decodeDiff, diffIndex, diffMetric } from "./payload.js";
import { formatBits, formatChange, indexReadout } from "../shared/format.js";
import { isDarkTheme, readTheme, watchTheme } from "../shared/theme.js";
import { h } from "../shared/dom.js";
import { installDebug } from "../shared/debug.js";
import { hatchPattern } from "../shared/hatch.js";
import { bindGrid } from "../shared/grid_events.js";
import { keepControlKeys } from "../shared/keys.js";
import { createStore } from "../shared/store.js";
import { placeInRoot } from "../shared/tooltip.js";
import { cellRect, clampScroll, columnX, computeLayout, hitTest, revealColumn, visibleColumns } from "../shared/layout.js";

/**
 * @typedef {import("./payload.js").Diff} Diff
 * @typedef {import("../shared/local_model.js").WidgetModel} WidgetModel
 * @typedef {import("../shared/grid_events.js").Cell} Cell
 * @typedef {import("../shared/layout.js").Layout} Layout
 * @typedef {{prompt: number, layer_index: number, position: number, [key: string]: unknown}} Selected
 * @typedef {object} DiffState the diff view's state, one object in a store
 * @property {number} prompt
 * @property {string} metric the colouring
 * @property {Selected | null} selected the pinned cell
 * @property {Cell | null} hover
 * @property {Cell | null} focus the keyboard focus cell
 * @property {boolean} focused the focus cell is shown
 */

/**
 * What the legend's label adds for a change in each unit: the ticks of a probability's change are
 * percentage points, a rank's sit on a log scale.
 * @type {Readonly<Record<string, string>>}
 */
const CHANGE_UNITS = Object.freeze({ delta: " (percentage points)", probability: " (percentage points)", rank: " (ranks, log scale)" });

/**
 * The diff's sizes in the heatmap's grid geometry (`computeLayout` in `../layout.js`): rows of a
 * fixed height, no position axis above the cells, one or two token rows under them, no right pad.
 */
const DIFF_GEOMETRY = Object.freeze({ rowH: 22, axisH: 0, gap: 2, stripH: 20, bottomPad: 2, rightPad: 0 });

/**
 * The metric to show for `value`: itself when the diff can show it, else the first it can.
 * @param {Diff} diff
 * @param {unknown} value
 * @returns {string}
 */
function shownMetric(diff, value) {
  const spec = diffMetric(diff, String(value));
  return spec && spec.available ? spec.name : (diff.metrics.find((m) => m.available) || diff.metrics[0]).name;
}

/**
 * @typedef {object} DiffOptions
 * @property {boolean} [embedded] shown inside the lens heatmap (a live patch): the heatmap's panel
 *   says what was patched, so the diff shows no title, note or prompt lines of its own
 * @property {() => {cellW: number, left: number} | null} [columns] the heatmap's column geometry:
 *   its column width and the client x where its first column starts; the diff's columns take
 *   that width and start there too (its label column widened to reach it), so each lies under
 *   the heatmap's
 */

/**
 * Which token the change in probability follows, as the diff's metadata says (`token_rule`:
 * "final prediction of the clean run", "token ' Tokyo'"), as the legend's first sentence; "" when
 * it does not say.
 * @param {Diff} diff
 */
export function tokenRule(diff) {
  const rule = diff.meta.token_rule;
  return typeof rule === "string" && rule ? `The chosen token: the ${rule}. ` : "";
}

export class DiffView {
  /**
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   * @param {DiffOptions} [options]
   */
  constructor(model, el, options = {}) {
    this.model = model;
    this.el = el;
    this.options = options;
    /** @type {Diff | null} */
    this.diff = null;
    /** The view's state (`shared/store.js`); what shows a key follows it (`follow`). */
    this.store = createStore(/** @type {DiffState} */ ({ prompt: 0, metric: "delta_prob", selected: null, hover: null, focus: null, focused: false }));
    this.unsubscribe = this.store.subscribe((changed) => this.follow(changed));
    /** The next layout scrolls the prompt's last position (or its pinned cell) into view. */
    this.revealPending = true;
    this.frame = 0;
    this.cellW = 48;
    this.labelW = 60;
    this.charW = 6.6;
    /** @type {import("../shared/theme.js").ThemeValues | null} */
    this.theme = null;
    this.root = h("div", options.embedded ? "murano-diff murano-diff-embedded" : "murano-diff");
    this.title = h("div", "murano-diff-title");
    this.note = h("div", "murano-diff-note");
    this.error = h("div", "murano-diff-error", { role: "alert" });
    this.error.hidden = true;
    const controls = h("div", "murano-diff-controls");
    this.promptLabel = h("label", "murano-diff-prompt");
    this.promptInput = h("input", "murano-diff-prompt-input", { type: "range", min: "0", step: "1", "aria-label": "Prompt" });
    this.promptText = h("span", "murano-diff-prompt-text");
    this.promptLabel.append("Prompt ", this.promptInput, this.promptText);
    const metricLabel = h("label", "murano-diff-metric", {}, "Colour ");
    this.metricSelect = h("select", "murano-diff-metric-select", { "aria-label": "Colour by" });
    metricLabel.append(this.metricSelect);
    controls.append(this.promptLabel, metricLabel);
    this.prompts = h("div", "murano-diff-prompts");
    this.scroller = h("div", "murano-diff-scroller");
    this.track = h("div", "murano-diff-track");
    this.canvas = h("canvas", "murano-diff-canvas", { tabindex: "0", role: "grid", "aria-label": "Difference heatmap: arrows move, Enter pins" });
    this.track.append(this.canvas);
    this.scroller.append(this.track);
    this.legend = h("div", "murano-diff-legend");
    this.tooltip = h("div", "murano-diff-tooltip", { role: "tooltip" });
    this.tooltip.hidden = true;
    this.readout = h("div", "murano-diff-readout", { "aria-live": "polite" });
    if (options.embedded) {
      this.title.hidden = true;
      this.note.hidden = true;
      this.prompts.hidden = true;
    }
    this.root.append(this.title, this.note, this.error, controls, this.prompts, this.scroller, this.legend, this.tooltip, this.readout);
    el.append(this.root);
    this.abort = new AbortController();
    this.bind();
    this.reload();
    this.removeDebug = installDebug(el, "diff", this.debugApi());
  }

  destroy() {
    this.unsubscribe();
    this.abort.abort();
    for (const [event, fn] of this.handlers) this.model.off(event, fn);
    this.resize?.disconnect();
    this.stopWatchingTheme?.();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.root.remove();
    this.removeDebug();
  }

  reload() {
    try {
      this.diff = decodeDiff(this.model.get("_meta"), this.model.get("_sections"));
    } catch (error) {
      this.diff = null;
      this.error.textContent = `Cannot show this lens diff: ${error instanceof Error ? error.message : String(error)}`;
      this.error.hidden = false;
      return;
    }
    this.error.hidden = true;
    const diff = this.diff;
    this.title.textContent = `a: ${diff.labels[0]}   vs   b: ${diff.labels[1]}`;
    this.note.textContent = alignmentHeadline(diff);
    this.metricSelect.replaceChildren(
      ...diff.metrics.map((m) => {
        const option = h("option", "", { value: m.name }, m.available ? m.label : `${m.label} (unavailable)`);
        option.disabled = !m.available;
        return option;
      }),
    );
    this.promptInput.max = String(diff.P - 1);
    this.promptLabel.hidden = diff.P < 2;
    const changed = this.store.set({
      prompt: clampIndex(this.model.get("prompt"), diff.P),
      // A state that names no available metric (a hand-made page) shows the first available one.
      metric: shownMetric(diff, this.model.get("metric") || "delta_prob"),
      selected: this.model.get("selected") ?? null,
    });
    // A new payload: the prompt and metric are shown again, changed (`follow`) or not.
    if (!changed.includes("prompt")) this.showPrompt();
    if (!changed.includes("metric")) this.showMetric();
  }

  // ---- State ---------------------------------------------------------------------------------

  /**
   * What follows each state key: the prompt's lines and layout, the metric's legend and colours,
   * the tooltip and the drawing (the pinned cell), the tooltip (the hovered cell). The focus cell
   * is shown by `setFocus`, once it has scrolled into view.
   * @param {(keyof DiffState)[]} changed
   */
  follow(changed) {
    if (changed.includes("prompt")) this.showPrompt();
    if (changed.includes("metric")) this.showMetric();
    if (changed.includes("selected")) {
      this.updateTooltip();
      this.requestDraw();
    } else if (changed.includes("hover")) this.updateTooltip();
  }

  get prompt() {
    return this.store.state.prompt;
  }

  get metric() {
    return this.store.state.metric;
  }

  get selected() {
    return this.store.state.selected;
  }

  get hover() {
    return this.store.state.hover;
  }

  set hover(cell) {
    this.store.set({ hover: cell });
  }

  get focus() {
    return this.store.state.focus;
  }

  set focus(cell) {
    this.store.set({ focus: cell });
  }

  get focused() {
    return this.store.state.focused;
  }

  set focused(value) {
    this.store.set({ focused: value });
  }

  /**
   * @param {string} name
   * @param {unknown} value
   */
  send(name, value) {
    this.model.set(name, value);
    this.model.save_changes();
  }

  /**
   * @param {unknown} value
   * @param {boolean} sync
   */
  setPrompt(value, sync) {
    if (!this.diff) return;
    const prompt = clampIndex(value, this.diff.P);
    if (sync) this.send("prompt", prompt);
    if (prompt === this.prompt) return;
    this.revealPending = true;
    this.store.set({ prompt, hover: null, focus: this.focus && this.clampCell(this.focus, prompt) });
  }

  /**
   * @param {unknown} value
   * @param {boolean} sync
   */
  setMetric(value, sync) {
    const diff = this.diff;
    if (!diff) return;
    const metric = shownMetric(diff, value);
    if (sync) this.send("metric", metric);
    this.metricSelect.value = metric;
    this.store.set({ metric });
  }

  /**
   * @param {Selected | null} value
   * @param {boolean} sync
   */
  setSelected(value, sync) {
    this.store.set({ selected: value });
    if (sync) this.send("selected", value);
  }

  /**
   * @param {Cell} cell
   * @param {number} [prompt] (default the one shown)
   */
  clampCell(cell, prompt = this.prompt) {
    const diff = /** @type {Diff} */ (this.diff);
    return { layerIndex: clampIndex(cell.layerIndex, diff.L), position: clampIndex(cell.position, diff.lengths[prompt]) };
  }

  /** @param {Cell} cell */
  isPinned(cell) {
    const s = this.selected;
    return Boolean(s && s.prompt === this.prompt && s.layer_index === cell.layerIndex && s.position === cell.position);
  }

  /** @param {Cell} cell */
  togglePin(cell) {
    const next = this.isPinned(cell) ? null : { prompt: this.prompt, layer_index: cell.layerIndex, position: cell.position };
    this.setSelected(next, true);
    if (this.diff) this.readout.textContent = next ? readoutLine(this.diff, diffCell(this.diff, this.prompt, cell.layerIndex, cell.position), true, this.metric) : "Unpinned.";
  }

  /** @param {Cell} cell */
  setFocus(cell) {
    this.focus = cell;
    if (this.diff) {
      // Scrolls only when the column is not fully in view (as the heatmap's `revealColumn`).
      const layout = this.layout();
      const scroll = this.scroller.scrollLeft;
      const next = revealColumn(layout, scroll, cell.position);
      if (next !== clampScroll(layout, scroll)) this.scroller.scrollLeft = next;
    }
    if (this.diff) this.readout.textContent = readoutLine(this.diff, diffCell(this.diff, this.prompt, cell.layerIndex, cell.position), this.isPinned(cell), this.metric);
    this.updateTooltip();
    this.requestDraw();
  }

  /** @param {Cell | null} cell the cell under the pointer, or null */
  setHover(cell) {
    const old = this.hover;
    if (old === cell || (old && cell && old.layerIndex === cell.layerIndex && old.position === cell.position)) return;
    this.store.set({ hover: cell });
  }

  // ---- Showing -------------------------------------------------------------------------------

  showPrompt() {
    const diff = this.diff;
    if (!diff) return;
    this.promptInput.value = String(this.prompt);
    this.promptText.textContent = indexReadout(this.prompt, diff.P);
    const a = diff.meta.prompts_a?.[this.prompt] ?? "";
    const b = diff.meta.prompts_b?.[this.prompt] ?? "";
    const lineA = h("div", "murano-diff-prompt-line", {}, `a: ${a}`);
    const lineB = h("div", "murano-diff-prompt-line", {}, a === b ? "b: the same prompt" : `b: ${b}`);
    this.prompts.replaceChildren(lineA, lineB);
    this.relayout();
  }

  showMetric() {
    const diff = this.diff;
    if (!diff) return;
    this.metricSelect.value = this.metric;
    const spec = diffMetric(diff, this.metric);
    this.legend.replaceChildren();
    if (spec) {
      const palette = diffPalette(isDarkTheme(this.readTheme()));
      const bar = h("span", "murano-diff-legend-bar");
      const max = spec.domain[1];
      /** @type {string[]} */
      let stops;
      /** @type {[string, string, string]} */
      let ticks;
      if (spec.scale === "diverging") {
        // A change b − a, in its unit: the domain is symmetric about 0 (a rank's on a log scale).
        stops = [...palette.diverging];
        ticks = [formatChange(spec.unit, -max, true), "0", formatChange(spec.unit, max, true)];
      } else if (spec.scale === "sequential") {
        stops = [...palette.kl];
        ticks = ["0", formatBits(max / 2, true), formatBits(max, true)];
      } else {
        stops = [`rgb(${palette.same.join(",")}) 0 50%`, `rgb(${palette.differs.join(",")}) 50% 100%`];
        ticks = ["same", "", "differs"];
      }
      bar.style.background = `linear-gradient(to right, ${stops.join(", ")})`;
      const tickRow = h("span", "murano-diff-legend-ticks");
      for (const tick of ticks) tickRow.append(h("span", "", {}, tick));
      const unit = spec.scale === "diverging" ? CHANGE_UNITS[spec.unit] ?? "" : "";
      const missing = h("span", "murano-diff-legend-missing", { title: "no partner cell, or no value" }, "missing");
      this.legend.append(h("span", "murano-diff-legend-label", {}, `${spec.label}${unit}`), bar, tickRow, missing, h("span", "murano-diff-legend-text", {}, spec.name === "delta_prob" ? `${tokenRule(diff)}${spec.description}` : spec.description));
    }
    this.updateTooltip();
    this.requestDraw();
  }

  /**
   * The shared palette (theme.js) as this widget's root sees it; kept until the host's theme
   * changes (a reading taken before the widget is in the page is used once, not kept).
   */
  readTheme() {
    if (this.theme) return this.theme;
    const theme = readTheme(this.root);
    if (theme.live) this.theme = theme;
    return theme;
  }

  /** The host's theme changed: read it again and redraw. */
  themeChanged() {
    this.theme = null;
    this.showMetric();
    this.relayout();
  }

  relayout() {
    const diff = this.diff;
    if (!diff) return;
    const ctx = this.canvas.getContext("2d");
    const theme = this.readTheme();
    let charW = 6.6;
    if (ctx) {
      ctx.font = `11px ${theme.mono}`;
      charW = ctx.measureText("M").width || charW;
      ctx.font = `600 11px ${theme.font}`;
      const widest = Math.max(...diff.layers.map((l, i) => ctx.measureText(this.rowLabel(l, diff.bLayers[i])).width), ctx.measureText(this.inputLabel("a")).width);
      this.labelW = Math.ceil(widest) + 14;
    }
    const n = diff.lengths[this.prompt];
    let chars = 4;
    for (let j = 0; j < n && chars < 10; j++) {
      const cell = diffCell(diff, this.prompt, diff.L - 1, j);
      chars = Math.max(chars, charCount(cell.inputA), cell.topB[0] ? charCount(cell.topB[0].token) : 0);
    }
    this.charW = charW;
    this.cellW = Math.ceil(Math.min(10, chars) * charW + 10);
    const host = this.options.columns ? this.options.columns() : null;
    if (host && host.cellW > 0) {
      this.cellW = Math.max(this.cellW, host.cellW);
      const reach = Math.round(host.left - this.scroller.getBoundingClientRect().left);
      if (this.scroller.isConnected && reach >= this.labelW && reach < this.labelW + 200) this.labelW = reach;
    }
    this.track.style.width = `${this.layout().contentW}px`;
    this.draw();
  }

  /**
   * Opens a prompt where its prediction is, as the heatmap does: its last position (or its
   * pinned cell) scrolled into view, once the scroller is in the page.
   */
  revealPromptEnd() {
    const diff = this.diff;
    if (!diff || !this.scroller.isConnected || this.scroller.clientWidth === 0) return;
    const sel = this.selected;
    const position = sel && sel.prompt === this.prompt ? sel.position : diff.lengths[this.prompt] - 1;
    this.scroller.scrollLeft = revealColumn(this.layout(), 0, Math.max(0, position));
    this.revealPending = false;
  }

  /**
   * The label of a token row: "a input" (and "b input"); inside the heatmap, where a patch
   * compares one prompt with itself, "input".
   * @param {"a" | "b"} side
   */
  inputLabel(side) {
    return this.options.embedded && this.diff && this.diff.meta.align === "tokens" ? "input" : `${side} input`;
  }

  /**
   * @param {number} layerA
   * @param {number} layerB
   */
  rowLabel(layerA, layerB) {
    const diff = this.diff;
    return diff && diff.depthA !== diff.depthB ? `L${layerA}↔${layerB}` : `L${layerA}`;
  }

  /**
   * The grid's geometry now (`../layout.js`, as the heatmap's): the column width and label column
   * chosen by `relayout`, the scroller's width.
   * @returns {Layout}
   */
  layout() {
    const diff = /** @type {Diff} */ (this.diff);
    return computeLayout({
      ...DIFF_GEOMETRY,
      nLayers: diff.L,
      nPositions: diff.lengths[this.prompt],
      width: Math.max(100, this.scroller.clientWidth || 800),
      labelW: this.labelW,
      charW: this.charW,
      maxChars: 0,
      cellW: this.cellW,
      strips: diff.meta.align === "tokens" ? 1 : 2,
    });
  }

  requestDraw() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  draw() {
    const diff = this.diff;
    if (!diff) return;
    // Here, not in relayout: the resize observer only redraws (the layout follows the width).
    if (this.revealPending) this.revealPromptEnd();
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    const theme = this.readTheme();
    const layout = this.layout();
    const width = Math.max(100, this.scroller.clientWidth || 800);
    const height = layout.height;
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    this.track.style.height = `${height}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const scroll = this.scroller.scrollLeft;
    const W = layout.cellW;
    const [first, last] = visibleColumns(layout, scroll);
    const hatch = hatchPattern(ctx, theme.hatch);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.font = `11px ${theme.mono}`;
    const maxChars = Math.max(1, Math.floor((W - 6) / (ctx.measureText("M").width || 6.6)));
    const dark = isDarkTheme(theme);
    for (let i = 0; i < diff.L; i++) {
      for (let j = first; j < last; j++) {
        const { x, y, w, h: cellH } = cellRect(layout, i, j, scroll);
        const rgb = cellColour(diff, this.metric, diffIndex(diff, i, this.prompt, j), dark);
        if (!rgb) {
          ctx.fillStyle = hatch || theme.hatch;
          ctx.globalAlpha = hatch ? 1 : 0.3;
          ctx.fillRect(x, y, w - 1, cellH - 1);
          ctx.globalAlpha = 1;
          continue;
        }
        ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
        ctx.fillRect(x, y, w - 1, cellH - 1);
        const label = cellLabel(diffCell(diff, this.prompt, i, j), this.metric);
        if (label) {
          ctx.fillStyle = textColourOn(rgb);
          ctx.fillText(isolateLtr(truncateText(label, maxChars)), x + (w - 1) / 2, y + cellH / 2);
        }
      }
    }
    // Input tokens: a's, then b's partner tokens (when positions were not paired by equal tokens).
    const aMid = layout.inputY + layout.stripH / 2;
    const bMid = layout.predY + layout.stripH / 2;
    for (let j = first; j < last; j++) {
      const x = columnX(layout, j, scroll) + (W - 1) / 2;
      const cell = diffCell(diff, this.prompt, 0, j);
      ctx.fillStyle = theme.fg;
      ctx.fillText(isolateLtr(truncateText(cell.inputA, maxChars)), x, aMid);
      if (diff.meta.align !== "tokens") {
        ctx.fillStyle = cell.inputB === null ? theme.muted : cell.inputB === cell.inputA ? theme.muted : theme.fg;
        ctx.fillText(isolateLtr(truncateText(cell.inputB ?? "–", maxChars)), x, bMid);
      }
    }
    // Focus and pinned cells.
    /** @type {[Cell | null, boolean][]} */
    const marks = [[this.focused ? this.focus : null, false]];
    if (this.selected && this.selected.prompt === this.prompt) marks.push([{ layerIndex: this.selected.layer_index, position: this.selected.position }, true]);
    for (const [cell, pinned] of marks) {
      if (!cell) continue;
      ctx.strokeStyle = theme.accent;
      ctx.lineWidth = 2;
      ctx.setLineDash(pinned ? [4, 2] : []);
      const r = cellRect(layout, cell.layerIndex, cell.position, scroll);
      ctx.strokeRect(r.x + 1, r.y + 1, r.w - 3, r.h - 3);
      ctx.setLineDash([]);
    }
    // The label column stays put while the cells scroll under it.
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, layout.labelW, height);
    ctx.textAlign = "right";
    ctx.font = `600 11px ${theme.font}`;
    ctx.fillStyle = theme.fg;
    for (let i = 0; i < diff.L; i++) {
      const r = cellRect(layout, i, 0, 0);
      ctx.fillText(this.rowLabel(diff.layers[i], diff.bLayers[i]), layout.labelW - 6, r.y + r.h / 2);
    }
    ctx.fillStyle = theme.muted;
    ctx.fillText(this.inputLabel("a"), layout.labelW - 6, aMid);
    if (diff.meta.align !== "tokens") ctx.fillText(this.inputLabel("b"), layout.labelW - 6, bMid);
  }

  // ---- Tooltip -------------------------------------------------------------------------------

  updateTooltip() {
    const diff = this.diff;
    const cell = this.hover || (this.focused ? this.focus : null);
    if (!diff || !cell) {
      this.tooltip.hidden = true;
      return;
    }
    const content = tooltipContent(diff, diffCell(diff, this.prompt, cell.layerIndex, cell.position), this.metric);
    const table = h("table", "murano-diff-topk");
    const head = h("tr", "");
    for (const column of content.columns) head.append(h("th", "", { colspan: "2" }, column.label));
    table.append(head);
    const rows = Math.max(content.columns[0].rows.length, content.columns[1].rows.length);
    for (let r = 0; r < rows; r++) {
      const tr = h("tr", "");
      for (const column of content.columns) {
        const item = column.rows[r];
        tr.append(h("td", "murano-diff-token", {}, item ? item.token : ""), h("td", "murano-diff-prob", {}, item ? item.prob : ""));
      }
      table.append(tr);
    }
    if (!rows) {
      const tr = h("tr", "");
      tr.append(h("td", "", { colspan: "2" }, "–"), h("td", "", { colspan: "2" }, "no partner cell"));
      table.append(tr);
    }
    this.tooltip.replaceChildren(
      h("div", "murano-diff-tooltip-title", {}, content.title + (this.isPinned(cell) ? " · pinned" : "")),
      ...content.lines.map((line) => h("div", "murano-diff-tooltip-line", {}, line)),
      table,
    );
    this.tooltip.hidden = false;
    // The heatmap's placement: beside the cell, centred on it, inside the widget's box.
    placeInRoot(this.tooltip, this.root, this.cellClientRect(cell.layerIndex, cell.position));
  }

  /**
   * A cell's box in client coordinates: its `cellRect`, less the 1 px gap between cells.
   * @param {number} layerIndex
   * @param {number} position
   */
  cellClientRect(layerIndex, position) {
    const box = this.canvas.getBoundingClientRect();
    const r = cellRect(this.layout(), layerIndex, position, this.scroller.scrollLeft);
    return { x: box.left + r.x, y: box.top + r.y, w: r.w - 1, h: r.h - 1 };
  }

  /**
   * The cell under a pointer, or null.
   * @param {MouseEvent} event
   * @returns {Cell | null}
   */
  cellAt(event) {
    const diff = this.diff;
    if (!diff) return null;
    const box = this.canvas.getBoundingClientRect();
    // The token rows under the cells are no cells here (the heatmap's strips stand for cells).
    const hit = hitTest(this.layout(), event.clientX - box.left, event.clientY - box.top, this.scroller.scrollLeft, 0);
    return hit && hit.area === "cells" ? { layerIndex: hit.layerIndex, position: hit.position } : null;
  }

  // ---- Events --------------------------------------------------------------------------------

  bind() {
    const signal = this.abort.signal;
    /** @type {(target: EventTarget, type: string, fn: (event: any) => void) => void} */
    const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
    on(this.promptInput, "input", () => this.setPrompt(Number(this.promptInput.value), true));
    on(this.metricSelect, "change", () => this.setMetric(this.metricSelect.value, true));
    on(this.scroller, "scroll", () => {
      this.hover = null;
      this.updateTooltip();
      this.requestDraw();
    });
    bindGrid(this.canvas, this, signal);
    keepControlKeys(this.root, signal);
    /** @type {[string, () => void][]} */
    this.handlers = [
      ["change:prompt", () => this.setPrompt(this.model.get("prompt"), false)],
      ["change:metric", () => this.setMetric(this.model.get("metric"), false)],
      ["change:selected", () => this.setSelected(this.model.get("selected") ?? null, false)],
      ["change:_meta", () => this.reload()],
      ["change:_sections", () => this.reload()],
    ];
    for (const [event, fn] of this.handlers) this.model.on(event, fn);
    if (typeof ResizeObserver !== "undefined") {
      // Inside the heatmap the columns follow the heatmap's, which follow the width.
      this.resize = new ResizeObserver(() => (this.options.columns ? this.relayout() : this.requestDraw()));
      this.resize.observe(this.scroller);
    }
    this.stopWatchingTheme = watchTheme(() => this.themeChanged());
  }

  showKeyboardFocus() {
    const diff = this.diff;
    if (!diff) return;
    this.focused = true;
    if (!this.focus) {
      const s = this.selected;
      this.focus = s && s.prompt === this.prompt ? { layerIndex: s.layer_index, position: s.position } : { layerIndex: diff.L - 1, position: 0 };
    }
    this.setFocus(this.clampCell(this.focus));
  }

  // ---- The shared grid handlers' side (`Grid` in `../shared/grid_events.js`) -------------------

  get ready() {
    return Boolean(this.diff);
  }

  get pinned() {
    return Boolean(this.selected);
  }

  /**
   * @param {Cell} cell
   * @param {string} key
   */
  move(cell, key) {
    return this.diff ? moveFocus(cell, key, this.diff.L, this.diff.lengths[this.prompt]) : null;
  }

  unpin() {
    this.setSelected(null, true);
    this.readout.textContent = "Unpinned.";
  }

  blurred() {
    this.updateTooltip();
    this.requestDraw();
  }

  /** The test hook's object (`el.__muranoDiffDebug`, see `../shared/debug.js`). */
  debugApi() {
    const view = this;
    return {
      get state() {
        return { prompt: view.prompt, metric: view.metric, selected: view.selected, focus: view.focus, focused: view.focused, hover: view.hover, cellW: view.cellW, labelW: view.labelW };
      },
      /** The grid's layout (rows, positions, cell sizes), as the heatmap's hook has it. */
      get layout() {
        return view.diff ? view.layout() : null;
      },
      /** @param {number} i @param {number} j */
      cellClientRect: (i, j) => view.cellClientRect(i, j),
      /** @param {number} i @param {number} j */
      cellColour: (i, j) => (view.diff ? cellColour(view.diff, view.metric, diffIndex(view.diff, i, view.prompt, j), isDarkTheme(view.readTheme())) : null),
      drawNow: () => view.draw(),
      tooltipText: () => (view.tooltip.hidden ? null : view.tooltip.textContent),
    };
  }
}
