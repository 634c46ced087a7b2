// @ts-check
/**
 * What the view listens to: its controls, the pointer and the keyboard on the heatmap, the model's
 * trait changes, resizes and theme changes. `bindEvents` returns the function that removes them all.
 */

import { columnOf, hitTest, positionAt } from "../layout.js";
import { moveFocus } from "../state.js";
import { bindGrid, onGridKey } from "../shared/grid_events.js";
import { keepControlKeys } from "../shared/keys.js";
import { watchTheme } from "../theme.js";
import { besideGrid } from "./beside.js";
import { bindOverview, onGridScroll, positionChanged } from "./overview.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../layout.js").Cell} Cell
 * @typedef {import("../shared/grid_events.js").Grid} Grid
 */

/**
 * The heatmap cell under a pointer event (the predictions strip stands for the highlighted row).
 * @param {LensView} view
 * @param {MouseEvent} event
 * @returns {Cell | null}
 */
export function eventCell(view, event) {
  if (!view.layout) return null;
  const rect = view.ui.canvas.getBoundingClientRect();
  const hit = hitTest(view.layout, event.clientX - rect.left, event.clientY - rect.top, view.scrollLeft(), view.state.layer);
  // The hit's column shows a true position (columns of hidden template tokens are skipped).
  return hit && hit.area !== "input" ? { layerIndex: hit.layerIndex, position: positionAt(view.layout, hit.position) } : null;
}

/**
 * The heatmap as the shared grid handlers see it (`../shared/grid_events.js`): its columns skip
 * hidden template tokens, so a move goes between the columns shown.
 * @param {LensView} view
 * @returns {Grid}
 */
export function heatmapGrid(view) {
  return {
    get ready() {
      return Boolean(view.data);
    },
    get focus() {
      return view.state.focus;
    },
    set focus(cell) {
      view.store.set({ focus: cell });
    },
    get focused() {
      return view.state.focused;
    },
    set focused(value) {
      view.store.set({ focused: value });
    },
    get pinned() {
      return Boolean(view.state.selected);
    },
    cellAt: (event) => eventCell(view, event),
    setHover: (cell) => {
      // The pointer came from the grid beside: the tooltip reads this grid's lens again.
      const moved = view.hoverGrid !== 0;
      view.hoverGrid = 0;
      view.setHover(cell);
      if (moved) view.updateTooltip();
    },
    setFocus: (cell) => view.setFocus(cell),
    move: (cell, key) => {
      const layout = view.layout;
      if (!layout || !view.data) return null;
      const column = Math.max(0, columnOf(layout, cell.position));
      const next = moveFocus({ layerIndex: cell.layerIndex, position: column }, key, view.data.L, layout.nPositions);
      return next && { layerIndex: next.layerIndex, position: positionAt(layout, next.position) };
    },
    togglePin: (cell) => view.togglePin(cell),
    unpin: () => {
      view.setSelected(null, true);
      view.ui.readout.textContent = "Unpinned.";
    },
    showKeyboardFocus: () => view.showKeyboardFocus(),
    blurred: () => {
      view.updateTooltip();
      view.requestDraw();
    },
  };
}

/**
 * A key press on the heatmap: arrows, Home/End and PageUp/PageDown move the focus cell,
 * Enter or Space pins it, Escape unpins (`onGridKey`).
 * @param {LensView} view
 * @param {KeyboardEvent} event
 */
export function onKeyDown(view, event) {
  onGridKey(heatmapGrid(view), event);
}

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

  on(ui.promptUi.input, "input", () => view.setPrompt(Number(ui.promptUi.input.value), "throttled"));
  on(ui.promptUi.input, "change", () => view.syncPrompt.flush());
  on(ui.layerUi.input, "input", () => view.setLayer(Number(ui.layerUi.input.value), "throttled"));
  on(ui.layerUi.input, "change", () => view.syncLayer.flush());
  on(ui.metricSelect, "change", () => view.setMetric(ui.metricSelect.value, true));
  on(ui.targetSelect, "change", () => view.setTarget(ui.targetSelect.value, true));
  on(ui.groupSelect, "change", () => view.setGroup(ui.groupSelect.value, true));
  on(ui.lensSelect, "change", () => view.setLens(ui.lensSelect.value, true));
  on(ui.besideSelect, "change", () => view.setBeside(ui.besideSelect.value, true));
  on(ui.viewSelect, "change", () => view.setView(ui.viewSelect.value, true));
  on(ui.why.explainSelect, "change", () => view.setExplain(ui.why.explainSelect.value, true));
  on(ui.why.heads, "change", () => view.setHeads(ui.why.heads.checked));
  // The "why" panel keeps the last hovered cell while the pointer is in the widget.
  on(ui.root, "pointerleave", () => {
    if (!view.whyHover) return;
    view.whyHover = null;
    view.updateWhy();
  });
  on(ui.scroller, "scroll", () => {
    if (view.state.hover) view.setHover(null);
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
  on(ui.unpinButton, "click", () => view.setSelected(null, true));
  on(ui.hideTemplate, "change", () => view.setHideTemplate(ui.hideTemplate.checked, true));

  /** @type {Record<string, () => void>} */
  const handlers = {
    "change:prompt": () => { view.syncPrompt.cancel(); view.setPrompt(model.get("prompt"), false); },
    "change:layer": () => { view.syncLayer.cancel(); view.setModelLayer(model.get("layer")); },
    "change:metric": () => view.setMetric(model.get("metric"), false),
    "change:target": () => view.setTarget(model.get("target"), false),
    "change:group": () => view.setGroup(model.get("group"), false),
    "change:lens_name": () => view.setLens(model.get("lens_name"), false),
    "change:lens_beside": () => view.setBeside(model.get("lens_beside") ?? "", false),
    "change:view": () => view.setView(model.get("view"), false),
    "change:explain": () => view.setExplain(model.get("explain"), false),
    "change:selected": () => view.setSelected(model.get("selected") ?? null, false),
    "change:hide_template": () => view.setHideTemplate(model.get("hide_template") === true, false),
    "change:position": () => positionChanged(view),
    "change:_sections": () => view.reload(),
    "change:_meta": () => view.reload(),
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
