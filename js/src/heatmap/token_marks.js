// @ts-check
/**
 * Generated tokens and chat roles: which tokens the model wrote (`generated` section), each
 * token's chat role (`token_roles` section, codes into `meta.roles`), and which columns the
 * heatmap shows when the template's own tokens are hidden. Pure functions of the decoded payload:
 * the columns of a prompt are its true positions, so hiding template tokens collapses columns
 * from view without renumbering any position.
 */

/**
 * @typedef {import("./payload.js").LensData} LensData
 *
 * @typedef {object} RoleStyle
 * @property {string} name the role ("system", "user", "assistant", "template", or another)
 * @property {string} colour the band's colour (Okabe–Ito: told apart with any colour vision)
 * @property {string} label the legend's text
 */

/** The role of the chat template's own tokens (code 0). */
export const TEMPLATE_ROLE = "template";

/** Colours of the usual roles (Okabe–Ito palette), and of any other role, in turn. */
export const ROLE_COLOURS = Object.freeze({
  template: "#999999",
  system: "#e69f00",
  user: "#0072b2",
  assistant: "#009e73",
});
const OTHER_COLOURS = Object.freeze(["#cc79a7", "#d55e00", "#56b4e9", "#f0e442"]);

/**
 * The role names of the payload (`meta.roles`), [] without chat roles.
 * @param {LensData} data
 * @returns {string[]}
 */
export function roleNames(data) {
  const roles = data.meta.roles;
  return Array.isArray(roles) && roles.every((r) => typeof r === "string") ? roles : [];
}

/**
 * The band colour and legend text of each role name, in `meta.roles` order.
 * @param {string[]} names
 * @returns {RoleStyle[]}
 */
export function roleStyles(names) {
  let other = 0;
  return names.map((name) => {
    const known = /** @type {Record<string, string>} */ (ROLE_COLOURS)[name];
    const colour = known ?? OTHER_COLOURS[other++ % OTHER_COLOURS.length];
    return { name, colour, label: name === TEMPLATE_ROLE ? "chat template" : name };
  });
}

/**
 * The role of a token (`position` among the prompt's real tokens), or null without roles.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} position
 * @returns {string | null}
 */
export function tokenRole(data, prompt, position) {
  const codes = data.arrays.token_roles;
  if (!codes) return null;
  return roleNames(data)[codes[data.offsets[prompt] + position]] ?? null;
}

/**
 * Whether the model generated this token (it follows the prompt).
 * @param {LensData} data
 * @param {number} prompt
 * @param {number} position
 */
export function isGenerated(data, prompt, position) {
  const mask = data.arrays.generated;
  return Boolean(mask && mask[data.offsets[prompt] + position]);
}

/**
 * The position of the prompt's first generated token, or -1 when it has none.
 * @param {LensData} data
 * @param {number} prompt
 */
export function generationStart(data, prompt) {
  const mask = data.arrays.generated;
  if (!mask) return -1;
  const offset = data.offsets[prompt];
  for (let j = 0; j < data.lengths[prompt]; j++) if (mask[offset + j]) return j;
  return -1;
}

/**
 * The roles that occur in the payload, in `meta.roles` order (for the legend).
 * @param {LensData} data
 * @returns {RoleStyle[]}
 */
export function rolesPresent(data) {
  const codes = data.arrays.token_roles;
  if (!codes) return [];
  const seen = new Set(codes);
  return roleStyles(roleNames(data)).filter((_, code) => seen.has(code));
}

/**
 * Whether any token of the payload is the template's own (then it can be hidden).
 * @param {LensData} data
 */
export function hasTemplateTokens(data) {
  const codes = data.arrays.token_roles;
  const template = roleNames(data).indexOf(TEMPLATE_ROLE);
  return Boolean(codes) && template >= 0 && /** @type {Uint8Array} */ (codes).includes(template);
}

/**
 * The positions the heatmap shows as its columns, in order: all of the prompt's (null), or, with
 * `hideTemplate`, those that are not the template's own. A prompt of template tokens only keeps
 * them all (an empty heatmap would show nothing to hide them from).
 * @param {LensData} data
 * @param {number} prompt
 * @param {boolean} hideTemplate
 * @returns {number[] | null}
 */
export function shownPositions(data, prompt, hideTemplate) {
  const codes = data.arrays.token_roles;
  const template = roleNames(data).indexOf(TEMPLATE_ROLE);
  if (!hideTemplate || !codes || template < 0) return null;
  const offset = data.offsets[prompt];
  const shown = [];
  for (let j = 0; j < data.lengths[prompt]; j++) if (codes[offset + j] !== template) shown.push(j);
  return shown.length && shown.length < data.lengths[prompt] ? shown : null;
}

/**
 * The prompt's text as the heatmap reads it: the whole prompt, or, with `hideTemplate`, the text
 * of the tokens shown as columns (a chat without its template's own tokens).
 * @param {LensData} data
 * @param {number} prompt
 * @param {boolean} hideTemplate
 * @returns {string}
 */
export function shownPromptText(data, prompt, hideTemplate) {
  const columns = shownPositions(data, prompt, hideTemplate);
  if (!columns) return data.prompts[prompt] ?? "";
  const ids = /** @type {ArrayLike<number>} */ (data.arrays.input_ids);
  const offset = data.offsets[prompt];
  return columns.map((p) => data.tokens[ids[offset + p]] ?? "").join("");
}

/**
 * The shown position nearest to `position` (itself when shown; ties go to the later one).
 * @param {number[] | null} columns
 * @param {number} position
 */
export function nearestShown(columns, position) {
  if (!columns || !columns.length) return position;
  let best = columns[0];
  for (const p of columns) {
    if (Math.abs(p - position) <= Math.abs(best - position)) best = p;
    if (p > position) break;
  }
  return best;
}

/**
 * The column where generation starts on screen (the first shown column of a generated token),
 * or -1 when the prompt has no generated token shown.
 * @param {LensData} data
 * @param {number} prompt
 * @param {number[] | null} columns
 */
export function generationColumn(data, prompt, columns) {
  const start = generationStart(data, prompt);
  if (start < 0) return -1;
  if (!columns) return start;
  const index = columns.findIndex((p) => p >= start);
  return index;
}

/**
 * How a token reads aloud and in the tooltip: "generated", its role, both, or "".
 * @param {boolean} generated
 * @param {string | null} role
 */
export function tokenMarkText(generated, role) {
  const parts = [];
  if (generated) parts.push("generated");
  if (role) parts.push(role === TEMPLATE_ROLE ? "chat template" : role);
  return parts.join(", ");
}

/**
 * A colour image cut down to some of its pixel columns, in order.
 * @param {{data: Uint8ClampedArray<ArrayBuffer>, width: number, height: number}} image
 * @param {number[]} columns
 * @returns {{data: Uint8ClampedArray<ArrayBuffer>, width: number, height: number}}
 */
export function pickColumns(image, columns) {
  const width = columns.length;
  const data = new Uint8ClampedArray(width * image.height * 4);
  for (let row = 0; row < image.height; row++) {
    for (let j = 0; j < width; j++) {
      const from = (row * image.width + columns[j]) * 4;
      data.set(image.data.subarray(from, from + 4), (row * width + j) * 4);
    }
  }
  return { data, width, height: image.height };
}
