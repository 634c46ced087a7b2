// @ts-check
/**
 * Layout and drawing: the heatmap's layout for the prompt and width (`relayout`, cached by what
 * it depends on), the first scroll to the prompt's end, one draw per animation frame at most
 * (`requestDraw`) or now (`draw`: the canvas, then the tooltip's place, then the chart or the
 * component view, and the test hook's counters).
 */

import { clampScroll, columnOf, computeLayout, revealColumn } from "../layout.js";
import { charCount } from "../tokens.js";
import { placeTooltip, tooltipCell } from "./cell_tip.js";
import { drawTrajectory, placeChart } from "./chart.js";
import { showComponentLegend } from "./controls.js";
import { besideLayout, drawBeside, gridDomain } from "./beside.js";
import { applyPendingPosition, updateOverview } from "./overview.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../payload.js").LensData} LensData
 */

/**
 * Recomputes the layout for the current prompt and width, then redraws.
 * @param {LensView} view
 */
export function relayout(view) {
  const { data, painter, ui } = view;
  if (!data) return;
  const theme = painter.readTheme();
  const s = view.state;
  const n = data.lengths[s.prompt];
  placeChart(view, theme.charW);
  const width = ui.scroller.clientWidth || view.el.clientWidth || 800;
  const beside = view.beside;
  const key = `${s.prompt}|${width}|${theme.charW}|${theme.uiFont}|${s.hideTemplate}|${beside ? beside.lensName : ""}`;
  if (key !== view.layoutKey) {
    let maxChars = 1;
    const a = data.arrays;
    const offset = data.offsets[s.prompt];
    const lastRow = (data.L - 1) * data.T + offset;
    const columns = view.shownColumns();
    const shown = columns ? columns.length : n;
    for (let j = 0; j < shown; j++) {
      const p = columns ? columns[j] : j;
      maxChars = Math.max(maxChars, charCount(painter.tokenText(a.input_ids[offset + p])), charCount(painter.tokenText(a.predicted_tokens[lastRow + p])));
      if (maxChars >= 10) break;
    }
    // Two grids: one label width, so that their columns lie one under the other.
    const labelW = Math.max(painter.labelWidth(data), beside ? view.besidePainter.labelWidth(beside) : 0);
    // Two grids share the height one grid would take at most, so that both stay in view.
    const maxHeight = beside ? 300 : 460;
    view.layout = computeLayout({ nLayers: data.L, nPositions: shown, width, labelW, charW: theme.charW, maxChars: Math.min(10, maxChars), maxHeight, columns });
    view.besideLayoutShown = beside ? besideLayout(view.layout, beside, computeLayout) : null;
    view.layoutKey = key;
    ui.track.style.width = `${view.layout.contentW}px`;
    // Two grids and their captions: the track is as tall as they are.
    ui.track.style.height = beside ? "" : `${view.layout.height}px`;
  }
  if (view.revealPending) revealPromptEnd(view);
  applyPendingPosition(view);
  draw(view);
  view.relayoutComponents();
  if (view.state.view === "components") showComponentLegend(ui, view.components.currentGrid(), data.logitSoftcap !== null);
}

/**
 * Opens a prompt where its prediction is: scrolled so that its last position (the column the
 * trajectory chart follows), or its pinned cell, is in view. A prompt of 22 demo tokens is about
 * 2,200 px wide, so at 0 the end was off to the right (issue 21). Waits until the scroller is in
 * the page: a widget drawn before its output is attached cannot scroll yet.
 * @param {LensView} view
 */
function revealPromptEnd(view) {
  const layout = view.layout;
  const scroller = view.ui.scroller;
  if (!layout || !scroller.isConnected || scroller.clientWidth === 0) return;
  const s = view.state;
  const sel = s.selected;
  const position = sel && sel.prompt === s.prompt ? sel.position : view.data ? view.data.lengths[s.prompt] - 1 : 0;
  const column = Math.max(0, columnOf(layout, view.clampCell({ layerIndex: 0, position }).position));
  scroller.scrollLeft = revealColumn(layout, 0, column);
  view.overview.ownScroll = scroller.scrollLeft; // the view's own scroll: not the user's position
  view.revealPending = false;
}

/**
 * The heatmap's scroll, clamped to its content.
 * @param {LensView} view
 */
export function scrollLeft(view) {
  return view.layout ? clampScroll(view.layout, view.ui.scroller.scrollLeft) : 0;
}

/**
 * Draws at the next animation frame (once, however often it is asked for before then).
 * @param {LensView} view
 */
export function requestDraw(view) {
  if (view.frame || typeof requestAnimationFrame !== "function") return;
  view.frame = requestAnimationFrame(() => {
    view.frame = 0;
    if (!view.layout || view.layoutKey === null) relayout(view);
    else draw(view);
  });
}

/**
 * Draws now (synchronously).
 * @param {LensView} view
 */
export function draw(view) {
  if (view.frame) {
    cancelAnimationFrame(view.frame);
    view.frame = 0;
  }
  const { data, layout, debug } = view;
  if (!data || !layout) return;
  const t0 = performance.now();
  const s = view.state;
  /** @type {import("../painter.js").Scene} */
  const scene = {
    prompt: s.prompt,
    layer: s.layer,
    metric: view.shownMetric,
    target: view.itemIndex(view.shownMetric),
    loading: s.metric !== view.shownMetric,
    selected: s.selected,
    hover: s.hover,
    focus: s.focused ? s.focus : null,
    domain: gridDomain(view),
  };
  const scroll = scrollLeft(view);
  debug.visible = view.painter.draw(layout, scene, scroll);
  // The grid beside: the same cursor, row and scale, its own lens.
  drawBeside(view, scene, scroll);
  updateOverview(view);
  const tipCell = tooltipCell(view);
  if (tipCell && !view.tooltip.hidden) placeTooltip(view, tipCell);
  if (view.state.view === "components") view.components.draw();
  else drawTrajectory(view);
  debug.frames += 1;
  debug.lastDrawMs = performance.now() - t0;
  for (const fn of debug.drawListeners.splice(0)) fn(debug.lastDrawMs);
}
