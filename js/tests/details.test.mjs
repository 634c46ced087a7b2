import assert from "node:assert/strict";
import { test } from "node:test";

import { cellDetails, readoutText, tooltipModel, waitingNote } from "../src/heatmap/details.js";
import { decodePayload } from "../src/heatmap/payload.js";
import { displayToken } from "../src/shared/tokens.js";
import { metricSpec } from "../src/heatmap/metrics.js";
import { lensPayload } from "./golden.mjs";

/** A golden lens payload (tests/golden/), decoded. */
const decoded = (name, options) => decodePayload(...Object.values(lensPayload(name, options)));

test("spaces, newlines, tabs and carriage returns get visible marks", () => {
  assert.equal(displayToken(" Paris"), "␣Paris");
  assert.equal(displayToken("  "), "␣␣");
  assert.equal(displayToken("\n"), "↵");
  assert.equal(displayToken("\n\n"), "↵↵");
  assert.equal(displayToken("\t"), "⇥");
  assert.equal(displayToken("\r\n"), "⇤↵");
  assert.equal(displayToken(" a b", { spaces: false }), " a b");
  assert.equal(displayToken(""), "∅");
  assert.equal(displayToken(undefined), "?");
});

test("HTML-looking text stays as it is: it is data, rendered with textContent/fillText", () => {
  assert.equal(displayToken("<script>"), "<script>");
  assert.equal(displayToken("<img src=x onerror=alert(1)>"), "<img␣src=x␣onerror=alert(1)>");
  assert.equal(displayToken("&amp;"), "&amp;");
  assert.equal(displayToken('"\''), '"\'');
});

test("invisible, bidirectional and control characters are shown as code points", () => {
  assert.equal(displayToken("\u200f"), "<U+200F>");
  assert.equal(displayToken("a\u202eb"), "a<U+202E>b");
  assert.equal(displayToken("\u200b"), "<U+200B>");
  assert.equal(displayToken("\ufeff"), "<U+FEFF>");
  assert.equal(displayToken("\u00a0x"), "<U+00A0>x");
  assert.equal(displayToken("\u0000\u001b\u007f\u0085"), "<U+0000><U+001B><U+007F><U+0085>");
  assert.equal(displayToken("\u2066x\u2069"), "<U+2066>x<U+2069>");
  assert.equal(displayToken("\u{e0041}"), "<U+E0041>");
  assert.equal(displayToken("\ue000"), "<U+E000>");
});

test("lone surrogates and replacement characters (byte pieces of UTF-8) are visible", () => {
  assert.equal(displayToken("\ufffd"), "\ufffd");
  assert.equal(displayToken("\ud83d"), "<U+D83D>");
  assert.equal(displayToken("x\ude00"), "x<U+DE00>");
  assert.equal(displayToken("😀"), "😀");
  assert.equal(displayToken("שלום"), "שלום", "right-to-left letters are kept (isolated when drawn)");
});

// lens_plain: the table ["a", " b", "\n", "<script>", "\u200f"]; cell (row i, column c) predicts
// (i + c) mod 5 with probability (i + 1) / 3, then (i + c + 1) mod 5 at 20/255 and (i + c + 2) mod 5
// at 19/255; input (2c) mod 5; the final prediction (2 + c) mod 5 at rank 7 (2 - i).
const data = decoded("lens_plain");

test("cellDetails gathers the cell's values", () => {
  const d = cellDetails(data, 1, 1, 0); // column 3
  assert.equal(d.layer, 1);
  assert.equal(d.position, 0);
  assert.equal(d.input, data.tokens[(3 * 2) % 5]);
  assert.equal(d.top.length, 3);
  assert.equal(d.top[0].token, data.tokens[(1 + 3) % 5]);
  assert.ok(Math.abs(d.top[0].prob - 2 / 3) < 1e-4);
  assert.ok(Math.abs(d.top[1].prob - 20 / 255) < 1e-9);
  assert.equal(d.finalRank, 7);
  assert.deepEqual(d.metrics.map((m) => m.spec.name), ["prob", "entropy", "final_prob", "final_rank", "kl"]);
  assert.ok(d.detailsLoaded);
  assert.equal(cellDetails(data, 0, 2, 0).settled, true);
});

test("tooltipModel turns details into display strings; ranks count from 0", () => {
  const model = tooltipModel(cellDetails(data, 0, 0, 1));
  assert.equal(model.title, "Layer 0 · position 1");
  assert.equal(model.rows[0].label, "input");
  assert.equal(model.rows[0].value, "↵"); // input token 2
  assert.deepEqual(model.top.map((t) => t.rank), [0, 1, 2]);
  assert.equal(model.top[0].text, "␣b");
  assert.equal(model.top[0].prob, "33.3%");
  // One row per metric of the registry, labelled from it.
  assert.ok(model.rows.some((r) => r.label === "Entropy" && r.value.endsWith("bits")));
  assert.ok(model.rows.some((r) => r.label === "Rank of the final prediction" && r.value === "rank 14"));
  assert.ok(model.rows.some((r) => r.label === "Probability of the final prediction" && r.value.endsWith("%")));
  assert.ok(model.rows.some((r) => r.label === "KL(final ‖ layer) in bits" && r.value.endsWith("bits")));
  const description = metricSpec(data, "entropy")?.description;
  assert.ok(description && description.length > 20, "the registry's description, from Python");
  assert.equal(model.rows.find((r) => r.label === "Entropy").title, description);
  assert.equal(model.note, "");
});

test("tooltip before the detail sections arrive, and for a missing cell", () => {
  const bare = decoded("lens_plain", { details: false });
  const model = tooltipModel(cellDetails(bare, 0, 1, 1));
  assert.equal(model.top.length, 1);
  assert.equal(model.note, "Loading details…");
  assert.ok(!model.rows.some((r) => r.label === "Entropy"));
  const holes = decoded("lens_missing"); // layer 2 of prompt 0 is not finite
  const hole = tooltipModel(cellDetails(holes, 0, 2, 1));
  assert.equal(hole.top.length, 0);
  assert.match(hole.note, /not finite/);
  assert.match(hole.note, /no value \(non-finite\)/i);
  assert.ok(!hole.rows.some((r) => r.label === "Entropy"));
});

test("tooltip where the final distribution is missing: final-based values say so", () => {
  const finals = decoded("lens_final_missing"); // the model's own output at column 1 was not finite
  const d = cellDetails(finals, 0, 1, 1);
  assert.equal(d.finalMissing, true);
  assert.equal(d.settled, false);
  assert.equal(d.finalRank, null);
  const model = tooltipModel(d);
  assert.equal(model.rows.find((r) => r.label === "final prediction").value, "no value (non-finite)");
  assert.equal(model.rows.find((r) => r.label === "Rank of the final prediction").value, "–");
  assert.ok(model.rows.find((r) => r.label === "Entropy").value.endsWith("bits"));
  assert.match(model.note, /final distribution was not finite/);
  assert.match(readoutText(d), /final prediction: no value \(non-finite\)/);
});

test("without the model's final prediction: no final rows, nothing settled", () => {
  const partial = decoded("lens_no_final");
  const d = cellDetails(partial, 0, 2, 0);
  assert.equal(d.finalToken, null);
  assert.equal(d.settled, false);
  const model = tooltipModel(d);
  assert.deepEqual(model.rows.map((r) => r.label), ["input", "Top-1 probability", "Entropy"]);
  assert.equal(model.badge, "");
  assert.doesNotMatch(readoutText(d), /final/);
});

test("readoutText is one sentence with visible tokens", () => {
  const text = readoutText(cellDetails(data, 1, 0, 0), { pinned: true });
  assert.match(text, /^Layer 0, position 0, input ␣b; top-1 <script> 33\.3%; final prediction a at rank 14/);
  assert.match(readoutText(cellDetails(data, 0, 0, 2)), /input <U\+200F>; top-1 ↵/);
  assert.match(text, /pinned\.$/);
  assert.match(readoutText(cellDetails(data, 0, 2, 0)), /equals the final prediction/);
});

test("a detail section that does not come is waited for by name, not loading for ever", () => {
  const details = cellDetails(data, 0, 0, 1);
  const waiting = { ...details, detailsLoaded: false };
  assert.equal(tooltipModel(waiting).note, "Loading details…");
  const late = tooltipModel(waiting, { late: true }).note;
  assert.match(late, /^Waiting for the kernel to send details: it is busy, or there is none/);
  assert.equal(waitingNote("the attribution", true).includes("send the attribution"), true);
  // Once the sections are there, no note, late or not.
  assert.equal(tooltipModel(details, { late: true }).note, "");
});
