// Direct logit attribution (the "why" panel and the component view) and sublayer rows, on the
// golden payloads Python wrote (tests/golden_payloads.py: lens_attribution, lens_sublayers,
// lens_attribution_cells, lenses_attribution). Each file's `expected.attribution` was read from
// the result's fields, not from the payload: the parts, the bias and the logit of every cell's
// top-1 and targets, of every row's answer, and (lens_attribution_cells, the step's
// answer_token_contributions) of the answer at every cell.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  answerAttribution,
  componentGrid,
  componentImage,
  componentName,
  componentUnits,
  explainedLogit,
  explainOptions,
  explainValue,
  formatLogit,
  hasAttribution,
  hasHeads,
  nothingExplained,
  parseExplain,
  partColour,
  unitValue,
  whyModel,
  WHY_TOP,
} from "../src/heatmap/attribution.js";
import { DIVERGING_STOPS, hexToRgb } from "../src/shared/colour.js";
import { niceCeil } from "../src/shared/format.js";
import { cellIndex, decodeLenses, decodePayload, rowOfModelLayer } from "../src/heatmap/payload.js";
import { hasSublayerRows, rowLabel, rowLabelled, rowNames } from "../src/heatmap/rows.js";
import { displayToken } from "../src/shared/tokens.js";
import { golden, lensPayload } from "./golden.mjs";

const show = (/** @type {string} */ t) => displayToken(t);
const CASES = ["lens_attribution", "lens_sublayers", "lens_attribution_cells"];

/** Every lens of a golden file with its expected attribution. */
function lensesOf(name) {
  const { expected } = golden(name);
  const lenses = decodeLenses(...Object.values(lensPayload(name)));
  const wanted = expected.lenses ? expected.lenses.map((lens) => lens.attribution) : [expected.attribution];
  return lenses.map((data, i) => ({ data, expected: wanted[i] }));
}

/** `actual` (NaN for none) equals `expected` (null for none), to float32. */
function sameParts(actual, expected, where) {
  assert.equal(actual.length, expected.length, where);
  expected.forEach((v, k) => {
    if (v === null) assert.ok(Number.isNaN(actual[k]), `${where}: component ${k} has no part`);
    else assert.ok(Math.abs(actual[k] - v) < 1e-6, `${where}: component ${k} is ${actual[k]}, expected ${v}`);
  });
}

for (const name of [...CASES, "lenses_attribution"]) {
  test(`${name}: every cell's top-1, targets and answer decode to the result's parts, bias and logit`, () => {
    for (const { data, expected } of lensesOf(name)) {
      assert.ok(hasAttribution(data));
      assert.deepEqual(data.components, expected.components);
      assert.equal(data.logitSoftcap, expected.logit_softcap);
      for (const cell of expected.cells) {
        const where = `${name} ${data.lensName} prompt ${cell.prompt} row ${cell.row} position ${cell.position}`;
        const top1 = explainedLogit(data, { kind: "top1" }, cell.prompt, cell.row, cell.position);
        if (cell.top1 === null) {
          assert.equal(top1, null, `${where}: a cell without a value explains nothing`);
          continue;
        }
        assert.ok(top1, where);
        sameParts(Array.from(top1.values), cell.top1.values, where);
        assert.equal(top1.bias, cell.top1.bias, where);
        assert.equal(top1.total, cell.top1.total, where);
        assert.equal(top1.position, cell.position);
        cell.targets.forEach((t, index) => {
          const got = explainedLogit(data, { kind: "target", index }, cell.prompt, cell.row, cell.position);
          assert.ok(got, `${where} target ${index}`);
          assert.equal(got.token, data.targets[index]);
          sameParts(Array.from(got.values), t.values, `${where} target ${index}`);
          assert.equal(got.bias, t.bias);
          assert.ok(Math.abs(got.total - t.total) < 1e-6, `${where} target ${index}: ${got.total} vs ${t.total}`);
        });
        if ("answer" in cell) {
          // The answer at this very cell (the step's answer_token_contributions).
          const got = explainedLogit(data, { kind: "answer" }, cell.prompt, cell.row, cell.position);
          if (cell.answer === null) {
            assert.equal(got, null, `${where}: no answer`);
          } else {
            assert.ok(got, `${where} answer`);
            assert.equal(got.position, cell.position, `${where}: the answer is explained at the cell`);
            assert.equal(got.token, data.answerSets[0].answers[cell.prompt]);
            assert.equal(got.foil, expected.foils ? expected.foils[cell.prompt] : null);
            sameParts(Array.from(got.values), cell.answer.values, `${where} answer`);
            assert.equal(got.bias, cell.answer.bias);
            assert.ok(Math.abs(got.total - cell.answer.total) < 1e-6, `${where} answer: ${got.total} vs ${cell.answer.total}`);
          }
        }
      }
      const cells = answerAttribution(data) === "cells";
      (expected.answers || []).forEach((row, r) => row.forEach((answer, p) => {
        // At the last position only, any cell asks for it there; at every cell, at the last one.
        const got = explainedLogit(data, { kind: "answer" }, p, r, cells ? data.lengths[p] - 1 : 0);
        if (answer === null) {
          assert.equal(got, null, `${name}: prompt ${p} has no answer`);
          return;
        }
        assert.equal(got.position, data.lengths[p] - 1, "the answer is explained where the prompt ends");
        assert.equal(got.token, data.answerSets[0].answers[p]);
        assert.equal(got.foil, expected.foils ? expected.foils[p] : null);
        sameParts(Array.from(got.values), answer.values, `${name} answer row ${r} prompt ${p}`);
        assert.ok(Math.abs(got.total - answer.total) < 1e-6);
      }));
    }
  });
}

for (const name of CASES) {
  test(`${name}: the panel's bars are the largest parts in model order, and with other and bias they sum to the logit`, () => {
    const [{ data, expected }] = lensesOf(name);
    for (const heads of [false, true]) {
      const units = componentUnits(data.components, heads);
      for (const cell of expected.cells) {
        if (cell.top1 === null) continue;
        const explain = /** @type {const} */ ({ kind: "top1" });
        const model = whyModel(data, { explain, prompt: cell.prompt, row: cell.row, position: cell.position, heads, show });
        assert.ok(model);
        const where = `${name} heads=${heads} ${JSON.stringify(cell).slice(0, 60)}`;
        const sum = model.bars.reduce((s, b) => s + b.value, 0);
        assert.ok(Math.abs(sum - cell.top1.total) < 1e-5, `${where}: bars sum to ${sum}, the logit is ${cell.top1.total}`);
        assert.equal(model.total, cell.top1.total);
        const named = model.bars.filter((b) => b.kind === "unit");
        assert.ok(named.length <= WHY_TOP);
        assert.deepEqual(named.map((b) => b.unit), [...named.map((b) => b.unit)].sort((a, b) => a - b), "model order");
        // Every unit left out has a part no larger than any shown.
        const values = cell.top1.values.map((v) => (v === null ? NaN : v));
        const parts = units.map((u) => unitValue(values, u));
        const smallest = Math.min(...named.map((b) => Math.abs(b.value)));
        const shown = new Set(named.map((b) => b.unit));
        parts.forEach((v, u) => {
          if (!shown.has(u) && Number.isFinite(v)) assert.ok(Math.abs(v) <= smallest + 1e-9, `${where}: unit ${u}`);
        });
        const held = parts.filter(Number.isFinite).length;
        const other = model.bars.find((b) => b.kind === "other");
        assert.equal(other ? other.count : 0, held - named.length);
        assert.equal(model.bars.at(-1).kind, "bias");
        assert.equal(model.bars.at(-1).value, cell.top1.bias);
        assert.equal(model.scale, Math.max(...model.bars.map((b) => Math.abs(b.value))));
      }
    }
  });
}

test("heads: a layer's attention is its heads and its output bias summed, unless heads are asked for", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_sublayers")));
  assert.ok(hasHeads(data.components));
  assert.ok(!hasHeads(decodePayload(...Object.values(lensPayload("lens_attribution"))).components));
  const grouped = componentUnits(data.components, false);
  assert.deepEqual(grouped.map((u) => u.label), ["embed", "L0 attn", "L0 MLP", "L1 attn", "L1 MLP", "L2 attn", "L2 MLP"]);
  assert.deepEqual(grouped[1].members, [1, 2, 3]);
  const split = componentUnits(data.components, true);
  assert.deepEqual(split.slice(0, 5).map((u) => u.label), ["embed", "L0 H0", "L0 H1", "L0 attn bias", "L0 MLP"]);
  assert.equal(split.length, data.components.length);
  assert.equal(unitValue([1, 2, NaN, 4], { label: "", long: "", members: [0, 2] }), 1);
  assert.ok(Number.isNaN(unitValue([NaN, NaN], { label: "", long: "", members: [0, 1] })));
  assert.equal(componentName("L12.H3", "long"), "layer 12 head 3");
  assert.equal(componentName("embed"), "embed");
});

test("sublayer rows: named after the layer and its attention, the block output is the layer's row", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_sublayers")));
  const { expected } = golden("lens_sublayers");
  assert.deepEqual(data.sites, expected.attribution.addresses.map((a) => a.split(".")[1]));
  assert.ok(hasSublayerRows(data));
  assert.deepEqual(rowNames(data), ["L0 attn", "L0", "L1 attn", "L1", "L2 attn", "L2"]);
  assert.equal(rowLabel(data, 2, "axis"), "1 attn");
  assert.equal(rowLabel(data, 3, "axis"), "1");
  assert.equal(rowLabel(data, 2, "long"), "layer 1 after attention");
  assert.equal(rowOfModelLayer(data.layers, 1), 3, "the layer trait shows the block output");
  assert.ok(rowLabelled(data, 2, 1) && !rowLabelled(data, 2, 2) && rowLabelled(data, 1, 2) && !rowLabelled(data, 3, 2) && rowLabelled(data, 5, 2));
  const plain = decodePayload(...Object.values(lensPayload("lens_plain")));
  assert.equal(plain.sites, null, "a result of block outputs sends no addresses");
  assert.deepEqual(rowNames(plain), ["L0", "L1", "L2"]);
});

test("the panel says what it explains: a foil's difference, the soft-cap, the answer at the last position", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_attribution")));
  const answer = whyModel(data, { explain: { kind: "answer" }, prompt: 0, row: 2, position: 0, heads: false, show });
  assert.equal(answer.heading, "Why the answer ␣Paris rather than ␣English?");
  assert.equal(answer.totalLabel, "logit difference");
  assert.equal(answer.where, "L2 · position 2 · the prompt's last");
  assert.equal(whyModel(data, { explain: { kind: "answer" }, prompt: 1, row: 2, position: 0, heads: false, show }), null, "prompt 1 has no answer");
  const target = whyModel(data, { explain: { kind: "target", index: 1 }, prompt: 0, row: 0, position: 1, heads: false, show });
  assert.equal(target.heading, "Why target <b>x</b>?");
  assert.match(target.note, /after L0 have no part/);
  const capped = decodePayload(...Object.values(lensPayload("lens_sublayers")));
  const top1 = whyModel(capped, { explain: { kind: "top1" }, prompt: 0, row: 5, position: 0, heads: false, show });
  assert.equal(top1.totalLabel, "logit before the soft-cap");
  assert.match(top1.note, /soft-caps its logits at 30/);
  assert.equal(top1.note.includes("after"), false, "the last row holds every component");
  assert.equal(whyModel(capped, { explain: { kind: "top1" }, prompt: 0, row: 3, position: 0, heads: false, show }), null, "row 3 of prompt 0 has no value");
  assert.equal(formatLogit(1.234), "+1.23");
  assert.equal(formatLogit(-0.4), "−0.40");
  assert.equal(formatLogit(-0.001), "0.00");
  assert.equal(formatLogit(NaN), "–");
});

test("the explain menu offers the top-1, the answer and each target; values read back", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_attribution")));
  const options = explainOptions(data, show);
  assert.deepEqual(options.map((o) => o.value), ["top1", "answer", "target: Paris", "target:<b>x</b>"]);
  assert.ok(options.every((o) => o.available));
  assert.equal(options[1].label, "the answer against the foil (last position)");
  assert.deepEqual(parseExplain(data, "target:<b>x</b>"), { kind: "target", index: 1 });
  assert.deepEqual(parseExplain(data, "target: nowhere"), { kind: "top1" });
  assert.deepEqual(parseExplain(data, "answer"), { kind: "answer" });
  assert.equal(explainValue(data, { kind: "target", index: 0 }), "target: Paris");
  const sublayers = decodePayload(...Object.values(lensPayload("lens_sublayers")));
  const [, answer] = explainOptions(sublayers, show);
  assert.deepEqual([answer.available, answer.reason], [false, "no answers were given"]);
  assert.deepEqual(parseExplain(sublayers, "answer"), { kind: "top1" }, "no answers: the top-1");
  const plain = decodePayload(...Object.values(lensPayload("lens_plain")));
  assert.ok(!hasAttribution(plain));
  assert.equal(explainedLogit(plain, { kind: "top1" }, 0, 0, 0), null);
});

test("the component view: each unit's part at each position, the deepest on top, on a symmetric diverging scale", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_attribution")));
  const { expected } = golden("lens_attribution");
  const row = 2;
  for (const prompt of [0, 1]) {
    const grid = componentGrid(data, { explain: { kind: "top1" }, prompt, row, heads: false });
    const cells = expected.attribution.cells.filter((c) => c.prompt === prompt && c.row === row);
    assert.equal(grid.n, data.lengths[prompt]);
    let top = 0;
    for (const cell of cells) {
      cell.top1.values.forEach((v, u) => {
        const got = grid.values[u * grid.n + cell.position];
        if (v === null) assert.ok(Number.isNaN(got));
        else assert.equal(got, v);
        if (v !== null) top = Math.max(top, Math.abs(v));
      });
    }
    assert.equal(grid.max, niceCeil(top));
    const image = componentImage(grid);
    assert.deepEqual([image.width, image.height], [grid.n, grid.units.length]);
    // The top row is the last unit (L2 MLP); the bottom row the embeddings.
    const last = grid.units.length - 1;
    const v = grid.values[last * grid.n + 0];
    assert.deepEqual(Array.from(image.data.slice(0, 3)), partColour(v, grid.max));
    assert.equal(image.data[3], 255);
  }
  // The answer is explained at the last position only; a lower row leaves later units empty.
  const answer = componentGrid(data, { explain: { kind: "answer" }, prompt: 0, row: 0, heads: false });
  for (let u = 0; u < answer.units.length; u++) {
    for (let j = 0; j < answer.n - 1; j++) assert.ok(Number.isNaN(answer.values[u * answer.n + j]));
  }
  assert.ok(Number.isFinite(answer.values[0 * answer.n + answer.n - 1]), "embed at the last position");
  assert.ok(Number.isNaN(answer.values[3 * answer.n + answer.n - 1]), "L1 attn comes after row L0");
  const image = componentImage(answer);
  assert.equal(image.data[3], 0, "no part: transparent");
  // 0 is the middle stop; the ends are the ends.
  assert.deepEqual(partColour(0, 5), hexToRgb(DIVERGING_STOPS[4]));
  assert.deepEqual(partColour(-9, 5), hexToRgb(DIVERGING_STOPS[0]));
  assert.deepEqual(partColour(5, 5), hexToRgb(DIVERGING_STOPS.at(-1)));
});

test("a payload's attribution is checked: its components named, its sections float32, its rows' addresses", () => {
  const { meta, sections } = lensPayload("lens_attribution");
  assert.throws(() => decodePayload({ ...meta, components: undefined }, sections), /section \S+: _meta.components does not name its components/);
  const wrong = structuredClone(meta);
  wrong.sections.contribution_bias.dtype = "uint16";
  assert.throws(() => decodePayload(wrong, sections), /dtype uint16 is not this section's/);
  const sub = lensPayload("lens_sublayers");
  assert.throws(() => decodePayload({ ...sub.meta, addresses: undefined }, sub.sections), /must be ascending/);
  const swapped = [...sub.meta.addresses];
  [swapped[0], swapped[1]] = [swapped[1], swapped[0]];
  assert.throws(() => decodePayload({ ...sub.meta, addresses: swapped }, sub.sections), /must be ascending/);
  assert.throws(() => decodePayload({ ...sub.meta, addresses: ["L0.resid_mid"] }, sub.sections), /one address per row/);
  assert.throws(() => decodePayload({ ...sub.meta, addresses: sub.meta.addresses.map((a) => a.replace("resid_mid", "mlp_out")) }, sub.sections), /expected L0.resid_mid or L0.resid_post/);
});

test("the answer at every cell: the panel explains the hovered cell, the component view fills every column", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_attribution_cells")));
  const { expected } = golden("lens_attribution_cells");
  assert.equal(answerAttribution(data), "cells");
  assert.equal(answerAttribution(decodePayload(...Object.values(lensPayload("lens_attribution")))), "last", "a result made before: the last position");
  assert.equal(answerAttribution(decodePayload(...Object.values(lensPayload("lens_sublayers")))), null);
  assert.ok(!("answer_row_contributions" in data.arrays), "the last position's slice is not sent twice");
  // The menu no longer says "(last position)".
  const [, option] = explainOptions(data, show);
  assert.deepEqual([option.value, option.label, option.available], ["answer", "the answer against the foil", true]);
  // A cell before the last: the answer there, said plainly.
  const cell = expected.attribution.cells.find((c) => c.prompt === 0 && c.row === 2 && c.position === 1);
  const model = whyModel(data, { explain: { kind: "answer" }, prompt: 0, row: 2, position: 1, heads: false, show });
  assert.equal(model.heading, "Why the answer ␣Paris rather than ␣English?");
  assert.equal(model.where, "L2 · position 1");
  assert.equal(model.totalLabel, "logit difference");
  assert.equal(model.total, cell.answer.total);
  assert.ok(Math.abs(model.bars.reduce((sum, b) => sum + b.value, 0) - cell.answer.total) < 1e-6, "the bars sum to the difference");
  assert.equal(model.bars.at(-1).value, cell.answer.bias);
  // Nothing to explain: a prompt without an answer, a cell without a value.
  assert.equal(whyModel(data, { explain: { kind: "answer" }, prompt: 1, row: 2, position: 0, heads: false, show }), null);
  assert.equal(nothingExplained(data, { kind: "answer" }, 1, 0), "this prompt has no answer");
  assert.equal(explainedLogit(data, { kind: "answer" }, 0, 1, 1), null, "row 1 of position 1 is not finite");
  assert.equal(nothingExplained(data, { kind: "answer" }, 0, 1), "this cell has no value (not finite)");
  const old = decodePayload(...Object.values(lensPayload("lens_attribution")));
  assert.equal(nothingExplained(old, { kind: "answer" }, 0, 0), "the answer is explained at the prompt's last position");
  // The component view: every column of prompt 0 at every row, each unit's part of that cell's answer.
  for (const row of [0, 1, 2]) {
    const grid = componentGrid(data, { explain: { kind: "answer" }, prompt: 0, row, heads: false });
    for (const c of expected.attribution.cells.filter((e) => e.prompt === 0 && e.row === row)) {
      const want = c.answer ? c.answer.values : null;
      assert.equal(grid.tokens[c.position], want ? " Paris" : "", `row ${row} position ${c.position}`);
      grid.units.forEach((unit, u) => {
        const got = grid.values[u * grid.n + c.position];
        const v = want ? unitValue(want.map((x) => (x === null ? NaN : x)), unit) : NaN;
        if (Number.isNaN(v)) assert.ok(Number.isNaN(got), `row ${row} position ${c.position} unit ${u}`);
        else assert.equal(got, v, `row ${row} position ${c.position} unit ${u}`);
      });
    }
  }
  const top = componentGrid(data, { explain: { kind: "answer" }, prompt: 0, row: 2, heads: false });
  assert.ok([0, 1, 2].every((j) => Number.isFinite(top.values[j])), "embed has a part at every position");
  const none = componentGrid(data, { explain: { kind: "answer" }, prompt: 1, row: 2, heads: false });
  assert.ok(none.values.every(Number.isNaN), "prompt 1 has no answer");
});

test("the panel's caption names the quantity: which logit, the cell, the readout and the foil", () => {
  const data = decodePayload(...Object.values(lensPayload("lens_attribution")));
  const input = (/** @type {number} */ p, /** @type {number} */ j) => show(data.tokens[data.arrays.input_ids[data.offsets[p] + j]]);
  // The last block's output: every lens reads it as the model does.
  const top1 = whyModel(data, { explain: { kind: "top1" }, prompt: 0, row: 2, position: 0, heads: false, show });
  const token = show(data.tokens[data.arrays.predicted_tokens[cellIndex(data, 0, 2, 0)]]);
  assert.equal(
    top1.caption,
    `Each bar is one component's direct share of the logit of ${token}, this cell's top-1 token, at layer 2's output, position 0 (input ${input(0, 0)}). ` +
      "Readout: the model's own, as every lens reads the last layer: the final norm (its scale held at this cell's value) and the unembedding. " +
      "No foil: a raw logit, so a part that raises every token alike counts too.",
  );
  // An earlier row: the lens by name; the answer against its foil, at the prompt's last position.
  const answer = whyModel(data, { explain: { kind: "answer" }, prompt: 0, row: 1, position: 0, heads: false, show });
  const last = data.lengths[0] - 1;
  assert.equal(
    answer.caption,
    `Each bar is one component's direct share of the logit of the answer ␣Paris minus that of the foil ␣English, at layer 1's output, position ${last} (input ${input(0, last)}). ` +
      "Readout: Logit lens: the final norm (its scale held at this cell's value) and the unembedding. Each part is the answer's share minus the foil's.",
  );
  const target = whyModel(data, { explain: { kind: "target", index: 1 }, prompt: 0, row: 0, position: 1, heads: false, show });
  assert.match(target.caption, /^Each bar is one component's direct share of the logit of the tracked token <b>x<\/b>, at layer 0's output, position 1 /);
  // A row after an attention; another lens.
  const mid = decodePayload(...Object.values(lensPayload("lens_sublayers")));
  const early = whyModel(mid, { explain: { kind: "top1" }, prompt: 0, row: 2, position: 0, heads: false, show });
  assert.match(early.caption, / at layer 1 after its attention, position 0 /);
  const [, tuned] = decodeLenses(...Object.values(lensPayload("lenses_attribution")));
  const read = whyModel(tuned, { explain: { kind: "top1" }, prompt: 0, row: 0, position: 1, heads: false, show });
  assert.match(read.caption, / Readout: Tuned lens, then the final norm \(its scale held at this cell's value\) and the unembedding\. /);
});
