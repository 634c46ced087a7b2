"""Registers the ``transformer_lens_interop`` marker (the suite runs with
``bash .ci/transformer_lens.sh``) and the fixtures its files share: TransformerLens's python, a
working folder, and the tiny GPT-2 and Llama folders that both packages boot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from other_venv import venv_python

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiny_models import build_tiny_model

ARCHS = ["gpt2", "llama"]  # the tiny models both packages boot (test files parametrize by these)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "transformer_lens_interop: against the real TransformerLens 4.3.0 in its own venv "
        "(TRANSFORMER_LENS_PYTHON; run by .ci/transformer_lens.sh)",
    )


@pytest.fixture(scope="session")
def tl_python() -> str:
    return venv_python("TRANSFORMER_LENS_PYTHON", ".ci/transformer_lens.sh")


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("transformer-lens-interop")


@pytest.fixture(scope="session")
def folders(work) -> dict[str, str]:
    # One string per folder on both sides: TransformerLens records it as the model's name and
    # checks a lens's recorded name against it, and MuranoModel(folder).name is that string.
    return {arch: str(build_tiny_model(arch, work / arch)) for arch in ARCHS}


@pytest.fixture(scope="session")
def models(folders):
    from murano_widgets import MuranoModel

    return {arch: MuranoModel(folder) for arch, folder in folders.items()}
