"""A self-contained HTML page of the widget that renders with no kernel and no network.

The page inlines the ES module (base64, imported through a Blob URL), the stylesheet and every
payload section (base64 in a JSON block). All text from the data lives in that JSON block with
``<``, ``>`` and ``&`` escaped, so no token can close a tag; the front end only ever puts it in
the page as text. A Content-Security-Policy forbids every network request.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .widget import LogitLensWidget

__all__ = ["widget_html", "write_html"]

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="murano_widgets">
<title>{title}</title>
<style>
body {{ margin: 24px; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #111; color: #ddd; }} }}
{css}
</style>
</head>
<body>
<div id="murano-root" class="murano-export"></div>
<noscript>This page needs JavaScript to draw the logit-lens widget.</noscript>
<script type="application/json" id="murano-state">{state}</script>
<script type="module">
const data = JSON.parse(document.getElementById("murano-state").textContent);
const source = new TextDecoder().decode(Uint8Array.from(atob(data.esm), (c) => c.charCodeAt(0)));
const url = URL.createObjectURL(new Blob([source], {{ type: "text/javascript" }}));
const lens = await import(url);
const root = document.getElementById("murano-root");
window.muranoWidget = lens.renderStandalone(root, data.state);
</script>
</body>
</html>
"""


def widget_html(widget: LogitLensWidget, *, title: str | None = None) -> str:
    """The widget as one self-contained HTML page (a string)."""
    payload = widget._payload
    state = {
        "_meta": payload.meta,
        "_sections": {
            name: base64.b64encode(data).decode("ascii")
            for name, data in payload.all_sections().items()
        },
        "_details": True,
        "prompt": widget.prompt,
        "layer": widget.layer,
        "metric": widget.metric,
        "selected": _pin(widget.selected),
    }
    esm = (
        Path(widget._esm).read_bytes()
        if isinstance(widget._esm, Path)
        else str(widget._esm).encode()
    )
    css = Path(widget._css).read_text() if isinstance(widget._css, Path) else str(widget._css)
    document = {"esm": base64.b64encode(esm).decode("ascii"), "state": state}
    if title is None:
        name = payload.meta.get("model_name") or "model"
        title = f"Logit lens — {Path(name).name or name}"
    return _PAGE.format(
        csp=_CSP,
        title=html.escape(title),
        css=css.replace("</", "<\\/"),
        state=_script_safe_json(document),
    )


def write_html(widget: LogitLensWidget, path: str | Path, *, title: str | None = None) -> Path:
    """Writes :func:`widget_html` to ``path`` (all at once: nothing is half-written)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(
            f"path {str(path)!r} is a folder; give a file name such as lens.html"
        )
    text = widget_html(widget, title=title)
    temporary = path.with_name(path.name + ".part")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return path


def _pin(selected: dict | None) -> dict | None:
    if not selected:
        return None
    return {key: selected[key] for key in ("prompt", "layer_index", "position")}


def _script_safe_json(value: object) -> str:
    """JSON that cannot end its ``<script>`` element nor open a comment or a tag."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
