"""Benchmark: the widget's render speed in headless Chromium, against a naive canvas renderer.

An 80-layer × 1,000-position result (two prompts of 1,000 tokens, synthetic numbers) goes
through the real ``LogitLensWidget`` and its payload encoder; a page then renders the real
``murano_widgets/static/logit_lens.js`` (built from js/src) with a fake anywidget model holding
that state (sections as DataViews).

It measures, median of several runs:

- first paint: from ``render({model, el})`` (the model data has arrived) to the heatmap drawn
  (target ≤ 150 ms), and to the end of the next frame;
- redraw after moving the layer slider, and the prompt slider (target ≤ 16 ms): the draw
  itself, and from the ``input`` event to the redraw done (this includes waiting for the next
  animation frame, up to 16.7 ms at 60 Hz);
- redraw after a horizontal scroll;
- the baseline: a naive renderer that fills every cell of the prompt with its own ``fillRect``
  and colour string (no visible-range culling, no cached colour image), on the same canvas.

Usage::

    python bench/widget_render.py                  # 80 layers x 1000 positions
    python bench/widget_render.py --layers 40 --positions 500 --runs 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

BENCH_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/logit_lens.css">
<style>body { margin: 0; padding: 16px; } #host { width: 1000px; }</style></head>
<body><div id="host"></div>
<script type="module">
import widget, * as lens from "/logit_lens.js";

function dataView(b64) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new DataView(bytes.buffer, 0, bytes.length);
}

function makeModel(values) {
  const listeners = new Map();
  return {
    get: (k) => values[k],
    set(k, v) { values[k] = v; (listeners.get("change:" + k) || []).forEach((f) => f()); },
    on(e, f) { if (!listeners.has(e)) listeners.set(e, new Set()); listeners.get(e).add(f); },
    off(e, f) { if (!e) listeners.clear(); else if (f) listeners.get(e)?.delete(f); else listeners.delete(e); },
    save_changes() {},
    send() {},
  };
}

const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

/** The naive renderer: one fillRect and colour string per cell of the whole prompt. */
function naiveDraw(canvas, decoded, prompt, layer, layout, scroll) {
  const ctx = canvas.getContext("2d");
  const dpr = window.devicePixelRatio || 1;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const n = decoded.lengths[prompt];
  const domain = lens.metricDomain(decoded, "prob");
  for (let i = 0; i < decoded.L; i++) {
    for (let j = 0; j < n; j++) {
      const v = lens.metricValue(decoded, "prob", lens.cellIndex(decoded, prompt, i, j));
      const [r, g, b] = lens.scaleColour("viridis", lens.unitValue(v, domain));
      ctx.fillStyle = `rgb(${r},${g},${b})`;
      ctx.fillRect(layout.labelW + j * layout.cellW - scroll, layout.heatY + (decoded.L - 1 - i) * layout.rowH, layout.cellW, layout.rowH);
    }
  }
  ctx.strokeStyle = "#0969da";
  ctx.strokeRect(layout.labelW, layout.heatY + (decoded.L - 1 - layer) * layout.rowH, layout.width - layout.labelW, layout.rowH);
}

window.runBench = async ({ state, runs, moves }) => {
  const values = { ...state, _sections: {} };
  for (const [k, v] of Object.entries(state._sections)) values._sections[k] = dataView(v);
  const host = document.getElementById("host");
  const out = { first: [], firstFrame: [], layerDraw: [], layerLatency: [], promptDraw: [], promptLatency: [], scrollDraw: [], naive: [] };
  let el, cleanup;
  for (let r = 0; r < runs; r++) {
    if (cleanup) { cleanup(); el.remove(); }
    el = document.createElement("div");
    host.append(el);
    const model = makeModel({ ...values, _sections: { ...values._sections } });
    await frame();
    const t0 = performance.now();
    cleanup = widget.render({ model, el });
    const t1 = performance.now();
    await frame();
    const t2 = performance.now();
    if (!el.__muranoDebug.frames) throw new Error("render() did not draw");
    out.first.push(t1 - t0);
    out.firstFrame.push(t2 - t0);
  }
  const debug = el.__muranoDebug;
  const withTimeout = (promise) => Promise.race([promise, new Promise((_, no) => setTimeout(() => no(new Error("no redraw within 2 s")), 2000))]);
  const move = async (selector, step, draws, latencies) => {
    const slider = el.querySelector(selector);
    const n = Number(slider.max) + 1;
    const value = (Number(slider.value) + step) % n;  // always a different value
    const drawn = withTimeout(debug.nextDraw());
    const t0 = performance.now();
    slider.value = String(value);
    slider.dispatchEvent(new Event("input", { bubbles: true }));
    await drawn;
    latencies.push(performance.now() - t0);
    draws.push(debug.lastDrawMs);
    await frame();
  };
  const L = values._meta.layers.length;
  for (let k = 0; k < moves; k++) await move(".murano-layer-control .murano-slider", L > 7 ? 7 : 1, out.layerDraw, out.layerLatency);
  if (values._meta.lengths.length > 1) {
    for (let k = 0; k < moves; k++) await move(".murano-prompt-control .murano-slider", 1, out.promptDraw, out.promptLatency);
  }
  const scroller = el.querySelector(".murano-scroll");
  for (let k = 0; k < moves && debug.layout.maxScroll > 1; k++) {
    const drawn = withTimeout(debug.nextDraw());
    const target = ((k + 1) * 997) % debug.layout.maxScroll;
    scroller.scrollLeft = target === scroller.scrollLeft ? target + 1 : target;
    await drawn;
    out.scrollDraw.push(debug.lastDrawMs);
    await frame();
  }
  // The baseline, on the same canvas and layout.
  const decoded = lens.decodePayload(values._meta, values._sections);
  const canvas = el.querySelector(".murano-canvas");
  for (let k = 0; k < Math.min(moves, 10); k++) {
    const t0 = performance.now();
    naiveDraw(canvas, decoded, 0, k % L, debug.layout, 0);
    out.naive.push(performance.now() - t0);
    await frame();
  }
  const summary = {};
  for (const [k, v] of Object.entries(out)) if (v.length) summary[k] = { median: median(v), min: Math.min(...v), max: Math.max(...v), n: v.length };
  summary.layout = debug.layout;
  return summary;
};
window.benchReady = true;
</script></body></html>
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layers", type=int, default=80)
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7, help="fresh renders for the first paint")
    parser.add_argument("--moves", type=int, default=30, help="slider moves and scrolls measured")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT / "tests"))
    from chromium import launch_chromium
    from harness import ORIGIN, serve, widget_state
    from lens_data import make_large_result
    from playwright.sync_api import sync_playwright

    from murano_widgets import LogitLensWidget

    t = time.perf_counter()
    result = make_large_result(args.layers, args.positions, n_prompts=args.prompts)
    widget = LogitLensWidget(result)
    state = widget_state(widget)
    state["_sections"] = {k: v["__b64__"] for k, v in state["_sections"].items()}
    cells = args.layers * args.positions * args.prompts
    payload = sum(len(v) for v in widget._sections.values())
    print(
        f"payload: {args.layers} layers x {args.positions} positions x {args.prompts} prompts, "
        f"{payload / cells:.2f} bytes/cell in {len(widget._sections)} sections "
        f"(built in {time.perf_counter() - t:.1f} s)"
    )

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
            serve(page, {"/bench.html": ("text/html", BENCH_PAGE)})
            page.goto(f"{ORIGIN}/bench.html")
            page.wait_for_function("window.benchReady === true")
            figures = page.evaluate(
                "(a) => window.runBench(a)",
                {"state": state, "runs": args.runs, "moves": args.moves},
            )
        finally:
            browser.close()

    layout = figures.pop("layout")
    print(
        f"layout: {layout['nLayers']} rows of {layout['rowH']} px x {layout['nPositions']} columns "
        f"of {layout['cellW']} px ({layout['width']} px visible of {layout['contentW']} px)"
    )

    def line(label: str, key: str, target: float | None = None) -> None:
        f = figures.get(key)
        if f is None:
            print(f"  {label:<44} (not measured)")
            return
        verdict = ""
        if target is not None:
            verdict = f"  target <= {target:g} ms: {'ok' if f['median'] <= target else 'MISSED'}"
        print(
            f"  {label:<44} {f['median']:8.2f} ms  (min {f['min']:.2f}, max {f['max']:.2f}, n={f['n']}){verdict}"
        )

    print("first paint after the model data arrives (median):")
    line("render() -> heatmap drawn", "first", 150)
    line("render() -> end of the next frame", "firstFrame")
    print("redraw (median):")
    line("layer slider: draw", "layerDraw", 16)
    line("layer slider: input event -> drawn (+rAF wait)", "layerLatency")
    line("prompt slider: draw", "promptDraw", 16)
    line("prompt slider: input event -> drawn (+rAF wait)", "promptLatency")
    line("horizontal scroll: draw", "scrollDraw", 16)
    line("baseline: naive full redraw of every cell", "naive")
    ratio = figures["naive"]["median"] / max(1e-6, figures["layerDraw"]["median"])
    print(f"  naive / widget redraw: {ratio:.1f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"layout": layout, **figures}, indent=2))
    redraws = [
        figures[k]["median"] for k in ("layerDraw", "promptDraw", "scrollDraw") if k in figures
    ]
    ok = figures["first"]["median"] <= 150 and max(redraws) <= 16
    print("all targets met" if ok else "some targets MISSED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
