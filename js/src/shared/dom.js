// @ts-check
/**
 * The one way the three widgets make elements: `h` for HTML, `s` for SVG; class, attributes and
 * text (always `textContent`), never HTML.
 */

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * Sets each attribute (as text) and the text content.
 * @template {Element} E
 * @param {E} element
 * @param {Record<string, string | number | boolean>} attrs
 * @param {string | undefined} text
 * @returns {E}
 */
function fill(element, attrs, text) {
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

/**
 * A DOM element with a class, attributes and text (set as `textContent`).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} className
 * @param {Record<string, string | number | boolean>} [attrs]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, className, attrs = {}, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  return fill(element, attrs, text);
}

/**
 * An SVG element with attributes (the class is the `class` attribute) and text (set as
 * `textContent`, for `<text>`, `<desc>`, `<title>`).
 * @param {string} tag
 * @param {Record<string, string | number | boolean>} [attrs]
 * @param {string} [text]
 * @returns {SVGElement}
 */
export function s(tag, attrs = {}, text) {
  return fill(/** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag)), attrs, text);
}
