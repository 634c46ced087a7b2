// @ts-check
/** The hatching of a cell with no value, the same in the heatmap (`painter.js`) and the diff. */

/**
 * The fill of a cell with no value, in both heatmaps (this one and the diff's): thin diagonal lines
 * of `colour` on a 6-pixel tile; null when the browser gives the tile no context.
 * @param {CanvasRenderingContext2D} ctx the context the pattern fills
 * @param {string} colour
 * @returns {CanvasPattern | null}
 */
export function hatchPattern(ctx, colour) {
  const tile = document.createElement("canvas");
  tile.width = tile.height = 6;
  const t = tile.getContext("2d");
  if (!t) return null;
  t.strokeStyle = colour;
  t.lineWidth = 1;
  t.beginPath();
  t.moveTo(0, 6);
  t.lineTo(6, 0);
  t.stroke();
  return ctx.createPattern(tile, "repeat");
}
