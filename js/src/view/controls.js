// @ts-check
/** Filling the DOM from the data and the state: header, metric menu, sliders, legend, pin chip. */

import { colourLut, DIVERGING_STOPS, interpolateStops } from "../colour.js";
import { h } from "../shared/dom.js";
import { lensMenuText } from "../shared/lens_names.js";
import { formatProb, indexReadout, indexSpoken, promptName } from "../format.js";
import { cellDetails } from "../details.js";
import { legendTicks, metricDomain, metricLabel, metricSpec, shortLabel } from "../metrics.js";
import { rowLabel } from "../rows.js";
import { clampIndex } from "../state.js";
import { hasTemplateTokens, rolesPresent, shownPromptText } from "../token_marks.js";
import { displayToken, truncateText } from "../tokens.js";

/**
 * @typedef {import("./dom.js").Ui} Ui
 * @typedef {import("../payload.js").LensData} LensData
 * @typedef {import("../state.js").Selected} Selected
 */

/**
 * The header and the parts that change only with new data: title (which lens), model name,
 * the metric menu (every metric of the registry; those the result lacks disabled, saying why),
 * the slider ranges.
 * @param {Ui} ui
 * @param {LensData} data
 */
export function showData(ui, data) {
  const kind = lensTitle(data);
  ui.titleEl.textContent = kind;
  ui.modelEl.textContent = data.modelName;
  ui.modelEl.hidden = !data.modelName;
  if (data.modelName) ui.modelEl.setAttribute("title", data.modelName);
  ui.root.setAttribute("aria-label", `${kind}${data.modelName ? ` of ${data.modelName}` : ""}`);
  ui.metricSelect.replaceChildren(
    ...data.metrics.map((spec) => {
      // Unavailable: disabled, the reason's first clause in the menu, the whole of it in the title.
      const reason = spec.available ? "" : spec.unavailableReason || "not in this result";
      const text = reason ? `${shortLabel(spec.label)} (${reason.split(/[:,;]/)[0].trim()})` : spec.label;
      const option = h("option", "", { value: spec.name }, text);
      option.disabled = !spec.available;
      option.title = reason ? `Not available: ${reason}` : spec.description;
      return option;
    }),
  );
  ui.promptUi.input.max = String(data.P - 1);
  const single = data.P < 2;
  ui.promptUi.row.classList.toggle("murano-single", single);
  // One prompt: its text alone, no slider and no "Prompt" label.
  ui.promptUi.input.hidden = single;
  ui.promptUi.label.hidden = single;
  ui.promptUi.output.hidden = single;
  ui.layerUi.input.max = String(data.L - 1);
  ui.missingKey.hidden = !data.arrays.missing && !data.arrays.final_missing && Object.keys(data.noValue).length === 0;
  ui.answerKey.hidden = data.answerSets.length === 0;
  // The marks are the first answer set's: named when the sets have names of their own.
  const first = data.answerSets[0];
  const named = first && (data.answerSets.length > 1 || first.name !== "answer") ? ` (${first.name})` : "";
  const keyText = ui.answerKey.lastElementChild;
  if (keyText) keyText.textContent = `top-1 = the answer${named}`;
  ui.settledKey.hidden = !data.arrays.final_tokens;
  ui.generatedKey.hidden = !data.arrays.generated;
  const roles = rolesPresent(data);
  ui.roleKeys.hidden = roles.length === 0;
  ui.roleKeys.replaceChildren(
    ...roles.map((role) => {
      const key = h("span", `murano-key murano-key-role`, { "data-role": role.name });
      const band = h("span", "murano-key-band", { "aria-hidden": "true" });
      band.style.background = role.colour;
      key.append(band, h("span", "", {}, role.label));
      return key;
    }),
  );
  ui.hideTemplateLabel.hidden = !hasTemplateTokens(data);
}

/**
 * The lens menu: one entry per lens side by side (its title, and its name where the two differ),
 * hidden when the payload holds one lens.
 * @param {Ui} ui
 * @param {LensData[]} lenses
 * @param {string} shown the name of the lens shown
 */
export function showLensMenu(ui, lenses, shown) {
  ui.lensLabel.hidden = lenses.length < 2;
  ui.lensSelect.replaceChildren(
    ...lenses.map((lens) => {
      const title = lensTitle(lens);
      return h("option", "", { value: lens.lensName }, lensMenuText(lens.lensName, title));
    }),
  );
  ui.lensSelect.value = shown;
}

/**
 * What the lens that made the result is called: its title as Python sends it (`meta.lens_title`,
 * the same string the static plot and the export use); for a payload saved before titles were
 * sent, made from its kind as Python's `title_of` makes it.
 * @param {LensData} data
 */
export function lensTitle(data) {
  if (data.lensTitle) return data.lensTitle;
  const kind = data.lensKind || "logit";
  return `${kind.charAt(0).toUpperCase()}${kind.slice(1)} lens`;
}

/**
 * The sliders, their texts and the heatmap's accessible name, for the prompt and row shown.
 * @param {Ui} ui
 * @param {LensData} data
 * @param {{prompt: number, layer: number, hideTemplate?: boolean}} state
 */
export function showControls(ui, data, state) {
  const { input: promptInput, output: promptOutput, extra: promptText } = ui.promptUi;
  promptInput.value = String(state.prompt);
  promptOutput.textContent = indexReadout(state.prompt, data.P);
  const text = displayToken(shownPromptText(data, state.prompt, Boolean(state.hideTemplate)), { spaces: false });
  promptText.textContent = text;
  promptText.setAttribute("title", text);
  promptInput.setAttribute("aria-valuetext", `prompt ${indexSpoken(state.prompt, data.P)}: ${truncateText(text, 80)}`);
  ui.layerUi.input.value = String(state.layer);
  ui.layerUi.output.textContent = rowLabel(data, state.layer);
  ui.layerUi.input.setAttribute("aria-valuetext", `${rowLabel(data, state.layer, "long")}, row ${indexSpoken(state.layer, data.L)}`);
  const n = data.lengths[state.prompt];
  const shownLayers = new Set(data.layers).size;
  const depth = data.nModelLayers && data.nModelLayers !== shownLayers ? ` of ${data.nModelLayers}` : "";
  const sublayers = data.L !== shownLayers ? ` (${data.L} rows: after attention too)` : "";
  ui.dimsEl.textContent = `${shownLayers}${depth} layers${sublayers} × ${n} token${n === 1 ? "" : "s"}`;
  ui.canvas.setAttribute(
    "aria-label",
    `${lensTitle(data)} heatmap: ${data.L === shownLayers ? `${data.L} layers` : `${data.L} rows of ${shownLayers} layers, each after its attention and after its block`} (final layer at the top) by ${n} tokens of ${promptName(state.prompt)}. ` +
      "Arrow keys move between cells, Home and End jump along the prompt, Enter pins a cell, Escape unpins.",
  );
}

/**
 * The tracked-token menu beside the colour menu: one entry per target (the token as the package
 * shows it, as text), shown while the requested metric is a per-target one.
 * @param {Ui} ui
 * @param {LensData} data
 * @param {string} metric the requested metric
 * @param {string} target the token shown (one of `data.targets`, or "")
 */
export function showTargetMenu(ui, data, metric, target) {
  const spec = metricSpec(data, metric);
  ui.targetLabel.hidden = !(spec && spec.perTarget && data.targets.length > 0);
  const key = data.targets.join("\u0000");
  if (ui.targetSelect.dataset.key !== key) {
    ui.targetSelect.replaceChildren(...data.targets.map((token) => h("option", "", { value: token, title: token }, displayToken(token))));
    ui.targetSelect.dataset.key = key;
  }
  ui.targetSelect.value = target;
  ui.targetSelect.title = spec && spec.perTarget && target ? metricLabel(data, spec, data.targets.indexOf(target)) : "";
}

/**
 * The legend: title, colour bar and ticks of the metric shown (the requested one says "loading…"
 * until its section arrives); a per-target metric's title names the token shown.
 * @param {Ui} ui
 * @param {LensData} data
 * @param {string} shown
 * @param {string} requested
 * @param {import("../metrics.js").Pick} [target] the tracked token's index, for a per-target
 *   metric (the group's, for a per-group one)
 * @param {{min: number, max: number, log: boolean} | null} [domain] the scale's domain when
 *   not the metric's own (two grids share one)
 */
export function showLegend(ui, data, shown, requested, target = 0, domain = null) {
  const spec = metricSpec(data, shown);
  if (!spec) return;
  const wanted = metricSpec(data, requested);
  ui.legendTitle.textContent = wanted && wanted !== spec ? `${metricLabel(data, wanted, target)}: loading…` : metricLabel(data, spec, target);
  ui.legendTitle.setAttribute("title", (wanted || spec).description);
  ui.metricSelect.setAttribute("title", (wanted || spec).description);
  const ctx = ui.legendBar.getContext("2d");
  if (ctx) {
    const image = ctx.createImageData(256, 1);
    const lut = colourLut(spec.scale, spec.reverse);
    for (let k = 0; k < 256; k++) image.data.set([lut[3 * k], lut[3 * k + 1], lut[3 * k + 2], 255], 4 * k);
    ctx.putImageData(image, 0, 0);
  }
  const ticks = legendTicks(spec, domain ?? metricDomain(data, shown));
  ui.legendTicks.replaceChildren(
    ...ticks.map((tick, i) => {
      const span = h("span", "murano-legend-tick", {}, tick.label);
      span.style.left = `${(tick.t * 100).toFixed(2)}%`;
      if (i === 0) span.classList.add("murano-first");
      if (i === ticks.length - 1 && tick.t > 0.95) span.classList.add("murano-last");
      return span;
    }),
  );
}

/**
 * The component view's legend: the diverging scale's bar and its ends, in logit units.
 * @param {Ui} ui
 * @param {import("../attribution.js").ComponentGrid | null} grid
 * @param {boolean} softcap the logits stop before a final soft-cap
 */
export function showComponentLegend(ui, grid, softcap) {
  const max = grid ? grid.max : 1;
  ui.legendTitle.textContent = `Part of the logit${softcap ? " (before the soft-cap)" : ""}`;
  ui.legendTitle.setAttribute("title", "Each component's direct part of the explained logit: orange raises it, blue lowers it");
  const ctx = ui.legendBar.getContext("2d");
  if (ctx) {
    const image = ctx.createImageData(256, 1);
    for (let k = 0; k < 256; k++) image.data.set([...interpolateStops(DIVERGING_STOPS, k / 255), 255], 4 * k);
    ctx.putImageData(image, 0, 0);
  }
  const end = String(Number(max.toPrecision(3)));
  const ticks = [
    { t: 0, label: `−${end}` },
    { t: 0.5, label: "0" },
    { t: 1, label: `+${end}` },
  ];
  ui.legendTicks.replaceChildren(
    ...ticks.map((tick, i) => {
      const span = h("span", "murano-legend-tick", {}, tick.label);
      span.style.left = `${(tick.t * 100).toFixed(2)}%`;
      if (i === 0) span.classList.add("murano-first");
      if (i === ticks.length - 1) span.classList.add("murano-last");
      return span;
    }),
  );
}

/**
 * The pinned-cell chip.
 * @param {Ui} ui
 * @param {LensData | null} data
 * @param {Selected | null} sel
 */
export function showPin(ui, data, sel) {
  if (!sel || !data || !(sel.prompt >= 0 && sel.prompt < data.P)) {
    ui.pinEl.hidden = true;
    return;
  }
  const li = clampIndex(sel.layer_index, data.L);
  const pos = clampIndex(sel.position, data.lengths[sel.prompt]);
  const d = cellDetails(data, sel.prompt, li, pos);
  const top = d.top[0];
  const where = data.P > 1 ? `${promptName(sel.prompt)} · ` : "";
  ui.pinText.textContent = `Pinned: ${where}${rowLabel(data, li)} · pos ${pos} · ${displayToken(d.input)} → ${top ? `${displayToken(top.token)} ${formatProb(top.prob, top.step)}` : "no value"}`;
  ui.pinEl.hidden = false;
}
