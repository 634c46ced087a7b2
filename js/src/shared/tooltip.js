// @ts-check
/**
 * Where a tooltip goes, one rule for the heatmap and the diff: right-below the cell (10 px gap),
 * flipped above or to the left only where it would leave the visible part of the widget, steering
 * around obstacles (the heatmap's pinned-cell chip and trajectory chart) and, when nothing is
 * free, covering them and then the cell least. `placeTooltip` and `visibleBounds` are the pure
 * rule; `tooltipBounds` and `placeInRoot` apply it to a box absolutely positioned in a widget's
 * root.
 */

/** @typedef {{x: number, y: number, w: number, h: number}} Rect */

/** The gap between a cell and its tooltip, in CSS pixels. */
export const TOOLTIP_GAP = 10;

/**
 * Area of the overlap of two rectangles (0 when apart or touching).
 * @param {Rect} a
 * @param {Rect} b
 */
export function overlapArea(a, b) {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}

/**
 * Where to put a tooltip of `size` next to an anchor rectangle (the hovered cell), inside `bounds`
 * (the visible part of the widget; all in the same coordinates). The first of these places that
 * fits the bounds and covers none of the `avoid` rectangles (the pinned-cell chip, the trajectory
 * chart's plot) wins:
 * 1. right-below: `margin` right of the anchor, its top level with the anchor's bottom; it covers
 *    neither the anchor's row nor its column, the two lines a reader follows from a cell;
 * 2. right-above, where below runs out of the bounds;
 * 3. right, moved up or down to fit (over the anchor's row, never the anchor), or to end just
 *    above or start just below an obstacle it would cover;
 * 4.–6. the same on the left: only where the right side runs out of the bounds or has only
 *    obstacles to cover;
 * 7. below or above the anchor, centred on it, when neither side has room.
 * When none is free: the place inside the bounds covering the obstacles least, then the anchor
 * least (a tooltip taller than the room above and below a cell has to cover some of it).
 * @param {Rect} anchor
 * @param {{w: number, h: number}} size
 * @param {Rect} bounds
 * @param {number} [margin] gap to the anchor
 * @param {Rect[]} [avoid]
 * @returns {{left: number, top: number}}
 */
export function placeTooltip(anchor, size, bounds, margin = TOOLTIP_GAP, avoid = []) {
  /** @type {(v: number, lo: number, hi: number) => number} */
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  const right = bounds.x + bounds.w;
  const bottom = bounds.y + bounds.h;
  const gap = 4;
  /** @param {number} left @param {number} top */
  const rect = (left, top) => ({ x: left, y: top, w: size.w, h: size.h });
  /** @param {{left: number, top: number}} c */
  const score = (c) => {
    const r = rect(c.left, c.top);
    return avoid.reduce((sum, o) => sum + overlapArea(r, o), 0) * 1e6 + overlapArea(r, anchor);
  };
  /** @param {number} top */
  const fitsV = (top) => top >= bounds.y - 0.5 && top + size.h <= bottom + 0.5;
  /** @type {{left: number, top: number}[]} */
  const candidates = [];
  const below = anchor.y + anchor.h;
  const above = anchor.y - size.h;
  // Moved just enough to fit, from below (a tooltip taller than the bounds keeps its top in).
  const shifted = clamp(below, bounds.y, Math.max(bounds.y, bottom - size.h));
  for (const left of [anchor.x + anchor.w + margin, anchor.x - size.w - margin]) {
    if (left < bounds.x - 0.5 || left + size.w > right + 0.5) continue;
    const tops = [below, above, shifted];
    for (const o of avoid) tops.push(o.y - size.h - gap, o.y + o.h + gap);
    for (const top of tops) if (fitsV(top) || top === shifted) candidates.push({ left, top });
  }
  const middle = clamp(anchor.x + anchor.w / 2 - size.w / 2, bounds.x, right - size.w);
  for (const top of [below + margin, anchor.y - size.h - margin]) {
    if (fitsV(top)) candidates.push({ left: middle, top });
  }
  let best = candidates.find((c) => score(c) === 0);
  if (!best) {
    // Anywhere inside the bounds: the side edges or centred, the top, middle or bottom.
    const centred = clamp(anchor.y + anchor.h / 2 - size.h / 2, bounds.y, bottom - size.h);
    const lefts = [middle, bounds.x, right - size.w].map((x) => clamp(x, bounds.x, right - size.w));
    const tops = [centred, bounds.y, bottom - size.h].map((y) => clamp(y, bounds.y, Math.max(bounds.y, bottom - size.h)));
    for (const left of lefts) for (const top of tops) candidates.push({ left, top });
    best = candidates.reduce((a, b) => (score(b) < score(a) ? b : a));
  }
  return { left: Math.round(Math.max(bounds.x, best.left)), top: Math.round(Math.max(bounds.y, best.top)) };
}

/**
 * The part of a widget's box where a tooltip can be seen: `own` (the widget's box) cut to `clip`
 * (the window's viewport and every scrolling ancestor, e.g. JupyterLab's notebook panel), axis by
 * axis; an axis on which the visible part is shorter than the tooltip keeps the widget's own
 * extent (better partly off screen than squeezed over the cell, or moved away from it).
 * @param {Rect} own
 * @param {Rect} clip
 * @param {{w: number, h: number}} size
 * @returns {Rect}
 */
export function visibleBounds(own, clip, size) {
  const x = Math.max(own.x, clip.x);
  const y = Math.max(own.y, clip.y);
  const w = Math.min(own.x + own.w, clip.x + clip.w) - x;
  const h = Math.min(own.y + own.h, clip.y + clip.h) - y;
  return {
    ...(w >= size.w ? { x, w } : { x: own.x, w: own.w }),
    ...(h >= size.h ? { y, h } : { y: own.y, h: own.h }),
  };
}

/**
 * The box a tooltip must stay in: `root`'s padding box less a 4 px inset, in `root`'s coordinates.
 * @param {HTMLElement} root
 * @returns {Rect}
 */
export function tooltipBounds(root) {
  return { x: 4, y: 4, w: root.clientWidth - 8, h: root.clientHeight - 8 };
}

/**
 * Places `tip` (shown, absolutely positioned in `root`) beside `anchor` by `placeTooltip`.
 * @param {HTMLElement} tip
 * @param {HTMLElement} root
 * @param {Rect} anchor in viewport coordinates
 * @param {Rect[]} [obstacles] in viewport coordinates
 * @param {Rect} [bounds] in `root`'s coordinates (default `tooltipBounds(root)`)
 */
export function placeInRoot(tip, root, anchor, obstacles = [], bounds = tooltipBounds(root)) {
  const rootBox = root.getBoundingClientRect();
  /** @type {(r: Rect) => Rect} */
  const local = (r) => ({ x: r.x - rootBox.left - root.clientLeft, y: r.y - rootBox.top - root.clientTop, w: r.w, h: r.h });
  const size = { w: tip.offsetWidth, h: tip.offsetHeight };
  const visible = visibleBounds(bounds, local(screenClip(root)), size);
  const { left, top } = placeTooltip(local(anchor), size, visible, TOOLTIP_GAP, obstacles.map(local));
  tip.style.left = `${left}px`;
  tip.style.top = `${top}px`;
}

/**
 * What of the page is on screen around `element`, in viewport coordinates: the window's viewport
 * cut by every ancestor that clips its content (a scrolling notebook panel, an output area).
 * @param {HTMLElement} element
 * @returns {Rect}
 */
function screenClip(element) {
  const view = element.ownerDocument.documentElement;
  let x0 = 0;
  let y0 = 0;
  let x1 = view.clientWidth || Infinity;
  let y1 = view.clientHeight || Infinity;
  for (let el = element.parentElement; el && el !== view; el = el.parentElement) {
    const style = getComputedStyle(el);
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const r = el.getBoundingClientRect();
    x0 = Math.max(x0, r.left);
    y0 = Math.max(y0, r.top);
    x1 = Math.min(x1, r.right);
    y1 = Math.min(y1, r.bottom);
  }
  return { x: x0, y: y0, w: Math.max(0, x1 - x0), h: Math.max(0, y1 - y0) };
}
