// Synthetic payloads in the format the Python encoder writes (see murano_widgets/payload.py).

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

/**
 * A small payload: `layers` rows, prompts of the given lengths, token table `tokens`.
 * Cell (i, col): top1 token = (i + col) % tokens.length, prob = (i + 1) / L, final token = the last
 * row's top1 (so the last row is always settled).
 */
export function makePayload({ layers = [0, 1, 2], lengths = [3, 2], tokens = ["a", " b", "\n", "<script>", "é"], topK = 3, details = true, missing = null, byteOffset = 0, indexDtype = "uint16" } = {}) {
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
    input_tokens: encode(inputs, indexDtype, byteOffset),
    final_tokens: encode(finals, indexDtype, byteOffset),
    top1_tokens: encode(top1, indexDtype, byteOffset),
    top1_probs: encode(probs, "uint16", byteOffset),
  };
  const spec = {
    input_tokens: { dtype: indexDtype, shape: [T], scale: 1 },
    final_tokens: { dtype: indexDtype, shape: [T], scale: 1 },
    top1_tokens: { dtype: indexDtype, shape: [L, T], scale: 1 },
    top1_probs: { dtype: "uint16", shape: [L, T], scale: 1 / 65535 },
  };
  if (missing) {
    sections.missing = encode(missing, "uint8", byteOffset);
    spec.missing = { dtype: "uint8", shape: [L, T], scale: 1 };
  }
  const maxEntropy = Math.log2(1000);
  if (details) {
    const cells = L * T;
    sections.entropy = encode(Array.from({ length: cells }, (_, k) => (k * 977) % 65536), "uint16", byteOffset);
    spec.entropy = { dtype: "uint16", shape: [L, T], scale: maxEntropy / 65535 };
    sections.final_probs = encode(Array.from({ length: cells }, (_, k) => Math.floor(k / T) * 1000), "uint16", byteOffset);
    spec.final_probs = { dtype: "uint16", shape: [L, T], scale: 1 / 65535 };
    sections.final_ranks = encode(Array.from({ length: cells }, (_, k) => (L - 1 - Math.floor(k / T)) * 7), "uint16", byteOffset);
    spec.final_ranks = { dtype: "uint16", shape: [L, T], scale: 1 };
    sections.kl = encode(Array.from({ length: cells }, (_, k) => (L - 1 - Math.floor(k / T)) * 1000), "uint16", byteOffset);
    spec.kl = { dtype: "uint16", shape: [L, T], scale: 3 / 65535 };
    const k1 = topK - 1;
    sections.topk_tokens = encode(Array.from({ length: cells * k1 }, (_, k) => (k + 1) % nt), indexDtype, byteOffset);
    spec.topk_tokens = { dtype: indexDtype, shape: [L, T, k1], scale: 1 };
    sections.topk_probs = encode(Array.from({ length: cells * k1 }, (_, k) => 20 - (k % k1)), "uint8", byteOffset);
    spec.topk_probs = { dtype: "uint8", shape: [L, T, k1], scale: 1 / 255 };
  }
  const meta = {
    version: 1,
    model_name: "tiny-test",
    layers,
    n_model_layers: Math.max(...layers) + 1,
    prompts: lengths.map((n, p) => `prompt ${p}`),
    lengths,
    offsets,
    total: T,
    tokens,
    top_k: details ? topK : 1,
    max_entropy: maxEntropy,
    sections: spec,
  };
  return { meta, sections };
}
