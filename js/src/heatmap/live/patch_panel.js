// @ts-check
/**
 * The patch panel under the heatmap: shown when the `patch` trait names a patch and its diff
 * payload decodes, by the lens diff's own view (`../../diff/view.js`'s `DiffView`, embedded) over
 * `patchModel` (`patch.js`), with the patch's summary and "Clear patch" (only with a kernel).
 */

import { cellDetails } from "../details.js";
import { DiffView } from "../../diff/view.js";
import { isPatch, patchModel, patchSummary } from "./patch.js";
import { promptTexts } from "./controls.js";

/** @typedef {import("./view.js").LiveView} LiveView */

/**
 * The patch panel: shown when the `patch` trait names a patch and its diff payload decodes; the
 * "Clear patch" button only with a kernel.
 * @param {LiveView} live
 * @param {boolean} offered the live controls are offered
 */
export function showPatch(live, offered) {
  const patch = live.store.state.patch;
  const ui = live.ui;
  if (!isPatch(patch)) {
    closePatch(live);
    return;
  }
  if (!live.patchModel) live.patchModel = patchModel(live.model);
  if (!live.patchModel.ready()) {
    closePatch(live);
    return;
  }
  if (!live.diff) {
    // Its columns under the heatmap's (same width, same label column), its own header left
    // out: the panel's title says what was patched.
    const lens = live.lens;
    live.diff = new DiffView(live.patchModel, ui.patchDiff, {
      embedded: true,
      columns: () =>
        lens.layout && !lens.layout.columns && lens.ui.scroller.isConnected
          ? { cellW: lens.layout.cellW, left: lens.ui.scroller.getBoundingClientRect().left + lens.layout.labelW }
          : null,
    });
  }
  const data = live.lens.data;
  const token = data && patch.prompt < data.P && patch.position < data.lengths[patch.prompt] ? cellDetails(data, patch.prompt, 0, patch.position).input : null;
  const summary = patchSummary(patch, promptTexts(live), token);
  ui.patchTitle.textContent = summary.title;
  ui.patchAnswer.textContent = summary.answer;
  ui.patchAnswer.hidden = !summary.answer;
  ui.patchClear.hidden = !offered;
  ui.patchPanel.hidden = false;
}

/** @param {LiveView} live */
export function closePatch(live) {
  if (live.diff) live.diff.destroy();
  live.diff = null;
  if (live.patchModel) live.patchModel.dispose();
  live.patchModel = null;
  live.ui.patchPanel.hidden = true;
}
