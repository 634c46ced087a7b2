// @ts-check
/** Numbers as a person reads them: probabilities, bits and ranks (rank 0 = the top-1 token). */

/** A rank of this value in a rank section means "this rank or worse". */
export const RANK_CAP = 65535;

/**
 * "42.1%", "<0.1%", "100%"; "–" when not finite.
 * @param {number} p
 * @returns {string}
 */
export function formatProb(p) {
  if (!Number.isFinite(p)) return "–";
  if (p > 0 && p < 0.001) return "<0.1%";
  if (p >= 0.9995) return "100%";
  return `${(p * 100).toFixed(p >= 0.1 ? 1 : 2).replace(/\.?0+$/, "") || "0"}%`;
}

/**
 * "3.21 bits" (`short`: "3.21").
 * @param {number} b
 * @param {boolean} [short]
 * @returns {string}
 */
export function formatBits(b, short = false) {
  if (!Number.isFinite(b)) return "–";
  const digits = b >= 10 ? 1 : 2;
  const text = short ? String(Number(b.toFixed(digits))) : b.toFixed(digits);
  return short ? text : `${text} bits`;
}

/**
 * A rank as a person reads it, 0 = the top-1 token: "rank 0", "rank 14", "rank 20k",
 * "rank ≥65535" (`short`, for legend ticks: "0", "14", "20k", "≥65535").
 * @param {number} rank
 * @param {boolean} [short]
 * @returns {string}
 */
export function formatRank(rank, short = false) {
  if (!Number.isFinite(rank)) return "–";
  let text;
  if (rank >= RANK_CAP) text = `≥${RANK_CAP}`;
  else if (rank >= 10000) text = `${Math.round(rank / 1000)}k`;
  else if (rank >= 1000 && short) text = `${Number((rank / 1000).toFixed(1))}k`;
  else text = String(Math.round(rank));
  return short ? text : `rank ${text}`;
}

/**
 * Rounds up to 1, 2 or 5 times a power of ten.
 * @param {number} x
 * @returns {number}
 */
export function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x - 1e-12 * p) return m * p;
  return 10 * p;
}

/**
 * A value in a unit of the metric registry ("probability", "bits", "rank"; anything else as a
 * plain number).
 * @param {string} unit
 * @param {number} value
 * @param {boolean} [short] compact form for legend ticks
 * @returns {string}
 */
export function formatUnit(unit, value, short = false) {
  if (unit === "probability") return short ? (Number.isFinite(value) ? `${Math.round(value * 100)}%` : "–") : formatProb(value);
  if (unit === "rank") return formatRank(value, short);
  if (unit === "bits") return formatBits(value, short);
  if (!Number.isFinite(value)) return "–";
  return String(Number(value.toPrecision(3)));
}
