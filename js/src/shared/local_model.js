// @ts-check
/** A model with no kernel behind it: the standalone HTML export and tests. */

import { toBytes } from "./codec.js";

/**
 * The part of anywidget's model the view uses.
 * @typedef {object} WidgetModel
 * @property {(name: string) => any} get
 * @property {(name: string, value: any) => void} set
 * @property {(event: string, fn: (...args: any[]) => void) => void} on `change:<name>`, and
 *   `msg:custom` (a message from the kernel, anywidget's)
 * @property {(event?: string, fn?: (...args: any[]) => void) => void} off
 * @property {() => void} save_changes
 * @property {(content: any, ...rest: any[]) => void} [send] a message to the kernel (anywidget's
 *   custom messages); a model with no kernel behind it has none
 */

/**
 * A minimal in-page stand-in for an anywidget model: get/set/on/off/save_changes/send, with
 * `change:<name>` events. `_sections` values may be ArrayBuffers, DataViews, typed arrays or
 * base64 strings; they are handed to the view as DataViews, as anywidget does.
 * @param {Record<string, any>} state
 * @returns {WidgetModel}
 */
export function createLocalModel(state) {
  /** @type {Record<string, any>} */
  const values = { prompt: 0, layer: null, metric: "prob", selected: null, _details: true, ...state };
  if (values._sections) {
    /** @type {Record<string, DataView>} */
    const sections = {};
    for (const [name, data] of Object.entries(values._sections)) {
      const bytes = toBytes(data);
      sections[name] = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    values._sections = sections;
  }
  return kernelFreeModel(values);
}

/**
 * An anywidget-like model over plain values (no kernel): `set` fires `change:<name>` listeners
 * and `save_changes` does nothing. It has no `send`: a view that talks to a kernel (the live
 * lens widget) reads a model without one as one with no kernel. Every widget's standalone page
 * builds on it.
 * @param {Record<string, any>} values  taken over, not copied
 * @returns {WidgetModel}
 */
export function kernelFreeModel(values) {
  /** @type {Map<string, Set<(...args: any[]) => void>>} */
  const listeners = new Map();
  return {
    get: (name) => values[name],
    set(name, value) {
      if (Object.is(values[name], value)) return;
      values[name] = value;
      for (const fn of [...(listeners.get(`change:${name}`) || [])]) fn();
    },
    on(event, fn) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(fn);
    },
    off(event, fn) {
      if (!event) listeners.clear();
      else if (!fn) listeners.delete(event);
      else listeners.get(event)?.delete(fn);
    },
    save_changes() {},
  };
}
