// @ts-check
/**
 * Where a tooltip goes, one rule for the heatmap and the diff: beside the cell (10 px gap),
 * vertically centred on it, inside the widget's box, steering around obstacles (the heatmap's
 * pinned-cell chip) and, when nothing is free, covering them and then the cell least.
 * `placeTooltip` is the pure rule; `tooltipBounds` and `placeInRoot` apply it to a box
 * absolutely positioned in a widget's root.
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
 * Where to put a tooltip of `size` next to an anchor rectangle, inside `bounds` (all in the same
 * coordinates), covering none of the `avoid` rectangles (e.g. the pinned-cell chip) when it can:
 * beside the anchor (right, else left), vertically centred on it and shifted to fit (moved above
 * or below an obstacle it would cover); below or above the anchor when neither side has room.
 * When no such place is free, a place inside the bounds covering the obstacles least, then the
 * anchor least (a tooltip taller than the room above and below a cell has to cover some of it).
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
  const centred = clamp(anchor.y + anchor.h / 2 - size.h / 2, bounds.y, bottom - size.h);
  for (const left of [anchor.x + anchor.w + margin, anchor.x - size.w - margin]) {
    if (left < bounds.x || left + size.w > right) continue;
    // Beside the anchor, nearest to centred first; then just above or below each obstacle.
    const tops = [centred];
    for (const o of avoid) tops.push(o.y - size.h - gap, o.y + o.h + gap);
    for (const top of tops.filter(fitsV).sort((a, b) => Math.abs(a - centred) - Math.abs(b - centred))) {
      candidates.push({ left, top });
    }
  }
  const middle = clamp(anchor.x + anchor.w / 2 - size.w / 2, bounds.x, right - size.w);
  for (const top of [anchor.y + anchor.h + margin, anchor.y - size.h - margin]) {
    if (fitsV(top)) candidates.push({ left: middle, top });
  }
  const free = candidates.find((c) => score(c) === 0);
  let best = free;
  if (!best) {
    // Anywhere inside the bounds: the side edges or centred, the top, middle or bottom.
    const lefts = [middle, bounds.x, right - size.w].map((x) => clamp(x, bounds.x, right - size.w));
    const tops = [centred, bounds.y, bottom - size.h].map((y) => clamp(y, bounds.y, Math.max(bounds.y, bottom - size.h)));
    for (const left of lefts) for (const top of tops) candidates.push({ left, top });
    best = candidates.reduce((a, b) => (score(b) < score(a) ? b : a));
  }
  return { left: Math.round(Math.max(bounds.x, best.left)), top: Math.round(Math.max(bounds.y, best.top)) };
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
  const { left, top } = placeTooltip(local(anchor), size, bounds, TOOLTIP_GAP, obstacles.map(local));
  tip.style.left = `${left}px`;
  tip.style.top = `${top}px`;
}
