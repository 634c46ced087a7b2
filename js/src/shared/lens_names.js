// @ts-check
/** How the widgets name a lens among several side by side (the heatmap's and the data set's menus). */

/**
 * A lens's entry in a menu: its title, with its name when the name says something else
 * ("Tuned lens" for "tuned", "Tuned lens (tuned-2024)" for another name).
 * @param {string} name
 * @param {string} title
 */
export function lensMenuText(name, title) {
  const plain = (/** @type {string} */ t) => t.toLowerCase().replace(/ lens$/, "");
  return plain(title) === plain(name) ? title : `${title} (${name})`;
}
