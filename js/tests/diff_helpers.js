// A synthetic lens-diff payload in the format murano_widgets/_diff_payload.py writes (version 1):
// token sections hold index + 1 into meta.tokens, 0 meaning none.

/** Little-endian bytes of `values` as `dtype`, at `byteOffset` inside a larger buffer. */
export function encode(values, dtype, byteOffset = 0) {
  const size = { uint8: 1, int16: 2, uint16: 2, uint32: 4 }[dtype];
  const buffer = new ArrayBuffer(byteOffset + values.length * size + 3);
  const view = new DataView(buffer, byteOffset, values.length * size);
  values.forEach((v, i) => {
    if (size === 1) view.setUint8(i, v);
    else if (dtype === "int16") view.setInt16(i * 2, v, true);
    else if (size === 2) view.setUint16(i * 2, v, true);
    else view.setUint32(i * 4, v, true);
  });
  return view;
}

/**
 * Two rows, one prompt of three positions; position 2 has no partner in b. Row 0: deltas
 * -0.5, 0, (none); row 1: +0.25, +0.5, (none). Top-1 differs at (1, 0).
 */
export function makeDiff({ byteOffset = 0, depthB = 2, kl = true } = {}) {
  const tokens = [" Paris", " Rome", "<b>x</b>", "The", " city"];
  const L = 2, T = 3, K = 2;
  const aligned = [1, 1, 0, 1, 1, 0];
  const delta = [-0.5, 0, 0, 0.25, 0.5, 0].map((d) => Math.round(d * 32767));
  const sections = {
    input_a: ["uint16", [4, 5, 3], [T]],
    input_b: ["uint16", [4, 5, 0], [T]],
    position_b: ["uint32", [1, 2, 0], [T]],
    token: ["uint16", [1, 1, 1], [T]],
    aligned: ["uint8", aligned, [L, T]],
    delta_known: ["uint8", aligned, [L, T]],
    top1_differs: ["uint8", [0, 0, 0, 1, 0, 0], [L, T]],
    delta_prob: ["int16", delta, [L, T]],
    prob_a: ["uint16", [0.6, 0.3, 0, 0.25, 0.1, 0].map((p) => Math.round(p * 65535)), [L, T]],
    prob_b: ["uint16", [0.1, 0.3, 0, 0.5, 0.6, 0].map((p) => Math.round(p * 65535)), [L, T]],
    topk_tokens_a: ["uint16", [1, 2, 1, 2, 3, 0, 1, 2, 1, 5, 3, 0], [L, T, K]],
    topk_probs_a: ["uint16", [0.6, 0.2, 0.5, 0.3, 0.4, 0, 0.25, 0.2, 0.5, 0.1, 0.4, 0].map((p) => Math.round(p * 65535)), [L, T, K]],
    topk_tokens_b: ["uint16", [1, 2, 1, 2, 0, 0, 2, 1, 1, 2, 0, 0], [L, T, K]],
    topk_probs_b: ["uint16", [0.7, 0.1, 0.5, 0.3, 0, 0, 0.5, 0.25, 0.6, 0.2, 0, 0].map((p) => Math.round(p * 65535)), [L, T, K]],
  };
  if (kl) sections.kl = ["uint16", [65535, 0, 0, 32768, 16384, 0], [L, T]];
  const scales = { delta_prob: 1 / 32767, prob_a: 1 / 65535, prob_b: 1 / 65535, topk_probs_a: 1 / 65535, topk_probs_b: 1 / 65535, kl: 2 / 65535 };
  const meta = {
    format: "lens_diff",
    version: 1,
    labels: ["small (logit lens)", "big (logit lens)"],
    layers: [0, 1],
    b_layers: depthB === 2 ? [0, 1] : [0, depthB - 1],
    b_has_row: [true, true],
    depth_a: 2,
    depth_b: depthB,
    align: "end",
    alignment_note: "positions align from the last token (unpaired ones are missing).",
    token_rule: "final prediction of a",
    prompts_a: ["The city x"],
    prompts_b: ["The city"],
    lengths: [T],
    offsets: [0],
    total: T,
    top_k: K,
    tokens,
    metrics: [
      { name: "delta_prob", label: "Δ", short: "Δ p", unit: "delta", scale: "diverging", description: "", domain: [-0.5, 0.5], available: true, unavailable_reason: null },
      { name: "kl", label: "KL", short: "KL", unit: "bits", scale: "sequential", description: "", domain: [0, 2], available: kl, unavailable_reason: kl ? null : "no KL" },
      { name: "top1_differs", label: "top-1", short: "top-1", unit: "boolean", scale: "binary", description: "", domain: [0, 1], available: true, unavailable_reason: null },
    ],
    sections: {},
  };
  const out = {};
  for (const [name, [dtype, values, shape]] of Object.entries(sections)) {
    meta.sections[name] = { dtype, shape, scale: scales[name] ?? 1 };
    out[name] = encode(values, dtype, byteOffset);
  }
  return { meta, sections: out };
}
