// @ts-check
/**
 * What the view listens to: its controls, the pointer and the keyboard on the heatmap (`grid.js`),
 * the model's payload, resizes and theme changes (the view traits: `view_state.js`). `bindEvents`
 * returns the function that removes them all.
 */

import { bindGrid } from "../../shared/grid_events.js";
import { keepControlKeys } from "../../shared/keys.js";
import { watchTheme } from "../../shared/theme.js";
import { besideGrid, setBeside } from "./beside.js";
import { heatmapGrid } from "./grid.js";
import { setGroup } from "./group.js";
import { bindOverview, onGridScroll } from "./overview.js";
import { reload, setLens } from "./load.js";
import { setLayer, setPrompt } from "./navigation.js";
import { setHideTemplate, setHover, setSelected } from "./selection.js";
import { setMetric, setTarget } from "./metric.js";
import { setExplain, setHeads, setView } from "./explain.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../../shared/layout.js").Cell} Cell
 * @typedef {import("../../shared/grid_events.js").Grid} Grid
 */

/**
 * @param {LensView} view
 * @returns {() => void} removes every listener and observer
 */
export function bindEvents(view) {
  const abort = new AbortController();
  const signal = abort.signal;
  /** @type {(target: EventTarget, type: string, fn: (event: any) => void, options?: AddEventListenerOptions) => void} */
  const on = (target, type, fn, options = {}) => target.addEventListener(type, fn, { signal, ...options });
  const { ui, model } = view;

  on(ui.promptUi.input, "input", () => setPrompt(view, Number(ui.promptUi.input.value), "throttled"));
  on(ui.promptUi.input, "change", () => view.syncPrompt.flush());
  on(ui.layerUi.input, "input", () => setLayer(view, Number(ui.layerUi.input.value), "throttled"));
  on(ui.layerUi.input, "change", () => view.syncLayer.flush());
  on(ui.metricSelect, "change", () => setMetric(view, ui.metricSelect.value, true));
  on(ui.targetSelect, "change", () => setTarget(view, ui.targetSelect.value, true));
  on(ui.groupSelect, "change", () => setGroup(view, ui.groupSelect.value, true));
  on(ui.lensSelect, "change", () => setLens(view, ui.lensSelect.value, true));
  on(ui.besideSelect, "change", () => setBeside(view, ui.besideSelect.value, true));
  on(ui.viewSelect, "change", () => setView(view, ui.viewSelect.value, true));
  on(ui.why.explainSelect, "change", () => setExplain(view, ui.why.explainSelect.value, true));
  on(ui.why.heads, "change", () => setHeads(view, ui.why.heads.checked));
  // The "why" panel keeps the last hovered cell while the pointer is in the widget.
  on(ui.root, "pointerleave", () => {
    if (!view.whyHover) return;
    view.whyHover = null;
    view.updateWhy();
  });
  on(ui.scroller, "scroll", () => {
    if (view.state.hover) setHover(view, null);
    // The view's own scroll (the overview, a jump) was drawn as it was made.
    if (!onGridScroll(view)) view.requestDraw();
  }, { passive: true });
  bindOverview(view, signal);
  bindGrid(ui.canvas, heatmapGrid(view), signal);
  bindGrid(ui.besideCanvas, besideGrid(view), signal);
  keepControlKeys(ui.root, signal);
  // The chart keeps the hovered column while the pointer moves over to it; leaving both drops it.
  on(ui.main, "pointerleave", () => {
    view.chartHover = null;
    view.requestDraw();
  });
  on(ui.unpinButton, "click", () => setSelected(view, null, true));
  on(ui.hideTemplate, "change", () => setHideTemplate(view, ui.hideTemplate.checked, true));

  /** @type {Record<string, () => void>} */
  const handlers = {
    // The view traits' changes: view_state.js, from their one table.
    "change:selected": () => setSelected(view, model.get("selected") ?? null, false),
    "change:_sections": () => reload(view),
    "change:_meta": () => reload(view),
  };
  for (const [event, fn] of Object.entries(handlers)) model.on(event, fn);

  /** @type {ResizeObserver | undefined} */
  let resizeObserver;
  if (typeof ResizeObserver !== "undefined") {
    resizeObserver = new ResizeObserver(() => view.relayout());
    resizeObserver.observe(ui.scroller);
    resizeObserver.observe(ui.comp.scroller);
  }
  // The host's theme changed: the canvas reads the palette again (theme.js).
  const stopWatchingTheme = watchTheme(() => {
    view.painter.forgetTheme();
    view.besidePainter.forgetTheme();
    view.relayout();
  });
  return () => {
    abort.abort();
    for (const [event, fn] of Object.entries(handlers)) model.off(event, fn);
    resizeObserver?.disconnect();
    stopWatchingTheme();
  };
}
