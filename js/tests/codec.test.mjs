// The one byte reader (src/shared/codec.js) that the three widgets' decoders share. Hand-made
// bytes on purpose: alignment, byte order and malformed lengths are what is tested here.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeBase64, readSection, readTypedArray, toBytes } from "../src/shared/codec.js";
import { DATASET_DTYPES } from "../src/dataset/data.js";
import { DIFF_DTYPES } from "../src/diff/payload.js";
import { LENS_DTYPES } from "../src/heatmap/payload.js";
import { encode } from "./helpers.mjs";

test("readTypedArray reads aligned data as a view, without copying", () => {
  const view = encode([1, 2, 65535], "uint16", 4);
  const array = readTypedArray(view, "uint16", 3);
  assert.deepEqual(Array.from(array), [1, 2, 65535]);
  assert.equal(array.buffer, view.buffer, "aligned data is not copied");
  assert.equal(array.byteOffset, 4);
});

test("readTypedArray copies unaligned data (odd byteOffset) and reads it little-endian", () => {
  const view = encode([258, 7, 40000], "uint16", 3);
  assert.equal(view.byteOffset, 3);
  const array = readTypedArray(view, "uint16");
  assert.deepEqual(Array.from(array), [258, 7, 40000]);
  const wide = readTypedArray(encode([1, 70000, 4294967295], "uint32", 5), "uint32", 3);
  assert.deepEqual(Array.from(wide), [1, 70000, 4294967295]);
});

test("readTypedArray reads every dtype of the three payloads at any byte offset", () => {
  const cases = { uint8: [0, 7, 255], int16: [-32768, -1, 32767], uint16: [0, 258, 65535], uint32: [1, 70000, 4294967295], int32: [7, -1, 65536], float32: [1.5, -2, 0.25] };
  for (const [dtype, values] of Object.entries(cases)) {
    for (const offset of [0, 1, 3, 4]) {
      assert.deepEqual(Array.from(readTypedArray(encode(values, dtype, offset), dtype, 3)), values, `${dtype} at ${offset}`);
    }
  }
});

test("readTypedArray honours byteLength: trailing bytes of the buffer are ignored", () => {
  const view = encode([9, 8], "uint8", 1);
  assert.equal(view.buffer.byteLength, 1 + 2 + 3);
  assert.deepEqual(Array.from(readTypedArray(view, "uint8")), [9, 8]);
});

test("readTypedArray checks lengths and dtypes, and each payload's own dtypes", () => {
  assert.throws(() => readTypedArray(encode([1, 2], "uint16"), "uint16", 3), /expected 3 uint16 values \(6 bytes\), got 4 bytes/);
  assert.throws(() => readTypedArray(new Uint8Array(3), "uint16"), /not a whole number/);
  assert.throws(() => readTypedArray(new Uint8Array(8), "float64"), /unsupported dtype/);
  assert.throws(() => readTypedArray(new Uint8Array(4), "int32", 1, LENS_DTYPES), /unsupported dtype "int32" \(expected uint8, uint16, uint32, float32\)/);
  // The diff reads int32 (a rank's change, exact) but no float32.
  assert.deepEqual(Array.from(readTypedArray(encode([-7], "int32"), "int32", 1, DIFF_DTYPES)), [-7]);
  assert.throws(() => readTypedArray(new Uint8Array(4), "float32", 1, DIFF_DTYPES), /unsupported dtype/);
  assert.throws(() => readTypedArray(new Uint8Array(2), "uint16", 1, DATASET_DTYPES), /unsupported dtype/);
});

test("readSection names the section in its errors", () => {
  assert.throws(() => readSection(new Uint8Array(5), "uint16", 3, "x"), /section x: expected 3 uint16 values \(6 bytes\), got 5 bytes/);
  assert.throws(() => readSection(new Uint8Array(4), "float64", 1, "x"), /section x: unsupported dtype/);
  assert.deepEqual(Array.from(readSection(encode([-5], "int16", 1), "int16", 1, "x", DIFF_DTYPES)), [-5]);
});

test("toBytes accepts ArrayBuffer, DataView, typed arrays and base64", () => {
  const ab = new Uint8Array([1, 2, 3]).buffer;
  assert.deepEqual(Array.from(toBytes(ab)), [1, 2, 3]);
  assert.deepEqual(Array.from(toBytes(new DataView(ab, 1, 2))), [2, 3]);
  assert.deepEqual(Array.from(toBytes(new Uint16Array([258]))), [2, 1]);
  assert.deepEqual(Array.from(toBytes("AQID")), [1, 2, 3]);
  assert.deepEqual(Array.from(decodeBase64("")), []);
  assert.throws(() => toBytes(42), /binary data/);
});
