// @ts-check
/**
 * The long-trace overview's pooling (issue 51): a metric's values over every layer and every
 * position of a prompt, reduced to one value per layer and pixel column by the max or the mean of
 * the positions that pixel column covers. Pure: buffers in, buffers out (`overview.js` draws).
 */

/** The pooling choices, in menu order. */
export const POOL_MODES = Object.freeze(/** @type {const} */ (["max", "mean"]));

/** @typedef {(typeof POOL_MODES)[number]} PoolMode */

/**
 * The first position pixel column `k` of `width` covers, of `n` positions (column `k` covers
 * `[bucketStart(k), bucketStart(k + 1))`; equal buckets of `n / width` when it divides).
 * @param {number} k
 * @param {number} n
 * @param {number} width
 */
export function bucketStart(k, n, width) {
  return Math.floor((k * n) / width);
}

/**
 * Pools an `[L, n]` buffer (row-major: layer, then position) into `[L, width]`: each pixel
 * column's value is the max (or the mean) of its positions' values in that layer. NaN values (a
 * missing cell) are left out; a bucket of NaN alone pools to NaN.
 * @param {ArrayLike<number>} values `L * n` values
 * @param {number} L rows
 * @param {number} n positions per row
 * @param {number} width pixel columns, 1 to `n`
 * @param {PoolMode} mode
 * @returns {Float32Array} `L * width` values
 */
export function poolColumns(values, L, n, width, mode) {
  if (!Number.isInteger(L) || L < 0 || !Number.isInteger(n) || n < 0) throw new Error(`poolColumns: L and n must be sizes, got ${L} and ${n}`);
  if (values.length !== L * n) throw new Error(`poolColumns: ${values.length} values for ${L} rows of ${n}`);
  if (!Number.isInteger(width) || width < 1 || width > Math.max(1, n)) throw new Error(`poolColumns: width must be an int from 1 to ${n}, got ${width}`);
  if (!POOL_MODES.includes(mode)) throw new Error(`poolColumns: mode must be one of ${POOL_MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  const out = new Float32Array(L * width);
  const max = mode === "max";
  for (let i = 0; i < L; i++) {
    const row = i * n;
    for (let k = 0; k < width; k++) {
      const start = bucketStart(k, n, width);
      const end = bucketStart(k + 1, n, width);
      let acc = max ? -Infinity : 0;
      let count = 0;
      for (let j = start; j < end; j++) {
        const v = values[row + j];
        if (v !== v) continue; // NaN: a missing cell
        count += 1;
        if (max) {
          if (v > acc) acc = v;
        } else acc += v;
      }
      out[i * width + k] = count === 0 ? NaN : max ? acc : acc / count;
    }
  }
  return out;
}

/**
 * The pixel columns an overview of `n` positions uses at `pixels` CSS pixels: one per position
 * when they fit, else one per pixel.
 * @param {number} n
 * @param {number} pixels
 */
export function overviewWidth(n, pixels) {
  return Math.max(1, Math.min(n, Math.floor(pixels)));
}

/**
 * The positions where a mark goes on the overview: each column whose `hit(column)` is true and
 * whose previous column's is not (the start of each run), so a long run is one mark.
 * @param {number} n columns
 * @param {(column: number) => boolean} hit
 * @returns {number[]}
 */
export function runStarts(n, hit) {
  const out = [];
  let before = false;
  for (let j = 0; j < n; j++) {
    const now = hit(j);
    if (now && !before) out.push(j);
    before = now;
  }
  return out;
}
