"""The other package's side of an interop suite: a Python in a venv of its own (tuned-lens and
TransformerLens cannot share this package's stack), named by an environment variable that the
suite's script in .ci/ sets, and run as a subprocess."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def venv_python(variable: str, script: str) -> str:
    """The Python named by ``variable``; skipped when unset (the suite's ``script`` sets it),
    failed when it names nothing."""
    python = os.environ.get(variable)
    if not python:
        pytest.skip(f"{variable} is not set: run `bash {script}`")
    if not Path(python).exists():
        pytest.fail(f"{variable}={python!r} does not exist")
    return python


def run_side(python: str, side: Path, what: str, *args: str) -> None:
    """Runs ``side`` (a script of the other package's side) with ``args``, offline; fails with
    its stderr, naming ``what`` ran there."""
    done = subprocess.run(
        [python, str(side), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        check=False,
    )
    assert done.returncode == 0, f"{what} side failed:\n{done.stderr[-4000:]}"
