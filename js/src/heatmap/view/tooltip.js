// @ts-check
/**
 * The tooltip's DOM: lays out the strings of `tooltipModel` and places the box inside the widget,
 * beside the cell, never over the pinned-cell chip when there is another place, and never out of
 * a short widget (it switches to a wide, two-column form, and caps its height as a last resort).
 */

import { h } from "../../shared/dom.js";
import { placeInRoot, tooltipBounds } from "../../shared/tooltip.js";

/**
 * @typedef {import("../details.js").TooltipContent} TooltipContent
 * @typedef {import("../../shared/layout.js").Rect} Rect
 */

export class TooltipView {
  /**
   * @param {HTMLDivElement} element the tooltip box (absolutely positioned in `root`)
   * @param {HTMLElement} root the positioned ancestor whose box bounds the tooltip
   * @param {() => Rect[]} obstacles rectangles (in viewport coordinates) not to cover
   */
  constructor(element, root, obstacles) {
    this.element = element;
    this.root = root;
    this.obstacles = obstacles;
  }

  get hidden() {
    return this.element.hidden;
  }

  hide() {
    this.element.hidden = true;
  }

  /**
   * Fills the box with `content` and shows it.
   * @param {TooltipContent} content
   * @param {boolean} pinned the cell is the pinned one
   */
  show(content, pinned) {
    const head = h("div", "murano-tt-head");
    head.append(h("span", "murano-tt-title", {}, content.title));
    if (content.badge) head.append(h("span", "murano-tt-badge", {}, content.badge));
    if (pinned) head.append(h("span", "murano-tt-badge murano-tt-pinned", {}, "pinned"));
    const parts = [head];
    const columns = h("div", "murano-tt-columns");
    if (content.top.length) {
      const list = h("div", "murano-tt-topk");
      for (const entry of content.top) {
        const bar = h("span", "murano-tt-bar");
        const fill = h("span", "murano-tt-bar-fill");
        fill.style.width = `${(entry.width * 100).toFixed(1)}%`;
        bar.append(fill);
        list.append(
          h("span", "murano-tt-rank", { title: "rank (0 = top-1)" }, `${entry.rank}`),
          h("span", "murano-token", {}, entry.text),
          bar,
          h("span", "murano-tt-prob", {}, entry.prob),
        );
      }
      columns.append(list);
    }
    const rows = h("div", "murano-tt-rows");
    for (const row of content.rows) {
      const label = h("span", "murano-tt-label", row.title ? { title: row.title } : {}, row.label);
      rows.append(label, h("span", row.token ? "murano-token" : "murano-tt-value", {}, row.value));
    }
    columns.append(rows);
    parts.push(columns);
    if (content.note) parts.push(h("div", "murano-tt-note", {}, content.note));
    this.element.replaceChildren(...parts);
    this.element.hidden = false;
  }

  /**
   * Places the shown box beside `anchor` (a rectangle in viewport coordinates).
   * @param {Rect} anchor
   */
  place(anchor) {
    const tip = this.element;
    if (tip.hidden) return;
    const bounds = tooltipBounds(this.root);
    // Too tall for the widget: the two-column form; still too tall: a capped height.
    tip.classList.remove("murano-tt-wide");
    tip.style.maxHeight = "";
    tip.style.maxWidth = "";
    if (tip.offsetHeight > bounds.h) {
      tip.classList.add("murano-tt-wide");
      tip.style.maxWidth = `${Math.max(200, bounds.w)}px`;
    }
    if (tip.offsetHeight > bounds.h) tip.style.maxHeight = `${bounds.h}px`;
    placeInRoot(tip, this.root, anchor, this.obstacles(), bounds);
  }
}
