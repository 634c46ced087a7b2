// Byte-level helpers for tests of the decoders themselves. Realistic payloads come from the golden
// files Python writes (golden.mjs, tests/golden/); the metric registry comes with them, in
// meta.metrics, so no test keeps a copy of it.

/**
 * Little-endian bytes of `values` as `dtype`, placed at `byteOffset` inside a larger buffer.
 * For the decoders' byte handling and for malformed sections (a value Python never writes).
 */
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
