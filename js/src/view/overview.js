// @ts-check
/**
 * The long-trace bar (issue 51), above the heatmap when a prompt is long: an overview of every
 * position × every layer of the shown metric (pooled per pixel column by `overview_pool.js`,
 * once per prompt, metric and width, not per frame), a viewport box over what the grid shows
 * (drag it, click anywhere, or use the keyboard), marks where the answer is top-1, where a tracked
 * token passes `MARK_THRESHOLD`, where a chat role or generated text begins; a search of the input
 * and the predictions (`search.js`) with next / previous, and a jump to where the answer is first
 * top-1. The `position` trait is the first position the grid shows: Python sets it (the grid
 * scrolls there), the view reports the user's scrolls (throttled).
 */

import { colourLut } from "../colour.js";
import { clampScroll, columnOf, positionAt, visibleColumns } from "../layout.js";
import { metricDomain, metricLayout, metricSpec } from "../metrics.js";
import { promptHasNoValue } from "../payload.js";
import { h } from "../shared/dom.js";
import { throttle } from "../throttle.js";
import { roleStyles, roleNames } from "../token_marks.js";
import { quoteToken } from "../tokens.js";
import { gridDomain } from "./beside.js";
import { SYNC_INTERVAL_MS } from "./navigation.js";
import { traceMarks } from "./overview_marks.js";
import { POOL_MODES, overviewWidth, poolColumns } from "./overview_pool.js";
import { findHits, firstAnswerTop1, stepHit } from "./search.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../layout.js").Layout} Layout
 * @typedef {import("./overview_pool.js").PoolMode} PoolMode
 * @typedef {import("./search.js").Hit} Hit
 *
 * @typedef {object} Mark
 * @property {number} column
 * @property {string} colour
 * @property {string} kind "answer", "target", "role" or "generated"
 *
 * @typedef {object} OverviewImage
 * @property {string} key what it was made from
 * @property {HTMLCanvasElement} canvas `width` × L pixels, the top layer in row 0
 * @property {Mark[]} marks
 * @property {import("../payload.js").LensData} data the lens it shows
 */

/** The bar shows for prompts of more columns than this (and wider than the grid): shorter ones look as before. */
export const LONG_TRACE_COLUMNS = 64;
/** The overview's height in CSS pixels: a band of marks over the pooled image. */
export const OVERVIEW_MARKS_H = 7;
export const OVERVIEW_IMAGE_H = 44;
/** A tracked token is marked where its probability reaches this in some layer. */
export const MARK_THRESHOLD = 0.5;

/**
 * The bar's elements and what it remembers.
 * @param {LensView} view
 */
export function makeOverview(view) {
  const box = h("div", "murano-longtrace", { hidden: "" });
  const head = h("div", "murano-longtrace-head");
  const poolLabel = h("label", "murano-overview-pool");
  poolLabel.append(h("span", "murano-label", {}, "Overview"));
  const poolSelect = h("select", "murano-overview-pool-select", { "aria-label": "Overview pooling per pixel column" });
  for (const mode of POOL_MODES) poolSelect.append(h("option", "", { value: mode }, `${mode} per pixel column`));
  poolLabel.append(poolSelect);
  const search = h("input", "murano-find", { type: "search", placeholder: "find a token", "aria-label": "Find in the input tokens and the predictions", spellcheck: "false" });
  const prev = h("button", "murano-find-prev", { type: "button", "aria-label": "Previous match", title: "Previous match (Shift+Enter)" }, "‹");
  const next = h("button", "murano-find-next", { type: "button", "aria-label": "Next match", title: "Next match (Enter)" }, "›");
  const count = h("span", "murano-find-count", { "aria-live": "polite" });
  const answer = h("button", "murano-find-answer", { type: "button", hidden: "" }, "answer first top-1");
  const found = h("span", "murano-find-found", { role: "status" });
  head.append(poolLabel, search, prev, next, count, answer, found);
  const strip = h("div", "murano-overview", {
    role: "slider",
    tabindex: 0,
    "aria-label": "Trace overview: the grid's place in the whole prompt",
    "aria-valuemin": 0,
    "aria-valuemax": 0,
    "aria-valuenow": 0,
  });
  const canvas = h("canvas", "murano-overview-canvas", { "aria-hidden": "true" });
  const viewport = h("div", "murano-overview-viewport", { "aria-hidden": "true" });
  strip.append(canvas, viewport);
  box.append(head, strip);
  view.ui.left.insertBefore(box, view.ui.body);
  return {
    box, poolSelect, search, prev, next, count, answer, found, strip, canvas, viewport,
    /** @type {PoolMode} */
    mode: "max",
    /** @type {OverviewImage | null} */
    image: null,
    /** The canvas as last drawn (the image's key and the CSS width). */
    drawnKey: "",
    /** @type {Hit[]} */
    hits: [],
    hitIndex: -1,
    hitsKey: "",
    /** The scroll the view set itself (not reported to Python as the user's). */
    ownScroll: NaN,
    /** A position Python asked for before the grid was laid out. */
    pendingPosition: -1,
    /** The view's reports of the user's scrolls, throttled. */
    report: throttle((/** @type {number} */ p) => view.send("position", p), SYNC_INTERVAL_MS),
    /** Test and bench counters: pooled images made. */
    pooled: 0,
  };
}

/** @typedef {ReturnType<typeof makeOverview>} Overview */

/**
 * Whether the bar is shown: a prompt of many columns that the grid shows only part of.
 * @param {Layout} layout
 */
export function isLongTrace(layout) {
  return layout.nPositions > LONG_TRACE_COLUMNS && layout.contentW > layout.width;
}

/**
 * The first position the grid shows.
 * @param {LensView} view
 */
export function firstPosition(view) {
  const layout = view.layout;
  if (!layout || layout.nPositions === 0) return 0;
  const [first] = visibleColumns(layout, view.scrollLeft());
  return positionAt(layout, Math.min(first, layout.nPositions - 1));
}

/**
 * Scrolls the grid so that `position` (or the nearest shown column after it) is its first column.
 * @param {LensView} view
 * @param {number} position
 * @param {boolean} report tell Python (the user moved it), or not (Python asked)
 */
export function scrollToPosition(view, position, report) {
  const { layout, ui, overview } = view;
  if (!layout || !view.data || ui.scroller.clientWidth === 0) {
    overview.pendingPosition = position;
    return;
  }
  overview.pendingPosition = -1;
  const column = columnAtOrAfter(layout, position);
  ui.scroller.scrollLeft = clampScroll(layout, column * layout.cellW);
  overview.ownScroll = ui.scroller.scrollLeft;
  if (report) overview.report(firstPosition(view));
  view.draw();
}

/**
 * The column showing `position`, or the next shown one (template tokens may be hidden).
 * @param {Layout} layout
 * @param {number} position
 */
function columnAtOrAfter(layout, position) {
  const p = Math.max(0, Math.round(Number(position)) || 0);
  if (!layout.columns) return Math.min(p, Math.max(0, layout.nPositions - 1));
  const column = layout.columns.findIndex((c) => c >= p);
  return column < 0 ? Math.max(0, layout.nPositions - 1) : column;
}

/**
 * The heatmap scrolled: a scroll the view did not make itself is the user's, reported.
 * @param {LensView} view
 * @returns {boolean} whether the view made it (and drew it) itself
 */
export function onGridScroll(view) {
  const { overview, ui } = view;
  if (ui.scroller.scrollLeft === overview.ownScroll) {
    overview.ownScroll = NaN;
    return true;
  }
  overview.ownScroll = NaN;
  if (view.layout && view.data) overview.report(firstPosition(view));
  return false;
}

/**
 * Python set `position`.
 * @param {LensView} view
 */
export function positionChanged(view) {
  view.overview.report.cancel();
  const value = Number(view.model.get("position"));
  if (!Number.isFinite(value) || value === firstPosition(view)) return;
  scrollToPosition(view, value, false);
}

/**
 * After a layout: a position Python asked for before there was one.
 * @param {LensView} view
 */
export function applyPendingPosition(view) {
  const p = view.overview.pendingPosition;
  if (p >= 0 && view.layout && view.ui.scroller.clientWidth > 0) scrollToPosition(view, p, false);
}

/**
 * The metric's values of the prompt's shown columns, `[L, n]` row-major (NaN where missing).
 * @param {LensView} view
 * @param {Layout} layout
 */
function metricRows(view, layout) {
  const data = /** @type {import("../payload.js").LensData} */ (view.data);
  const s = view.state;
  const n = layout.nPositions;
  const out = new Float32Array(data.L * n).fill(NaN);
  const spec = metricSpec(data, view.shownMetric);
  const array = spec && data.arrays[spec.field];
  if (!spec || !array || promptHasNoValue(data, spec.field, s.prompt)) return out;
  const { stride, offset: at } = metricLayout(data, spec, view.targetIndex());
  if (stride === 0) return out;
  const scale = data.scales[spec.field] ?? 1;
  const missing = data.arrays.missing;
  const finalMissing = spec.finalBased ? data.arrays.final_missing : undefined;
  const offset = data.offsets[s.prompt];
  const columns = layout.columns;
  for (let i = 0; i < data.L; i++) {
    const base = i * data.T + offset;
    for (let j = 0; j < n; j++) {
      const p = columns ? columns[j] : j;
      const idx = base + p;
      if ((missing && missing[idx]) || (finalMissing && finalMissing[offset + p])) continue;
      out[i * n + j] = array[idx * stride + at] * scale;
    }
  }
  return out;
}

/**
 * The marks (`overview_marks.js`), coloured: the answer in the accent colour, a tracked token in
 * the text colour, each role in its band colour, generated text in the generation colour.
 * @param {LensView} view
 * @param {Layout} layout
 * @returns {Mark[]}
 */
export function overviewMarks(view, layout) {
  const data = /** @type {import("../payload.js").LensData} */ (view.data);
  const theme = view.painter.readTheme();
  const styles = roleStyles(roleNames(data));
  /** @type {Record<string, string>} */
  const colours = { answer: theme.accent, target: theme.fg, generated: theme.generated };
  const pick = view.targetIndex();
  const target = typeof pick === "number" ? pick : pick.target;
  return traceMarks(data, view.state.prompt, layout.columns, target, MARK_THRESHOLD).map((mark) => ({
    column: mark.column,
    kind: mark.kind,
    colour: mark.kind === "role" ? (styles[mark.role]?.colour ?? theme.muted) : colours[mark.kind],
  }));
}

/**
 * The pooled image of the shown metric (made once per prompt, metric, pooling and width).
 * @param {LensView} view
 * @param {Layout} layout
 * @param {number} cssWidth
 * @returns {OverviewImage}
 */
function overviewImage(view, layout, cssWidth) {
  const { overview } = view;
  const data = /** @type {import("../payload.js").LensData} */ (view.data);
  const width = overviewWidth(layout.nPositions, cssWidth);
  const domain = gridDomain(view) ?? (metricSpec(data, view.shownMetric) ? metricDomain(data, view.shownMetric) : null);
  const key = `${view.layoutKey}|${data.lensName}|${view.shownMetric}|${JSON.stringify(view.targetIndex())}|${overview.mode}|${width}|${domain ? `${domain.min}:${domain.max}` : ""}`;
  if (overview.image && overview.image.key === key && overview.image.data === data) return overview.image;
  const L = data.L;
  const pooled = poolColumns(metricRows(view, layout), L, layout.nPositions, width, overview.mode);
  overview.pooled += 1;
  const pixels = new Uint8ClampedArray(width * L * 4);
  const spec = metricSpec(data, view.shownMetric);
  if (spec && domain) {
    const lut = colourLut(spec.scale, spec.reverse);
    const logDen = domain.log ? Math.log1p(domain.max - domain.min) : 0;
    const span = domain.max - domain.min || 1;
    for (let i = 0; i < L; i++) {
      const row = L - 1 - i;
      for (let k = 0; k < width; k++) {
        const v = pooled[i * width + k];
        if (v !== v) continue;
        const d = v - domain.min;
        let t = domain.log ? Math.log1p(d > 0 ? d : 0) / logDen : d / span;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        const c = Math.round(t * 255) * 3;
        const o = (row * width + k) * 4;
        pixels[o] = lut[c];
        pixels[o + 1] = lut[c + 1];
        pixels[o + 2] = lut[c + 2];
        pixels[o + 3] = 255;
      }
    }
  }
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = Math.max(1, L);
  const ctx = canvas.getContext("2d");
  if (ctx && L > 0) ctx.putImageData(new ImageData(pixels, width, L), 0, 0);
  overview.image = { key, canvas, marks: overviewMarks(view, layout), data };
  overview.drawnKey = "";
  return overview.image;
}

/**
 * Shows, hides and draws the bar; places the viewport box (every frame: cheap).
 * @param {LensView} view
 */
export function updateOverview(view) {
  const { overview, layout, data } = view;
  const show = Boolean(data && layout && view.state.view === "layers" && isLongTrace(layout));
  if (overview.box.hidden === show) overview.box.hidden = !show;
  if (!show || !data || !layout) return;
  // Under the grid's cells, not its row labels.
  const margin = `${layout.labelW}px`;
  if (overview.strip.style.marginLeft !== margin) overview.strip.style.marginLeft = margin;
  const cssWidth = overview.strip.clientWidth;
  if (cssWidth <= 0) return;
  const image = overviewImage(view, layout, cssWidth);
  const drawnKey = `${image.key}|${cssWidth}`;
  if (overview.drawnKey !== drawnKey) {
    drawImage(view, image, cssWidth);
    overview.drawnKey = drawnKey;
  }
  const n = layout.nPositions;
  const [first, last] = visibleColumns(layout, view.scrollLeft());
  const left = (first / n) * cssWidth;
  const w = Math.max(3, ((last - first) / n) * cssWidth);
  overview.viewport.style.left = `${Math.min(cssWidth - w, left)}px`;
  overview.viewport.style.width = `${w}px`;
  const firstShown = positionAt(layout, Math.min(first, n - 1));
  const lastShown = positionAt(layout, Math.max(first, last - 1));
  overview.strip.setAttribute("aria-valuemax", String(positionAt(layout, n - 1)));
  overview.strip.setAttribute("aria-valuenow", String(firstShown));
  overview.strip.setAttribute("aria-valuetext", `positions ${firstShown}–${lastShown} of ${data.lengths[view.state.prompt]}`);
  showAnswerButton(view);
}

/**
 * @param {LensView} view
 * @param {OverviewImage} image
 * @param {number} cssWidth
 */
function drawImage(view, image, cssWidth) {
  const { canvas } = view.overview;
  const dpr = window.devicePixelRatio || 1;
  const height = OVERVIEW_MARKS_H + OVERVIEW_IMAGE_H;
  canvas.width = Math.round(cssWidth * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${cssWidth}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, cssWidth, height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(image.canvas, 0, OVERVIEW_MARKS_H, cssWidth, OVERVIEW_IMAGE_H);
  const n = view.layout ? view.layout.nPositions : 1;
  for (const mark of image.marks) {
    const x = Math.floor((mark.column / n) * cssWidth);
    ctx.fillStyle = mark.colour;
    if (mark.kind === "role" || mark.kind === "generated") ctx.fillRect(x, 0, 2, height);
    else ctx.fillRect(x, 0, 2, OVERVIEW_MARKS_H - 1);
  }
}

/**
 * The column under an overview x (CSS pixels from its left edge).
 * @param {LensView} view
 * @param {number} x
 */
function columnAtX(view, x) {
  const layout = /** @type {Layout} */ (view.layout);
  const w = view.overview.strip.clientWidth || 1;
  return Math.max(0, Math.min(layout.nPositions - 1, Math.floor((x / w) * layout.nPositions)));
}

/**
 * Moves the grid so that its first column is `column` (the user's move: reported).
 * @param {LensView} view
 * @param {number} column
 */
function moveToColumn(view, column) {
  const layout = view.layout;
  if (!layout) return;
  const c = Math.max(0, Math.min(layout.nPositions - 1, Math.round(column)));
  scrollToPosition(view, positionAt(layout, c), true);
}

/** How many columns the grid shows. */
function shownCount(/** @type {LensView} */ view) {
  const layout = /** @type {Layout} */ (view.layout);
  const [first, last] = visibleColumns(layout, view.scrollLeft());
  return Math.max(1, last - first);
}

/**
 * The bar's listeners: drag or click the overview, its keys, the pooling menu, the search.
 * @param {LensView} view
 * @param {AbortSignal} signal
 */
export function bindOverview(view, signal) {
  const o = view.overview;
  /** @type {(target: EventTarget, type: string, fn: (event: any) => void) => void} */
  const on = (target, type, fn) => target.addEventListener(type, fn, { signal });
  /** Where in the viewport box the drag holds it (columns from its left edge). */
  let grip = -1;
  on(o.strip, "pointerdown", (/** @type {PointerEvent} */ event) => {
    if (!view.layout || event.button !== 0) return;
    const rect = o.strip.getBoundingClientRect();
    const column = columnAtX(view, event.clientX - rect.left);
    const [first] = visibleColumns(view.layout, view.scrollLeft());
    const shown = shownCount(view);
    // On the box: drag it by where it was grabbed; elsewhere: centre it there, then drag.
    grip = column >= first && column < first + shown ? column - first : Math.floor(shown / 2);
    moveToColumn(view, column - grip);
    try {
      o.strip.setPointerCapture(event.pointerId); // the drag goes on outside the strip
    } catch {
      // a synthetic pointer (no active pointer of that id): the drag works inside the strip
    }
    o.strip.focus({ preventScroll: true });
    event.preventDefault();
  });
  on(o.strip, "pointermove", (/** @type {PointerEvent} */ event) => {
    if (grip < 0 || !view.layout) return;
    const rect = o.strip.getBoundingClientRect();
    moveToColumn(view, columnAtX(view, event.clientX - rect.left) - grip);
  });
  const release = () => {
    if (grip < 0) return;
    grip = -1;
    o.report.flush();
  };
  on(o.strip, "pointerup", release);
  on(o.strip, "pointercancel", release);
  on(o.strip, "keydown", (/** @type {KeyboardEvent} */ event) => {
    const layout = view.layout;
    if (!layout) return;
    const [first] = visibleColumns(layout, view.scrollLeft());
    const page = shownCount(view);
    /** @type {Record<string, number>} */
    const to = {
      ArrowLeft: first - 1,
      ArrowDown: first - 1,
      ArrowRight: first + 1,
      ArrowUp: first + 1,
      PageUp: first - page,
      PageDown: first + page,
      Home: 0,
      End: layout.nPositions - 1,
    };
    if (!(event.key in to)) return;
    event.preventDefault();
    event.stopPropagation();
    moveToColumn(view, to[event.key]);
  });
  on(o.poolSelect, "change", () => {
    o.mode = /** @type {PoolMode} */ (POOL_MODES.includes(/** @type {PoolMode} */ (o.poolSelect.value)) ? o.poolSelect.value : "max");
    view.draw();
  });
  on(o.search, "input", () => {
    o.hitsKey = "";
    o.hitIndex = -1;
    showFind(view, false);
  });
  on(o.search, "keydown", (/** @type {KeyboardEvent} */ event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    findStep(view, event.shiftKey ? -1 : 1);
  });
  on(o.next, "click", () => findStep(view, 1));
  on(o.prev, "click", () => findStep(view, -1));
  on(o.answer, "click", () => jumpToAnswer(view));
}

/**
 * The hits of the search box's text in the shown prompt (found again when the text, the prompt
 * or the hidden columns changed).
 * @param {LensView} view
 */
function currentHits(view) {
  const o = view.overview;
  const layout = view.layout;
  if (!view.data || !layout) return [];
  const key = `${view.data.lensName}|${view.state.prompt}|${view.layoutKey}|${o.search.value}`;
  if (o.hitsKey !== key) {
    o.hits = o.search.value ? findHits(view.data, view.state.prompt, o.search.value, layout.columns) : [];
    o.hitsKey = key;
    o.hitIndex = -1;
  }
  return o.hits;
}

/**
 * The count ("3 / 17") and, after a step, what was found (as text).
 * @param {LensView} view
 * @param {boolean} stepped
 */
function showFind(view, stepped) {
  const o = view.overview;
  const hits = currentHits(view);
  o.count.textContent = o.search.value ? `${o.hitIndex >= 0 ? o.hitIndex + 1 : 0} / ${hits.length}` : "";
  if (!stepped) o.found.textContent = o.search.value && hits.length === 0 ? "no match" : "";
}

/**
 * Goes to the next (1) or previous (-1) hit: the grid scrolls to it, the keyboard focus goes to
 * its cell, and the bar says what was found (text only).
 * @param {LensView} view
 * @param {1 | -1} step
 */
export function findStep(view, step) {
  const o = view.overview;
  const hits = currentHits(view);
  o.hitIndex = stepHit(hits.length, o.hitIndex, step);
  showFind(view, true);
  if (o.hitIndex < 0 || !view.data) return;
  const hit = hits[o.hitIndex];
  const where = hit.layerIndex < 0 ? "input" : `layer ${view.data.layers[hit.layerIndex]} top-1`;
  o.found.textContent = `${quoteToken(view.data.tokens[hit.token])} at position ${hit.position} (${where})`;
  goTo(view, hit.position, hit.layerIndex < 0 ? view.state.layer : hit.layerIndex);
}

/**
 * Scrolls so that `position` is in the middle of the grid and puts the focus on its cell.
 * @param {LensView} view
 * @param {number} position
 * @param {number} layerIndex
 */
function goTo(view, position, layerIndex) {
  const layout = view.layout;
  if (!layout) return;
  const column = Math.max(0, columnOf(layout, position));
  moveToColumn(view, column - Math.floor(shownCount(view) / 2));
  view.store.set({ focused: true });
  view.setFocus({ layerIndex, position });
}

/**
 * Goes to where the answer is first the top-1 prediction.
 * @param {LensView} view
 */
export function jumpToAnswer(view) {
  const o = view.overview;
  if (!view.data || !view.layout) return;
  const first = firstAnswerTop1(view.data, view.state.prompt, view.layout.columns);
  if (!first) {
    o.found.textContent = "the answer is never top-1 in this prompt";
    return;
  }
  o.found.textContent = `the answer is first top-1 at position ${first.position}, layer ${view.data.layers[first.layerIndex]}`;
  goTo(view, first.position, first.layerIndex);
}

/**
 * The "answer first top-1" button: shown when the prompt has an answer.
 * @param {LensView} view
 */
function showAnswerButton(view) {
  const data = view.data;
  const has = Boolean(data && data.arrays.answer_top1 && !promptHasNoValue(data, "answer_top1", view.state.prompt));
  if (view.overview.answer.hidden === has) view.overview.answer.hidden = !has;
}
