"""The seven teaching notebooks and the exercise kit's solution notebooks, executed top to
bottom with nbclient in Colab's runtime (ipykernel 6.17, IPython 7.34, ipywidgets 7.7.1,
transformers 5.15): no error output; each teaching notebook saves its lens widgets' state, as
``tests/test_notebooks.py`` checks in the project's venv, and every check of an exercise passes.

Their first cell's ``%pip install`` finds the wheel ``.ci/colab.sh`` installed and leaves it (and
Colab's packages) as they are.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_notebooks import (
    _EXECUTE,
    CELL_TIMEOUT_S,
    NOTEBOOKS,
    _errors,
    _ids,
    _lens_widgets,
    _shown_ids,
    stale_widget_views,
)

pytestmark = [pytest.mark.colab, pytest.mark.slow]


def _execute(path: Path, tmp_path: Path):
    """``path`` executed in a kernel of this venv (the installed wheel, offline); the notebook."""
    import nbformat

    target = tmp_path / path.name
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("MPLBACKEND", None)  # the kernel's own inline backend, as in a notebook
    env.pop("PYTHONPATH", None)  # the installed wheel, not a checkout
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _EXECUTE,
            str(path),
            str(target),
            str(tmp_path),
            str(CELL_TIMEOUT_S),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=CELL_TIMEOUT_S * 4,
        check=False,
    )
    assert done.returncode == 0, f"{path.name} failed to execute:\n{done.stderr[-4000:]}"
    print(f"{path.name}: executed in {float(done.stdout.split()[-1]):.1f} s")
    nb = nbformat.read(target, as_version=4)
    assert not _errors(nb), "\n".join(_errors(nb))
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs_in_colabs_runtime(path: Path, tmp_path):
    nb = _execute(path, tmp_path)
    lenses = _lens_widgets(nb)
    assert any(model_id in lenses for model_id in _shown_ids(nb)), (
        f"{path.name}: no cell output shows a LogitLensWidget"
    )
    problems = stale_widget_views(nb, path.name)
    assert not problems, "\n".join(problems)


SOLUTIONS = sorted(
    (Path(__file__).parents[2] / "notebooks" / "exercises" / "solutions").glob("*.ipynb")
)


@pytest.mark.parametrize("path", SOLUTIONS, ids=_ids(SOLUTIONS))
def test_exercise_solutions_pass_in_colabs_runtime(path: Path, tmp_path):
    """The course kit's solutions run and every check passes in Colab's runtime (issue 50)."""
    assert SOLUTIONS, "no exercise solution notebooks found"
    nb = _execute(path, tmp_path)
    printed = "".join(
        output.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    checks = sum(cell.metadata.get("nbgrader", {}).get("grade", 0) for cell in nb.cells)
    assert checks > 0, f"{path.name}: no graded check cells"
    assert printed.count("✓ check_") == checks, printed[-4000:]
