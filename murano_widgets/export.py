"""Self-contained HTML pages of the widgets that render with no kernel and no network.

One template serves every widget (the lens heatmap, the lens diff, the data-set chart; each
builds its state in :meth:`murano_widgets.widgets.base.MuranoWidget._standalone_state`): the
page inlines the
widget's ES module (base64, imported through a Blob URL), its stylesheet and every payload
section (base64 in a JSON block), and calls the module's ``renderStandalone(root, state)``.
All text from the data lives in that JSON block with ``<``, ``>`` and ``&`` escaped, so no
token can close a tag; the front end only ever puts it in the page as text. A
Content-Security-Policy forbids every network request.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from murano_widgets._checks import check_path
from murano_widgets._files import write_file
from murano_widgets._memory import Need, format_bytes, preflight

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["base64_sections", "standalone_page", "write_html"]

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
<noscript>This page needs JavaScript to draw the {what}.</noscript>
<script type="application/json" id="murano-state">{state}</script>
<script type="module">
const data = JSON.parse(document.getElementById("murano-state").textContent);
const source = new TextDecoder().decode(Uint8Array.from(atob(data.esm), (c) => c.charCodeAt(0)));
const url = URL.createObjectURL(new Blob([source], {{ type: "text/javascript" }}));
const widget = await import(url);
const root = document.getElementById("murano-root");
window.muranoWidget = widget.renderStandalone(root, data.state);
</script>
</body>
</html>
"""


def standalone_page(
    state: dict[str, Any],
    *,
    esm: str,
    css: str,
    title: str,
    what: str = "widget",
) -> str:
    """One self-contained HTML page that renders a widget's state with no kernel.

    The page imports ``esm`` from a Blob URL and calls its ``renderStandalone(root, state)``;
    the module's result is kept as ``window.muranoWidget``.

    Args:
        state: The widget's state as ``renderStandalone`` takes it: plain JSON, binary
            sections already base64 text.
        esm: The widget's ES module (source text); it must export ``renderStandalone``.
        css: Its stylesheet.
        title: The page title (plain text; it is escaped here).
        what: What the page draws, for the ``<noscript>`` line (plain text).

    Returns:
        The page's HTML.
    """
    document = {"esm": base64.b64encode(esm.encode("utf-8")).decode("ascii"), "state": state}
    return _PAGE.format(
        csp=_CSP,
        title=html.escape(title),
        what=html.escape(what),
        css=css.replace("</", "<\\/"),
        state=script_safe_json(document),
    )


def write_html(path: str | Path, page: str) -> Path:
    """Writes ``page`` to ``path`` all at once: an interrupted write leaves the old file whole.

    The page goes to a hidden temporary with a fresh random name, which then replaces ``path``
    (see :func:`murano_widgets._files.write_files`), so no other file of the user's is ever
    opened and nothing half-written or temporary stays behind.

    Args:
        path: The file to write; its folder must exist.
        page: The page's text (written as UTF-8).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        IsADirectoryError: If ``path`` is a folder.
        FileNotFoundError: If its folder does not exist.
    """
    path = Path(check_path("path", path))
    if path.is_dir():
        raise IsADirectoryError(
            f"path {str(path)!r} is a folder; give a file name, such as lens.html or diff.html"
        )
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"path {str(path)!r}: the folder {str(path.parent)!r} does not exist"
        )
    return write_file(path, page)


def base64_sections(sections: Mapping[str, bytes]) -> dict[str, str]:
    """Binary sections as base64 text (the front end's ``toBytes`` reads it back).

    Raises:
        MemoryBudgetError: Before encoding, if the page's text (base64, then its JSON and the
            page around it: about four times the sections' bytes) would not fit in memory.
    """
    nbytes = sum(len(data) for data in sections.values())
    preflight(
        "the HTML export",
        [
            Need(
                f"the widget's {len(sections)} sections ({format_bytes(nbytes)})",
                4 * nbytes,
                "base64 text, its JSON and the page: about 4 x the binary sections",
                "Export fewer prompts or layers (a result of them: result[...]).",
            )
        ],
    )
    return {name: base64.b64encode(data).decode("ascii") for name, data in sections.items()}


def script_safe_json(value: object) -> str:
    """JSON that cannot end its ``<script>`` element nor open a comment or a tag (the HTML
    export's widget state, and the documentation site's notebook pages: docs/hooks)."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
