"""The README's and the documentation's Python examples, each pasted whole into one notebook
cell, run on the shipped demo model, show the widgets they build and draw their figures once.

Every fenced ``python`` block of ``README.md`` and of the site's pages (``docs/**/*.md``: the
quickstart and the guides) is one test. All the blocks run as the cells of one notebook,
executed by one real kernel with nbclient (in a child process; offline; matplotlib's inline
backend, as in a notebook): before each block ``%reset -f`` empties the namespace and the kernel
moves to a folder of the block's own, so a block cannot lean on an earlier one's names, and
whatever it writes (HTML pages, saved lenses and data sets) lands in that folder. A block passes
when its cell raised nothing, each of the package's widgets it built is shown once among the
cell's outputs (a widget view, as the cell's value or by ``display``), and the cell holds one
image per matplotlib figure it made: a figure that is the cell's value and not silenced by a
``;`` is drawn twice (once as the value, once by the inline backend).

A block that cannot run here is exempt only when its page says so, with a marker right before
it, naming why::

    <!-- readme-test: skip (needs an NDIF server and an API key) -->

Such a block is reported as skipped with that reason; a block without the marker always runs. A
marker that does not stand right before a python block, or gives no reason, is an error.

``bash`` blocks are not executed: they install packages and run the test suites themselves.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The pages whose examples run: the README, then the site's pages in order.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
SKIP_MARKER = re.compile(r"^<!--\s*readme-test:\s*skip\b(?P<rest>.*?)-->\s*$", re.DOTALL)
MARKER_START = re.compile(r"<!--\s*readme-test:")
BLOCK_TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    """One fenced python block of a markdown file.

    Attributes:
        page: The file's path from the repository's root ("README.md", "docs/quickstart.md").
        heading: The text of the nearest heading above the block ("" before any heading).
        index: The block's number among the file's python blocks, from 1.
        line: The line of the opening fence, from 1.
        code: The block's source.
        skip_reason: The reason given by a skip marker right before the block, else ``None``.
    """

    heading: str
    index: int
    line: int
    code: str
    skip_reason: str | None
    page: str = "README.md"

    @property
    def id(self) -> str:
        """The test id: the heading made a slug, then the block's number; a page of the site
        first names the page ("guides/lenses.md:the-tuned-lens-2")."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-") or "top"
        if self.page == "README.md":
            return f"{slug}-{self.index}"
        return f"{self.page.removeprefix('docs/')}:{slug}-{self.index}"


def python_blocks(markdown: str, page: str = "README.md") -> list[Block]:
    """Every fenced python block of a markdown text, with its heading and skip marker.

    Args:
        markdown: The markdown source.
        page: Its path from the repository's root, for the ids and the messages.

    Returns:
        The python blocks in order (other languages' blocks are left out).

    Raises:
        ValueError: If a ``readme-test`` marker is not a skip marker with a reason in
            parentheses, or does not stand right before a python block.
    """
    tokens = MarkdownIt("commonmark").parse(markdown)
    blocks: list[Block] = []
    heading = ""
    marker: tuple[str, int] | None = None  # (reason, line) of a skip marker waiting for its block
    for position, token in enumerate(tokens):
        line = token.map[0] + 1 if token.map else 0
        if token.type == "heading_open":
            heading = tokens[position + 1].content
        is_python = token.type == "fence" and token.info.strip().split(" ")[0] == "python"
        if marker is not None and token.map is not None and not is_python:
            raise ValueError(
                f"{page} line {marker[1]}: a readme-test skip marker must stand right before a "
                f"```python block; line {line} is a {token.type} instead"
            )
        if token.type == "html_block" and MARKER_START.search(token.content):
            found = SKIP_MARKER.match(token.content.strip())
            reason = found["rest"].strip() if found else ""
            if not (reason.startswith("(") and reason.endswith(")") and reason[1:-1].strip()):
                raise ValueError(
                    f"{page} line {line}: write a readme-test marker as "
                    f"'<!-- readme-test: skip (why the block cannot run here) -->', "
                    f"got {token.content.strip()!r}"
                )
            marker = (reason[1:-1].strip(), line)
            continue
        if is_python:
            blocks.append(
                Block(heading, len(blocks) + 1, line, token.content, marker and marker[0], page)
            )
            marker = None
    if marker is not None:
        raise ValueError(f"{page} line {marker[1]}: a readme-test skip marker ends the file")
    return blocks


BLOCKS = [
    block
    for path in PAGES
    for block in python_blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
]


def test_the_readme_has_python_examples():
    """Guards the parser: the README's examples are found (a parser that finds none passes
    every other test here), and so are the quickstart's and each guide's."""
    readme = [block for block in BLOCKS if block.page == "README.md"]
    assert readme and any("show_logit_lens" in block.code for block in readme), readme
    guides = sorted((DOCS / "guides").glob("*.md"))
    assert len(guides) >= 8, guides
    for path in [DOCS / "quickstart.md", *guides]:
        page = path.relative_to(ROOT).as_posix()
        assert any(block.page == page for block in BLOCKS), f"{page} has no python example"
    runs = [block for block in BLOCKS if block.page != "README.md" and block.skip_reason is None]
    assert len(runs) >= 12, [block.id for block in runs]  # the remote guide's needs NDIF
    assert len({block.id for block in BLOCKS}) == len(BLOCKS), "two blocks share a test id"


def test_markers_are_read_as_written():
    """The parser on a small text: a marked block is exempt with its reason, an unmarked one
    runs, bash is left out, and a marker out of place or without a reason is an error."""
    text = (
        "# Top\n\n```python\na = 1\n```\n\n## Remote\n\n"
        "<!-- readme-test: skip (needs a server) -->\n```python\nb = 2\n```\n\n"
        "```bash\necho no\n```\n\n```python\nc = 3\n```\n"
    )
    blocks = python_blocks(text)
    assert [(b.id, b.code, b.skip_reason) for b in blocks] == [
        ("top-1", "a = 1\n", None),
        ("remote-2", "b = 2\n", "needs a server"),
        ("remote-3", "c = 3\n", None),
    ]
    with pytest.raises(ValueError, match="line 1: a readme-test skip marker must stand"):
        python_blocks("<!-- readme-test: skip (why) -->\n\nSome text.\n\n```python\nx\n```\n")
    with pytest.raises(ValueError, match="right before a ```python block"):
        python_blocks("<!-- readme-test: skip (why) -->\n```bash\necho\n```\n")
    with pytest.raises(ValueError, match="write a readme-test marker as"):
        python_blocks("<!-- readme-test: skip -->\n```python\nx\n```\n")
    with pytest.raises(ValueError, match="write a readme-test marker as"):
        python_blocks("<!-- readme-test: run it twice -->\n```python\nx\n```\n")


# ---------------------------------------------------------------------------------------------
# Every block as one notebook cell, run by a real kernel

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of a kernel's traceback

# The kernel's first cell: a module that notes, per block, the package's widgets the block
# built (their model ids, less those a built widget holds as a child) and the matplotlib figures
# it made. What it notes is read back by each block's report cell.
TRACKER = """
import json
import ipywidgets, matplotlib.figure

figures = 0
before = set()
_make_figure = matplotlib.figure.Figure.__init__

def _counted(self, *args, **kwargs):
    global figures
    figures += 1
    _make_figure(self, *args, **kwargs)

matplotlib.figure.Figure.__init__ = _counted

def start():
    global before, figures
    before, figures = set(ipywidgets.Widget._active_widgets), 0

def _descendants(widget):
    found = []
    for child in getattr(widget, "children", ()) or ():
        found += [child.model_id, *_descendants(child)]
    return found

def report():
    new = {key: widget for key, widget in ipywidgets.Widget._active_widgets.items()
           if key not in before}
    ours = {key for key, widget in new.items()
            if type(widget).__module__.startswith("murano_widgets")}
    held = {found for widget in new.values() for found in _descendants(widget)}
    return json.dumps({"widgets": sorted(ours - held), "figures": figures})
"""
# The tracker lives in a module of its own, which %reset does not empty.
SETUP = (
    "import sys, types\ntracker = types.ModuleType('_docs_tracker')\n"
    f"exec({TRACKER!r}, tracker.__dict__)\nsys.modules['_docs_tracker'] = tracker"
)


@dataclass(frozen=True)
class RunBlock:
    """What a block did as a notebook cell: its outputs and what the tracker noted."""

    outputs: list[dict]
    built_widgets: list[str]
    figures: int


@pytest.fixture(scope="module")
def run_blocks(request, tmp_path_factory) -> dict[str, RunBlock]:
    """Every block that runs, each as one cell of a single notebook executed by one kernel.

    Before each block, ``%reset -f`` empties the namespace and the kernel moves to a folder of
    the block's own, so a block cannot lean on an earlier one's names, and what it writes lands
    there; after it, a cell reads what the tracker noted. Only the blocks whose tests were
    selected run (``-k in-a-notebook`` runs one).
    """
    import nbformat
    from notebook_cells import execute_notebook

    root = tmp_path_factory.mktemp("docs_blocks")
    selected = {
        item.callspec.params["block"].id
        for item in request.session.items
        # This module's tests alone: another module may name a parameter "block" too.
        if getattr(item, "module", None) is request.module
        and "block" in getattr(getattr(item, "callspec", None), "params", {})
    }
    runs = [block for block in BLOCKS if block.skip_reason is None and block.id in selected]
    cells = [nbformat.v4.new_code_cell(SETUP)]
    for number, block in enumerate(runs):
        folder = root / f"block{number}"
        folder.mkdir()
        cells += [
            nbformat.v4.new_code_cell(
                "%reset -f\nimport os, sys\n"
                f"os.chdir({str(folder)!r})\nsys.modules['_docs_tracker'].start()\ndel os, sys"
            ),
            nbformat.v4.new_code_cell(block.code),
            nbformat.v4.new_code_cell("import sys\nprint(sys.modules['_docs_tracker'].report())"),
        ]
    nb = nbformat.v4.new_notebook(cells=cells)
    source, target = root / "blocks.ipynb", root / "blocks.out.ipynb"
    nbformat.write(nb, source)
    execute_notebook(source, target, root, timeout_s=BLOCK_TIMEOUT_S, allow_errors=True)
    done = nbformat.read(target, as_version=4)
    found = {}
    for number, block in enumerate(runs):
        code, report = done.cells[2 + 3 * number], done.cells[3 + 3 * number]
        noted = json.loads("".join(o.get("text", "") for o in report.outputs).strip() or "{}")
        found[block.id] = RunBlock(code.outputs, noted.get("widgets", []), noted.get("figures", -1))
    return found


def shown_widgets(outputs: list[dict]) -> list[str]:
    """The model ids of the widget views among a cell's outputs, in order."""
    return [
        output["data"][WIDGET_VIEW]["model_id"]
        for output in outputs
        if WIDGET_VIEW in output.get("data", {})
    ]


def images(outputs: list[dict]) -> int:
    """How many images a cell's outputs hold (a figure is drawn as one PNG)."""
    return sum("image/png" in output.get("data", {}) for output in outputs)


def test_shown_and_drawn_are_counted_from_outputs():
    """The two counts on outputs written here: a widget view and a figure shown as the cell's
    value, a figure drawn by the inline backend, text that is neither."""
    view = {"version_major": 2, "version_minor": 0, "model_id": "abc"}
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "abc image/png\n"},
        {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}},
        {"output_type": "execute_result", "data": {WIDGET_VIEW: view, "text/plain": "W"}},
        {"output_type": "execute_result", "data": {"image/png": "iVBOR"}},
    ]
    assert shown_widgets(outputs) == ["abc"]
    assert images(outputs) == 2


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_readme_block_shows_what_it_builds(block, run_blocks):
    """A block pasted whole into one cell runs, shows each widget it builds once (as the cell's
    value or with ``display``) and draws each figure once (a trailing ``;`` keeps a figure that
    is the cell's value from being drawn a second time)."""
    if block.skip_reason is not None:
        pytest.skip(f"{block.page} line {block.line}: {block.skip_reason}")
    run = run_blocks[block.id]
    where = f"{block.page} line {block.line} ({block.heading})"
    errors = [o for o in run.outputs if o.get("output_type") == "error"]
    if errors:
        trace = ANSI.sub("", "\n".join(errors[0].get("traceback", [])))
        pytest.fail(f"{where} failed:\n{trace}", pytrace=False)
    assert run.figures >= 0, f"{where}: the report cell did not run"
    shown = shown_widgets(run.outputs)
    for model_id in run.built_widgets:
        count = shown.count(model_id)
        assert count == 1, (
            f"{where} builds a widget it shows {count} times: make it the cell's last "
            "expression, or display(w) it once"
        )
    assert images(run.outputs) == run.figures, (
        f"{where} makes {run.figures} figures and draws {images(run.outputs)} images: end a "
        "line that returns a figure with ';' (the inline backend draws it once)"
    )
