// @ts-check
/** The one way the view makes elements: class, attributes and text, never HTML. */

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
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}
