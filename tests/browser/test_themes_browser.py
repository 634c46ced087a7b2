"""The three widgets follow the host's theme: light, JupyterLab dark and high contrast, VS Code
dark and high contrast, a dark system scheme (an exported page) and forced colours.

Each widget (the heatmap, the lens diff, the data-set chart) is rendered from small synthetic
results with its real built bundle and stylesheet, in a page dressed as each host: JupyterLab's
theme variables on ``:root`` and ``data-jp-theme-light`` on ``body`` (applied after the widget
rendered, as JupyterLab does when its theme loads or the user switches it), VS Code's body
classes (``vscode-dark`` with the Dark Modern variables, ``vscode-high-contrast`` with none, so
the widget's own fallbacks show), Playwright's emulated ``prefers-color-scheme: dark`` and
``forced-colors: active``. For each, a screenshot goes to
``tests/_artifacts/themes/<widget>-<theme>.png`` and the pixels are checked:

* under every dark theme the widget's box has no large light block (the data cells, whose
  colours encode values, are left out) and its own background is dark;
* every label, in the DOM (computed ``color`` or SVG ``fill`` over the composited background)
  and on the canvases (each ``fillText``'s colour over the canvas pixels under the text, read
  just before it is drawn), has a contrast of at least 4.5:1.

Two more cases: JupyterLab's light theme on a computer set to dark keeps the widgets light (the
host's word wins over the system's), and a canvas first drawn while its widget is not yet in the
page (no styles apply there) is drawn with the host's dark theme once it is shown.
"""

from __future__ import annotations

import dataclasses
import io
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from attribution_data import decompose, with_sublayers
from harness import ARTIFACTS, ORIGIN, STATIC, encode, widget_state
from harness import SYNCED as HEATMAP_SYNCED
from lens_data import make_result
from PIL import Image
from test_dataset_browser import SYNCED as DATASET_SYNCED
from test_diff_browser import SYNCED as DIFF_SYNCED

from murano_widgets import LensDataset, LensResults, LogitLensWidget, show_lens_diff

pytestmark = pytest.mark.browser

SHOTS = ARTIFACTS / "themes"
MIN_CONTRAST = 4.5

# JupyterLab 4's theme variables (resolved from its theme packages), the subset a widget reads.
JUPYTERLAB = {
    "light": {
        "--jp-layout-color0": "#ffffff",
        "--jp-layout-color1": "#ffffff",
        "--jp-layout-color2": "#eeeeee",
        "--jp-ui-font-color0": "#000000",
        "--jp-ui-font-color1": "rgba(0, 0, 0, 0.87)",
        "--jp-ui-font-color2": "rgba(0, 0, 0, 0.54)",
        "--jp-ui-font-color3": "rgba(0, 0, 0, 0.38)",
        "--jp-border-color1": "#bdbdbd",
        "--jp-border-color2": "#e0e0e0",
        "--jp-brand-color1": "#1976d2",
        "--jp-warn-color1": "#f57c00",
        "--jp-error-color1": "#d32f2f",
    },
    "dark": {
        "--jp-layout-color0": "#111111",
        "--jp-layout-color1": "#212121",
        "--jp-layout-color2": "#424242",
        "--jp-ui-font-color0": "#ffffff",
        "--jp-ui-font-color1": "rgba(255, 255, 255, 0.87)",
        "--jp-ui-font-color2": "rgba(255, 255, 255, 0.54)",
        "--jp-ui-font-color3": "rgba(255, 255, 255, 0.38)",
        "--jp-border-color1": "#616161",
        "--jp-border-color2": "#424242",
        "--jp-brand-color1": "#2196f3",
        "--jp-warn-color1": "#ff9800",
        "--jp-error-color1": "#f44336",
    },
    "high-contrast": {
        "--jp-layout-color0": "#111111",
        "--jp-layout-color1": "#111111",
        "--jp-layout-color2": "#424242",
        "--jp-ui-font-color0": "#ffffff",
        "--jp-ui-font-color1": "#ffffff",
        "--jp-ui-font-color2": "#ffffff",
        "--jp-ui-font-color3": "#ffffff",
        "--jp-border-color1": "#ffffff",
        "--jp-border-color2": "#e0e0e0",
        "--jp-brand-color1": "#319bf2",
        "--jp-warn-color1": "#ff9800",
        "--jp-error-color1": "#f44336",
    },
}

# VS Code's Dark Modern theme, as its notebook webviews set them on <html>.
VSCODE_DARK = {
    "--vscode-editor-background": "#1f1f1f",
    "--vscode-editor-foreground": "#cccccc",
    "--vscode-descriptionForeground": "#9d9d9d",
    "--vscode-editorWidget-background": "#202020",
    "--vscode-editorWidget-border": "#313131",
    "--vscode-focusBorder": "#0078d4",
    "--vscode-textLink-foreground": "#4daafc",
}


@dataclass(frozen=True)
class Host:
    """How a page says its theme."""

    dark: bool
    color_scheme: str = "light"  # the emulated system scheme
    forced_colors: str = "none"
    body_class: str = ""
    html_vars: dict | None = None  # set on <html> before the widget renders
    jupyterlab: str | None = None  # JupyterLab's theme, applied after the widget rendered


HOSTS = {
    "light": Host(dark=False),
    "jupyterlab-dark": Host(dark=True, jupyterlab="dark"),
    "jupyterlab-high-contrast": Host(dark=True, jupyterlab="high-contrast"),
    "vscode-dark": Host(dark=True, body_class="vscode-dark", html_vars=VSCODE_DARK),
    "vscode-high-contrast": Host(dark=True, body_class="vscode-high-contrast"),
    "system-dark": Host(dark=True, color_scheme="dark"),
    "forced-colors": Host(dark=True, color_scheme="dark", forced_colors="active"),
}

# Every string written on a canvas inside the widget, with its colour and the pixels under it
# just before it is drawn (CANVAS_TEXTS reads them). Also injected into the real JupyterLab page
# (test_jupyterlab_widgets.py) before any widget renders.
CANVAS_TEXT_HOOK = """// A full clear of a canvas starts its list again (a new frame).
window.__texts = new Map();
const fillText = CanvasRenderingContext2D.prototype.fillText;
const clearRect = CanvasRenderingContext2D.prototype.clearRect;
CanvasRenderingContext2D.prototype.clearRect = function (x, y, w, h) {
  const t = this.getTransform();
  if (x <= 0 && y <= 0 && x * t.a + w * t.a >= this.canvas.width && y * t.d + h * t.d >= this.canvas.height) {
    window.__texts.set(this.canvas, []);
  }
  return clearRect.call(this, x, y, w, h);
};
CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
  if (this.canvas.isConnected && String(text).trim()) {
    const m = this.measureText(text);
    const t = this.getTransform();
    const left = Math.floor((x - m.actualBoundingBoxLeft) * t.a + t.e);
    const right = Math.ceil((x + m.actualBoundingBoxRight) * t.a + t.e);
    const top = Math.floor((y - m.actualBoundingBoxAscent) * t.d + t.f);
    const bottom = Math.ceil((y + m.actualBoundingBoxDescent) * t.d + t.f);
    const w = Math.max(1, Math.min(right, this.canvas.width) - Math.max(left, 0));
    const h = Math.max(1, Math.min(bottom, this.canvas.height) - Math.max(top, 0));
    let under = null;
    if (left < this.canvas.width && top < this.canvas.height && right > 0 && bottom > 0) {
      const d = this.getImageData(Math.max(left, 0), Math.max(top, 0), w, h).data;
      const counts = new Map();
      for (let i = 0; i < d.length; i += 4) {
        const key = `${d[i]},${d[i + 1]},${d[i + 2]},${d[i + 3]}`;
        counts.set(key, (counts.get(key) || 0) + 1);
      }
      under = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0].split(",").map(Number);
    }
    const fill = typeof this.fillStyle === "string" ? this.fillStyle : null;
    if (!window.__texts.has(this.canvas)) window.__texts.set(this.canvas, []);
    window.__texts.get(this.canvas).push({ text: String(text), fill, under, alpha: this.globalAlpha });
  }
  return fillText.call(this, text, x, y, ...rest);
};
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>murano theme test</title>
<link rel="stylesheet" href="/widget.css">
<style id="host-theme"></style>
<style>
  body { margin: 0; padding: 16px; color: var(--jp-ui-font-color1, var(--vscode-editor-foreground, CanvasText));
         background: var(--jp-layout-color0, var(--vscode-editor-background, Canvas)); }
  #host { width: 900px; }
</style>
</head>
<body>
<div id="host"></div>
<script type="module">
import widget from "/widget.js";

/*CANVAS_TEXT_HOOK*/

function revive(value) {
  if (value && typeof value === "object" && "__b64__" in value) {
    const bytes = Uint8Array.from(atob(value.__b64__), (c) => c.charCodeAt(0));
    const buffer = new ArrayBuffer(bytes.length + 8);
    new Uint8Array(buffer, 0, bytes.length).set(bytes);
    return new DataView(buffer, 0, bytes.length);
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v)]));
  }
  return value;
}

window.mount = (state, debugName, detached = false) => {
  const values = revive(state);
  const listeners = new Map();
  const model = {
    get: (name) => values[name],
    set(name, value) { values[name] = value; (listeners.get("change:" + name) || new Set()).forEach((f) => f()); },
    on(event, fn) { if (!listeners.has(event)) listeners.set(event, new Set()); listeners.get(event).add(fn); },
    off(event, fn) { if (!event) listeners.clear(); else if (!fn) listeners.delete(event); else listeners.get(event)?.delete(fn); },
    save_changes() {},
    // A kernel as Python's live widget is one (only a live widget sends): hello answered at once,
    // every request with an error, so that the error line is shown and checked too.
    send(content) {
      const reply = content.action === "hello"
        ? { action: "hello", id: content.id, live: true }
        : { action: "error", id: content.id, message: "The error line, as the kernel words it." };
      setTimeout(() => (listeners.get("msg:custom") || new Set()).forEach((f) => f(reply)), 0);
    },
  };
  // Detached: rendered into an element not in the page yet, as a notebook front end may do;
  // window.attach() puts it in.
  const el = detached ? document.createElement("div") : document.getElementById("host");
  window.cleanup = widget.render({ model, el });
  window.debug = el[debugName];
  window.attach = () => { el.id = "host"; document.getElementById("host").replaceWith(el); };
  return true;
};

// The host's theme: variables on :root (JupyterLab's stylesheet) or <html> (VS Code's webview),
// body attributes and classes.
window.applyHost = ({ rootVars, htmlVars, bodyClass, bodyAttrs }) => {
  const css = rootVars ? `:root { ${Object.entries(rootVars).map(([k, v]) => `${k}: ${v};`).join(" ")} }` : "";
  document.getElementById("host-theme").textContent = css;
  for (const [k, v] of Object.entries(htmlVars || {})) document.documentElement.style.setProperty(k, v);
  if (bodyClass) document.body.classList.add(...bodyClass.split(" "));
  for (const [k, v] of Object.entries(bodyAttrs || {})) document.body.setAttribute(k, v);
};
window.ready = true;
</script>
</body>
</html>
""".replace("/*CANVAS_TEXT_HOOK*/", CANVAS_TEXT_HOOK)

# Everything drawn as text in the widget's DOM: [text, colour, background], the colour as
# computed (SVG text: its fill) and the background composited from the element up to <html>.
DOM_TEXTS = """(root) => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) layers.push(c);
    }
    let colour = [255, 255, 255, 1];
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    const text = node.textContent.trim();
    if (!text || !el || el.closest("option, [hidden], [aria-hidden='true']")) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== "visible" || style.display === "none" || Number(style.opacity) === 0) continue;
    const box = el.getBoundingClientRect();
    if (box.width < 3 || box.height < 3) continue;  // a visually hidden readout
    const svg = el instanceof SVGElement;
    const colour = parse(svg ? style.fill : style.color);
    if (!colour) continue;
    out.push([text.slice(0, 40), el.getAttribute("class") || el.tagName, colour, background(el)]);
  }
  return out;
}"""

CANVAS_TEXTS = """(root) => {
  const out = [];
  const probe = document.createElement("canvas").getContext("2d");
  const parse = (c) => {
    probe.fillStyle = "#000"; probe.fillStyle = c; const s = probe.fillStyle;
    if (s.startsWith("#")) return [1, 3, 5].map((i) => parseInt(s.slice(i, i + 2), 16)).concat([1]);
    const p = s.match(/[\\d.]+/g).map(Number); return [p[0], p[1], p[2], p[3] ?? 1];
  };
  for (const canvas of root.querySelectorAll("canvas")) {
    for (const t of window.__texts.get(canvas) || []) {
      if (!t.fill || !t.under) continue;
      out.push([t.text.slice(0, 40), canvas.getAttribute("class"), parse(t.fill).map((v, i) => i === 3 ? v * t.alpha : v), t.under]);
    }
  }
  return out;
}"""


# The widget root's background as the eye sees it: every background from <html> down to the
# root composited over white, as [r, g, b].
ROOT_BACKGROUND = """(e) => { let c = [255, 255, 255]; const ls = [];
             for (let x = e; x; x = x.parentElement) ls.push(getComputedStyle(x).backgroundColor);
             for (const s of ls.reverse()) { const p = (s.match(/[\\d.]+/g) || []).map(Number);
               if (p.length >= 3) { const a = p.length > 3 ? p[3] : 1; c = c.map((v, i) => p[i] * a + v * (1 - a)); } }
             return c; }"""


# ---- Colour arithmetic (WCAG 2) -------------------------------------------------------------


def _luminance(rgb) -> float:
    def channel(c: float) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _over(top, bottom):
    """``top`` ([r, g, b, alpha 0-1]) composited over the opaque ``bottom``."""
    a = top[3] if len(top) > 3 else 1
    return [top[i] * a + bottom[i] * (1 - a) for i in range(3)]


# ---- The widgets ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    js: str
    css: str
    root: str
    debug: str
    synced: tuple[str, ...]
    # Run in the page once the widget is drawn (an async function of nothing).
    setup: str = ""
    # More grids of data cells inside the widget: (their root, their debug hook's name).
    grids: tuple[tuple[str, str], ...] = ()


# The live widget (issue 24) with a kernel: the controls, a tracked token's chip, the picker open,
# a pinned cell's top-k and "Patch this cell", an error line (the page's kernel answers every
# request with one), and a patch shown by the lens diff's view inside the widget.
LIVE_SETUP = """async () => {
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  for (let k = 0; k < 100 && window.debug.live.state.kernel !== "ready"; k++) await frame();
  document.querySelector(".murano-picker-toggle").click();
  const box = document.querySelector(".murano-live-prompt");
  box.value = "The capital of Spain is";
  box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
  for (let k = 0; k < 100 && window.debug.live.state.status.kind !== "error"; k++) await frame();
  await frame();
}"""
LIVE_SYNCED = (
    *HEATMAP_SYNCED,
    "live",
    "prompts",
    "targets",
    "live_status",
    "patch",
    "_patch_meta",
    "_patch_sections",
)


KINDS = {
    "heatmap": Kind(
        "logit_lens.js",
        "logit_lens.css",
        ".murano-root",
        "__muranoDebug",
        HEATMAP_SYNCED,
    ),
    "diff": Kind(
        "lens_diff.js",
        "lens_diff.css",
        ".murano-diff",
        "__muranoDiffDebug",
        DIFF_SYNCED,
    ),
    "dataset": Kind(
        "lens_dataset.js",
        "lens_dataset.css",
        ".murano-ds-root",
        "",
        DATASET_SYNCED,
    ),
    # The heatmap with direct logit attribution: its "why" panel, and its component view (whose
    # data cells are the component canvas's).
    "attribution": Kind(
        "logit_lens.js",
        "logit_lens.css",
        ".murano-root",
        "__muranoDebug",
        HEATMAP_SYNCED,
    ),
    "components": Kind(
        "logit_lens.js",
        "logit_lens.css",
        ".murano-root",
        "__muranoDebug.components",
        HEATMAP_SYNCED,
    ),
    # Two lenses as two grids (lens_beside): the second grid's cells are data too.
    "side_by_side": Kind(
        "logit_lens.js",
        "logit_lens.css",
        ".murano-root",
        "__muranoDebug",
        HEATMAP_SYNCED,
        grids=((".murano-root", "__muranoDebug.besideGrid"),),
    ),
    "live": Kind(
        "logit_lens.js",
        "logit_lens.css",
        ".murano-root",
        "__muranoDebug",
        LIVE_SYNCED,
        setup=LIVE_SETUP,
        grids=((".murano-patch-diff > .murano-diff", "__muranoDiffDebug"),),
    ),
}


def _synthetic_dataset() -> LensDataset:
    rng = np.random.default_rng(0)
    n_prompts, n_layers = 30, 8  # more prompts than the list's box holds
    depth = np.linspace(0.02, 0.9, n_layers)
    probs = {
        name: np.clip(depth[None, :] * (0.6 + 0.5 * rng.random((n_prompts, 1))), 0, 1)
        for name in ("next", "other")
    }
    ranks = {
        name: np.maximum(0, (n_layers - 1 - np.arange(n_layers))[None, :] * 3 - k).repeat(
            n_prompts, 0
        )
        for k, name in enumerate(("next", "other"))
    }
    # Drawn one row per prompt; a data set holds [n_layers, n_prompts].
    return LensDataset(
        prompts=[f"The capital of country {i} is" for i in range(n_prompts)],
        layers=list(range(n_layers)),
        answers={"next": [[" Paris"]] * n_prompts, "other": [[" Rome"]] * n_prompts},
        answer_probs={name: values.T.copy() for name, values in probs.items()},
        answer_ranks={name: values.T.copy() for name, values in ranks.items()},
        entropy=rng.random((n_prompts, n_layers)).T.copy(),
        kl_to_final=rng.random((n_prompts, n_layers)).T.copy(),
        top1_tokens=np.zeros((n_layers, n_prompts), dtype=np.int64),
        token_strings={0: " Paris"},
        provenance={"model_name": "synthetic-gpt"},
        named_sets=True,
    )


@pytest.fixture(scope="module")
def states() -> dict[str, dict[str, Any]]:
    """Each widget's synced state, as the front end receives it."""
    heatmap = LogitLensWidget(make_result(n_layers=6))
    a = make_result(
        prompts=[["The", " Eiff", "el", " Tower", " is", " in", " the", " city", " of"]], seed=0
    )
    b = make_result(prompts=[["The", " capital", " is", " in", " the", " city", " of"]], seed=1)
    with pytest.warns(RuntimeWarning):  # some cells' token probability is unknown: hatched
        diff = show_lens_diff(a, b, align="end")  # positions paired from the end: two input rows
    dataset = _synthetic_dataset().show().chart
    dataset.layer = 3  # a chosen layer lists its prompts
    # With attribution: the detail sections sent (the panel is filled at once), heads to split.
    decomposed = decompose(with_sublayers(make_result(n_layers=4)), heads=2, foils=None)
    attribution = LogitLensWidget(decomposed, _details=True)
    components = LogitLensWidget(decomposed, view="components", _details=True)
    side_by_side = LogitLensWidget(_two_lenses(), lens_beside="tuned")
    out = {}
    for name, widget in (
        ("heatmap", heatmap),
        ("diff", diff),
        ("dataset", dataset),
        ("attribution", attribution),
        ("components", components),
        ("side_by_side", side_by_side),
    ):
        out[name] = widget_state(widget, KINDS[name].synced)
    out["live"] = _live_state()
    return out


def _two_lenses() -> LensResults:
    """Two lenses of one synthetic result: the second reads every per-cell field upside down."""
    a = make_result(n_layers=6)
    per_cell = ("max_probs", "predicted_tokens", "topk_tokens", "topk_probs", "entropy")
    flipped: dict[str, Any] = {
        name: getattr(a, name).flip(0) for name in per_cell if getattr(a, name) is not None
    }
    flipped["predicted_words"] = a.predicted_words[::-1]
    b = dataclasses.replace(a, **flipped, lens_kind="tuned", lens_title="Tuned lens")
    return LensResults({"logit": a, "tuned": b})


def _live_state() -> dict[str, Any]:
    """The live widget's state (the demo model's lens of two prompts, a tracked token coloured
    by, with its Token menu, a cell pinned, a patch of it shown), as the front end receives
    it."""
    from murano_widgets import load_demo_model, patch_lens
    from murano_widgets.payload.codec import section_bytes
    from murano_widgets.payload.diff import diff_payload
    from murano_widgets.run import run_logit_lens

    model = load_demo_model()
    prompts = ["The capital of France is", "The capital of Italy is"]
    widget = LogitLensWidget(
        run_logit_lens(model, prompts, targets=[" Rome"]), metric="target", _details=True
    )
    widget.selected = {"prompt": 0, "layer_index": 2, "position": 3}
    comparison = patch_lens(model, prompts[0], layer=2, position=3, source=prompts[1])
    meta, arrays = diff_payload(comparison)
    state = widget_state(widget, HEATMAP_SYNCED)
    state.update(
        live=True,
        prompts=prompts,
        targets=[" Rome"],
        live_status={"state": "idle", "request": -1, "action": "", "message": ""},
        patch={"prompt": 0, "layer": 2, "position": 3, "source": 1, "answer": None},
        _patch_meta=meta,
        _patch_sections=encode(section_bytes(arrays)),
    )
    return state


def _frames(page, n: int = 3) -> None:
    page.evaluate(
        "(n) => new Promise((r) => { const f = (k) => k ? requestAnimationFrame(() => f(k - 1)) : r(); f(n); })",
        n,
    )


def _open(page, kind: Kind) -> None:
    """Opens the test page with ``kind``'s bundle and stylesheet (nothing else is served)."""
    files = {
        "/index.html": ("text/html", PAGE),
        "/widget.js": ("text/javascript", (STATIC / kind.js).read_text("utf-8")),
        "/widget.css": ("text/css", (STATIC / kind.css).read_text("utf-8")),
    }

    def handle(route):
        path = route.request.url[len(ORIGIN) :].split("?")[0]
        if route.request.url.startswith(ORIGIN) and path in files:
            content_type, body = files[path]
            route.fulfill(status=200, content_type=content_type, body=body)
        else:
            route.fulfill(status=404, body="not found")

    page.route("**/*", handle)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("window.ready === true")


def render(page, widget: str, theme: str, state: dict[str, Any]):
    """Renders ``widget`` in a page dressed as ``theme``'s host."""
    kind, host = KINDS[widget], HOSTS[theme]
    page.emulate_media(color_scheme=host.color_scheme, forced_colors=host.forced_colors)
    _open(page, kind)
    if host.jupyterlab:
        # JupyterLab starts light here (its light theme's variables), as a notebook can render
        # its outputs before the chosen theme's stylesheet arrives.
        page.evaluate(
            "(v) => window.applyHost({ rootVars: v, bodyAttrs: { 'data-jp-theme-light': 'true' } })",
            JUPYTERLAB["light"],
        )
    page.evaluate(
        "(h) => window.applyHost(h)",
        {"htmlVars": host.html_vars or {}, "bodyClass": host.body_class},
    )
    page.evaluate("([s, d]) => window.mount(s, d)", [state, kind.debug.split(".")[0]])
    _frames(page)
    if kind.setup:
        page.evaluate(kind.setup)
    if host.jupyterlab:
        page.evaluate(
            "(v) => window.applyHost({ rootVars: v, bodyAttrs: { 'data-jp-theme-light': 'false' } })",
            JUPYTERLAB[host.jupyterlab],
        )
        page.wait_for_timeout(50)
        _frames(page)
    return page.locator(kind.root)


def cells_box(page, root: str, debug: str, origin: dict[str, float]) -> tuple[int, int, int, int]:
    """The data cells' box (colours that encode values) of the canvas widget at ``root``,
    relative to the widget's box (``origin``), from its debug hook ``debug`` (on the root's
    parent element; a dotted name reaches a part of it, such as the component view's): the
    corners of its first and last rows and positions."""
    x0, y0, x1, y1 = page.eval_on_selector(
        root,
        """(r, name) => {
          const d = name.split(".").reduce((o, k) => o[k], r.parentElement);
          const { nLayers, nPositions } = d.layout;
          const rects = [[0, 0], [nLayers - 1, 0], [0, nPositions - 1], [nLayers - 1, nPositions - 1]]
            .map(([i, j]) => d.cellClientRect(i, j)).filter(Boolean);
          return [Math.min(...rects.map((c) => c.x)), Math.min(...rects.map((c) => c.y)),
                  Math.max(...rects.map((c) => c.x + c.w)), Math.max(...rects.map((c) => c.y + c.h))];
        }""",
        debug,
    )
    return (
        int(x0 - origin["x"]) - 1,
        int(y0 - origin["y"]) - 1,
        int(x1 - origin["x"]) + 2,
        int(y1 - origin["y"]) + 2,
    )


def _cells_box(page, widget: str, origin: dict[str, float]) -> list[tuple[int, int, int, int]]:
    """The boxes of the widget's data cells (its own grid's, and those of the grids it holds)."""
    kind = KINDS[widget]
    boxes = (
        [cells_box(page, kind.root, kind.debug, origin)]
        if kind.debug and widget != "dataset"
        else []
    )
    for root, debug in kind.grids:
        if page.locator(root).count():
            boxes.append(cells_box(page, root, debug, origin))
    return boxes


def light_block_fraction(pixels: np.ndarray, skip=None, window: int = 6) -> float:
    """The fraction of the image inside a ``window``-square of near-white pixels (a light block;
    text strokes are thinner than the window and do not count). ``skip`` = (x0, y0, x1, y1), or
    a list of them."""
    light = (pixels[..., :3] >= 225).all(axis=-1)
    boxes = [] if skip is None else [skip] if isinstance(skip, tuple) else list(skip)
    for x0, y0, x1, y1 in boxes:
        light[max(y0, 0) : max(y1, 0), max(x0, 0) : max(x1, 0)] = False
    h, w = light.shape
    if h < window or w < window:
        return 0.0
    s = np.pad(light.astype(np.int32), ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    sums = s[window:, window:] - s[:-window, window:] - s[window:, :-window] + s[:-window, :-window]
    full = sums == window * window
    covered = np.zeros_like(light)
    for dy in range(window):
        for dx in range(window):
            covered[dy : dy + full.shape[0], dx : dx + full.shape[1]] |= full
    return float(covered.mean())


def low_contrast(texts, page_bg) -> list[str]:
    """The labels whose colour, composited over what is under them, is below MIN_CONTRAST."""
    bad = []
    for text, where, colour, under in texts:
        under = [*under[:3], under[3] / 255] if len(under) > 3 and under[3] > 1 else under
        bg = _over(under, page_bg)
        fg = _over(colour, bg)
        ratio = contrast(fg, bg)
        if ratio < MIN_CONTRAST:
            bad.append(f"{text!r} ({where}): {ratio:.2f} ({fg} on {bg})")
    return bad


@pytest.mark.parametrize("theme", list(HOSTS))
@pytest.mark.parametrize("widget", list(KINDS))
def test_widget_follows_the_host_theme(page, states, widget, theme):
    root = render(page, widget, theme, states[widget])
    host = HOSTS[theme]
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{widget}-{theme}.png"
    root.screenshot(path=str(shot))
    pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"))
    origin = root.bounding_box()
    assert origin is not None

    # The canvases' strings, from the frame on screen now (the canvas pixels under each string
    # are straight alpha: the widget's own background shows through where they are clear).
    root_bg = page.eval_on_selector(
        KINDS[widget].root,
        ROOT_BACKGROUND,
    )
    dom = page.eval_on_selector(KINDS[widget].root, DOM_TEXTS)
    canvas = page.eval_on_selector(KINDS[widget].root, CANVAS_TEXTS)
    assert dom, "the widget shows text"
    if widget != "dataset":
        assert canvas, "the canvas draws its labels"

    if host.dark:
        assert _luminance(root_bg) < 0.05, f"{widget} under {theme}: a light background {root_bg}"
        block = light_block_fraction(pixels, _cells_box(page, widget, origin))
        assert block < 0.002, (
            f"{widget} under {theme}: {block:.1%} of the widget is a light block (see {shot})"
        )
    else:
        assert _luminance(root_bg) > 0.8, f"{widget} under {theme}: a dark background {root_bg}"

    bad = low_contrast(dom, root_bg) + low_contrast(canvas, root_bg)
    assert not bad, f"{widget} under {theme}: labels below {MIN_CONTRAST}:1 (see {shot}):\n" + (
        "\n".join(bad[:20])
    )
    assert not [e for e in page.errors if "favicon" not in e], page.errors


def _rgb(css: str) -> list[float]:
    return [float(v) for v in re.findall(r"[\d.]+", css)[:3]]


def _root_colours(page, kind: Kind) -> tuple[list[float], list[float]]:
    """The widget root's background and text colours."""
    bg, fg = page.eval_on_selector(
        kind.root, "(e) => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]"
    )
    return _rgb(bg), _rgb(fg)


@pytest.mark.parametrize("widget", list(KINDS))
def test_a_light_host_wins_over_a_dark_system_scheme(page, states, widget):
    """JupyterLab's light theme on a computer set to dark: the widget stays light."""
    kind = KINDS[widget]
    page.emulate_media(color_scheme="dark")
    _open(page, kind)
    page.evaluate(
        "(v) => window.applyHost({ rootVars: v, bodyAttrs: { 'data-jp-theme-light': 'true' } })",
        JUPYTERLAB["light"],
    )
    page.evaluate("([s, d]) => window.mount(s, d)", [states[widget], kind.debug.split(".")[0]])
    _frames(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(kind.root).screenshot(path=str(SHOTS / f"{widget}-jupyterlab-light-os-dark.png"))
    bg, fg = _root_colours(page, kind)
    assert _luminance(bg) > 0.8 and _luminance(fg) < 0.2, (bg, fg)
    bad = low_contrast(page.eval_on_selector(kind.root, CANVAS_TEXTS), bg)
    assert not bad, bad


@pytest.mark.parametrize("widget", ["heatmap", "diff"])
def test_a_canvas_drawn_before_the_widget_is_in_the_page_takes_the_theme_once_shown(
    page, states, widget
):
    """A front end may render into an element before it puts it in the page (no styles apply
    there yet): once shown, the canvas is drawn with the host's dark theme, not light fallbacks."""
    kind = KINDS[widget]
    _open(page, kind)
    page.evaluate(
        "(v) => window.applyHost({ rootVars: v, bodyAttrs: { 'data-jp-theme-light': 'false' } })",
        JUPYTERLAB["dark"],
    )
    page.evaluate("([s, d]) => window.mount(s, d, true)", [states[widget], kind.debug])
    _frames(page)
    page.evaluate("() => window.attach()")
    page.wait_for_timeout(50)
    _frames(page)
    root = page.locator(kind.root)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{widget}-jupyterlab-dark-attached-late.png"
    root.screenshot(path=str(shot))
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    origin = root.bounding_box()
    assert origin is not None
    bg, _ = _root_colours(page, kind)
    assert _luminance(bg) < 0.05, bg
    assert light_block_fraction(pixels, _cells_box(page, widget, origin)) < 0.002, shot
    bad = low_contrast(page.eval_on_selector(kind.root, CANVAS_TEXTS), bg)
    assert not bad, bad
    assert not page.errors, page.errors
