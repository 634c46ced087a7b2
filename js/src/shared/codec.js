// @ts-check
/**
 * The one byte reader of the three widgets: base64 text → bytes, any buffer anywidget or a
 * standalone page hands over → bytes, and bytes → a little-endian typed array (a view when the
 * data is aligned and the host little-endian, a copy otherwise). `payload.js` (the heatmap),
 * `diff/payload.js` and `dataset/data.js` read every section through it.
 */

/** Bytes per element of every dtype a payload may hold. */
export const DTYPE_SIZES = Object.freeze({ uint8: 1, int16: 2, uint16: 2, uint32: 4, int32: 4, float32: 4 });

/**
 * @typedef {keyof typeof DTYPE_SIZES} Dtype
 * @typedef {Uint8Array | Int16Array | Uint16Array | Uint32Array | Int32Array | Float32Array} TypedArray
 */

const CONSTRUCTORS = Object.freeze({
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  int32: Int32Array,
  float32: Float32Array,
});

/** Whether this host stores numbers little-endian (the payloads are little-endian). */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Decodes base64 text to bytes (a saved notebook's buffers, the standalone HTML export).
 * @param {string} text
 * @returns {Uint8Array}
 */
export function decodeBase64(text) {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * A byte view of a buffer as anywidget or a standalone page hands it over: a DataView (maybe with a
 * non-zero byteOffset), an ArrayBuffer, a typed array, or base64 text.
 * @param {unknown} buffer
 * @returns {Uint8Array}
 */
export function toBytes(buffer) {
  if (buffer instanceof Uint8Array) return buffer;
  if (ArrayBuffer.isView(buffer)) {
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  if (typeof buffer === "string") return decodeBase64(buffer);
  if (buffer && typeof buffer === "object" && typeof (/** @type {any} */ (buffer).byteLength) === "number") {
    // An ArrayBuffer from another realm (e.g. an iframe) fails `instanceof`.
    return new Uint8Array(/** @type {ArrayBuffer} */ (buffer));
  }
  throw new TypeError(`expected binary data (DataView, ArrayBuffer or base64), got ${typeof buffer}`);
}

/**
 * Reads a little-endian array of `dtype` from `buffer`. Returns a view when the data is aligned
 * (and the host is little-endian); copies otherwise, since typed arrays need aligned offsets.
 * @param {unknown} buffer
 * @param {string} dtype one of `accepted`
 * @param {number} [length] expected number of elements (checked when given)
 * @param {readonly string[]} [accepted] the dtypes this payload may use (default: all of DTYPE_SIZES)
 * @returns {TypedArray}
 */
export function readTypedArray(buffer, dtype, length, accepted = Object.keys(DTYPE_SIZES)) {
  const size = accepted.includes(dtype) ? /** @type {Record<string, number>} */ (DTYPE_SIZES)[dtype] : undefined;
  if (!size) throw new Error(`unsupported dtype ${JSON.stringify(dtype)} (expected ${accepted.join(", ")})`);
  const Ctor = CONSTRUCTORS[/** @type {Dtype} */ (dtype)];
  const bytes = toBytes(buffer);
  if (length !== undefined && bytes.byteLength !== length * size) {
    throw new Error(`expected ${length} ${dtype} values (${length * size} bytes), got ${bytes.byteLength} bytes`);
  }
  if (bytes.byteLength % size !== 0) {
    throw new Error(`${bytes.byteLength} bytes is not a whole number of ${dtype} values`);
  }
  const n = bytes.byteLength / size;
  if (size === 1 || (HOST_LITTLE_ENDIAN && bytes.byteOffset % size === 0)) {
    return new Ctor(/** @type {ArrayBuffer} */ (bytes.buffer), bytes.byteOffset, n);
  }
  const out = new Ctor(n);
  if (HOST_LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes);
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const get = {
      int16: (/** @type {number} */ i) => view.getInt16(i * 2, true),
      uint16: (/** @type {number} */ i) => view.getUint16(i * 2, true),
      uint32: (/** @type {number} */ i) => view.getUint32(i * 4, true),
      int32: (/** @type {number} */ i) => view.getInt32(i * 4, true),
      float32: (/** @type {number} */ i) => view.getFloat32(i * 4, true),
    }[/** @type {Exclude<Dtype, "uint8">} */ (dtype)];
    for (let i = 0; i < n; i++) out[i] = get(i);
  }
  return out;
}

/**
 * One named section of a payload: `readTypedArray` with the section's name in its errors.
 * @param {unknown} buffer
 * @param {string} dtype
 * @param {number} length
 * @param {string} name
 * @param {readonly string[]} [accepted]
 * @returns {TypedArray}
 */
export function readSection(buffer, dtype, length, name, accepted) {
  try {
    return readTypedArray(buffer, dtype, length, accepted);
  } catch (error) {
    throw new Error(`section ${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
