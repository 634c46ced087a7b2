// Synthetic payloads in the format the Python encoder writes (version 2; see
// murano_widgets/payload.py): section names are the result's field names, and the metric
// registry travels in meta.metrics.

/** Little-endian bytes of `values` as `dtype`, placed at `byteOffset` inside a larger buffer. */
export function encode(values, dtype, byteOffset = 0) {
  const size = { uint8: 1, uint16: 2, uint32: 4 }[dtype];
  const buffer = new ArrayBuffer(byteOffset + values.length * size + 3);
  const view = new DataView(buffer, byteOffset, values.length * size);
  values.forEach((v, i) => {
    if (size === 1) view.setUint8(i, v);
    else if (size === 2) view.setUint16(i * 2, v, true);
    else view.setUint32(i * 4, v, true);
  });
  return view;
}

/** The registry as Python sends it (domains filled in by `makePayload`). */
export function registry({ maxEntropy, rankMax, klMax, finalAvailable = true }) {
  const reason = finalAvailable ? null : "needs the model's last layer";
  return [
    { name: "prob", field: "max_probs", label: "Top-1 probability", unit: "probability", scale: "viridis", reverse: false, log: false, domain: [0, 1], description: "How sure the layer is of its own top token.", final_based: false, available: true, unavailable_reason: null },
    { name: "entropy", field: "entropy", label: "Entropy (bits)", unit: "bits", scale: "cividis", reverse: true, log: false, domain: [0, maxEntropy], description: "How spread out the layer's prediction is.", final_based: false, available: true, unavailable_reason: null },
    { name: "final_prob", field: "final_token_probs", label: "Probability of the final prediction", unit: "probability", scale: "viridis", reverse: false, log: false, domain: [0, 1], description: "The chance the layer gives the model's own answer.", final_based: true, available: finalAvailable, unavailable_reason: reason },
    { name: "final_rank", field: "final_token_ranks", label: "Rank of the final prediction (log scale)", unit: "rank", scale: "viridis", reverse: true, log: true, domain: [0, rankMax], description: "Where the model's own answer stands in the layer's list; rank 0 = top-1.", final_based: true, available: finalAvailable, unavailable_reason: reason },
    { name: "kl", field: "kl_to_final", label: "KL(final ‖ layer) in bits", unit: "bits", scale: "magma", reverse: true, log: false, domain: [0, klMax], description: "How far the layer's distribution is from the final one.", final_based: true, available: finalAvailable, unavailable_reason: reason },
  ];
}

/**
 * A small payload: `layers` rows, prompts of the given lengths, token table `tokens`.
 * Cell (i, col): predicted token = (i + col) % tokens.length, prob = (i + 1) / L, final token =
 * the last row's prediction (so the last row is always settled).
 */
export function makePayload({ layers = [0, 1, 2], lengths = [3, 2], tokens = ["a", " b", "\n", "<script>", "é"], topK = 3, details = true, missing = null, finalMissing = null, final = true, byteOffset = 0, indexDtype = "uint16" } = {}) {
  const L = layers.length;
  const T = lengths.reduce((a, b) => a + b, 0);
  const offsets = [];
  let o = 0;
  for (const n of lengths) {
    offsets.push(o);
    o += n;
  }
  const nt = tokens.length;
  const top1 = [];
  const probs = [];
  for (let i = 0; i < L; i++) {
    for (let c = 0; c < T; c++) {
      top1.push((i + c) % nt);
      probs.push(Math.round(((i + 1) / L) * 65535));
    }
  }
  const finals = Array.from({ length: T }, (_, c) => (L - 1 + c) % nt);
  const inputs = Array.from({ length: T }, (_, c) => (c * 2) % nt);
  const sections = {
    input_ids: encode(inputs, indexDtype, byteOffset),
    predicted_tokens: encode(top1, indexDtype, byteOffset),
    max_probs: encode(probs, "uint16", byteOffset),
  };
  const spec = {
    input_ids: { dtype: indexDtype, shape: [T], scale: 1 },
    predicted_tokens: { dtype: indexDtype, shape: [L, T], scale: 1 },
    max_probs: { dtype: "uint16", shape: [L, T], scale: 1 / 65535 },
  };
  if (final) {
    sections.final_tokens = encode(finals, indexDtype, byteOffset);
    spec.final_tokens = { dtype: indexDtype, shape: [T], scale: 1 };
  }
  if (missing) {
    sections.missing = encode(missing, "uint8", byteOffset);
    spec.missing = { dtype: "uint8", shape: [L, T], scale: 1 };
  }
  if (finalMissing) {
    sections.final_missing = encode(finalMissing, "uint8", byteOffset);
    spec.final_missing = { dtype: "uint8", shape: [T], scale: 1 };
  }
  const maxEntropy = Math.log2(1000);
  const cells = L * T;
  const k1 = topK - 1;
  const detailSpec = {
    entropy: { dtype: "uint16", shape: [L, T], scale: maxEntropy / 65535 },
    topk_tokens: { dtype: indexDtype, shape: [L, T, k1], scale: 1 },
    topk_probs: { dtype: "uint8", shape: [L, T, k1], scale: 1 / 255 },
  };
  const detail = {
    entropy: () => encode(Array.from({ length: cells }, (_, k) => (k * 977) % 65536), "uint16", byteOffset),
    topk_tokens: () => encode(Array.from({ length: cells * k1 }, (_, k) => (k + 1) % nt), indexDtype, byteOffset),
    topk_probs: () => encode(Array.from({ length: cells * k1 }, (_, k) => 20 - (k % k1)), "uint8", byteOffset),
  };
  if (final) {
    Object.assign(detailSpec, {
      final_token_probs: { dtype: "uint16", shape: [L, T], scale: 1 / 65535 },
      final_token_ranks: { dtype: "uint16", shape: [L, T], scale: 1 },
      kl_to_final: { dtype: "uint16", shape: [L, T], scale: 3 / 65535 },
    });
    Object.assign(detail, {
      final_token_probs: () => encode(Array.from({ length: cells }, (_, k) => Math.floor(k / T) * 1000), "uint16", byteOffset),
      final_token_ranks: () => encode(Array.from({ length: cells }, (_, k) => (L - 1 - Math.floor(k / T)) * 7), "uint16", byteOffset),
      kl_to_final: () => encode(Array.from({ length: cells }, (_, k) => (L - 1 - Math.floor(k / T)) * 1000), "uint16", byteOffset),
    });
  }
  Object.assign(spec, detailSpec);
  if (details) for (const [name, make] of Object.entries(detail)) sections[name] = make();
  const rankMax = 19; // the largest rank, 14, rounded up as Python does (1, 2, 5 × 10^k, minus 1)
  const klMax = 0.1; // nice ceiling of the largest KL, 2000 * 3 / 65535 = 0.0916
  const meta = {
    version: 2,
    model_name: "tiny-test",
    lens_kind: "logit",
    layers,
    n_model_layers: final ? Math.max(...layers) + 1 : Math.max(...layers) + 3,
    prompts: lengths.map((n, p) => `prompt ${p}`),
    lengths,
    offsets,
    total: T,
    tokens,
    top_k: topK,
    max_entropy: maxEntropy,
    sections: spec,
    base_sections: ["input_ids", "final_tokens", "predicted_tokens", "max_probs", "missing", "final_missing"],
    detail_sections: Object.keys(detailSpec),
    metrics: registry({ maxEntropy, rankMax, klMax, finalAvailable: final }),
  };
  return { meta, sections };
}
