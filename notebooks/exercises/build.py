"""Builds the exercise notebooks from their one source each.

    python notebooks/exercises/build.py           # writes student/ and solutions/
    python notebooks/exercises/build.py --check   # exits 1 if a committed notebook is stale

Each source, ``src/NN_name.py``, is a notebook in jupytext's percent format. In its code cells,
an answer sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines (nbgrader's
markers). From it:

- ``student/NN_name.ipynb``: every answer replaced by ``# YOUR CODE HERE`` and
  ``raise NotImplementedError()`` at the markers' indentation (nbgrader's release form);
- ``solutions/NN_name.ipynb``: the answers in place, markers kept, so nbgrader can take it as
  its source notebook.

Both carry nbgrader's cell metadata: a cell with an answer is a solution cell, a cell that calls
a ``check_...`` is a locked, graded test cell worth one point (the check's ``AssertionError``
fails it), every other cell is read-only. Outputs are never saved; cell ids are fixed, so a
rebuild of an unchanged source is byte for byte the same.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"
VERSIONS = ("student", "solutions")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BLANK = ("# YOUR CODE HERE", "raise NotImplementedError()")
CHECK = re.compile(r"^\s*check_\w+\(", re.MULTILINE)


def sources() -> list[Path]:
    """The sources, in order."""
    return sorted(SOURCES.glob("*.py"))


def answers(code: str) -> list[tuple[str, list[str]]]:
    """The answers in a cell's code: ``(indentation, lines)`` each, in order."""
    found, inside, indent, lines = [], False, "", []
    for line in code.splitlines():
        if line.strip() == BEGIN:
            inside, indent, lines = True, line[: len(line) - len(line.lstrip())], []
        elif line.strip() == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r}")
            found.append((indent, lines))
            inside = False
        elif inside:
            lines.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r}")
    return found


def blank(code: str, fill: dict[int, str] | None = None, start: int = 0) -> str:
    """``code`` with each answer replaced by the blank, or by ``fill[k]`` for answer ``start +
    k`` (dedented code, indented here to the markers')."""
    out, inside, number = [], False, start
    for line in code.splitlines():
        if line.strip() == BEGIN:
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            if fill is not None and number in fill:
                body = fill[number].strip("\n").splitlines()
            else:
                body = list(BLANK)
            out += [indent + text if text else "" for text in body]
        elif line.strip() == END:
            inside = False
            number += 1
        elif not inside:
            out.append(line)
    return "\n".join(out)


def _metadata(stem: str, index: int, code: str, kind: str) -> dict:
    grade_id = f"{stem}-{index:02d}"
    solution = bool(answers(code)) if kind == "code" else False
    graded = kind == "code" and bool(CHECK.search(code)) and not solution
    meta = {
        "grade": graded,
        "grade_id": grade_id,
        "locked": not solution,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if graded:
        meta["points"] = 1
    return {"nbgrader": meta}


def build(source: Path, version: str) -> nbformat.NotebookNode:
    """The ``version`` (``"student"`` or ``"solutions"``) of one source."""
    notebook = jupytext.read(source, fmt="py:percent")
    cells = []
    for index, cell in enumerate(notebook.cells):
        text = cell.source
        if cell.cell_type == "code" and version == "student":
            text = blank(text)
        if version == "solutions":
            text = text.replace("/notebooks/exercises/student/", "/notebooks/exercises/solutions/")
        metadata = _metadata(source.stem, index, cell.source, cell.cell_type)
        if cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(text, metadata=metadata)
        else:
            new = nbformat.v4.new_code_cell(text, metadata=metadata)
        new["id"] = f"{source.stem[:2]}-{index:02d}"
        cells.append(new)
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(out)
    return out


def text_of(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook) + "\n"


def targets() -> dict[Path, str]:
    """Every generated notebook's path and text."""
    return {
        HERE / version / f"{source.stem}.ipynb": text_of(build(source, version))
        for source in sources()
        for version in VERSIONS
    }


def stale() -> list[Path]:
    """The generated notebooks that are missing or differ from what their source makes."""
    return [
        path
        for path, text in targets().items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which are stale")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(HERE)} (run python {Path(__file__).name})")
        return 1 if old else 0
    for path, text in targets().items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(HERE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
