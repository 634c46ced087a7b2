"""The code cells of a teaching notebook run in this process, as a kernel would run them, for
tests that compare what a notebook shows with what a widget shows."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any


def run_cells(path: Path, *, through: str) -> tuple[dict[str, Any], list[Any]]:
    """Runs the code cells of the notebook at ``path`` in order, through the first one whose
    source contains ``through``.

    Returns:
        The namespace the cells ran in, and each cell's displayed value (its last line's, as a
        notebook shows it when that line is an expression; ``None`` otherwise), in cell order.
    """
    nb = json.loads(path.read_text(encoding="utf-8"))
    namespace: dict[str, Any] = {"__name__": "__main__"}
    shown: list[Any] = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        # A kernel runs IPython's magics; the notebooks' only one is the first cell's
        # `%pip install`, which the package here already is.
        source = "".join(
            line for line in cell["source"] if not line.lstrip().startswith(("%", "!"))
        )
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        name = f"{path.name}[{index}]"
        exec(compile(tree, name, "exec"), namespace)
        value = None
        if last is not None:
            value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
        shown.append(value)
        if through in source:
            return namespace, shown
    raise AssertionError(f"{path.name} has no code cell containing {through!r}")
