// @ts-check
/**
 * The payload and the lens shown: decoding `_meta` and `_sections` (`reload`, with its grace for
 * a payload whose two traits have not both arrived), the state a payload brings or keeps
 * (`stateForPayload`, pure), and the lens menu (`setLens`, the `lens_name` trait).
 */

import { hasAttribution } from "../attribution.js";
import { metricAvailable, metricOffered, resolveGroup, resolveMetric, resolveTarget, scaleChange } from "../metrics.js";
import { decodeLenses, rowOfModelLayer } from "../payload.js";
import { attachTopkBlocks } from "./topk_blocks.js";
import { clampIndex } from "../state.js";
import { besideAfterSwitch } from "../side_by_side.js";
import { showBeside } from "./beside.js";
import { showControls, showData, showLensMenu, showPin } from "./controls.js";

/**
 * @typedef {import("./view.js").LensView} LensView
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("./store.js").ViewState} ViewState
 */

/** How long a new payload may take to decode (its `_meta` and `_sections` both arrived). */
export const RELOAD_GRACE_MS = 2000;

/**
 * What a payload sets of the state. The first load takes the model's values; later loads (new
 * sections) keep the local view, which may be ahead of the model while a slider's sync is
 * throttled, except for what Python chose for the new payload.
 * @param {LensData} data the lens shown of the new payload
 * @param {(name: string) => any} trait the model's trait by name (`model.get`)
 * @param {ViewState} s the state now
 * @param {LensData | null} previous the data shown before (null: none)
 * @param {boolean} first the view's first load
 * @returns {Partial<ViewState>}
 */
export function stateForPayload(data, trait, s, previous, first) {
  if (first) {
    const layer = trait("layer");
    return {
      prompt: clampIndex(trait("prompt"), data.P),
      layer: layer === null || layer === undefined ? data.L - 1 : rowOfModelLayer(data.layers, layer),
      metric: resolveMetric(data, trait("metric")),
      target: resolveTarget(data, trait("target")),
      group: resolveGroup(data, trait("group")),
      selected: trait("selected") ?? null,
      hideTemplate: trait("hide_template") === true,
      view: trait("view") === "components" ? "components" : "layers",
      explain: typeof trait("explain") === "string" ? trait("explain") : "top1",
    };
  }
  // Python replaced the payload (a prompt added or removed, a token tracked). The prompt and the
  // metric it chose for the new payload win: they may have arrived first, and been clamped to
  // the old one. Otherwise the local view stays, which may be ahead of the model while a
  // slider's sync is throttled.
  const metric = trait("metric");
  // The token too (a token tracked and shown, one untracked): Python's, when the payload has it.
  const target = trait("target");
  return {
    prompt: clampIndex(previous && previous.P !== data.P ? trait("prompt") : s.prompt, data.P),
    layer: clampIndex(s.layer, data.L),
    metric: resolveMetric(data, typeof metric === "string" && metricOffered(data, metric) ? metric : s.metric),
    target: resolveTarget(data, typeof target === "string" && data.targets.includes(target) ? target : s.target),
    group: resolveGroup(data, typeof trait("group") === "string" && data.groups.includes(trait("group")) ? trait("group") : s.group),
  };
}

/**
 * The metric the cells show after a payload: the one shown while the payload has it, else the
 * requested one, else the first the payload has.
 * @param {LensData} data
 * @param {string} shown
 * @param {string} requested
 */
export function shownMetricFor(data, shown, requested) {
  if (metricAvailable(data, shown)) return shown;
  return metricAvailable(data, requested) ? requested : (data.metrics.find((m) => metricAvailable(data, m.name)) || data.metrics[0]).name;
}

/**
 * Reads the payload (`_meta`, `_sections`) and shows it.
 * @param {LensView} view
 */
export function reload(view) {
  const { ui, model, store } = view;
  let lenses;
  try {
    lenses = decodeLenses(model.get("_meta"), model.get("_sections"));
  } catch (error) {
    const message = `Cannot show this logit lens: ${error instanceof Error ? error.message : String(error)}`;
    if (view.data) {
      // A new payload (the live widget's): Python sets `_meta` and `_sections` one after the
      // other, and until both have arrived they need not match. The view shown stays; only a
      // payload that still does not decode a moment later is an error.
      view.reloadError = message;
      if (!view.reloadTimer) view.reloadTimer = setTimeout(() => failReload(view), RELOAD_GRACE_MS);
      return;
    }
    view.data = null;
    view.lenses = [];
    showError(view, message);
    return;
  }
  if (view.reloadTimer) clearTimeout(view.reloadTimer);
  view.reloadTimer = null;
  // The first load takes the model's lens; later loads (new sections) keep the local one.
  const s = store.state;
  const wanted = view.loaded ? s.lens : model.get("lens_name");
  const data = lenses.find((lens) => lens.lensName === wanted) || lenses[0];
  const previous = view.data;
  attachTopkBlocks(view, lenses);
  view.lenses = lenses;
  view.data = data;
  store.set({ lens: data.lensName });
  // The lens beside: the model's at first, then the local one (as the lens shown).
  if (!view.loaded) store.set({ beside: typeof model.get("lens_beside") === "string" ? model.get("lens_beside") : "" });
  view.beside = null;
  showBeside(view);
  ui.errorEl.hidden = true;
  ui.main.hidden = false;
  view.painter.setData(data);
  view.layoutKey = null;
  view.chartPlaceKey = "";
  showData(ui, data);
  showLensMenu(ui, lenses, s.lens);
  store.set(stateForPayload(data, (name) => model.get(name), s, previous, !view.loaded));
  view.loaded = true;
  // Answers or targets were asked for: their lines (detail sections) are what the chart is for.
  // Attribution: the "why" panel shows a cell at once, from the detail sections.
  if (data.answerSets.length || data.targets.length || hasAttribution(data)) view.requestDetails();
  view.shownMetric = shownMetricFor(data, view.shownMetric, s.metric);
  if (s.focus) store.set({ focus: view.clampCell(s.focus) });
  if (s.hover) store.set({ hover: view.clampCell(s.hover) });
  ui.metricSelect.value = s.metric;
  ui.hideTemplate.checked = s.hideTemplate;
  showControls(ui, data, s);
  // A new payload from Python may refit the colour scale of the metric shown: the legend says so
  // (until the metric changes, or the scale changes again).
  const change = previous && previous !== data ? scaleChange(previous, data, view.shownMetric) : "";
  if (change) view.scaleNote = { metric: view.shownMetric, text: change };
  view.refreshMetric();
  showPin(ui, data, s.selected);
  view.showAttribution();
  view.relayout();
  view.updateTooltip();
  view.live?.dataChanged();
  view.followTarget();
}

/**
 * A new payload still does not decode: it is an error after all.
 * @param {LensView} view
 */
function failReload(view) {
  view.reloadTimer = null;
  view.data = null;
  view.lenses = [];
  showError(view, view.reloadError);
}

/**
 * @param {LensView} view
 * @param {string} message
 */
function showError(view, message) {
  view.ui.errorEl.textContent = message;
  view.ui.errorEl.hidden = false;
  view.ui.main.hidden = true;
  view.tooltip.hide();
}

/**
 * Shows another lens of the payload (the lens menu, or the `lens_name` trait): the same prompt,
 * row, metric, pinned cell and column, read through that lens.
 * @param {LensView} view
 * @param {unknown} name
 * @param {boolean} sync tell Python (the user chose it in the menu)
 */
export function setLens(view, name, sync) {
  const { ui, store } = view;
  const data = view.lenses.find((lens) => lens.lensName === name);
  if (!data) {
    // Not one of the lenses (Python validates the trait; a stale page might not): stay.
    ui.lensSelect.value = store.state.lens;
    return;
  }
  const s = store.state;
  // Choosing the lens drawn beside swaps the two grids.
  const beside = besideAfterSwitch(s.lens, data.lensName, s.beside);
  if (sync) {
    view.send("lens_name", data.lensName);
    if (beside !== s.beside) view.send("lens_beside", beside);
  }
  ui.lensSelect.value = data.lensName;
  if (data === view.data) return;
  view.data = data;
  store.set({ lens: data.lensName, beside });
  showBeside(view);
  view.painter.setData(data);
  showData(ui, data);
  store.set({ metric: resolveMetric(data, s.metric) });
  if (!metricAvailable(data, view.shownMetric)) view.shownMetric = s.metric;
  ui.metricSelect.value = s.metric;
  showControls(ui, data, s);
  view.refreshMetric();
  showPin(ui, data, s.selected);
  view.showAttribution();
  view.layoutKey = null;
  view.relayout();
  view.updateTooltip();
  if (s.focused && s.focus) view.announce(s.focus);
  view.live?.dataChanged();
}
