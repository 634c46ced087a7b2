// @ts-check
/**
 * The keys a focused control of a widget keeps from its host page.
 *
 * Notebook front ends bind plain keys to their own commands: JupyterLab and Notebook 7 in command
 * mode move between cells on the arrow keys (their shortcuts apply to any focused element that is
 * not editable text, so a range input or a select loses its keys), and VS Code forwards keys from
 * an output to the workbench. Each widget calls `keepControlKeys` once on its root: a key press
 * that a focused control uses itself stops there (its default action, the slider's step, still
 * happens), and every other key, and every key with Ctrl, Alt or Meta, or Shift+Enter, reaches
 * the host (run the cell, save, leave the output).
 */

/** Keys that move within a control. */
const NAVIGATION = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);
/** Keys that press a button or toggle a box. */
const PRESS = new Set(["Enter", " "]);

/**
 * What kind of control an element is, as far as its keys go.
 * @typedef {"range" | "select" | "button" | "text" | "composite"} ControlKind
 */

/**
 * The kind of control `target` is, or null when it is none (a key there is the host's).
 * Reads only `tagName`, `type`, `isContentEditable` and the `tabindex` attribute, so that it runs
 * on plain objects in the node tests.
 * @param {any} target
 * @returns {ControlKind | null}
 */
export function controlKind(target) {
  if (!target || typeof target.tagName !== "string") return null;
  const tag = target.tagName.toLowerCase();
  const type = String(target.type ?? "").toLowerCase();
  if (tag === "input") {
    if (type === "range") return "range";
    if (type === "checkbox" || type === "radio" || type === "button" || type === "submit" || type === "reset") return "button";
    return "text";
  }
  if (tag === "textarea" || target.isContentEditable === true) return "text";
  if (tag === "select") return "select";
  if (tag === "button" || tag === "summary") return "button";
  // A canvas or SVG made focusable (the heatmaps' grids, the data set's chart): it handles
  // arrows, Home/End, PageUp/PageDown, Enter and Space itself (Escape, where it unpins, too: that
  // handler stops it itself, only when there is something to unpin).
  const tabindex = typeof target.getAttribute === "function" ? target.getAttribute("tabindex") : null;
  if (tabindex !== null && tabindex !== "-1") return "composite";
  return null;
}

/**
 * Whether a control of `kind` uses this key press itself (so the host must not get it).
 * @param {ControlKind} kind
 * @param {{key: string, altKey?: boolean, ctrlKey?: boolean, metaKey?: boolean, shiftKey?: boolean}} event
 * @returns {boolean}
 */
export function keepsKey(kind, event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return false;
  const key = event.key;
  // Shift+Enter runs the cell in every notebook front end, whatever has focus.
  if (key === "Enter" && event.shiftKey) return false;
  switch (kind) {
    case "range":
      return NAVIGATION.has(key);
    case "select":
      // Type-ahead: a printable character chooses the next option starting with it.
      return NAVIGATION.has(key) || PRESS.has(key) || key.length === 1;
    case "button":
      return PRESS.has(key);
    case "text":
      return key !== "Escape" && key !== "Tab";
    case "composite":
      return NAVIGATION.has(key) || PRESS.has(key);
    default:
      return false;
  }
}

/**
 * Keeps each focused control's own keys inside `root` (bubbling phase, so the control has acted
 * and its own handlers have run), until `signal` aborts.
 * @param {HTMLElement} root the widget's root element
 * @param {AbortSignal} signal
 */
export function keepControlKeys(root, signal) {
  root.addEventListener(
    "keydown",
    (event) => {
      const kind = controlKind(event.target);
      if (kind && keepsKey(kind, event)) event.stopPropagation();
    },
    { signal },
  );
}
