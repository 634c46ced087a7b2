// @ts-check
/**
 * The painter: draws one prompt's heatmap on the canvas (cells, token strips, marks, labels).
 * It owns what drawing needs to be fast: the theme read from CSS, a cache of 1-pixel-per-cell
 * colour images (drawn scaled up, only the visible columns), and the display text of tokens.
 * Only visible columns are drawn; tokens reach the canvas only through `fillText`.
 */

import { textColourOn } from "../shared/colour.js";
import { colourImage } from "./colour_image.js";
import { niceCeil } from "../shared/format.js";
import { cellRect, columnOf, columnX, labelStride, visibleColumns } from "../shared/layout.js";
import { promptHasNoValue } from "./payload.js";
import { hasSublayerRows, rowLabel, rowLabelled } from "./rows.js";
import { generationColumn, pickColumns, roleNames, roleStyles } from "./token_marks.js";
import { displayToken, hasBytes, isolateLtr, truncateText } from "../shared/tokens.js";
import { readTheme } from "../shared/theme.js";
import { hatchPattern } from "../shared/hatch.js";
import { answerMarkTriangle } from "./trajectory_layout.js";

/**
 * @typedef {import("./payload.js").LensData} LensData
 * @typedef {import("../shared/layout.js").Layout} Layout
 * @typedef {import("../shared/layout.js").Cell} Cell
 * @typedef {import("../shared/state.js").Selected} Selected
 *
 * @typedef {object} Theme Colours (the shared palette, `readTheme` in theme.js) and fonts.
 * @property {string} fg
 * @property {string} muted
 * @property {string} bg
 * @property {string} grid
 * @property {string} accent
 * @property {string} focus
 * @property {string} stripBg
 * @property {string} hatch
 * @property {string} shadow the scroll shades at the heatmap's edges
 * @property {string} uiFont
 * @property {string} monoFont
 * @property {string} labelFont
 * @property {string} labelBold
 * @property {string} axisFont
 * @property {string} cellFont
 * @property {string} cellItalic the cell font in italics (generated input tokens)
 * @property {string} generated the generation boundary's colour
 * @property {string} generatedBg the tint under generated input tokens
 * @property {number} charW width of one monospace character of the cell font
 * @property {CanvasPattern | null} hatchPattern
 *
 * @typedef {{canvas: HTMLCanvasElement, data: Uint8ClampedArray<ArrayBuffer>, width: number}} ColourImage
 *
 * @typedef {object} Scene What one frame shows.
 * @property {number} prompt
 * @property {number} layer highlighted row
 * @property {string} metric the metric the colours show
 * @property {number} target for a per-target metric, the tracked token's index
 * @property {boolean} loading the requested metric is still loading (the cells are dimmed)
 * @property {Selected | null} selected
 * @property {Cell | null} hover
 * @property {Cell | null} focus keyboard focus cell, when shown
 * @property {{min: number, max: number, log: boolean} | null} [domain] the colour scale's domain
 *   when it is not the metric's own (two lenses side by side share one)
 *
 * @typedef {object} Frame Everything the drawing steps share, for one frame.
 * @property {CanvasRenderingContext2D} ctx
 * @property {Layout} layout
 * @property {Theme} theme
 * @property {Scene} scene
 * @property {number} scroll
 * @property {number} c0
 * @property {number} c1
 * @property {number} x0
 * @property {number} span
 * @property {ColourImage} image
 * @property {number} offset
 */

/** @type {Map<number, string>} */
const TEXT_ON = new Map();

/**
 * Black or white text on (r, g, b), cached.
 * @param {number} r
 * @param {number} g
 * @param {number} b
 */
function textOn(r, g, b) {
  const key = (r << 16) | (g << 8) | b;
  let colour = TEXT_ON.get(key);
  if (!colour) {
    colour = textColourOn([r, g, b]);
    TEXT_ON.set(key, colour);
  }
  return colour;
}

/**
 * The 2D context of a canvas (the view cannot work without one).
 * @param {HTMLCanvasElement} canvas
 * @returns {CanvasRenderingContext2D}
 */
export function context2d(canvas) {
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error("this browser gives no 2D canvas context");
  return ctx;
}

export class Painter {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {Element} styleSource the element whose CSS variables give the theme
   */
  constructor(canvas, styleSource) {
    this.canvas = canvas;
    this.styleSource = styleSource;
    /** @type {Theme | null} */
    this.theme = null;
    /** @type {LensData | null} */
    this.lensData = null;
    /** @type {Map<string, ColourImage>} `${prompt}|${metric}` → image */
    this.images = new Map();
    /** @type {(string | undefined)[]} */
    this.tokenTexts = [];
    /** @type {Map<number, string>} */
    this.cellTexts = new Map();
    this.cellTextChars = -1;
  }

  /**
   * New data: drops every cache.
   * @param {LensData} lensData
   */
  setData(lensData) {
    this.lensData = lensData;
    this.images.clear();
    this.tokenTexts = new Array(lensData.tokens.length);
    this.cellTexts.clear();
  }

  /** The theme changed (forget it; it is read again on the next use). */
  forgetTheme() {
    this.theme = null;
  }

  /** @returns {Theme} */
  readTheme() {
    if (this.theme) return this.theme;
    // The shared palette (theme.js), resolved for this widget's root.
    const colours = readTheme(this.styleSource);
    const uiFont = colours.font;
    const monoFont = colours.mono;
    const ctx = context2d(this.canvas);
    const cellFont = `11px ${monoFont}`;
    ctx.font = cellFont;
    const hatch = hatchPattern(ctx, colours.hatch);
    /** @type {Theme} */
    const theme = {
      fg: colours.fg,
      muted: colours.muted,
      bg: colours.bg,
      grid: colours.grid,
      accent: colours.accent,
      focus: colours.focus,
      stripBg: colours.stripBg,
      hatch: colours.hatch,
      shadow: colours.shadow,
      uiFont,
      monoFont,
      labelFont: `11px ${uiFont}`,
      labelBold: `600 11px ${uiFont}`,
      axisFont: `10px ${uiFont}`,
      cellFont,
      cellItalic: `italic ${cellFont}`,
      generated: colours.generated,
      generatedBg: colours.generatedBg,
      charW: ctx.measureText("M").width || 6.6,
      hatchPattern: hatch,
    };
    // Read before the widget is in the page (or before its stylesheet): used, not kept.
    if (colours.live) this.theme = theme;
    return theme;
  }

  /**
   * Width of the row labels (the widest row name, "L5" or "L5 attn", or "input"), in CSS pixels.
   * @param {LensData} lensData
   */
  labelWidth(lensData) {
    const ctx = context2d(this.canvas);
    ctx.font = this.readTheme().labelBold;
    const maxLayer = Math.max(...lensData.layers);
    const widest = hasSublayerRows(lensData) ? `L${maxLayer} attn` : `L${maxLayer}`;
    return Math.ceil(Math.max(ctx.measureText("input").width, ctx.measureText(widest).width)) + 16;
  }

  /**
   * A token's display text (cached by table index).
   * @param {number} index
   */
  tokenText(index) {
    let text = this.tokenTexts[index];
    if (text === undefined) {
      text = displayToken(this.lensData?.tokens[index]);
      this.tokenTexts[index] = text;
    }
    return text;
  }

  /**
   * A token's display text cut to `chars` characters, wrapped in an LTR isolate for fillText.
   * @param {number} index
   * @param {number} chars
   */
  cellText(index, chars) {
    if (chars !== this.cellTextChars) {
      this.cellTexts.clear();
      this.cellTextChars = chars;
    }
    let text = this.cellTexts.get(index);
    if (text === undefined) {
      text = isolateLtr(truncateText(this.tokenText(index), chars));
      this.cellTexts.set(index, text);
    }
    return text;
  }

  /**
   * The cached 1-pixel-per-cell colour image of (prompt, metric, target): one pixel column per
   * shown column (every position, or those `columns` lists when template tokens are hidden).
   * @param {number} prompt
   * @param {string} metric
   * @param {number[] | null} [columns]
   * @param {number} [target] for a per-target metric, the tracked token's index
   * @param {{min: number, max: number, log: boolean} | null} [domain] the scale's domain, when
   *   not the metric's own
   * @returns {ColourImage}
   */
  colourCanvas(prompt, metric, columns = null, target = 0, domain = null) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const scale = domain ? `|${domain.min}:${domain.max}` : "";
    const key = `${prompt}|${metric}|${target}${scale}${columns ? `|${columns.length}:${columns.join(",")}` : ""}`;
    let entry = this.images.get(key);
    if (!entry) {
      const all = colourImage(lensData, metric, prompt, undefined, target, domain);
      const image = columns ? pickColumns(all, columns) : all;
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, image.width);
      canvas.height = Math.max(1, image.height);
      if (image.width > 0) context2d(canvas).putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
      entry = { canvas, data: image.data, width: image.width };
      if (this.images.size >= 8) {
        const oldest = this.images.keys().next().value;
        if (oldest !== undefined) this.images.delete(oldest);
      }
      this.images.set(key, entry);
    }
    return entry;
  }

  /**
   * Draws the visible part of the heatmap, its strips and labels (synchronously).
   * @param {Layout} layout
   * @param {Scene} scene
   * @param {number} scroll
   * @returns {[number, number]} the visible columns drawn
   */
  draw(layout, scene, scroll) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const ctx = this.prepareCanvas(layout);
    const [c0, c1] = visibleColumns(layout, scroll);
    /** @type {Frame} */
    const f = {
      ctx,
      layout,
      theme: this.readTheme(),
      scene,
      scroll,
      c0,
      c1,
      x0: columnX(layout, c0, scroll),
      span: (c1 - c0) * layout.cellW,
      image: this.colourCanvas(scene.prompt, scene.metric, layout.columns, scene.target, scene.domain ?? null),
      offset: lensData.offsets[scene.prompt],
    };
    ctx.save();
    ctx.beginPath();
    ctx.rect(layout.labelW, 0, layout.width - layout.labelW, layout.height);
    ctx.clip();
    this.drawCells(f);
    this.drawStrips(f);
    this.drawMarks(f);
    ctx.restore();
    this.drawLabels(f);
    return [c0, c1];
  }

  /**
   * Sizes the canvas for the layout and the device pixel ratio; returns a cleared context.
   * @param {Layout} layout
   */
  prepareCanvas(layout) {
    const canvas = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const { width: W, height: H } = layout;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      canvas.style.width = `${W}px`;
      canvas.style.height = `${H}px`;
    }
    const ctx = context2d(canvas);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.direction = "ltr";
    return ctx;
  }

  /**
   * The answer mask of the prompt shown (`answer_top1`: 1 where the top-1 is the answer), or null.
   * @param {number} prompt
   */
  answerMask(prompt) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const mask = lensData.arrays.answer_top1;
    return mask && !promptHasNoValue(lensData, "answer_top1", prompt) ? mask : null;
  }

  /**
   * The cells: the cached colour image scaled up, grid gaps, settled dots, answer corners and
   * top-1 text.
   * @param {Frame} f
   */
  drawCells({ ctx, layout, theme, scene, scroll, c0, c1, x0, span, image, offset }) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const a = lensData.arrays;
    const { cellW, rowH, heatY, heatH } = layout;
    const L = lensData.L;
    const n = layout.nPositions;
    // Missing cells show a hatch through the transparent pixels of the colour image.
    if (theme.hatchPattern && (a.missing || a.final_missing)) {
      ctx.fillStyle = theme.hatchPattern;
      ctx.fillRect(x0, heatY, span, heatH);
    }
    if (c1 > c0) {
      ctx.imageSmoothingEnabled = false;
      ctx.globalAlpha = scene.loading ? 0.45 : 1;
      ctx.drawImage(image.canvas, c0, 0, c1 - c0, L, x0, heatY, span, heatH);
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = theme.grid;
    if (cellW >= 10) for (let j = c0; j <= c1; j++) ctx.fillRect(columnX(layout, j, scroll) - 0.5, heatY, 1, heatH);
    if (rowH >= 9) for (let r = 1; r < L; r++) ctx.fillRect(x0, heatY + r * rowH - 0.5, span, 1);

    // Settled marks and cell text, in black or white by the cell's colour; dots in two batches.
    const data = image.data;
    const predicted = a.predicted_tokens;
    const finals = a.final_tokens;
    const finalMissing = a.final_missing;
    const dot = Math.max(1.5, Math.min(3, rowH / 5));
    const darkDots = new Path2D();
    const lightDots = new Path2D();
    // Cells whose top-1 is the answer: a corner triangle in black or white by the cell's colour
    // (readable on any cell, in either theme), a shape apart from the settled dot.
    const answers = this.answerMask(scene.prompt);
    const darkCorners = new Path2D();
    const lightCorners = new Path2D();
    const text = layout.showCellText && !scene.loading;
    const chars = layout.cellChars;
    ctx.font = theme.cellFont;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const columns = layout.columns;
    for (let row = 0; row < L; row++) {
      const y = heatY + row * rowH;
      const base = (L - 1 - row) * lensData.T + offset;
      for (let j = c0; j < c1; j++) {
        const o = (row * n + j) * 4;
        if (data[o + 3] === 0) continue;
        const p = columns ? columns[j] : j;
        const colour = textOn(data[o], data[o + 1], data[o + 2]);
        const x = columnX(layout, j, scroll);
        const token = predicted[base + p];
        if (finals && token === finals[offset + p] && !(finalMissing && finalMissing[offset + p])) {
          const path = colour === "#000000" ? darkDots : lightDots;
          const cx = x + cellW - dot - 2.5;
          const cy = y + Math.min(rowH / 2, dot + 2);
          path.moveTo(cx + dot, cy);
          path.arc(cx, cy, dot, 0, 2 * Math.PI);
        }
        if (answers && answers[base + p]) {
          const [a0, a1, a2] = answerMarkTriangle({ x, y, w: cellW, h: rowH });
          const path = colour === "#000000" ? darkCorners : lightCorners;
          path.moveTo(a0[0], a0[1]);
          path.lineTo(a1[0], a1[1]);
          path.lineTo(a2[0], a2[1]);
          path.closePath();
        }
        if (text) {
          ctx.fillStyle = colour;
          ctx.fillText(this.cellText(token, chars), x + cellW / 2 - (cellW > 40 ? 2 : 0), y + rowH / 2 + 0.5);
        }
      }
    }
    ctx.fillStyle = "#000000";
    ctx.fill(darkDots);
    ctx.fill(darkCorners);
    ctx.fillStyle = "#ffffff";
    ctx.fill(lightDots);
    ctx.fill(lightCorners);
  }

  /**
   * Under the cells: the input tokens, then the highlighted layer's predictions as chips.
   * @param {Frame} f
   */
  drawStrips({ ctx, layout, theme, scene, scroll, c0, c1, x0, span, image, offset }) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const a = lensData.arrays;
    const layer = scene.layer;
    const { cellW, inputY, predY, stripH } = layout;
    const data = image.data;
    const n = layout.nPositions;
    const row = lensData.L - 1 - layer;
    const base = layer * lensData.T + offset;
    const chars = layout.cellChars;
    const finals = a.final_tokens;
    const finalMissing = a.final_missing;
    const answers = this.answerMask(scene.prompt);
    const columns = layout.columns;
    const generated = a.generated;
    const roles = a.token_roles;
    const roleColours = roles ? roleStyles(roleNames(lensData)).map((r) => r.colour) : [];
    const band = roles ? 3 : 0;
    ctx.fillStyle = theme.stripBg;
    ctx.fillRect(x0, inputY, span, stripH);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let j = c0; j < c1; j++) {
      const p = columns ? columns[j] : j;
      const x = columnX(layout, j, scroll);
      // Generated tokens: a tinted cell and italics; a chat token's role: a band under it.
      const isGenerated = Boolean(generated && generated[offset + p]);
      if (isGenerated) {
        ctx.fillStyle = theme.generatedBg;
        ctx.fillRect(x, inputY, cellW, stripH);
      }
      if (roles) {
        ctx.fillStyle = roleColours[roles[offset + p]] ?? theme.muted;
        ctx.fillRect(x + 1, inputY + stripH - band, cellW - 2, band);
      }
      // A token holding part of a character shows its bytes ("<0xE6>"), set apart: muted italics.
      const isBytes = hasBytes(lensData.tokens[a.input_ids[offset + p]]);
      ctx.font = isGenerated || isBytes ? theme.cellItalic : theme.cellFont;
      ctx.fillStyle = isBytes ? theme.muted : theme.fg;
      ctx.fillText(this.cellText(a.input_ids[offset + p], chars), x + cellW / 2, inputY + (stripH - band) / 2 + 0.5);
      ctx.font = theme.cellFont;
      const o = (row * n + j) * 4;
      const chip = { x: x + 1, y: predY + 2, w: cellW - 2, h: stripH - 4 };
      if (data[o + 3] === 0) {
        if (theme.hatchPattern) {
          ctx.fillStyle = theme.hatchPattern;
          ctx.fillRect(chip.x, chip.y, chip.w, chip.h);
        }
        continue;
      }
      ctx.fillStyle = `rgb(${data[o]},${data[o + 1]},${data[o + 2]})`;
      ctx.fillRect(chip.x, chip.y, chip.w, chip.h);
      ctx.fillStyle = textOn(data[o], data[o + 1], data[o + 2]);
      ctx.fillText(this.cellText(a.predicted_tokens[base + p], chars), x + cellW / 2, predY + stripH / 2 + 0.5);
      if (finals && a.predicted_tokens[base + p] === finals[offset + p] && !(finalMissing && finalMissing[offset + p])) {
        ctx.beginPath();
        ctx.arc(chip.x + chip.w - 4, chip.y + 4, 2, 0, 2 * Math.PI);
        ctx.fill();
      }
      if (answers && answers[base + p]) {
        const [a0, a1, a2] = answerMarkTriangle({ x: chip.x, y: chip.y, w: chip.w, h: chip.h });
        ctx.beginPath();
        ctx.moveTo(a0[0], a0[1]);
        ctx.lineTo(a1[0], a1[1]);
        ctx.lineTo(a2[0], a2[1]);
        ctx.closePath();
        ctx.fill();
      }
    }
    // Position numbers above the cells: the true positions, also when columns are hidden.
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    const stride = niceCeil(Math.max(1, 28 / cellW));
    for (let j = c0 - (c0 % stride); j < c1; j += stride) {
      ctx.fillText(String(columns ? columns[j] : j), columnX(layout, j, scroll) + cellW / 2, layout.heatY - 4);
    }
  }

  /**
   * The highlighted row, the pinned, hovered and focused cells, and scroll shadows.
   * @param {Frame} f
   */
  drawMarks({ ctx, layout, theme, scene, scroll, c0, c1 }) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const { labelW, width: W, rowH, heatY, predY, stripH } = layout;
    const highlighted = cellRect(layout, scene.layer, 0, 0);
    ctx.strokeStyle = theme.accent;
    ctx.lineWidth = 2;
    const right = Math.min(W - 1, columnX(layout, layout.nPositions, scroll) + 1);
    ctx.strokeRect(labelW + 1, highlighted.y - 1, right - labelW - 2, rowH + 2);

    // Where generation starts: a rule down the heatmap and the token strips.
    const boundary = generationColumn(lensData, scene.prompt, layout.columns);
    if (boundary > 0 && boundary >= c0 && boundary <= c1) {
      const x = columnX(layout, boundary, scroll);
      ctx.fillStyle = theme.generated;
      ctx.fillRect(x - 1.5, heatY - 2, 3, predY + stripH - heatY + 2);
    }

    /** @type {(cell: Cell | null, style: string, width: number, dash?: number[]) => void} */
    const outline = (cell, style, width, dash = []) => {
      if (!cell) return;
      const column = columnOf(layout, cell.position);
      if (column < c0 || column >= c1) return;
      const r = cellRect(layout, cell.layerIndex, column, scroll);
      ctx.strokeStyle = style;
      ctx.lineWidth = width;
      ctx.setLineDash(dash);
      ctx.strokeRect(r.x + width / 2, r.y + width / 2, r.w - width, r.h - width);
      ctx.setLineDash([]);
    };
    const sel = scene.selected;
    if (sel && sel.prompt === scene.prompt && sel.layer_index < lensData.L && sel.position < lensData.lengths[scene.prompt]) {
      const cell = { layerIndex: sel.layer_index, position: sel.position };
      outline(cell, theme.bg, 4);
      outline(cell, theme.fg, 2);
    }
    outline(scene.hover, theme.fg, 1);
    outline(scene.focus, theme.focus, 2, [3, 2]);

    /** @type {(x: number, dir: number) => void} */
    const shade = (x, dir) => {
      const g = ctx.createLinearGradient(x, 0, x + 10 * dir, 0);
      g.addColorStop(0, theme.shadow);
      g.addColorStop(1, "rgba(0,0,0,0)");
      ctx.fillStyle = g;
      ctx.fillRect(dir > 0 ? x : x - 10, heatY, 10, predY + stripH - heatY);
    };
    if (scroll > 0) shade(labelW, 1);
    if (scroll < layout.maxScroll) shade(W, -1);
  }

  /**
   * Row labels (layer numbers; "3 attn" for a sublayer row) and strip labels, kept in view at
   * the left.
   * @param {Frame} f
   */
  drawLabels({ ctx, layout, theme, scene }) {
    const lensData = /** @type {LensData} */ (this.lensData);
    const layer = scene.layer;
    const { labelW, rowH, heatY, inputY, predY, stripH } = layout;
    const L = lensData.L;
    const hlRow = L - 1 - layer;
    const every = labelStride(rowH, 12);
    const x = labelW - 8;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let row = 0; row < L; row++) {
      const i = L - 1 - row;
      const isHl = i === layer;
      // Every row, or every `every`-th layer's block output, never crowding the highlighted one.
      if (!isHl && !rowLabelled(lensData, i, every)) continue;
      if (!isHl && Math.abs(row - hlRow) * rowH < 11) continue;
      ctx.font = isHl ? theme.labelBold : theme.labelFont;
      ctx.fillStyle = isHl ? theme.accent : theme.muted;
      ctx.fillText(rowLabel(lensData, i, "axis"), x, heatY + row * rowH + rowH / 2 + 0.5);
    }
    ctx.fillStyle = theme.accent;
    ctx.fillRect(labelW - 4, heatY + hlRow * rowH, 3, rowH);
    ctx.font = theme.labelFont;
    ctx.fillStyle = theme.muted;
    ctx.fillText("input", x, inputY + stripH / 2 + 0.5);
    ctx.font = theme.labelBold;
    ctx.fillStyle = theme.accent;
    ctx.fillText(rowLabel(lensData, layer), x, predY + stripH / 2 + 0.5);
    ctx.font = theme.axisFont;
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = "alphabetic";
    ctx.fillText("layer", x, heatY - 4);
  }
}
