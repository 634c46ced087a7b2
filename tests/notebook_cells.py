"""Notebooks for tests: the code cells of a teaching notebook run in this process, as a kernel
would run them (for tests that compare what a notebook shows with what a widget shows), and a
notebook executed by a real kernel with nbclient, in a child process."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
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


# A script that executes a notebook headless with nbclient, in a child process (nbclient leaves
# an asyncio loop behind in the process that runs it, and Playwright's sync API then refuses to
# start there). Arguments: source, target, working folder, timeout a cell, allow errors (0/1).
EXECUTE = """
import sys, time, nbclient, nbformat
source, target, workdir, timeout, allow_errors = sys.argv[1:6]
nb = nbformat.read(source, as_version=4)
client = nbclient.NotebookClient(
    nb, timeout=int(timeout), kernel_name="python3", store_widget_state=True,
    allow_errors=allow_errors == "1", resources={"metadata": {"path": workdir}},
)
start = time.perf_counter()
client.execute()
print(time.perf_counter() - start)
nbformat.write(nb, target)
"""


ROOT = Path(__file__).resolve().parents[1]


def kernel_env() -> dict[str, str]:
    """The environment of a kernel run by these tests: offline, this checkout first on
    ``PYTHONPATH`` (a venv shared by several checkouts imports the package from the one it was
    installed from), and matplotlib's own inline backend, as in a notebook (a test run's
    ``MPLBACKEND=Agg`` left out)."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("MPLBACKEND", None)
    return env


def execute_notebook(
    source: Path, target: Path, workdir: Path, *, timeout_s: int, allow_errors: bool = False
) -> float:
    """Executes the notebook at ``source`` with nbclient in a child process, in ``workdir``,
    and writes the executed copy (its outputs and widget state) to ``target``.

    Returns:
        The seconds the cells took.

    Raises:
        AssertionError: If the run failed (a cell's error, unless ``allow_errors``), with the
            end of its stderr.
    """
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            EXECUTE,
            str(source),
            str(target),
            str(workdir),
            str(timeout_s),
            "1" if allow_errors else "0",
        ],
        env=kernel_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s * 4,
        check=False,
    )
    assert done.returncode == 0, f"{source.name} failed to execute:\n{done.stderr[-4000:]}"
    return float(done.stdout.strip().splitlines()[-1])
