// @ts-check
/** Numbers as a person reads them: probabilities, bits and ranks (rank 0 = the top-1 token). */

/** A rank of this value in a rank section means "this rank or worse". */
export const RANK_CAP = 65535;

/**
 * How many of `digits` decimals (of a number printed in `unit`s) are real when the number is known
 * to `step` (the payload's quantum, in the same units as the value): none finer than the step.
 * @param {number} digits
 * @param {number} step
 * @param {number} [unit] the value of one printed unit (0.01 for a percent)
 */
function realDigits(digits, step, unit = 1) {
  let d = digits;
  while (d > 0 && 10 ** -d * unit < step) d -= 1;
  return d;
}

/**
 * "42.1%", "2.34%", "<0.1%", "100%"; "–" when not finite. A positive probability never reads
 * "0%" (the payload stores only an exact 0 as 0: `murano_widgets/payload/codec.py`).
 *
 * Two decimals of a percent below 10 %, one above: every probability section of the payloads
 * steps by 1/65535 (0.0015 %), so these digits are real. Given a coarser `step`, the digits finer
 * than it are left out (1/255: "2%", not "2.35%").
 * @param {number} p
 * @param {number} [step] the quantum `p` was stored with (0: exact)
 * @returns {string}
 */
export function formatProb(p, step = 0) {
  if (!Number.isFinite(p)) return "–";
  if (p > 0 && p < 0.001) return "<0.1%";
  if (p >= 0.9995) return "100%";
  const digits = realDigits(p >= 0.1 ? 1 : 2, step, 0.01);
  const text = (p * 100).toFixed(digits);
  return `${(digits ? text.replace(/\.?0+$/, "") : text) || "0"}%`;
}

/**
 * "3.21 bits" (`short`: "3.21"): two decimals below 10 bits, one above, and none finer than
 * `step` (a bits section steps by its maximum / 65535: a KL of up to 2,000 bits is known to
 * 0.03 bits, so "1.2 bits").
 * @param {number} b
 * @param {boolean} [short]
 * @param {number} [step] the quantum `b` was stored with (0: exact)
 * @returns {string}
 */
export function formatBits(b, short = false, step = 0) {
  if (!Number.isFinite(b)) return "–";
  const digits = realDigits(b >= 10 ? 1 : 2, step);
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
 * @param {number} [step] the quantum the value was stored with (its section's scale; 0: exact)
 * @returns {string}
 */
export function formatUnit(unit, value, short = false, step = 0) {
  if (unit === "probability") return short ? (Number.isFinite(value) ? `${Math.round(value * 100)}%` : "–") : formatProb(value, step);
  if (unit === "rank") return formatRank(value, short);
  if (unit === "bits") return formatBits(value, short, step);
  if (!Number.isFinite(value)) return "–";
  return String(Number(value.toPrecision(3)));
}

/**
 * A change `b − a` in a unit of the metric registry, signed: a probability's in percentage points
 * ("+12.3 pts", `short`: "+12"; the diff's `"delta"` is one), bits ("−0.52 bits", `short`:
 * "−0.52"; no digit finer than `step`), ranks ("+3 ranks", "−20k ranks"; `short`: "+3", "−20k";
 * a rank change is exact); "0 pts", "0 bits", "0 ranks" (`short`: "0") for none, "–" when not finite.
 * @param {string} unit
 * @param {number | null} value
 * @param {boolean} [short] the cell label and legend tick form
 * @param {number} [step] the quantum the value was stored with (its section's scale; 0: exact)
 * @returns {string}
 */
export function formatChange(unit, value, short = false, step = 0) {
  if (value === null || !Number.isFinite(value)) return "–";
  const size = Math.abs(value);
  const sign = value > 0 ? "+" : "−";
  if (unit === "probability" || unit === "delta") {
    const points = size * 100;
    const digits = short ? (points >= 9.95 ? 0 : 1) : points >= 10 ? 1 : 2;
    let text = points.toFixed(digits);
    if (text.includes(".")) text = text.replace(/\.?0+$/, "");
    if (text === "" || Number(text) === 0) return short ? "0" : "0 pts";
    return short ? `${sign}${text}` : `${sign}${text} pts`;
  }
  if (unit === "rank") {
    const rounded = Math.round(size);
    if (rounded === 0) return short ? "0" : "0 ranks";
    const text = rounded >= 10000 ? `${Math.round(rounded / 1000)}k` : rounded >= 1000 && short ? `${Number((rounded / 1000).toFixed(1))}k` : String(rounded);
    return short ? `${sign}${text}` : `${sign}${text} rank${rounded === 1 ? "" : "s"}`;
  }
  if (unit === "bits") {
    const text = formatBits(size, true, step);
    if (Number(text) === 0) return short ? "0" : "0 bits";
    return short ? `${sign}${text}` : `${sign}${formatBits(size, false, step)}`;
  }
  const text = String(Number(size.toPrecision(3)));
  return Number(text) === 0 ? "0" : `${sign}${text}`;
}

/*
 * How the widget counts (docs/contributing.md, "How the widget counts"): a prompt, a row, a
 * layer and a position are named by the index Python gives them, from 0, in every label,
 * status line and message: "prompt 2" is `w.prompt = 2`, `result.prompts[2]`; a slider's
 * readout says the range it moves over, "2 (0–4)", so "2" does not read as "the second".
 */

/**
 * A prompt by its index: "prompt 2".
 * @param {number} index
 * @returns {string}
 */
export function promptName(index) {
  return `prompt ${index}`;
}

/**
 * A slider's readout: the index and the range of indices, "2 (0–4)"; one item: "0".
 * @param {number} index
 * @param {number} count how many there are
 * @returns {string}
 */
export function indexReadout(index, count) {
  return count > 1 ? `${index} (0–${count - 1})` : String(index);
}

/**
 * The same for a screen reader: "2 (0 to 4)"; one item: "0".
 * @param {number} index
 * @param {number} count
 * @returns {string}
 */
export function indexSpoken(index, count) {
  return count > 1 ? `${index} (0 to ${count - 1})` : String(index);
}
