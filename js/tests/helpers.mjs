// Byte-level helpers for tests of the decoders themselves. Realistic payloads come from the golden
// files Python writes (golden.mjs, tests/golden/); the metric registry comes with them, in
// meta.metrics, so no test keeps a copy of it.

/**
 * Little-endian bytes of `values` as `dtype`, placed at `byteOffset` inside a larger buffer.
 * For the decoders' byte handling and for malformed sections (a value Python never writes).
 */
export function encode(values, dtype, byteOffset = 0) {
  const size = { uint8: 1, int16: 2, uint16: 2, uint32: 4, int32: 4, float32: 4 }[dtype];
  const set = { uint8: "setUint8", int16: "setInt16", uint16: "setUint16", uint32: "setUint32", int32: "setInt32", float32: "setFloat32" }[dtype];
  const buffer = new ArrayBuffer(byteOffset + values.length * size + 3);
  const view = new DataView(buffer, byteOffset, values.length * size);
  values.forEach((v, i) => view[set](i * size, v, true));
  return view;
}
