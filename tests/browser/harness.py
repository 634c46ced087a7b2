"""A test page that renders the real, built front end (``murano_widgets/static/logit_lens.js``,
built from ``js/src``) with a fake anywidget model.

The page is served by Playwright request interception (no server process). The fake model is fed
the Python widget's actual state: JSON traits as JSON, bytes as base64 turned back into DataViews
(optionally at a non-zero, unaligned byteOffset inside a larger buffer, as anywidget may hand them
over). What the front end sends back (``model.set`` + ``save_changes``) is recorded, and
:class:`Bridge` applies it to the Python widget the way the kernel would (``set_state``), then
pushes Python's resulting trait changes back into the page. Custom messages (``model.send``, the
live widget's requests) are recorded in ``window.model.messages`` and handed to
``window.kernel(content, model)`` when a test puts a fake kernel there; ``model.reply(content,
buffers)`` is the kernel's message back (anywidget's ``msg:custom``; buffers as :func:`encode`
writes bytes).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# MURANO_STATIC_DIR: render another build instead (e.g. to see a test fail without a fix).
STATIC = Path(os.environ.get("MURANO_STATIC_DIR") or ROOT / "murano_widgets" / "static")
JS = STATIC / "logit_lens.js"
CSS = STATIC / "logit_lens.css"
ORIGIN = "http://murano.test"
ARTIFACTS = ROOT / "tests" / "_artifacts"

SYNCED = (
    "prompt",
    "layer",
    "metric",
    "target",
    "group",
    "selected",
    "hide_template",
    "position",
    "lens_name",
    "lens_beside",
    "explain",
    "view",
    "_details",
    "_meta",
    "_sections",
)

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>murano widget test</title>
<link rel="stylesheet" href="/logit_lens.css">
<style>
  body { margin: 0; padding: 16px; background: var(--page-bg, #ffffff); }
  body.dark { --page-bg: #111418; }
  #host { width: var(--host-width, 900px); }
</style>
</head>
<body>
<div id="host"></div>
<script type="module">
import widget, * as lens from "/logit_lens.js";
window.lens = lens;

// Record what the heatmap writes on its canvas (text is data: it must arrive as plain strings).
const fillText = CanvasRenderingContext2D.prototype.fillText;
window.__texts = [];
CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
  const grid = this.canvas.classList && (this.canvas.classList.contains("murano-canvas") || this.canvas.classList.contains("murano-canvas-beside"));
  if (grid) {
    const beside = this.canvas.classList.contains("murano-canvas-beside");
    window.__texts.push({ text: String(text), x, y, font: this.font, fill: String(this.fillStyle), beside });
  }
  return fillText.call(this, text, x, y, ...rest);
};

function toDataView(value, offset) {
  const bytes = Uint8Array.from(atob(value.__b64__), (c) => c.charCodeAt(0));
  // Place the bytes inside a larger buffer at `offset`, so byteOffset/byteLength matter.
  const buffer = new ArrayBuffer(offset + bytes.length + 5);
  new Uint8Array(buffer).fill(0xab);
  new Uint8Array(buffer, offset, bytes.length).set(bytes);
  return new DataView(buffer, offset, bytes.length);
}

function revive(value, offset) {
  if (value && typeof value === "object" && "__b64__" in value) return toDataView(value, offset);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = revive(v, offset);
    return out;
  }
  return value;
}

function makeModel(state, offset) {
  const values = {};
  for (const [k, v] of Object.entries(state)) values[k] = revive(v, offset);
  const listeners = new Map();
  let dirty = {};
  const model = {
    sent: [],
    get: (name) => values[name],
    set(name, value) {
      values[name] = value;
      dirty[name] = value;
      (listeners.get("change:" + name) || new Set()).forEach((fn) => fn());
    },
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(fn);
    },
    off(event, fn) {
      if (!event) listeners.clear();
      else if (!fn) listeners.delete(event);
      else listeners.get(event) && listeners.get(event).delete(fn);
    },
    save_changes() {
      if (Object.keys(dirty).length) model.sent.push({ t: performance.now(), state: JSON.parse(JSON.stringify(dirty)) });
      dirty = {};
    },
    // Custom messages to the kernel (anywidget's model.send): recorded, and handed to a fake
    // kernel when the test put one in the page (window.kernel(content, model)).
    messages: [],
    send(content) {
      model.messages.push(JSON.parse(JSON.stringify(content)));
      if (window.kernel) window.kernel(content, model);
    },
    // The kernel's custom message to the front end (anywidget's "msg:custom" event).
    reply(content, buffers = []) {
      const views = buffers.map((b) => revive(b, offset));
      (listeners.get("msg:custom") || new Set()).forEach((fn) => fn(content, views));
    },
    listenerCount: () => [...listeners.values()].reduce((n, s) => n + s.size, 0),
    // The kernel's side: set a value without it counting as sent by the front end.
    kernelSet(name, value) {
      values[name] = revive(value, offset);
      (listeners.get("change:" + name) || new Set()).forEach((fn) => fn());
    },
  };
  return model;
}

window.mount = (state, offset = 0) => {
  const el = document.getElementById("host");
  window.model = makeModel(state, offset);
  window.cleanup = widget.render({ model: window.model, el });
  window.debug = el.__muranoDebug;
  return true;
};
window.mountReady = true;
</script>
</body>
</html>
"""


def encode(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"__b64__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def widget_state(widget, names=SYNCED) -> dict[str, Any]:
    """The widget's synced state as the front end receives it (bytes as base64 markers)."""
    state = widget.get_state()
    return {name: encode(state[name]) for name in names if name in state}


def serve(page, extra: dict[str, tuple[str, str]] | None = None) -> None:
    """Routes the test origin to the page, the real ES module and stylesheet; blocks the rest."""
    files = {
        "/index.html": ("text/html", PAGE),
        "/logit_lens.js": ("text/javascript", JS.read_text(encoding="utf-8")),
        "/logit_lens.css": ("text/css", CSS.read_text(encoding="utf-8")),
        **(extra or {}),
    }
    page.requests_seen = []

    def handle(route):
        url = route.request.url
        page.requests_seen.append(url)
        path = url[len(ORIGIN) :].split("?")[0] if url.startswith(ORIGIN) else None
        if path in files:
            content_type, body = files[path]
            route.fulfill(status=200, content_type=content_type, body=body)
        else:
            route.fulfill(status=404, body="not found")

    page.route("**/*", handle)


class Bridge:
    """One widget shown in one page, with a kernel-like round trip between them.

    The page runs on Playwright's fake clock (``page.clock``): time flows as usual until a test
    pauses it, and :meth:`sync` and :meth:`advance` move it forward by a stated amount, firing
    the timers due (the slider's throttle, the details' time-out) however slow the machine. A
    test about throttling counts in that clock, never in wall-clock time (issue 31: a window
    measured in wall-clock time failed under load).
    """

    def __init__(self, page, widget, *, byte_offset: int = 0, dark: bool = False, width: int = 900):
        self.page = page
        self.widget = widget
        self.changed: list[str] = []
        self.paused = False
        widget.observe(self._record, names=list(SYNCED))
        serve(page)
        page.clock.install()  # before the page loads: its timers and Date are the fake ones
        page.goto(f"{ORIGIN}/index.html")
        page.wait_for_function("window.mountReady === true")
        page.evaluate(
            "([dark, width]) => { document.body.classList.toggle('dark', dark);"
            " if (dark) document.body.setAttribute('data-jp-theme-light', 'false');"
            " document.documentElement.style.setProperty('--host-width', width + 'px'); }",
            [dark, width],
        )
        page.evaluate("([s, o]) => window.mount(s, o)", [widget_state(widget), byte_offset])
        self.wait_frames()

    def _record(self, change) -> None:
        self.changed.append(change["name"])

    def pause(self) -> None:
        """Stops the page's clock: from here only :meth:`advance` and :meth:`sync` move it."""
        self.page.clock.pause_at(self.page.evaluate("() => Date.now()"))
        self.paused = True

    def advance(self, ms: int) -> None:
        """Moves the page's clock ``ms`` forward, firing every timer and frame due."""
        self.page.clock.run_for(ms)

    def wait_frames(self, n: int = 2) -> None:
        """Waits for `n` animation frames (pending redraws happen in the first); on a paused
        clock, moves it `n` frames on instead."""
        if self.paused:
            self.advance(17 * n)
            return
        self.page.evaluate(
            "(n) => new Promise((r) => { const f = (k) => k ? requestAnimationFrame(() => f(k - 1)) : r(); f(n); })",
            n,
        )

    def debug(self, expression: str) -> Any:
        return self.page.evaluate(f"() => window.debug.{expression}")

    def state(self) -> dict[str, Any]:
        return self.debug("state")

    def sent(self) -> list[dict[str, Any]]:
        """Everything the front end sent so far (one entry per save_changes)."""
        return self.page.evaluate("() => window.model.sent.map((m) => m.state)")

    def sync(self, wait_ms: int = 150) -> list[dict[str, Any]]:
        """Delivers what the front end sent to the Python widget, then Python's changes back.

        First moves the page's clock ``wait_ms`` on (past the throttle's 100 ms window), so a
        trailing sync has gone out whatever the machine's load. Returns the messages delivered.
        """
        self.advance(wait_ms)
        messages = self.page.evaluate("() => window.model.sent.splice(0).map((m) => m.state)")
        for message in messages:
            self.changed.clear()
            self.widget.set_state(message)
            back = {name: getattr(self.widget, name) for name in dict.fromkeys(self.changed)}
            # The kernel echoes values its validators changed, and sends traits it set itself.
            for name, value in back.items():
                if name in message and value == message[name] and name != "selected":
                    continue
                self.kernel_set(name)
        self.wait_frames()
        return messages

    def kernel_set(self, name: str) -> None:
        """Sends one trait's current Python value to the page, as the kernel would."""
        value = widget_state(self.widget, (name,))[name]
        self.page.evaluate("([n, v]) => window.model.kernelSet(n, v)", [name, value])

    def texts(self) -> list[dict[str, Any]]:
        """The strings one full redraw of the heatmap writes, with positions (CSS pixels)."""
        return self.page.evaluate(
            "() => { window.__texts.length = 0; window.debug.drawNow(); return window.__texts.splice(0); }"
        )

    def layout(self) -> dict[str, Any]:
        return self.debug("layout")

    def cell_center(self, layer_index: int, position: int) -> tuple[float, float]:
        r = self.page.evaluate(
            "([i, j]) => window.debug.cellClientRect(i, j)", [layer_index, position]
        )
        return r["x"] + r["w"] / 2, r["y"] + r["h"] / 2

    def pixel(self, x: float, y: float) -> list[int]:
        """The canvas pixel at client coordinates (x, y), as [r, g, b, a]."""
        return self.page.evaluate(
            """([x, y]) => {
              const c = document.querySelector('.murano-canvas');
              const r = c.getBoundingClientRect();
              const k = c.width / r.width;
              const d = c.getContext('2d').getImageData(Math.floor((x - r.left) * k), Math.floor((y - r.top) * k), 1, 1).data;
              return Array.from(d);
            }""",
            [x, y],
        )

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / name
        self.page.locator(".murano-root").screenshot(path=str(path))
        return path


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def fmt_prob(p: float) -> str:
    """formatProb of js/src/format.js, of p as the payload stores it (to 1/65535; a non-zero p
    under half a step as one step, so that only an exact 0 reads "0%")."""
    raw = round(p * 65535)
    p = (raw if raw or p == 0 else 1) / 65535
    if p > 0 and p < 0.001:
        return "<0.1%"
    if p >= 0.9995:
        return "100%"
    text = f"{p * 100:.{1 if p >= 0.1 else 2}f}".rstrip("0").rstrip(".")
    return f"{text or '0'}%"
