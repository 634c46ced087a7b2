// @ts-check
/**
 * `LensView`: the heatmap widget, composed. Its state is one object in a store (`store.js`); each
 * feature is a module of functions of the view: the payload and the lens menu (`load.js`), the
 * prompt and row (`navigation.js`), the pinned, hovered and focus cells (`selection.js`), the
 * metric and its scale (`metric.js`), the attribution and the "why" panel (`explain.js`), the
 * detail sections (`details_request.js`), the tooltip's cell (`cell_tip.js`), the chart
 * (`chart.js`), layout and drawing (`redraw.js`). The DOM is built by `dom.js`, filled by
 * `controls.js`; events come from `events.js`, the traits' changes from `view_state.js`. A setter
 * sets its key in the store, and each module that shows that key subscribes to it. This class
 * holds what the modules share and binds, late, the few operations a module calls on a module
 * above it. Tokens reach the page only as text.
 */

import { Painter } from "../painter.js";
import { LiveView } from "../live/view.js";
import { installDebug } from "../../shared/debug.js";
import { makeTooltip, tipFollowsTarget, updateTooltip } from "./cell_tip.js";
import { drawTrajectory, makeTrajectory } from "./chart.js";
import { ComponentView } from "./components.js";
import { debugApi } from "./debug.js";
import { receiveTopkBlock } from "./topk_blocks.js";
import { buildDom } from "./dom.js";
import { makeOverview } from "./overview.js";
import { bindEvents } from "./events.js";
import { componentCellChanged, explainChoice, relayoutComponents, updateWhy } from "./explain.js";
import { reload } from "./load.js";
import { followMetric, refreshMetric, targetIndex } from "./metric.js";
import { draw, followColouring, relayout, requestDraw, scrollLeft } from "./redraw.js";
import { syncers } from "./sync.js";
import { listenToTraits } from "./view_state.js";
import { readoutFollowsTarget } from "./selection.js";
import { pickFor } from "./group.js";
import { createStore } from "./store.js";

export { SYNC_INTERVAL_MS } from "./sync.js";
export { RELOAD_GRACE_MS } from "./load.js";

/**
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../../shared/layout.js").Layout} Layout
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../../shared/state.js").Selected} Selected
 * @typedef {import("../../shared/local_model.js").WidgetModel} WidgetModel
 * @typedef {import("./store.js").ViewState} ViewState
 * @typedef {import("./explain.js").WhyCell} WhyCell
 */

/** The state keys the component view's values depend on: a change lays them out again. */
const COMPONENT_KEYS = new Set(["prompt", "layer", "explain", "heads", "hide_template"]);

let viewCounter = 0;

export class LensView {
  /**
   * Over 100 lines on purpose: the view's fields declared once, each with what it holds (about
   * 70 of its lines), then its parts made in the order they depend on one another and the store
   * subscriptions that tie them; no branch but the first draw's.
   * @param {WidgetModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.el = el;
    /** The view's state (`store.state`, changed by `store.set`). */
    this.store = createStore();

    // The payload (load.js).
    /** @type {LensData | null} the decoded result of the lens shown (the lens itself ran in Python) */
    this.data = null;
    /** @type {LensData[]} every lens of the payload (one, or several side by side) */
    this.lenses = [];
    /** @type {LensData | null} the lens drawn as a second grid (`beside.js`), or null */
    this.beside = null;
    /** @type {Layout | null} the second grid's layout (the first's columns and rows) */
    this.besideLayoutShown = null;
    /** Which grid the pointer hovers (0: the first, 1: the one beside): the tooltip reads its lens. */
    this.hoverGrid = 0;
    this.loaded = false;
    /** @type {ReturnType<typeof setTimeout> | null} a new payload that does not decode (yet) */
    this.reloadTimer = null;
    this.reloadError = "";

    // The metric (metric.js).
    /** The metric the cells show: the requested one, or the last shown while it loads. */
    this.shownMetric = "";
    /** @type {{metric: string, text: string} | null} a new payload changed this metric's colour scale */
    this.scaleNote = null;
    /** The per-target metric and token whose line the chart was last switched on for. */
    this.followedTarget = "";

    // The detail sections (details_request.js).
    this.detailsRequested = false;
    /** The detail sections were asked for and have not come in time (or there is no kernel). */
    this.detailsLate = false;
    this.detailsTimer = 0;
    /** @type {{meta: any, byLens: Map<string, Map<number, import("../payload.js").TopkBlock>>, asked: Set<number>} | null} a long payload's top-k blocks (topk_blocks.js) */
    this.topkStore = null;

    // Layout and drawing (redraw.js).
    /** @type {Layout | null} */
    this.layout = null;
    /** @type {string | null} */
    this.layoutKey = null;
    /** The next layout scrolls the prompt's last position (or its pinned cell) into view. */
    this.revealPending = true;
    this.frame = 0;
    /** @type {{frames: number, lastDrawMs: number, visible: [number, number], drawListeners: ((ms: number) => void)[]}} */
    this.debug = { frames: 0, lastDrawMs: 0, visible: [0, 0], drawListeners: [] };

    // What the pointer left behind (selection.js, explain.js, chart.js).
    /**
     * The heatmap cell the "why" panel keeps after a hover: kept while the pointer moves on to the
     * panel (to change what it explains, say), dropped when it leaves the widget.
     * @type {Cell | null}
     */
    this.whyHover = null;
    /** @type {{cell: WhyCell | null, model: import("../attribution.js").WhyModel | null}} what the panel shows */
    this.whyShown = { cell: null, model: null };
    /**
     * The column the chart follows after a hover: kept while the pointer crosses from the heatmap
     * to the chart (so the chart can be read), dropped when it leaves both.
     * @type {Cell | null}
     */
    this.chartHover = null;
    this.chartPlaceKey = "";

    const { syncPrompt, syncLayer } = syncers(this);
    this.syncPrompt = syncPrompt;
    this.syncLayer = syncLayer;
    const id = `murano-${++viewCounter}`;
    this.ui = buildDom(el, id);
    /** The long-trace bar: overview, find and jump, the `position` trait (`overview.js`). */
    this.overview = makeOverview(this);
    if (Number(model.get("position")) > 0) this.overview.pendingPosition = Number(model.get("position"));
    this.painter = new Painter(this.ui.canvas, this.ui.root);
    this.besidePainter = new Painter(this.ui.besideCanvas, this.ui.root);
    this.trajectory = makeTrajectory(this, id);
    this.tooltip = makeTooltip(this);
    this.componentsAbort = new AbortController();
    this.components = new ComponentView(this.ui.comp, this, this.componentsAbort.signal);
    // Each feature module follows the state keys it shows (a setter only sets its key).
    const unsubscribers = [
      this.store.subscribe((changed) => {
        if (changed.some((key) => COMPONENT_KEYS.has(key))) this.components.invalidate();
      }),
      followMetric(this),
      tipFollowsTarget(this),
      readoutFollowsTarget(this),
      followColouring(this),
    ];
    this.unsubscribe = () => unsubscribers.forEach((unsubscribe) => unsubscribe());
    const unbindEvents = bindEvents(this);
    const stopListening = listenToTraits(this);
    this.unbind = () => {
      unbindEvents();
      stopListening();
    };
    this.onTopkBlock = (/** @type {unknown} */ msg, /** @type {unknown[]} */ buffers) => receiveTopkBlock(this, msg, buffers);
    model.on("msg:custom", this.onTopkBlock);
    /** @type {LiveView | null} the live controls (made after the first load, which they read) */
    this.live = null;
    reload(this);
    this.live = new LiveView(this, this.ui.live);
    this.removeDebug = installDebug(el, "heatmap", debugApi(this));
    if (this.ui.scroller.clientWidth > 0) draw(this);
    else this.requestDraw();
  }

  /** @returns {ViewState} the view's state (the store's object) */
  get state() {
    return this.store.state;
  }

  destroy() {
    this.unbind();
    this.model.off("msg:custom", this.onTopkBlock);
    this.unsubscribe();
    this.live?.destroy();
    if (this.reloadTimer) clearTimeout(this.reloadTimer);
    if (this.detailsTimer) clearTimeout(this.detailsTimer);
    this.componentsAbort.abort();
    this.trajectory.destroy();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.syncPrompt.flush();
    this.syncLayer.flush();
    this.overview.report.flush();
    this.painter.images.clear();
    this.besidePainter.images.clear();
    this.ui.root.remove();
    this.removeDebug();
  }

  // What a module calls on a module above it (the one that imports it, directly or not): bound
  // here, late, since a direct import would close a circle. Every other operation is its
  // module's function, imported where it is called; what follows a state key subscribes to it.

  // metric.js (the metric module reads the grid beside, which reads the heatmap's grid)
  targetIndex() { return targetIndex(this); }
  /** @param {string} metric @returns {number} the index of the token or group `metric` shows */
  itemIndex(metric) { return pickFor(this.data, metric, targetIndex(this)); }
  refreshMetric() { refreshMetric(this); }

  // explain.js (it sends through sync.js, which the prompt and row use; its DOM holds the
  // component view, which asks it what is explained)
  explainChoice() { return explainChoice(this); }
  updateWhy() { updateWhy(this); }
  relayoutComponents() { relayoutComponents(this); }
  /** @param {Cell | null} cell */
  componentCellChanged(cell) { componentCellChanged(this, cell); }

  // chart.js (it moves the row, navigation.js, whose cells ask for the detail sections)
  drawTrajectory() { drawTrajectory(this); }
  // cell_tip.js (it asks topk_blocks.js for a long payload's block, which shows it when it comes)
  updateTooltip() { updateTooltip(this); }
  // redraw.js (it reads the tooltip, the chart, the grid beside and the overview, which call it)
  relayout() { relayout(this); }
  requestDraw() { requestDraw(this); }
  draw() { draw(this); }
  scrollLeft() { return scrollLeft(this); }
}
