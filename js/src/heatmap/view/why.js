// @ts-check
/**
 * The "why" panel's DOM: lays out `whyModel` (`../attribution.js`) as signed horizontal bars, one
 * row per component (or "other", or "bias"), with the logit they sum to. The menu of what is
 * explained and the heads box are built here and listened to by `events.js`. Text from the data
 * (tokens) reaches the page only as text.
 */

import { formatLogit } from "../attribution.js";
import { h } from "../../shared/dom.js";

/**
 * @typedef {import("../attribution.js").WhyModel} WhyModel
 * @typedef {import("../attribution.js").ExplainOption} ExplainOption
 *
 * @typedef {object} WhyUi
 * @property {HTMLElement} panel
 * @property {HTMLSpanElement} title
 * @property {HTMLSpanElement} where
 * @property {HTMLParagraphElement} caption what the bars are parts of, in words
 * @property {HTMLSelectElement} explainSelect what the panel and the component view explain
 * @property {HTMLLabelElement} headsLabel
 * @property {HTMLInputElement} heads split attention into heads
 * @property {HTMLDivElement} bars
 * @property {HTMLDivElement} total
 * @property {HTMLSpanElement} totalLabel
 * @property {HTMLSpanElement} totalValue
 * @property {HTMLDivElement} note
 */

/**
 * Builds the panel (hidden, empty).
 * @returns {WhyUi}
 */
export function buildWhy() {
  const panel = h("section", "murano-why", { hidden: "", "aria-label": "Why: the components that wrote the logit" });
  const head = h("div", "murano-why-head");
  const title = h("span", "murano-why-title murano-token", {}, "Why");
  const where = h("span", "murano-why-where");
  const explainLabel = h("label", "murano-why-explain");
  explainLabel.append(h("span", "murano-label", {}, "Explain"));
  const explainSelect = h("select", "murano-why-select", { "aria-label": "What the why panel and the component view explain" });
  explainLabel.append(explainSelect);
  const headsLabel = h("label", "murano-why-heads", { hidden: "" });
  const heads = h("input", "murano-why-heads-box", { type: "checkbox" });
  headsLabel.append(heads, h("span", "", {}, "split attention into heads"));
  head.append(title, where, explainLabel, headsLabel);
  const caption = h("p", "murano-why-caption");
  const bars = h("div", "murano-why-bars", { role: "list", "aria-label": "Parts of the logit, in model order" });
  const total = h("div", "murano-why-total");
  const totalLabel = h("span", "murano-why-total-label", {}, "logit");
  const totalValue = h("span", "murano-why-total-value");
  total.append(totalLabel, totalValue);
  const note = h("div", "murano-why-note");
  panel.append(head, caption, bars, total, note);
  return { panel, title, where, caption, explainSelect, headsLabel, heads, bars, total, totalLabel, totalValue, note };
}

/**
 * The explain menu's options.
 * @param {WhyUi} ui
 * @param {ExplainOption[]} options
 * @param {string} value the chosen one
 */
export function showExplainMenu(ui, options, value) {
  ui.explainSelect.replaceChildren(
    ...options.map((option) => {
      const text = option.available ? option.label : `${option.label} (${option.reason})`;
      const element = h("option", "", { value: option.value }, text);
      element.disabled = !option.available;
      return element;
    }),
  );
  ui.explainSelect.value = value;
}

/**
 * Fills the panel with one cell's explanation, or a message when there is none.
 * @param {WhyUi} ui
 * @param {WhyModel | null} model
 * @param {{message?: string, current?: number}} [options] `message`: what to say without a
 *   model; `current`: the unit to mark (the component view's hovered row), -1 for none
 */
export function showWhy(ui, model, { message = "", current = -1 } = {}) {
  if (!model) {
    ui.title.textContent = "Why";
    ui.where.textContent = "";
    ui.caption.textContent = "";
    ui.caption.hidden = true;
    ui.bars.replaceChildren();
    ui.total.hidden = true;
    ui.note.textContent = message;
    ui.note.hidden = !message;
    return;
  }
  ui.title.textContent = model.heading;
  ui.where.textContent = model.where;
  ui.caption.textContent = model.caption;
  ui.caption.hidden = false;
  const scale = model.scale > 0 ? model.scale : 1;
  ui.bars.replaceChildren(
    ...model.bars.map((bar) => {
      const text = formatLogit(bar.value);
      const row = h("div", `murano-why-row murano-why-${bar.kind}`, {
        role: "listitem",
        "aria-label": `${bar.long}: ${text}`,
        "data-kind": bar.kind,
        "data-label": bar.label,
        "data-value": String(bar.value),
      });
      if (bar.unit >= 0 && bar.unit === current) row.classList.add("murano-why-current");
      const track = h("span", "murano-why-bar", { "aria-hidden": "true" });
      const fill = h("span", `murano-why-fill ${bar.value < 0 ? "murano-why-neg" : "murano-why-pos"}`);
      // Half the track each side of the zero line: positive to the right, negative to the left.
      const half = (Math.abs(bar.value) / scale) * 50;
      fill.style.width = `${half.toFixed(2)}%`;
      fill.style.left = `${(bar.value < 0 ? 50 - half : 50).toFixed(2)}%`;
      track.append(fill);
      row.append(h("span", "murano-why-label", {}, bar.label), track, h("span", "murano-why-value", {}, text));
      return row;
    }),
  );
  ui.total.hidden = false;
  ui.totalLabel.textContent = model.totalLabel;
  ui.totalValue.textContent = formatLogit(model.total);
  ui.totalValue.setAttribute("data-value", String(model.total));
  ui.note.textContent = model.note;
  ui.note.hidden = !model.note;
}
