// @ts-check
/**
 * The widgets' one theme, as canvases need it. The palette is CSS (`theme.css`: --murano-*
 * properties that follow JupyterLab, VS Code, a dark system scheme and forced colours); a canvas
 * cannot use var(), so `readTheme(el)` resolves each colour as the element's page would show it
 * (host variables, light or dark fallbacks, system colours) to an `rgb()` / `rgba()` string, and
 * `watchTheme(onChange)` says when the host's theme may have changed. The heatmap's painter and
 * the diff's canvas both read their colours here; no view keeps colours of its own.
 */

/**
 * @typedef {object} ThemeColours Every interface colour of the palette, resolved.
 * @property {string} fg text
 * @property {string} muted secondary text (labels, ticks)
 * @property {string} bg the widget's background
 * @property {string} surface controls and tooltips
 * @property {string} border
 * @property {string} accent accent text and marks (the chosen layer)
 * @property {string} focus keyboard focus
 * @property {string} grid the lines between cells
 * @property {string} stripBg the tint under token strips
 * @property {string} hatch the stripes of missing cells
 * @property {string} shadow
 * @property {string} generated the generation boundary
 * @property {string} generatedBg the tint under generated tokens
 * @property {string} warn
 * @property {string} error
 *
 * @typedef {ThemeColours & {font: string, mono: string, live: boolean}} ThemeValues
 *   `font`, `mono`: font families; `live`: read from the page (false when the element is not
 *   in a document yet: then the values are the light fallbacks, and should not be kept).
 */

/** Each colour's CSS property. */
export const THEME_PROPERTIES = Object.freeze({
  fg: "--murano-fg",
  muted: "--murano-muted",
  bg: "--murano-bg",
  surface: "--murano-surface",
  border: "--murano-border",
  accent: "--murano-accent",
  focus: "--murano-focus",
  grid: "--murano-grid",
  stripBg: "--murano-strip-bg",
  hatch: "--murano-hatch",
  shadow: "--murano-shadow",
  generated: "--murano-generated",
  generatedBg: "--murano-generated-bg",
  warn: "--murano-warn",
  error: "--murano-error",
});

/**
 * The series palette (theme.css: --murano-series-0 …), in order: the colour of the k-th line of
 * every multi-series chart (the data set's curves, the trajectory chart's lines). SVG takes the
 * properties themselves, so a line follows the host's theme as the rest of the widget does.
 */
export const SERIES_COLOURS = Object.freeze([0, 1, 2, 3, 4, 5].map((k) => `var(--murano-series-${k})`));

/**
 * Dash patterns (SVG stroke-dasharray, "" = solid) for series beyond the palette: series k draws
 * in colour k mod 6 with dash ⌊k / 6⌋ (mod 4), so no two of the first 24 look alike.
 */
export const SERIES_DASHES = Object.freeze(["", "6 3", "1.5 3", "9 3 1.5 3"]);

/**
 * The colour and dash of the k-th series of a multi-series chart.
 * @param {number} k
 * @returns {{colour: string, dash: string}}
 */
export function seriesLook(k) {
  const n = SERIES_COLOURS.length;
  const i = Math.max(0, Math.floor(k));
  return { colour: SERIES_COLOURS[i % n], dash: SERIES_DASHES[Math.floor(i / n) % SERIES_DASHES.length] };
}

/**
 * The light fallbacks of theme.css, for an element outside any document (no styles apply).
 * @type {Readonly<ThemeValues>}
 */
export const FALLBACK_THEME = Object.freeze({
  fg: "rgb(31, 35, 40)",
  muted: "rgb(89, 99, 110)",
  bg: "rgb(255, 255, 255)",
  surface: "rgb(246, 248, 250)",
  border: "rgb(209, 217, 224)",
  accent: "rgb(9, 105, 218)",
  focus: "rgb(9, 105, 218)",
  grid: "rgb(255, 255, 255)",
  stripBg: "rgba(127, 127, 127, 0.09)",
  hatch: "rgb(89, 99, 110)",
  shadow: "rgba(31, 35, 40, 0.16)",
  generated: "rgb(213, 94, 0)",
  generatedBg: "rgba(213, 94, 0, 0.13)",
  warn: "rgb(154, 103, 0)",
  error: "rgb(207, 34, 46)",
  font: "system-ui, sans-serif",
  mono: "monospace",
  live: false,
});

/**
 * Whether a palette is a dark one: its background (an `rgb()` / `rgba()` string, as `readTheme`
 * gives it) is dark. Scales whose "nothing" end should sit near the page (the diff's) pick their
 * end by it.
 * @param {{bg: string}} theme
 * @returns {boolean}
 */
export function isDarkTheme(theme) {
  const parts = (theme.bg.match(/[\d.]+/g) || []).map(Number);
  if (parts.length < 3 || parts[3] === 0) return false;
  const [r, g, b] = parts;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 100;
}

/**
 * The palette as `el` (a widget's root, or inside one) sees it now.
 *
 * Each colour is resolved by the browser itself: a hidden probe per colour inside `el` takes
 * `color: var(--murano-…)` (with `forced-color-adjust: none`, so forced colours resolve to the
 * system colour the palette names rather than being overridden), and its computed colour is read
 * back. So host variables, the light/dark switch and system colours all arrive as `rgb()` or
 * `rgba()`, which any canvas accepts.
 * @param {Element} el
 * @returns {ThemeValues}
 */
export function readTheme(el) {
  const doc = el.ownerDocument;
  const win = doc && doc.defaultView;
  if (!win || !el.isConnected) return { ...FALLBACK_THEME };
  const probe = doc.createElement("span");
  probe.setAttribute("aria-hidden", "true");
  probe.style.display = "none";
  /** @type {[keyof ThemeColours, HTMLElement][]} */
  const spans = [];
  for (const [key, property] of Object.entries(THEME_PROPERTIES)) {
    const span = doc.createElement("span");
    span.style.setProperty("forced-color-adjust", "none");
    span.style.color = `var(${property})`;
    probe.append(span);
    spans.push([/** @type {keyof ThemeColours} */ (key), span]);
  }
  el.append(probe);
  try {
    const style = win.getComputedStyle(el);
    /** @type {(name: string, fallback: string) => string} */
    const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    /** @type {ThemeValues} */
    const theme = { ...FALLBACK_THEME, font: read("--murano-font", FALLBACK_THEME.font), mono: read("--murano-mono", FALLBACK_THEME.mono), live: true };
    for (const [key, span] of spans) {
      // A property the page does not define (no stylesheet yet) leaves `color` inherited: keep
      // the fallback then.
      if (!style.getPropertyValue(THEME_PROPERTIES[key]).trim()) {
        theme.live = false;
        continue;
      }
      theme[key] = win.getComputedStyle(span).color || theme[key];
    }
    return theme;
  } finally {
    probe.remove();
  }
}

/**
 * Calls `onChange` when the host's theme may have changed: a class, theme attribute or inline
 * style on <html> or <body> (JupyterLab's data-jp-theme-light and data-jp-theme-name, VS Code's
 * body classes and variables, Colab's theme attribute), or the system's colour scheme, contrast
 * or forced colours.
 * @param {() => void} onChange
 * @returns {() => void} stops watching
 */
export function watchTheme(onChange) {
  const abort = new AbortController();
  /** @type {MutationObserver | undefined} */
  let observer;
  if (typeof MutationObserver !== "undefined" && typeof document !== "undefined") {
    observer = new MutationObserver(() => onChange());
    const options = { attributes: true, attributeFilter: ["class", "data-jp-theme-light", "data-jp-theme-name", "theme", "style"] };
    if (document.body) observer.observe(document.body, options);
    observer.observe(document.documentElement, options);
  }
  if (typeof matchMedia === "function") {
    for (const query of ["(prefers-color-scheme: dark)", "(forced-colors: active)", "(prefers-contrast: more)"]) {
      const list = matchMedia(query);
      if (typeof list.addEventListener === "function") list.addEventListener("change", () => onChange(), { signal: abort.signal });
    }
  }
  return () => {
    abort.abort();
    observer?.disconnect();
  };
}
