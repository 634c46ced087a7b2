// @ts-check
/**
 * What the view listens to: its controls, the pointer and the keyboard on the heatmap, the model's
 * trait changes, resizes and theme changes. `bindEvents` returns the function that removes them all.
 */

import { columnOf, hitTest, positionAt } from "../layout.js";
import { moveFocus } from "../state.js";
import { watchTheme } from "../theme.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../layout.js").Cell} Cell
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
 * A key press on the heatmap: arrows, Home/End and PageUp/PageDown move the focus cell,
 * Enter or Space pins it, Escape unpins.
 * @param {LensView} view
 * @param {KeyboardEvent} event
 */
export function onKeyDown(view, event) {
  if (!view.lens || event.altKey || event.ctrlKey || event.metaKey) return;
  const s = view.state;
  const key = event.key;
  const pinKey = key === "Enter" || key === " ";
  const navigation = moveFocus({ layerIndex: 0, position: 0 }, key, 1, 1) !== null;
  if (!pinKey && !navigation && !(key === "Escape" && s.selected)) return;
  // Handled here: keep the page (and notebook shortcuts such as arrows between cells) out.
  event.preventDefault();
  event.stopPropagation();
  if (key === "Escape") {
    view.setSelected(null, true);
    view.ui.readout.textContent = "Unpinned.";
    return;
  }
  // The first key after a mouse click shows the focus cell where the click was.
  if (!s.focused) view.showKeyboardFocus();
  if (!s.focus) return;
  if (pinKey) view.togglePin(s.focus);
  else if (view.layout) {
    // Moves between the columns shown: hidden template tokens are stepped over.
    const layout = view.layout;
    const column = Math.max(0, columnOf(layout, s.focus.position));
    const next = moveFocus({ layerIndex: s.focus.layerIndex, position: column }, key, view.lens.L, layout.nPositions);
    if (next) view.setFocus({ layerIndex: next.layerIndex, position: positionAt(layout, next.position) });
  }
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
  on(ui.scroller, "scroll", () => {
    if (view.state.hover) view.setHover(null);
    view.requestDraw();
  }, { passive: true });
  on(ui.canvas, "pointermove", (event) => view.setHover(eventCell(view, event)));
  on(ui.canvas, "pointerleave", () => view.setHover(null));
  // The chart keeps the hovered column while the pointer moves over to it; leaving both drops it.
  on(ui.main, "pointerleave", () => {
    view.chartHover = null;
    view.requestDraw();
  });
  on(ui.canvas, "click", (event) => {
    const cell = eventCell(view, event);
    if (!cell) return;
    view.state.focus = cell;
    view.togglePin(cell);
  });
  on(ui.canvas, "pointerdown", () => {
    view.state.focused = false;
  });
  on(ui.canvas, "keydown", (event) => onKeyDown(view, event));
  on(ui.canvas, "focus", () => {
    if (!view.lens) return;
    let keyboard = true;
    try {
      keyboard = ui.canvas.matches(":focus-visible");
    } catch {
      // Browsers without :focus-visible: treat every focus as keyboard focus.
    }
    // A mouse click focuses the canvas too; it pins instead, and shows no focus cell.
    if (keyboard) view.showKeyboardFocus();
  });
  on(ui.canvas, "blur", () => {
    view.state.focused = false;
    view.updateTooltip();
    view.requestDraw();
  });
  on(ui.unpinButton, "click", () => view.setSelected(null, true));
  on(ui.hideTemplate, "change", () => view.setHideTemplate(ui.hideTemplate.checked, true));

  /** @type {Record<string, () => void>} */
  const handlers = {
    "change:prompt": () => { view.syncPrompt.cancel(); view.setPrompt(model.get("prompt"), false); },
    "change:layer": () => { view.syncLayer.cancel(); view.setModelLayer(model.get("layer")); },
    "change:metric": () => view.setMetric(model.get("metric"), false),
    "change:selected": () => view.setSelected(model.get("selected") ?? null, false),
    "change:hide_template": () => view.setHideTemplate(model.get("hide_template") === true, false),
    "change:_sections": () => view.reload(),
    "change:_meta": () => view.reload(),
  };
  for (const [event, fn] of Object.entries(handlers)) model.on(event, fn);

  /** @type {ResizeObserver | undefined} */
  let resizeObserver;
  if (typeof ResizeObserver !== "undefined") {
    resizeObserver = new ResizeObserver(() => view.relayout());
    resizeObserver.observe(ui.scroller);
  }
  // The host's theme changed: the canvas reads the palette again (theme.js).
  const stopWatchingTheme = watchTheme(() => {
    view.painter.forgetTheme();
    view.relayout();
  });
  return () => {
    abort.abort();
    for (const [event, fn] of Object.entries(handlers)) model.off(event, fn);
    resizeObserver?.disconnect();
    stopWatchingTheme();
  };
}
