"""Benchmark: long traces in headless Chromium (issue 51), side by side at two sizes.

A synthetic result (``make_large_result``: one prompt, random tokens and probabilities) goes
through the real ``LogitLensWidget`` and its payload encoder, as ``bench/widget_render.py`` does;
a page renders the built ``murano_widgets/static/logit_lens.js`` with a fake anywidget model.
With the long-trace bar shown (the overview, the search), it measures, median of several runs:

- first paint: ``render({model, el})`` to the heatmap and the pooled overview drawn
  (target <= 300 ms);
- layer redraw: moving the layer slider, the draw (target <= 16 ms);
- moving the viewport: one pointer move of a drag on the overview, from the event to the grid
  and the viewport box redrawn (synchronous; target <= 16 ms a frame);
- the pooled overview, made once per metric and prompt: switching max -> mean pools again
  (reported, not a per-frame cost);
- a search of the input and the predictions and the jump to the first hit (reported);
- state bytes per cell: the sections sent at first (the base), per cell, and the string table
  (reported; issue 51's data side brings it to <= 6).

Usage::

    python bench/long_trace.py                      # 32 x 16,384 and 80 x 10,000
    python bench/long_trace.py --sizes 32x4096 --runs 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "tests"))

TARGETS = {"first": 300.0, "layerDraw": 16.0, "viewportMove": 16.0}

BENCH_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/logit_lens.css">
<style>body { margin: 0; padding: 16px; } #host { width: 1000px; }</style></head>
<body><div id="host"></div>
<script type="module">
import widget from "/logit_lens.js";

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

window.runBench = async ({ state, runs, moves }) => {
  const values = { ...state, _sections: {} };
  for (const [k, v] of Object.entries(state._sections)) values._sections[k] = dataView(v);
  const host = document.getElementById("host");
  const out = { first: [], layerDraw: [], viewportMove: [], viewportDraw: [], pool: [], search: [] };
  let el, cleanup;
  for (let r = 0; r < runs; r++) {
    if (cleanup) { cleanup(); el.remove(); }
    el = document.createElement("div");
    host.append(el);
    const model = makeModel({ ...values, _sections: { ...values._sections } });
    await frame();
    const t0 = performance.now();
    cleanup = widget.render({ model, el });
    // The first draw may wait for the element's width (one frame): count until it is drawn.
    if (!el.__muranoDebug.frames || !el.__muranoDebug.overview.pooled) await el.__muranoDebug.nextDraw();
    out.first.push(performance.now() - t0);
    if (!el.__muranoDebug.overview.shown) throw new Error("the long-trace bar is not shown");
    await frame();
  }
  const debug = el.__muranoDebug;
  const L = values._meta.layers.length;
  const slider = el.querySelector(".murano-layer-control .murano-slider");
  for (let k = 0; k < moves; k++) {
    const drawn = debug.nextDraw();
    slider.value = String((Number(slider.value) + (L > 7 ? 7 : 1)) % L);
    slider.dispatchEvent(new Event("input", { bubbles: true }));
    await drawn;
    out.layerDraw.push(debug.lastDrawMs);
    await frame();
  }
  // A drag across the overview: one pointer move a frame.
  const strip = el.querySelector(".murano-overview");
  const rect = strip.getBoundingClientRect();
  const y = rect.top + rect.height / 2;
  const at = (type, x) => strip.dispatchEvent(new PointerEvent(type, { clientX: x, clientY: y, button: 0, pointerId: 1, bubbles: true }));
  at("pointerdown", rect.left + 5);
  await frame();
  for (let k = 1; k <= moves; k++) {
    const x = rect.left + 5 + ((rect.width - 10) * k) / moves;
    const t0 = performance.now();
    at("pointermove", x);
    out.viewportMove.push(performance.now() - t0);
    out.viewportDraw.push(debug.lastDrawMs);
    await frame();
  }
  at("pointerup", rect.right - 5);
  // The pooled overview, made again for another pooling (once, not per frame).
  const pool = el.querySelector(".murano-overview-pool-select");
  for (let k = 0; k < 4; k++) {
    pool.value = pool.value === "max" ? "mean" : "max";
    const t0 = performance.now();
    pool.dispatchEvent(new Event("change", { bubbles: true }));
    out.pool.push(performance.now() - t0);
    await frame();
  }
  // Find a token of the predictions and jump to it.
  const find = el.querySelector(".murano-find");
  for (let k = 0; k < 4; k++) {
    find.value = ["w12", "w3", "w499", "w7"][k];
    find.dispatchEvent(new Event("input", { bubbles: true }));
    const t0 = performance.now();
    find.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    out.search.push(performance.now() - t0);
    await frame();
  }
  const summary = {};
  for (const [k, v] of Object.entries(out)) if (v.length) summary[k] = { median: median(v), min: Math.min(...v), max: Math.max(...v), n: v.length };
  summary.hits = debug.overview.hits;
  return summary;
};
window.benchReady = true;
</script></body></html>
"""


def measure(layers: int, positions: int, runs: int, moves: int) -> dict:
    from chromium import launch_chromium
    from harness import ORIGIN, serve, widget_state
    from lens_data import make_large_result
    from playwright.sync_api import sync_playwright

    from murano_widgets import LogitLensWidget

    t = time.perf_counter()
    widget = LogitLensWidget(make_large_result(layers, positions, n_prompts=1))
    built = time.perf_counter() - t
    state = widget_state(widget)
    state["_sections"] = {k: v["__b64__"] for k, v in state["_sections"].items()}
    cells = layers * positions
    sections = sum(len(v) for v in widget._sections.values())
    strings = len(json.dumps(widget._meta["tokens"]).encode())
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
            serve(page, {"/bench.html": ("text/html", BENCH_PAGE)})
            page.goto(f"{ORIGIN}/bench.html")
            page.wait_for_function("window.benchReady === true")
            figures = page.evaluate(
                "(a) => window.runBench(a)", {"state": state, "runs": runs, "moves": moves}
            )
        finally:
            browser.close()
    figures["bytesPerCell"] = sections / cells
    figures["stringBytes"] = strings
    figures["built_s"] = built
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", default=["32x16384", "80x10000"])
    parser.add_argument("--runs", type=int, default=5, help="fresh renders for the first paint")
    parser.add_argument("--moves", type=int, default=30, help="layer moves and drag steps")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    sizes = [tuple(int(x) for x in s.lower().split("x")) for s in args.sizes]
    results = {}
    for layers, positions in sizes:
        name = f"{layers} x {positions:,}"
        print(f"measuring {name} ...", flush=True)
        results[name] = measure(layers, positions, args.runs, args.moves)

    rows = [
        ("first paint (render -> grid + overview drawn)", "first"),
        ("layer redraw (draw)", "layerDraw"),
        ("moving the viewport (overview drag, a frame)", "viewportMove"),
        ("  of which the grid's draw", "viewportDraw"),
        ("overview pooled again (max <-> mean, once)", "pool"),
        ("find + jump to the first hit", "search"),
    ]
    names = list(results)
    print()
    print(f"{'median ms (target)':<56}" + "".join(f"{n:>16}" for n in names))
    ok = True
    for label, key in rows:
        target = TARGETS.get(key)
        cells = []
        for n in names:
            f = results[n].get(key)
            if f is None:
                cells.append(f"{'-':>16}")
                continue
            miss = target is not None and f["median"] > target
            ok = ok and not miss
            cells.append(f"{f['median']:>14.2f}{' !' if miss else '  '}")
        head = f"{label} (<= {target:g})" if target else label
        print(f"{head:<56}" + "".join(cells))
    print(
        f"{'state bytes per cell (+ string table)':<56}"
        + "".join(
            f"{results[n]['bytesPerCell']:>7.2f} +{results[n]['stringBytes'] / 1e3:>5.0f} kB"
            for n in names
        )
    )
    print("all frame targets met" if ok else "some targets MISSED (!)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
