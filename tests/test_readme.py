"""The README's and the documentation's Python examples run as pasted, each on its own, on the
shipped demo model.

Every fenced ``python`` block of ``README.md`` and of the site's pages (``docs/**/*.md``: the
quickstart and the guides) is one test: the block is written to a file in a
temporary folder and run there by a fresh interpreter (``sys.executable``, this checkout first on
``PYTHONPATH``, offline, matplotlib without a display), so a block cannot lean on an earlier one
or on anything this test process imported, and whatever it writes (HTML pages, saved lenses and
data sets) lands in that folder. The test passes when the interpreter exits with 0; its stderr is
in the failure message.

A block that cannot run here is exempt only when its page says so, with a marker right before
it, naming why::

    <!-- readme-test: skip (needs an NDIF server and an API key) -->

Such a block is reported as skipped with that reason; a block without the marker always runs. A
marker that does not stand right before a python block, or gives no reason, is an error.

``bash`` blocks are not executed: they install packages and run the test suites themselves.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_readme_block_runs_as_pasted(block, tmp_path):
    if block.skip_reason is not None:
        pytest.skip(f"{block.page} line {block.line}: {block.skip_reason}")
    script = tmp_path / ("readme_" + re.sub(r"[^\w-]", "_", block.id) + ".py")
    script.write_text(block.code, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", MPLBACKEND="Agg")
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(
            f"{block.page} line {block.line} ({block.heading}): still running after "
            f"{BLOCK_TIMEOUT_S} s\n{error.stderr or ''}",
            pytrace=False,
        )
    if done.returncode != 0:
        pytest.fail(
            f"{block.page} line {block.line} ({block.heading}) exited with {done.returncode}:\n"
            f"{done.stderr}",
            pytrace=False,
        )
