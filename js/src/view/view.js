// @ts-check
/**
 * `LensView`: the widget's state and how it changes. The DOM is built by `dom.js`, filled by
 * `controls.js`; events come from `events.js`; the canvas is drawn by the `Painter`; the tooltip
 * is laid out by `TooltipView`. Tokens reach the page only as text.
 */

import { explainOptions, explainValue, hasAttribution, hasHeads, nothingExplained, parseExplain, whyModel } from "../attribution.js";
import { cellDetails, DETAILS_TIMEOUT_MS, detailsPending, readoutText, tooltipModel, waitingNote } from "../details.js";
import { cellRect, clampScroll, columnOf, computeLayout, GEOMETRY, positionAt, revealColumn } from "../layout.js";
import { metricAvailable, metricOffered, metricSpec, resolveMetric, resolveTarget, scaleChange, targetIndex } from "../metrics.js";
import { decodeLenses, rowOfModelLayer } from "../payload.js";
import { Painter } from "../painter.js";
import { clampIndex, isSelected, toggleSelection } from "../state.js";
import { throttle } from "../throttle.js";
import { nearestShown, shownPositions } from "../token_marks.js";
import { charCount, displayToken } from "../tokens.js";
import { chartColumn } from "../trajectory.js";
import { chartBeside } from "../trajectory_layout.js";
import { TrajectoryView } from "../trajectory_view.js";
import { ComponentView } from "./components.js";
import { lensTitle, showComponentLegend, showControls, showData, showLegend, showLensMenu, showPin, showTargetMenu } from "./controls.js";
import { debugApi } from "./debug.js";
import { installDebug } from "../shared/debug.js";
import { buildDom, LAYER_HINT } from "./dom.js";
import { LiveView } from "../live/view.js";
import { bindEvents } from "./events.js";
import { TooltipView } from "./tooltip.js";
import { showExplainMenu, showWhy } from "./why.js";

/**
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../layout.js").Layout} Layout
 * @typedef {import("../layout.js").Cell} Cell
 * @typedef {import("../state.js").Selected} Selected
 * @typedef {import("../local_model.js").WidgetModel} WidgetModel
 *
 * @typedef {object} ViewState
 * @property {number} prompt
 * @property {number} layer the highlighted row (the `layer` trait holds its model layer)
 * @property {string} metric the requested metric
 * @property {string} target the tracked token a per-target metric shows (the `target` trait; ""
 *   when none is tracked)
 * @property {Selected | null} selected
 * @property {Cell | null} hover
 * @property {Cell | null} focus
 * @property {boolean} focused the focus cell is shown (keyboard focus)
 * @property {boolean} hideTemplate the chat template's own tokens are hidden from view
 * @property {string} lens the name of the lens shown (the `lens_name` trait)
 * @property {"layers" | "components"} view the heatmap of layers, or the component view (the
 *   `view` trait; components only with direct logit attribution)
 * @property {string} explain what the "why" panel and the component view explain (the `explain`
 *   trait: "top1", "answer", "target:" + a target)
 * @property {boolean} heads each layer's attention split into its heads (the panel's box)
 *
 * @typedef {object} WhyCell The cell the "why" panel explains.
 * @property {number} row
 * @property {number} position
 * @property {number} unit the component view's hovered or focused unit, else -1
 * @property {string} source "hover", "focus", "pinned" or "default" (the highlighted row at the
 *   prompt's last position)
 */

/** Sync to Python at most this often while a slider is dragged. */
export const SYNC_INTERVAL_MS = 100;

/** How long a new payload may take to decode (its `_meta` and `_sections` both arrived). */
export const RELOAD_GRACE_MS = 2000;

let viewCounter = 0;

export class LensView {
  /**
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.el = el;
    /** @type {LensData | null} the decoded result of the lens shown (the lens itself ran in Python) */
    this.data = null;
    /** @type {LensData[]} every lens of the payload (one, or several side by side) */
    this.lenses = [];
    /** @type {Layout | null} */
    this.layout = null;
    /** @type {string | null} */
    this.layoutKey = null;
    this.loaded = false;
    /** @type {{metric: string, text: string} | null} a new payload changed this metric's colour scale */
    this.scaleNote = null;
    /** The next layout scrolls the prompt's last position (or its pinned cell) into view. */
    this.revealPending = true;
    this.frame = 0;
    this.detailsRequested = false;
    /** The detail sections were asked for and have not come in time (or there is no kernel). */
    this.detailsLate = false;
    this.detailsTimer = 0;
    /** The metric the cells show: the requested one, or the last shown while it loads. */
    this.shownMetric = "";
    /** The per-target metric and token whose line the chart was last switched on for. */
    this.followedTarget = "";
    /** @type {ViewState} */
    this.state = { prompt: 0, layer: 0, metric: "", target: "", selected: null, hover: null, focus: null, focused: false, hideTemplate: false, lens: "", view: "layers", explain: "top1", heads: false };
    /**
     * The heatmap cell the "why" panel keeps after a hover: kept while the pointer moves on to the
     * panel (to change what it explains, say), dropped when it leaves the widget.
     * @type {Cell | null}
     */
    this.whyHover = null;
    /** @type {{cell: WhyCell | null, model: import("../attribution.js").WhyModel | null}} what the panel shows */
    this.whyShown = { cell: null, model: null };
    /** @type {{frames: number, lastDrawMs: number, visible: [number, number], drawListeners: ((ms: number) => void)[]}} */
    this.debug = { frames: 0, lastDrawMs: 0, visible: [0, 0], drawListeners: [] };
    this.syncPrompt = throttle((/** @type {number} */ v) => this.send("prompt", v), SYNC_INTERVAL_MS);
    this.syncLayer = throttle((/** @type {number} */ row) => {
      if (this.data) this.send("layer", this.data.layers[row]);
    }, SYNC_INTERVAL_MS);
    const id = `murano-${++viewCounter}`;
    this.ui = buildDom(el, id);
    this.painter = new Painter(this.ui.canvas, this.ui.root);
    /**
     * The column the chart follows after a hover: kept while the pointer crosses from the heatmap
     * to the chart (so the chart can be read), dropped when it leaves both.
     * @type {Cell | null}
     */
    this.chartHover = null;
    this.chartPlaceKey = "";
    this.trajectory = new TrajectoryView(this.ui.trajPanel, id, {
      onLayer: (row) => {
        this.setLayer(row, "throttled");
        this.syncLayer.flush();
      },
      onInteract: () => {
        if (this.detailsRequested) return;
        this.requestDetails();
        this.requestDraw();
      },
    });
    // The tooltip covers neither the pinned-cell chip nor the trajectory chart (which follows the
    // hovered column) when it can help it.
    this.tooltip = new TooltipView(this.ui.tooltip, this.ui.root, () => [
      ...(this.ui.pinEl.hidden ? [] : [rectOf(this.ui.pinEl.getBoundingClientRect())]),
      // The "why" panel follows the hovered cell: it is read beside the tooltip.
      ...(this.ui.why.panel.hidden ? [] : [rectOf(this.ui.why.bars.getBoundingClientRect())]),
      this.trajectory.keepVisibleRect(),
    ]);
    this.componentsAbort = new AbortController();
    this.components = new ComponentView(this.ui.comp, this, this.componentsAbort.signal);
    this.unbind = bindEvents(this);
    /** @type {ReturnType<typeof setTimeout> | null} a new payload that does not decode (yet) */
    this.reloadTimer = null;
    this.reloadError = "";
    /** @type {LiveView | null} the live controls (made after the first load, which they read) */
    this.live = null;
    this.reload();
    this.live = new LiveView(this, this.ui.live);
    this.removeDebug = installDebug(el, "heatmap", debugApi(this));
    if (this.ui.scroller.clientWidth > 0) this.draw();
    else this.requestDraw();
  }

  destroy() {
    this.unbind();
    this.live?.destroy();
    if (this.reloadTimer) clearTimeout(this.reloadTimer);
    if (this.detailsTimer) clearTimeout(this.detailsTimer);
    this.componentsAbort.abort();
    this.trajectory.destroy();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.syncPrompt.flush();
    this.syncLayer.flush();
    this.painter.images.clear();
    this.ui.root.remove();
    this.removeDebug();
  }

  // ---- Data ----------------------------------------------------------------------------------

  reload() {
    const { ui, model } = this;
    let lenses;
    try {
      lenses = decodeLenses(model.get("_meta"), model.get("_sections"));
    } catch (error) {
      const message = `Cannot show this logit lens: ${error instanceof Error ? error.message : String(error)}`;
      if (this.data) {
        // A new payload (the live widget's): Python sets `_meta` and `_sections` one after the
        // other, and until both have arrived they need not match. The view shown stays; only a
        // payload that still does not decode a moment later is an error.
        this.reloadError = message;
        if (!this.reloadTimer) this.reloadTimer = setTimeout(() => this.failReload(), RELOAD_GRACE_MS);
        return;
      }
      this.data = null;
      this.lenses = [];
      this.showError(message);
      return;
    }
    if (this.reloadTimer) clearTimeout(this.reloadTimer);
    this.reloadTimer = null;
    // The first load takes the model's lens; later loads (new sections) keep the local one.
    const s = this.state;
    const wanted = this.loaded ? s.lens : model.get("lens_name");
    const data = lenses.find((lens) => lens.lensName === wanted) || lenses[0];
    const previous = this.data;
    this.lenses = lenses;
    this.data = data;
    s.lens = data.lensName;
    ui.errorEl.hidden = true;
    ui.main.hidden = false;
    this.painter.setData(data);
    this.layoutKey = null;
    this.chartPlaceKey = "";
    showData(ui, data);
    showLensMenu(ui, lenses, s.lens);

    // The first load takes the model's values; later loads (new sections) keep the local view,
    // which may be ahead of the model while a slider's sync is throttled.
    if (!this.loaded) {
      s.prompt = clampIndex(model.get("prompt"), data.P);
      const layer = model.get("layer");
      s.layer = layer === null || layer === undefined ? data.L - 1 : rowOfModelLayer(data.layers, layer);
      s.metric = resolveMetric(data, model.get("metric"));
      s.target = resolveTarget(data, model.get("target"));
      s.selected = model.get("selected") ?? null;
      s.hideTemplate = model.get("hide_template") === true;
      s.view = model.get("view") === "components" ? "components" : "layers";
      s.explain = typeof model.get("explain") === "string" ? model.get("explain") : "top1";
    } else {
      // Python replaced the payload (a prompt added or removed, a token tracked). The prompt and
      // the metric it chose for the new payload win: they may have arrived first, and been
      // clamped to the old one. Otherwise the local view stays, which may be ahead of the model
      // while a slider's sync is throttled.
      s.prompt = clampIndex(previous && previous.P !== data.P ? model.get("prompt") : s.prompt, data.P);
      s.layer = clampIndex(s.layer, data.L);
      const metric = model.get("metric");
      s.metric = resolveMetric(data, typeof metric === "string" && metricOffered(data, metric) ? metric : s.metric);
      // The token too (a token tracked and shown, one untracked): Python's, when the payload has it.
      const target = model.get("target");
      s.target = resolveTarget(data, typeof target === "string" && data.targets.includes(target) ? target : s.target);
    }
    this.loaded = true;
    // Answers or targets were asked for: their lines (detail sections) are what the chart is for.
    // Attribution: the "why" panel shows a cell at once, from the detail sections.
    if (data.answerSets.length || data.targets.length || hasAttribution(data)) this.requestDetails();
    if (!metricAvailable(data, this.shownMetric)) {
      this.shownMetric = metricAvailable(data, s.metric) ? s.metric : (data.metrics.find((m) => metricAvailable(data, m.name)) || data.metrics[0]).name;
    }
    if (s.focus) s.focus = this.clampCell(s.focus);
    if (s.hover) s.hover = this.clampCell(s.hover);
    ui.metricSelect.value = s.metric;
    ui.hideTemplate.checked = s.hideTemplate;
    showControls(ui, data, s);
    // A new payload from Python may refit the colour
    // scale of the metric shown: the legend says so (until the metric changes, or the scale
    // changes again).
    const change = previous && previous !== data ? scaleChange(previous, data, this.shownMetric) : "";
    if (change) this.scaleNote = { metric: this.shownMetric, text: change };
    this.refreshMetric();
    showPin(ui, data, s.selected);
    this.showAttribution();
    this.relayout();
    this.updateTooltip();
    this.live?.dataChanged();
    this.followTarget();
  }

  /** A new payload still does not decode: it is an error after all. */
  failReload() {
    this.reloadTimer = null;
    this.data = null;
    this.lenses = [];
    this.showError(this.reloadError);
  }

  /**
   * The attribution's controls (the view menu, the panel's menu and heads box) and the view shown,
   * for the data shown: without attribution, the heatmap alone.
   */
  showAttribution() {
    const data = this.data;
    if (!data) return;
    const { ui, state: s } = this;
    const offered = hasAttribution(data);
    if (!offered) s.view = "layers";
    s.explain = explainValue(data, parseExplain(data, s.explain));
    if (!hasHeads(data.components)) s.heads = false;
    ui.viewLabel.hidden = !offered;
    ui.viewSelect.value = s.view;
    ui.why.panel.hidden = !offered;
    ui.why.headsLabel.hidden = !hasHeads(data.components);
    ui.why.heads.checked = s.heads;
    showExplainMenu(ui.why, explainOptions(data, (t) => displayToken(t)), s.explain);
    this.components.invalidate();
    this.applyView();
    this.updateWhy();
  }

  /** Shows the heatmap and its chart, or the component view, and the legend that goes with it. */
  applyView() {
    const { ui, state: s } = this;
    const components = s.view === "components";
    ui.body.hidden = components;
    ui.trajPanel.hidden = components;
    ui.comp.box.hidden = !components;
    ui.root.classList.toggle("murano-components-view", components);
    ui.compKey.hidden = !components;
    ui.layerUi.extra.textContent = components ? "the row whose logits the components are read at" : LAYER_HINT;
    this.refreshMetric();
  }

  /**
   * Shows the heatmap of layers or the component view (the view menu, or the `view` trait).
   * @param {unknown} value
   * @param {boolean} sync tell Python (the user chose it in the menu)
   */
  setView(value, sync) {
    const data = this.data;
    if (!data) return;
    const view = value === "components" && hasAttribution(data) ? "components" : "layers";
    if (sync) this.send("view", view);
    this.ui.viewSelect.value = view;
    if (view === this.state.view) return;
    this.state.view = view;
    this.state.hover = null;
    this.components.hover = null;
    this.components.revealPending = true;
    this.applyView();
    this.relayout();
    this.updateTooltip();
  }

  /**
   * What the panel and the component view explain (the panel's menu, or the `explain` trait).
   * @param {unknown} value
   * @param {boolean} sync
   */
  setExplain(value, sync) {
    const data = this.data;
    if (!data) return;
    const explain = explainValue(data, parseExplain(data, value));
    if (sync) this.send("explain", explain);
    this.ui.why.explainSelect.value = explain;
    if (explain === this.state.explain) return;
    this.state.explain = explain;
    this.components.invalidate();
    this.relayoutComponents();
    this.updateWhy();
    this.updateTooltip();
  }

  /**
   * Splits each layer's attention into its heads, or sums them (the panel's box).
   * @param {boolean} heads
   */
  setHeads(heads) {
    this.ui.why.heads.checked = heads;
    if (heads === this.state.heads) return;
    this.state.heads = heads;
    this.components.hover = null;
    this.components.focus = null;
    this.components.invalidate();
    this.relayoutComponents();
    this.updateWhy();
  }

  /** What the panel and the component view explain, read for the data shown. */
  explainChoice() {
    return this.data ? parseExplain(this.data, this.state.explain) : /** @type {const} */ ({ kind: "top1" });
  }

  /** The component view's values changed (row, prompt, explained logit): lay it out again. */
  relayoutComponents() {
    if (this.components.shown) this.components.relayout();
  }

  /**
   * The component view's hovered or focused cell changed: the tooltip and the panel follow.
   * @param {Cell | null} cell
   */
  componentCellChanged(cell) {
    if (cell) this.requestDetails();
    this.updateTooltip();
    this.updateWhy();
  }

  /**
   * The cell the "why" panel explains: the hovered cell (the component view's: its position in
   * the highlighted row), else the keyboard focus, else the pinned cell, else the highlighted
   * row at the prompt's last position.
   * @returns {WhyCell | null}
   */
  whyCell() {
    const data = this.data;
    if (!data) return null;
    const s = this.state;
    if (s.view === "components") {
      const c = this.components;
      const cell = c.hover || (c.focused ? c.focus : null);
      if (cell) return { row: s.layer, position: cell.position, unit: cell.layerIndex, source: c.hover ? "hover" : "focus" };
    } else {
      const hover = s.hover || this.whyHover;
      if (hover) return { row: hover.layerIndex, position: hover.position, unit: -1, source: "hover" };
      if (s.focused && s.focus) return { row: s.focus.layerIndex, position: s.focus.position, unit: -1, source: "focus" };
    }
    const sel = s.selected;
    if (sel && sel.prompt === s.prompt && sel.layer_index < data.L && sel.position < data.lengths[s.prompt]) {
      return { row: sel.layer_index, position: sel.position, unit: -1, source: "pinned" };
    }
    return { row: s.layer, position: data.lengths[s.prompt] - 1, unit: -1, source: "default" };
  }

  /** Fills the "why" panel for the cell it explains. */
  updateWhy() {
    const data = this.data;
    if (!data || !hasAttribution(data) || this.ui.why.panel.hidden) {
      this.whyShown = { cell: null, model: null };
      return;
    }
    const cell = this.whyCell();
    const s = this.state;
    const explain = this.explainChoice();
    const model =
      cell && data.arrays.contributions
        ? whyModel(data, { explain, prompt: s.prompt, row: cell.row, position: cell.position, heads: s.heads, show: (t) => displayToken(t) })
        : null;
    let message = "";
    if (!data.arrays.contributions) message = waitingNote("the attribution", this.detailsLate);
    else if (!model && cell) message = `Nothing to explain: ${nothingExplained(data, explain, s.prompt, cell.position)}.`;
    showWhy(this.ui.why, model, { message, current: cell ? cell.unit : -1 });
    this.whyShown = { cell, model };
  }

  /** @param {string} message */
  showError(message) {
    this.ui.errorEl.textContent = message;
    this.ui.errorEl.hidden = false;
    this.ui.main.hidden = true;
    this.tooltip.hide();
  }

  /**
   * @param {Cell} cell
   * @returns {Cell}
   */
  clampCell(cell) {
    const data = /** @type {LensData} */ (this.data);
    const position = clampIndex(cell.position, data.lengths[this.state.prompt]);
    return {
      layerIndex: clampIndex(cell.layerIndex, data.L),
      // A hidden position (a template token) gives way to the nearest shown one.
      position: nearestShown(this.shownColumns(), position),
    };
  }

  /** The positions shown as columns for the current prompt, or null for all of them. */
  shownColumns() {
    const data = this.data;
    return data ? shownPositions(data, this.state.prompt, this.state.hideTemplate) : null;
  }

  /**
   * Hides or shows the chat template's own tokens: their columns collapse, every other column
   * keeps its true position. The `hide_template` trait holds the choice, so Python can read and
   * set it and it is saved with the notebook.
   * @param {boolean} hide
   * @param {boolean} sync tell Python (the user toggled the control)
   */
  setHideTemplate(hide, sync) {
    const s = this.state;
    if (sync) this.send("hide_template", hide);
    this.ui.hideTemplate.checked = hide;
    if (s.hideTemplate === hide) return;
    s.hideTemplate = hide;
    s.hover = null;
    this.chartHover = null;
    this.components.invalidate();
    if (s.focus) s.focus = this.clampCell(s.focus);
    if (this.data) showControls(this.ui, this.data, s); // the prompt's text loses or regains them
    this.layoutKey = null;
    this.relayout();
    this.updateTooltip();
  }

  /** Asks Python once for the detail sections (top-k, the other metrics). */
  requestDetails() {
    const data = this.data;
    if (this.detailsRequested || !data) return;
    if (!detailsPending(data)) return;
    this.detailsRequested = true;
    if (!this.model.get("_details")) {
      this.model.set("_details", true);
      this.model.save_changes();
    }
    // A model with no kernel behind it cannot send (a saved state rendered on its own page): no
    // answer will come. Otherwise a kernel that is gone (a saved notebook reopened) or busy does
    // not answer either; after a while the notes say so instead of "loading" for ever.
    if (typeof this.model.send !== "function") this.detailsLate = true;
    else this.detailsTimer = setTimeout(() => this.detailsOverdue(), DETAILS_TIMEOUT_MS);
  }

  /** The detail sections asked for have not come in time: the notes that wait for them say so. */
  detailsOverdue() {
    const data = this.data;
    if (!data || !detailsPending(data)) return;
    this.detailsLate = true;
    this.updateTooltip();
    this.updateWhy();
    this.drawTrajectory();
  }

  /**
   * @param {string} name
   * @param {unknown} value
   */
  send(name, value) {
    if (this.model.get(name) === value) return;
    this.model.set(name, value);
    this.model.save_changes();
  }

  // ---- State changes -------------------------------------------------------------------------

  /**
   * @param {unknown} value
   * @param {"throttled" | boolean} sync
   */
  setPrompt(value, sync) {
    const data = this.data;
    if (!data) return;
    const prompt = clampIndex(value, data.P);
    if (sync === "throttled") this.syncPrompt(prompt);
    if (prompt === this.state.prompt) {
      this.ui.promptUi.input.value = String(prompt);
      return;
    }
    this.state.prompt = prompt;
    this.state.hover = null;
    this.chartHover = null;
    this.whyHover = null;
    this.components.hover = null;
    this.components.focus = null;
    this.components.revealPending = true;
    this.components.invalidate();
    if (this.state.focus) this.state.focus = this.clampCell(this.state.focus);
    showControls(this.ui, data, this.state);
    showPin(this.ui, data, this.state.selected);
    this.revealPending = true;
    this.relayout();
    this.updateTooltip();
    this.updateWhy();
    this.live?.promptChanged();
  }

  /**
   * Highlights a row (the slider moves rows; Python hears the row's model layer).
   * @param {unknown} value a row index
   * @param {"throttled" | boolean} sync
   */
  setLayer(value, sync) {
    const data = this.data;
    if (!data) return;
    const row = clampIndex(value, data.L);
    if (sync === "throttled") this.syncLayer(row);
    if (row === this.state.layer) {
      this.ui.layerUi.input.value = String(row);
      return;
    }
    this.state.layer = row;
    showControls(this.ui, data, this.state);
    this.components.invalidate();
    this.relayoutComponents();
    this.updateWhy();
    this.requestDraw();
  }

  /**
   * The `layer` trait changed in Python: a model layer, shown as its row.
   * @param {unknown} layer
   */
  setModelLayer(layer) {
    if (this.data) this.setLayer(rowOfModelLayer(this.data.layers, layer), false);
  }

  /**
   * @param {unknown} value
   * @param {boolean} sync
   */
  setMetric(value, sync) {
    const data = this.data;
    if (!data) return;
    const metric = resolveMetric(data, value);
    if (sync) this.send("metric", metric);
    this.ui.metricSelect.value = metric;
    if (metric === this.state.metric) return;
    this.state.metric = metric;
    this.refreshMetric();
    this.followTarget();
    this.requestDraw();
  }

  /**
   * Which tracked token a per-target metric shows (the token menu, or the `target` trait).
   * @param {unknown} value
   * @param {boolean} sync tell Python (the user chose it in the menu)
   */
  setTarget(value, sync) {
    const data = this.data;
    if (!data) return;
    // Python's token for a payload not decoded yet (tracked and shown at once): `reload` takes
    // it with that payload.
    if (!sync && typeof value === "string" && value && !data.targets.includes(value)) return;
    const target = resolveTarget(data, value);
    if (sync) this.send("target", target);
    this.ui.targetSelect.value = target;
    if (target === this.state.target) return;
    this.state.target = target;
    this.refreshMetric();
    this.updateTooltip();
    if (this.state.focused && this.state.focus) this.announce(this.state.focus);
    this.followTarget();
    this.requestDraw();
  }

  /** The index of the tracked token shown, among the data's targets. */
  targetIndex() {
    return this.data ? targetIndex(this.data, this.state.target) : 0;
  }

  /**
   * The trajectory chart follows the tracked token the heatmap shows: when a per-target metric
   * is chosen, or shows another token (tracked and shown from the box, the menu, Python), that
   * token's line is switched on (the chart shows only the first few targets by default).
   */
  followTarget() {
    const data = this.data;
    const s = this.state;
    const spec = data ? metricSpec(data, s.metric) : undefined;
    const key = spec && spec.perTarget && s.target ? `${s.metric}\u0000${s.target}` : "";
    if (key === this.followedTarget) return;
    this.followedTarget = key;
    if (!key || !data) return;
    this.trajectory.toggled.set(`target:${data.targets.indexOf(s.target)}`, true);
    this.trajectory.rerender();
    this.requestDetails();
  }

  /**
   * Shows another lens of the payload (the lens menu, or the `lens_name` trait): the same prompt,
   * row, metric, pinned cell and column, read through that lens.
   * @param {unknown} name
   * @param {boolean} sync tell Python (the user chose it in the menu)
   */
  setLens(name, sync) {
    const data = this.lenses.find((lens) => lens.lensName === name);
    if (!data) {
      // Not one of the lenses (Python validates the trait; a stale page might not): stay.
      this.ui.lensSelect.value = this.state.lens;
      return;
    }
    if (sync) this.send("lens_name", data.lensName);
    this.ui.lensSelect.value = data.lensName;
    if (data === this.data) return;
    const s = this.state;
    this.data = data;
    s.lens = data.lensName;
    this.painter.setData(data);
    showData(this.ui, data);
    s.metric = resolveMetric(data, s.metric);
    if (!metricAvailable(data, this.shownMetric)) this.shownMetric = s.metric;
    this.ui.metricSelect.value = s.metric;
    showControls(this.ui, data, s);
    this.refreshMetric();
    showPin(this.ui, data, s.selected);
    this.showAttribution();
    this.layoutKey = null;
    this.relayout();
    this.updateTooltip();
    if (s.focused && s.focus) this.announce(s.focus);
    this.live?.dataChanged();
  }

  /**
   * @param {Selected | null} value
   * @param {boolean} sync
   */
  setSelected(value, sync) {
    this.state.selected = value;
    if (sync) this.send("selected", value);
    showPin(this.ui, this.data, value);
    this.updateTooltip();
    this.updateWhy();
    this.requestDraw();
    this.live?.selectionChanged();
  }

  /** @param {Cell | null} cell */
  setHover(cell) {
    const old = this.state.hover;
    if (old === cell || (old && cell && old.layerIndex === cell.layerIndex && old.position === cell.position)) return;
    this.state.hover = cell;
    if (cell) {
      this.chartHover = cell;
      this.whyHover = cell;
      this.requestDetails();
    }
    this.updateTooltip();
    this.updateWhy();
    this.requestDraw();
  }

  /**
   * @param {Cell} cell
   * @param {boolean} [announce]
   */
  setFocus(cell, announce = true) {
    this.state.focus = cell;
    // A key press is the latest thing the user did: the tooltip and the chart follow the focus,
    // not a cell the pointer happens to rest on or left behind on its way to the chart.
    this.state.hover = null;
    this.chartHover = null;
    this.whyHover = null;
    if (this.layout) {
      const scroll = revealColumn(this.layout, this.ui.scroller.scrollLeft, Math.max(0, columnOf(this.layout, cell.position)));
      if (scroll !== this.ui.scroller.scrollLeft) this.ui.scroller.scrollLeft = scroll;
    }
    if (announce) this.announce(cell);
    this.updateTooltip();
    this.requestDraw();
    this.live?.columnChanged();
  }

  /** @param {Cell} cell */
  announce(cell) {
    if (!this.data) return;
    const s = this.state;
    const details = cellDetails(this.data, s.prompt, cell.layerIndex, cell.position, this.targetIndex());
    this.ui.readout.textContent = readoutText(details, { pinned: isSelected(s.selected, s.prompt, cell.layerIndex, cell.position), metric: this.shownMetric });
  }

  /** @param {Cell} cell */
  togglePin(cell) {
    if (!this.data) return;
    const s = this.state;
    const next = toggleSelection(s.selected, s.prompt, cell.layerIndex, cell.position);
    this.setSelected(next, true);
    this.ui.readout.textContent = next
      ? readoutText(cellDetails(this.data, s.prompt, cell.layerIndex, cell.position, this.targetIndex()), { pinned: true, metric: this.shownMetric })
      : "Unpinned.";
  }

  /** Shows the focus cell (keyboard navigation) with its tooltip and readout. */
  showKeyboardFocus() {
    const s = this.state;
    if (!this.data || !this.layout) return;
    s.focused = true;
    this.requestDetails();
    if (!s.focus) {
      // Start at the pinned cell, else on the highlighted row at the first visible column.
      const sel = s.selected;
      const first = Math.min(this.layout.nPositions - 1, Math.ceil(this.scrollLeft() / this.layout.cellW));
      s.focus = this.clampCell(
        sel && sel.prompt === s.prompt
          ? { layerIndex: sel.layer_index, position: sel.position }
          : { layerIndex: s.layer, position: positionAt(this.layout, first) },
      );
    }
    this.setFocus(s.focus);
  }

  /** Which metric the cells show; asks for the detail sections when the requested one lacks its. */
  refreshMetric() {
    const data = this.data;
    if (!data) return;
    const s = this.state;
    const available = metricAvailable(data, s.metric);
    if (available) this.shownMetric = s.metric;
    else this.requestDetails();
    this.ui.root.classList.toggle("murano-loading", !available && s.view !== "components");
    showTargetMenu(this.ui, data, s.metric, s.target);
    if (s.view === "components") showComponentLegend(this.ui, this.components.currentGrid(), data.logitSoftcap !== null);
    else showLegend(this.ui, data, this.shownMetric, s.metric, this.targetIndex());
    // The scale-change line holds for the metric it is about, until the metric changes.
    if (this.scaleNote && this.scaleNote.metric !== this.shownMetric) this.scaleNote = null;
    const note = s.view === "components" || !this.scaleNote ? "" : this.scaleNote.text;
    this.ui.legendChange.textContent = note;
    this.ui.legendChange.hidden = !note;
  }

  // ---- Tooltip -------------------------------------------------------------------------------

  /** The cell whose tooltip shows: the hovered one, else the keyboard focus cell. */
  tooltipCell() {
    const s = this.state;
    return s.hover || (s.focused ? s.focus : null);
  }

  updateTooltip() {
    if (this.state.view === "components") {
      const c = this.components;
      const cell = this.data && c.grid ? c.hover || (c.focused ? c.focus : null) : null;
      const rect = cell && c.cellClientRect(cell.layerIndex, cell.position);
      if (!cell || !rect) {
        this.tooltip.hide();
        return;
      }
      const s = this.state;
      this.tooltip.show(c.tooltipContent(cell), isSelected(s.selected, s.prompt, s.layer, cell.position));
      this.tooltip.place(rect);
      return;
    }
    const cell = this.data && this.layout ? this.tooltipCell() : null;
    if (!cell || !this.data) {
      this.tooltip.hide();
      return;
    }
    const s = this.state;
    const details = cellDetails(this.data, s.prompt, cell.layerIndex, cell.position, this.targetIndex());
    this.tooltip.show(tooltipModel(details, { late: this.detailsLate }), isSelected(s.selected, s.prompt, cell.layerIndex, cell.position));
    this.placeTooltip(cell);
  }

  /** @param {Cell} cell */
  placeTooltip(cell) {
    if (this.tooltip.hidden || !this.layout || this.state.view === "components") return;
    const column = columnOf(this.layout, cell.position);
    if (column < 0) return;
    const r = cellRect(this.layout, cell.layerIndex, column, this.scrollLeft());
    const box = this.ui.canvas.getBoundingClientRect();
    this.tooltip.place({ x: box.left + r.x, y: box.top + r.y, w: r.w, h: r.h });
  }

  // ---- Layout and drawing --------------------------------------------------------------------

  /** Recomputes the layout for the current prompt and width, then redraws. */
  relayout() {
    const data = this.data;
    if (!data) return;
    const painter = this.painter;
    const theme = painter.readTheme();
    const s = this.state;
    const n = data.lengths[s.prompt];
    this.placeChart(theme.charW);
    const width = this.ui.scroller.clientWidth || this.el.clientWidth || 800;
    const key = `${s.prompt}|${width}|${theme.charW}|${theme.uiFont}|${s.hideTemplate}`;
    if (key !== this.layoutKey) {
      let maxChars = 1;
      const a = data.arrays;
      const offset = data.offsets[s.prompt];
      const lastRow = (data.L - 1) * data.T + offset;
      const columns = this.shownColumns();
      const shown = columns ? columns.length : n;
      for (let j = 0; j < shown; j++) {
        const p = columns ? columns[j] : j;
        maxChars = Math.max(maxChars, charCount(painter.tokenText(a.input_ids[offset + p])), charCount(painter.tokenText(a.predicted_tokens[lastRow + p])));
        if (maxChars >= 10) break;
      }
      const labelW = painter.labelWidth(data);
      this.layout = computeLayout({ nLayers: data.L, nPositions: shown, width, labelW, charW: theme.charW, maxChars: Math.min(10, maxChars), columns });
      this.layoutKey = key;
      this.ui.track.style.width = `${this.layout.contentW}px`;
      this.ui.track.style.height = `${this.layout.height}px`;
    }
    if (this.revealPending) this.revealPromptEnd();
    this.draw();
    this.relayoutComponents();
    if (this.state.view === "components") showComponentLegend(this.ui, this.components.currentGrid(), data.logitSoftcap !== null);
  }

  /**
   * Opens a prompt where its prediction is: scrolled so that its last position (the column the
   * trajectory chart follows), or its pinned cell, is in view. A prompt of 22 demo tokens is
   * about 2,200 px wide, so at 0 the end was off to the right (issue 21). Waits until the
   * scroller is in the page: a widget drawn before its output is attached cannot scroll yet.
   */
  revealPromptEnd() {
    const layout = this.layout;
    const scroller = this.ui.scroller;
    if (!layout || !scroller.isConnected || scroller.clientWidth === 0) return;
    const s = this.state;
    const sel = s.selected;
    const position = sel && sel.prompt === s.prompt ? sel.position : this.data ? this.data.lengths[s.prompt] - 1 : 0;
    const column = Math.max(0, columnOf(layout, this.clampCell({ layerIndex: 0, position }).position));
    scroller.scrollLeft = revealColumn(layout, 0, column);
    this.revealPending = false;
  }

  /**
   * Puts the chart beside the heatmap when there is room for both, else below it. Decided on the
   * longest prompt, so that moving the prompt slider does not move the chart.
   * @param {number} charW
   */
  placeChart(charW) {
    const data = /** @type {LensData} */ (this.data);
    const available = this.ui.main.clientWidth || this.el.clientWidth || 800;
    const key = `${available}|${charW}`;
    if (key === this.chartPlaceKey) return;
    this.chartPlaceKey = key;
    const longest = Math.max(...data.lengths);
    // Cells as wide as ten characters (the most a cell shows): any layer's top-1 fits.
    const natural = computeLayout({ nLayers: data.L, nPositions: longest, width: 0, labelW: this.painter.labelWidth(data), charW, maxChars: 10 }).contentW;
    const beside = chartBeside(available, natural);
    this.ui.main.classList.toggle("murano-side", beside);
    this.ui.main.classList.toggle("murano-stacked", !beside);
    // Beside: the heatmap takes no more than its widest cells need, so the chart sits next to it.
    const widest = this.painter.labelWidth(data) + longest * GEOMETRY.maxCellW + GEOMETRY.rightPad;
    this.ui.left.style.maxWidth = beside ? `${widest}px` : "";
  }

  scrollLeft() {
    return this.layout ? clampScroll(this.layout, this.ui.scroller.scrollLeft) : 0;
  }

  requestDraw() {
    if (this.frame || typeof requestAnimationFrame !== "function") return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (!this.layout || this.layoutKey === null) this.relayout();
      else this.draw();
    });
  }

  /** The trajectory chart for the column in focus, its rows level with the heatmap's. */
  drawTrajectory() {
    const data = this.data;
    const layout = this.layout;
    if (!data || !layout) return;
    const s = this.state;
    const column = chartColumn(
      { hover: this.chartHover, focus: s.focus, focused: s.focused, selected: s.selected, prompt: s.prompt },
      data.lengths[s.prompt],
    );
    this.trajectory.update({
      data,
      metric: s.view === "components" ? "" : this.shownMetric,
      others: this.lenses.filter((lens) => lens !== data).map((lens) => ({ name: lens.lensName, title: lensTitle(lens), data: lens })),
      prompt: s.prompt,
      position: column.position,
      source: column.source,
      row: s.layer,
      rowH: layout.rowH,
      heatY: layout.heatY,
      // Beside the heatmap, as tall as it; below it, only room for the axis title.
      heightBelow: this.ui.main.classList.contains("murano-side") ? layout.height - layout.heatY - layout.heatH : 0,
      detailsRequested: this.detailsRequested,
      detailsLate: this.detailsLate,
    });
    // A line on the chart waits for a detail section (a column other than the last, pinned from
    // Python, say): ask for it, so that "loading" in its legend is true.
    if (this.trajectory.waiting && !this.detailsRequested) {
      this.requestDetails();
      if (this.detailsRequested) this.drawTrajectory(); // once more: its note says "loading" now
    }
  }

  /** Draws now (synchronously). */
  draw() {
    if (this.frame) {
      cancelAnimationFrame(this.frame);
      this.frame = 0;
    }
    const data = this.data;
    if (!data || !this.layout) return;
    const t0 = performance.now();
    const s = this.state;
    this.debug.visible = this.painter.draw(
      this.layout,
      {
        prompt: s.prompt,
        layer: s.layer,
        metric: this.shownMetric,
        target: this.targetIndex(),
        loading: s.metric !== this.shownMetric,
        selected: s.selected,
        hover: s.hover,
        focus: s.focused ? s.focus : null,
      },
      this.scrollLeft(),
    );
    const tipCell = this.tooltipCell();
    if (tipCell && !this.tooltip.hidden) this.placeTooltip(tipCell);
    if (this.state.view === "components") this.components.draw();
    else this.drawTrajectory();
    this.debug.frames += 1;
    this.debug.lastDrawMs = performance.now() - t0;
    for (const fn of this.debug.drawListeners.splice(0)) fn(this.debug.lastDrawMs);
  }
}

/**
 * A plain rectangle from a DOMRect.
 * @param {DOMRect} r
 */
function rectOf(r) {
  return { x: r.left, y: r.top, w: r.width, h: r.height };
}
