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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .payload import LensPayload

__all__ = ["lens_page", "write_html"]

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


def lens_page(
    payload: LensPayload,
    view: dict[str, Any],
    *,
    esm: str,
    css: str,
    title: str | None = None,
) -> str:
    """One self-contained HTML page that renders a lens payload with no kernel.

    Args:
        payload: The result as the front end receives it (metadata and every section).
        view: The view's state: ``prompt``, ``layer``, ``metric`` and optionally
            ``selected`` (``prompt``, ``layer_index``, ``position``).
        esm: The front end's ES module (source text).
        css: Its stylesheet.
        title: The page title; defaults to the model's name.
    """
    state = {
        "_meta": payload.meta,
        "_sections": {
            name: base64.b64encode(data).decode("ascii")
            for name, data in payload.all_sections().items()
        },
        "_details": True,
        "prompt": view.get("prompt", 0),
        "layer": view.get("layer", payload.meta["layers"][-1]),
        "metric": view.get("metric", "prob"),
        "selected": view.get("selected"),
    }
    document = {"esm": base64.b64encode(esm.encode("utf-8")).decode("ascii"), "state": state}
    if title is None:
        name = payload.meta.get("model_name") or "model"
        lens = "Tuned lens" if payload.meta.get("lens_kind") == "tuned" else "Logit lens"
        title = f"{lens} — {Path(name).name or name}"
    return _PAGE.format(
        csp=_CSP,
        title=html.escape(title),
        css=css.replace("</", "<\\/"),
        state=_script_safe_json(document),
    )


def write_html(path: str | Path, page: str) -> Path:
    """Writes ``page`` to ``path`` all at once (through a temporary file: nothing half-written).

    Raises:
        IsADirectoryError: If ``path`` is a folder.
        FileNotFoundError: If its folder does not exist.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(
            f"path {str(path)!r} is a folder; give a file name such as lens.html"
        )
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"path {str(path)!r}: the folder {str(path.parent)!r} does not exist"
        )
    temporary = path.with_name(path.name + ".part")
    temporary.write_text(page, encoding="utf-8")
    temporary.replace(path)
    return path


def _script_safe_json(value: object) -> str:
    """JSON that cannot end its ``<script>`` element nor open a comment or a tag."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
