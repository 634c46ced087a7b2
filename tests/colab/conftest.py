"""Fixtures of the Colab suite (``.ci/colab.sh``, marker colab): it runs in a venv frozen to
Google Colab's runtime (``.ci/colab-pins.txt``), with the package installed from its wheel."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# The browser tests' helpers (the JupyterLab server and driver this suite's classic Notebook
# server builds on).
sys.path.insert(0, str(ROOT / "tests" / "browser"))


def colab_pins() -> dict[str, str]:
    """Colab's preinstalled packages, by canonical name: {name: version}."""
    from packaging.utils import canonicalize_name

    path = Path(os.environ.get("COLAB_PINS", ROOT / ".ci" / "colab-pins.txt"))
    pins = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", f"{path}: {line!r} is not a pin (==)"
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


@pytest.fixture(scope="session")
def pins() -> dict[str, str]:
    return colab_pins()


@pytest.fixture(scope="session")
def classic(tmp_path_factory):
    """One classic Notebook 6 server for the session (started on first use)."""
    from classic_server import ClassicNotebook

    server = ClassicNotebook(tmp_path_factory.mktemp("classic"))
    try:
        yield server
    finally:
        server.stop()
