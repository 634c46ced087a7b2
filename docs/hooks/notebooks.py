"""The teaching notebooks as pages of the documentation site, their widgets drawn offline.

A mkdocs hook (``hooks:`` in ``mkdocs.yml``). The notebooks in ``notebooks/`` are saved clean
(no outputs, ``tests/test_notebooks.py``), so:

1. ``on_files`` executes each one headless with nbclient, as ``tests/test_notebooks.py`` does,
   with the widgets' state saved in the notebook's metadata (``store_widget_state``), and hands
   the executed copy to mkdocs-jupyter as the page ``notebooks/<name>.ipynb``. The copies are
   kept in ``.cache/docs-notebooks/`` under a key of the notebook and the package's files, so a
   rebuild with nothing changed executes nothing. A cell that fails fails the build. A hidden
   first cell makes each lens widget send its detail sections (top-k, the other metrics) with
   its first state, as it does once a page shows it: no page shows it during the run, and the
   saved notebook would otherwise hold only what the first paint needs.
2. The notebooks' pictures (``notebooks/images/``) become the site's ``images/``, and the
   package's bundled front end (``murano_widgets/static/*.js``, ``*.css``) is copied into
   the site under ``assets/murano/``.
3. ``on_page_content`` gives notebook pages the width of the table of contents, takes out of each notebook page the script that loads the widget manager
   and require.js from a CDN (unreachable offline, and a network request in any case), drops
   from the embedded widget state each ES module that is the bundled one (the page imports the
   copied file instead), and adds ``javascripts/notebook_widgets.js``, which draws every widget
   output from that state with the bundle's ``renderStandalone``, as the HTML export does.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

from murano_widgets.export import script_safe_json

log = logging.getLogger("mkdocs.hooks.notebooks")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = ROOT / "murano_widgets"
STATIC = PACKAGE / "static"
CACHE = ROOT / ".cache" / "docs-notebooks"
ASSETS = "assets/murano"
RENDERER = "javascripts/notebook_widgets.js"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CELL_TIMEOUT_S = 600

# Run first in each notebook's kernel, then removed from the page: see the module's docstring.
# Each new lens widget turns its details on as it is made. (Setting the trait's default_value
# did nothing: traitlets keeps a class's static defaults from when the class was made, and a
# later cell touching the widget had hidden that, until notebook 01's first widget stopped
# being touched.)
DETAILS_CELL = (
    "from murano_widgets.widgets.lens import LogitLensWidget as _MuranoDocsLens\n"
    "def _murano_docs_init(self, *args, _init=_MuranoDocsLens.__init__, **kwargs):\n"
    "    _init(self, *args, **kwargs)\n"
    "    self._details = True\n"
    "_MuranoDocsLens.__init__ = _murano_docs_init\n"
    "del _MuranoDocsLens, _murano_docs_init"
)

_CDN_LOADER = re.compile(
    r"<script>\s*\(function\(\) \{\s*function addWidgetsRenderer\(\).*?</script>", re.S
)
_STATE = re.compile(rf'<script type="{re.escape(WIDGET_STATE)}">(.*?)</script>', re.S)


def _key(notebook: Path) -> str:
    """What an executed copy depends on: the notebook, the package (code, bundle, demo model),
    and the cell this hook runs first."""
    digest = hashlib.sha256(DETAILS_CELL.encode())
    for path in [notebook, *sorted(PACKAGE.rglob("*"))]:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _execute(source: Path, target: Path) -> None:
    import nbclient
    import nbformat

    nb = nbformat.read(source, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(DETAILS_CELL))
    saved = {name: os.environ.get(name) for name in ("HF_HUB_OFFLINE", "MPLBACKEND")}
    os.environ["HF_HUB_OFFLINE"] = "1"  # the notebooks use the shipped demo model only
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend, as in a notebook
    try:
        with tempfile.TemporaryDirectory() as workdir:  # what the notebook writes goes there
            nbclient.NotebookClient(
                nb,
                timeout=CELL_TIMEOUT_S,
                kernel_name="python3",
                store_widget_state=True,
                resources={"metadata": {"path": workdir}},
            ).execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    del nb.cells[0]
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


def executed_notebook(notebook: Path) -> Path:
    """The executed copy of ``notebook`` (made now unless an up-to-date one is cached)."""
    target = CACHE / "notebooks" / notebook.name
    stamp = target.with_suffix(".key")
    key = _key(notebook)
    # MURANO_DOCS_REUSE_NOTEBOOKS=1: keep any executed copy (a preview while editing docstrings).
    reuse = os.environ.get("MURANO_DOCS_REUSE_NOTEBOOKS") == "1" and target.is_file()
    if not reuse and not (target.is_file() and stamp.is_file() and stamp.read_text() == key):
        log.info("executing %s", notebook.relative_to(ROOT))
        _execute(notebook, target)
        stamp.write_text(key)
    return target


@event_priority(100)  # before mkdocs-jupyter's on_files, which turns .ipynb files into pages
def on_files(files: Files, config: Any) -> Files:
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        executed = executed_notebook(notebook)
        # A plain File (mkdocs-jupyter wraps it as it wraps those in docs/): src_dir is the cache.
        assert executed.parent.parent == CACHE
        files.append(
            File(
                f"notebooks/{notebook.name}",
                src_dir=str(CACHE),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    # The notebooks' pictures (the front page shows the widget's), from where they are kept.
    for image in sorted((NOTEBOOKS / "images").glob("*.png")):
        files.append(File.generated(config, f"images/{image.name}", abs_src_path=str(image)))
    for asset in sorted(STATIC.iterdir()):
        if asset.suffix in (".js", ".css"):
            files.append(File.generated(config, f"{ASSETS}/{asset.name}", abs_src_path=str(asset)))
    return files


def _bundles() -> dict[str, str]:
    """The bundled ES modules by their text: which copied file a saved ``_esm`` is."""
    return {path.read_text(encoding="utf-8"): path.stem for path in STATIC.glob("*.js")}


def _slim_state(match: re.Match[str], bundles: dict[str, str]) -> str:
    document = json.loads(html.unescape(match[1]) if "&quot;" in match[1] else match[1])
    for entry in document.get("state", {}).values():
        state = entry.get("state", {})
        name = bundles.get(state.get("_esm"))
        if name is not None:
            state["_esm"] = ""
            state["_css"] = ""
            state["_murano_bundle"] = name
    return f'<script type="{WIDGET_STATE}">{script_safe_json(document)}</script>'


def on_page_content(html_text: str, page: Any, config: Any, files: Files) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return html_text
    # The widgets need the width (a heatmap beside its trajectory chart): no table of contents
    # on the right, as material's front matter `hide: [toc]` would do.
    page.meta["hide"] = [*page.meta.get("hide", []), "toc"]
    html_text = _CDN_LOADER.sub("", html_text)
    bundles = _bundles()
    html_text = _STATE.sub(lambda match: _slim_state(match, bundles), html_text)
    assets = get_relative_url(f"{ASSETS}/", page.url)
    renderer = get_relative_url(RENDERER, page.url)
    styles = "".join(
        f'<link rel="stylesheet" href="{assets}{path.name}">'
        for path in sorted(STATIC.glob("*.css"))
    )
    # After the notebook's own stylesheet (which sets `.jupyter-wrapper * { box-sizing:
    # inherit }`): the widgets' rules win where they say otherwise, as in a notebook.
    return (
        f"{html_text}{styles}"
        f'<script type="module" src="{renderer}" data-murano-assets="{assets}"></script>'
    )
