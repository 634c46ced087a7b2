// The series palette (theme.css --murano-series-*, issue 21 item 10c): every pair of its colours
// stays apart for readers with each kind of dichromacy, on light and on dark backgrounds, and the
// charts draw it in order.
//
// How "apart" is measured, all in this file (test code, independent of the front end):
// - colour-vision deficiency: Machado, Oliveira & Fernandes (2009), "A physiologically-based model
//   for simulation of color vision deficiency", severity 1.0 (dichromacy) matrices for protanopia,
//   deuteranopia and tritanopia, applied to linear sRGB;
// - colour difference: CIEDE2000 (Sharma, Wu & Dalal 2005, whose test pairs check it below) in
//   CIELAB under D65.
// The bar, ΔE00 ≥ 10 for every pair in normal vision and under each simulation: about four
// just-noticeable differences for large patches (ΔE00 ≈ 2.3), because curves are thin lines and
// small dots, for which a difference must be several times larger to be seen (Stone, Szafir &
// Setlur 2014, "An engineering model for color difference as a function of size"). It is also what
// the published Okabe–Ito palette, the usual reference for colour-blind-safe categories, reaches
// (10.9 at its closest, tritanopia), checked below; the palette this one replaced fell to 1.9
// (deuteranopia: its blue and violet) and 5.3 (protanopia: its orange and olive), and matplotlib's
// default (tab10) to 1.3 (protanopia: orange and green).
// Contrast: every colour at least 3:1 against its backgrounds (WCAG 2.1, 1.4.11 non-text contrast).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { SERIES_COLOURS, SERIES_DASHES, seriesLook } from "../src/shared/theme.js";

const THEME = readFileSync(new URL("../src/shared/theme.css", import.meta.url), "utf8");
const MIN_DE = 10;
const MIN_CONTRAST = 3;

/** The palette's light and dark values, read from theme.css in order. */
function palette() {
  const light = [];
  const dark = [];
  const pattern = /--murano-series-(\d+): var\(--murano-light, (#[0-9a-f]{6})\) var\(--murano-dark, (#[0-9a-f]{6})\);/gi;
  for (const m of THEME.matchAll(pattern)) {
    assert.equal(Number(m[1]), light.length, "the properties are numbered in order");
    light.push(m[2].toLowerCase());
    dark.push(m[3].toLowerCase());
  }
  return { light, dark };
}

const SIMULATIONS = {
  normal: [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ],
  protanopia: [
    [0.152286, 1.052583, -0.204868],
    [0.114503, 0.786281, 0.099216],
    [-0.003882, -0.048116, 1.051998],
  ],
  deuteranopia: [
    [0.367322, 0.860646, -0.227968],
    [0.280085, 0.672501, 0.047413],
    [-0.01182, 0.04294, 0.968881],
  ],
  tritanopia: [
    [1.255528, -0.076749, -0.178779],
    [-0.078411, 0.930809, 0.147602],
    [0.004733, 0.691367, 0.3039],
  ],
};

/** @param {string} hex */
function linearRgb(hex) {
  return [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
}

/** Linear sRGB (clipped to the gamut) to CIELAB, D65. */
function lab(rgb) {
  const [r, g, b] = rgb.map((v) => Math.min(1, Math.max(0, v)));
  const xyz = [0.4124 * r + 0.3576 * g + 0.1805 * b, 0.2126 * r + 0.7152 * g + 0.0722 * b, 0.0193 * r + 0.1192 * g + 0.9505 * b];
  const white = [0.95047, 1, 1.08883];
  const [fx, fy, fz] = xyz.map((v, i) => {
    const t = v / white[i];
    return t > (6 / 29) ** 3 ? Math.cbrt(t) : t / (3 * (6 / 29) ** 2) + 4 / 29;
  });
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

/** CIEDE2000 colour difference of two CIELAB colours. */
function deltaE2000([L1, a1, b1], [L2, a2, b2]) {
  const rad = Math.PI / 180;
  const C7 = (c) => c ** 7 / (c ** 7 + 25 ** 7);
  const G = 0.5 * (1 - Math.sqrt(C7((Math.hypot(a1, b1) + Math.hypot(a2, b2)) / 2)));
  const [ap1, ap2] = [(1 + G) * a1, (1 + G) * a2];
  const [Cp1, Cp2] = [Math.hypot(ap1, b1), Math.hypot(ap2, b2)];
  const hue = (b, a) => (b === 0 && a === 0 ? 0 : ((Math.atan2(b, a) / rad) % 360 + 360) % 360);
  const [hp1, hp2] = [hue(b1, ap1), hue(b2, ap2)];
  let dhp = 0;
  if (Cp1 * Cp2 !== 0) dhp = hp2 - hp1 > 180 ? hp2 - hp1 - 360 : hp2 - hp1 < -180 ? hp2 - hp1 + 360 : hp2 - hp1;
  const dLp = L2 - L1;
  const dCp = Cp2 - Cp1;
  const dHp = 2 * Math.sqrt(Cp1 * Cp2) * Math.sin((dhp / 2) * rad);
  const Lbp = (L1 + L2) / 2;
  const Cbp = (Cp1 + Cp2) / 2;
  let hbp = hp1 + hp2;
  if (Cp1 * Cp2 !== 0) hbp = Math.abs(hp1 - hp2) <= 180 ? (hp1 + hp2) / 2 : hp1 + hp2 < 360 ? (hp1 + hp2 + 360) / 2 : (hp1 + hp2 - 360) / 2;
  const T = 1 - 0.17 * Math.cos((hbp - 30) * rad) + 0.24 * Math.cos(2 * hbp * rad) + 0.32 * Math.cos((3 * hbp + 6) * rad) - 0.2 * Math.cos((4 * hbp - 63) * rad);
  const SL = 1 + (0.015 * (Lbp - 50) ** 2) / Math.sqrt(20 + (Lbp - 50) ** 2);
  const SC = 1 + 0.045 * Cbp;
  const SH = 1 + 0.015 * Cbp * T;
  const RT = -Math.sin(2 * 30 * Math.exp(-(((hbp - 275) / 25) ** 2)) * rad) * 2 * Math.sqrt(C7(Cbp));
  return Math.sqrt((dLp / SL) ** 2 + (dCp / SC) ** 2 + (dHp / SH) ** 2 + RT * (dCp / SC) * (dHp / SH));
}

/** How `hex` looks under a simulation, in CIELAB. */
function seen(hex, matrix) {
  const rgb = linearRgb(hex);
  return lab(matrix.map((row) => row[0] * rgb[0] + row[1] * rgb[1] + row[2] * rgb[2]));
}

/** The closest pair of `colours` under each simulation: {simulation: [ΔE00, a, b]}. */
function closestPairs(colours) {
  const out = {};
  for (const [name, matrix] of Object.entries(SIMULATIONS)) {
    let best = [Infinity, "", ""];
    for (let i = 0; i < colours.length; i++) {
      for (let j = i + 1; j < colours.length; j++) {
        const d = deltaE2000(seen(colours[i], matrix), seen(colours[j], matrix));
        if (d < best[0]) best = [d, colours[i], colours[j]];
      }
    }
    out[name] = best;
  }
  return out;
}

/** WCAG contrast ratio of two colours. */
function contrast(a, b) {
  const luminance = (hex) => {
    const [r, g, bl] = linearRgb(hex);
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

test("the measures: CIEDE2000 gives Sharma et al.'s values; the simulations keep greys grey", () => {
  // Pairs 1, 7, 17 and 25 of Sharma, Wu & Dalal (2005), Table 1.
  const pairs = [
    [[50, 2.6772, -79.7751], [50, 0, -82.7485], 2.0425],
    [[50, 0, 0], [50, -1, 2], 2.3669],
    [[50, 2.5, 0], [56, -27, -3], 31.903],
    [[60.2574, -34.0099, 36.2677], [60.4626, -34.1751, 39.4387], 1.2644],
  ];
  for (const [a, b, want] of pairs) assert.ok(Math.abs(deltaE2000(a, b) - want) < 1e-4, `${a} ${b}: ${deltaE2000(a, b)}`);
  for (const [name, matrix] of Object.entries(SIMULATIONS)) {
    for (const row of matrix) assert.ok(Math.abs(row[0] + row[1] + row[2] - 1) < 1e-3, name);
    assert.ok(deltaE2000(seen("#777777", matrix), lab(linearRgb("#777777"))) < 0.5, name);
  }
  // Protanopia and deuteranopia merge red and green; tritanopia merges blue and green.
  assert.ok(deltaE2000(seen("#d62728", SIMULATIONS.deuteranopia), seen("#8c8c00", SIMULATIONS.deuteranopia)) < deltaE2000(lab(linearRgb("#d62728")), lab(linearRgb("#8c8c00"))) / 2);
});

test("the bar: the published Okabe–Ito colours pass it, matplotlib's tab10 does not", () => {
  const okabeIto = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442"];
  for (const [name, [d, a, b]] of Object.entries(closestPairs(okabeIto))) assert.ok(d >= MIN_DE, `${name}: ${a} ${b} ${d.toFixed(1)}`);
  const tab10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  assert.ok(closestPairs(tab10).protanopia[0] < MIN_DE / 2);
});

test("every pair of the palette is told apart in normal vision and with each dichromacy", () => {
  const { light, dark } = palette();
  assert.equal(light.length, SERIES_COLOURS.length);
  assert.equal(dark.length, SERIES_COLOURS.length);
  for (const [variant, colours] of Object.entries({ light, dark })) {
    for (const [name, [d, a, b]] of Object.entries(closestPairs(colours))) {
      assert.ok(d >= MIN_DE, `${variant}, ${name}: ${a} and ${b} are ${d.toFixed(1)} apart (ΔE00), under ${MIN_DE}`);
    }
  }
});

test("every colour stands out from the backgrounds it is drawn on, light and dark", () => {
  const { light, dark } = palette();
  // White: JupyterLab light, VS Code light, the export; dark: the fallback, JupyterLab dark,
  // VS Code dark (the lightest), high contrast black.
  const backgrounds = { light: ["#ffffff", "#fcfcfc"], dark: ["#111418", "#111111", "#1e1e1e", "#000000"] };
  for (const [variant, colours] of Object.entries({ light, dark })) {
    for (const bg of backgrounds[variant]) {
      for (const c of colours) assert.ok(contrast(c, bg) >= MIN_CONTRAST, `${variant} ${c} on ${bg}: ${contrast(c, bg).toFixed(2)}:1`);
    }
  }
});

test("charts take the palette in order, then the same colours dashed", () => {
  SERIES_COLOURS.forEach((colour, k) => {
    assert.equal(colour, `var(--murano-series-${k})`);
    assert.deepEqual(seriesLook(k), { colour, dash: "" }, `series ${k}`);
  });
  const n = SERIES_COLOURS.length;
  const looks = Array.from({ length: n * SERIES_DASHES.length }, (_, k) => seriesLook(k));
  assert.equal(new Set(looks.map((l) => `${l.colour}|${l.dash}`)).size, looks.length, "no two of the first 24 alike");
  assert.deepEqual(seriesLook(n), { colour: SERIES_COLOURS[0], dash: SERIES_DASHES[1] });
  assert.deepEqual(seriesLook(n * SERIES_DASHES.length), seriesLook(0), "then they repeat");
});

test("a logit's parts: raising and lowering are told apart with each dichromacy and stand out, light and dark", () => {
  // The "why" panel's bars (theme.css --murano-positive / --murano-negative).
  const pattern = /--murano-(positive|negative): var\(--murano-light, (#[0-9a-f]{6})\) var\(--murano-dark, (#[0-9a-f]{6})\);/gi;
  const found = Object.fromEntries([...THEME.matchAll(pattern)].map((m) => [m[1], { light: m[2], dark: m[3] }]));
  assert.deepEqual(Object.keys(found).sort(), ["negative", "positive"]);
  const backgrounds = { light: ["#ffffff", "#fcfcfc"], dark: ["#111418", "#111111", "#1e1e1e", "#000000"] };
  for (const variant of /** @type {const} */ (["light", "dark"])) {
    const pair = [found.positive[variant], found.negative[variant]];
    for (const [name, [d, a, b]] of Object.entries(closestPairs(pair))) {
      assert.ok(d >= MIN_DE, `${variant}, ${name}: ${a} and ${b} are ${d.toFixed(1)} apart (ΔE00), under ${MIN_DE}`);
    }
    for (const bg of backgrounds[variant]) {
      for (const c of pair) assert.ok(contrast(c, bg) >= MIN_CONTRAST, `${variant} ${c} on ${bg}: ${contrast(c, bg).toFixed(2)}:1`);
    }
  }
});
