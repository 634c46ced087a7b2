// @ts-check
/**
 * The detail sections (top-k, the other metrics, the attribution): asked of Python once, when
 * something shown needs them (`requestDetails`); when they do not come in time (a kernel gone or
 * busy, or none at all), the notes that wait for them say so instead of "loading" for ever.
 */

import { DETAILS_TIMEOUT_MS, detailsPending } from "../details.js";
import { updateTooltip } from "./cell_tip.js";

/** @typedef {import("./view.js").LensView} LensView */

/**
 * Asks Python once for the detail sections.
 * @param {LensView} view
 */
export function requestDetails(view) {
  const { data, model } = view;
  if (view.detailsRequested || !data) return;
  if (!detailsPending(data)) return;
  view.detailsRequested = true;
  if (!model.get("_details")) {
    model.set("_details", true);
    model.save_changes();
  }
  // A model with no kernel behind it cannot send (a saved state rendered on its own page): no
  // answer will come. Otherwise a kernel that is gone (a saved notebook reopened) or busy does
  // not answer either; after a while the notes say so instead of "loading" for ever.
  if (typeof model.send !== "function") view.detailsLate = true;
  else view.detailsTimer = setTimeout(() => detailsOverdue(view), DETAILS_TIMEOUT_MS);
}

/**
 * The detail sections asked for have not come in time: the notes that wait for them say so.
 * @param {LensView} view
 */
function detailsOverdue(view) {
  const data = view.data;
  if (!data || !detailsPending(data)) return;
  view.detailsLate = true;
  updateTooltip(view);
  view.updateWhy();
  view.drawTrajectory();
}
