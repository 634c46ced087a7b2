"""The seven teaching notebooks, executed top to bottom with nbclient in Colab's runtime
(ipykernel 6.17, IPython 7.34, ipywidgets 7.7.1, transformers 5.15): no error output, and each
saves its lens widgets' state, as ``tests/test_notebooks.py`` checks in the project's venv.

Their first cell installs the package only on Colab (``google.colab`` imported), so here they
use the wheel ``.ci/colab.sh`` installed.
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs_in_colabs_runtime(path: Path, tmp_path):
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
    lenses = _lens_widgets(nb)
    assert any(model_id in lenses for model_id in _shown_ids(nb)), (
        f"{path.name}: no cell output shows a LogitLensWidget"
    )
    problems = stale_widget_views(nb, path.name)
    assert not problems, "\n".join(problems)
