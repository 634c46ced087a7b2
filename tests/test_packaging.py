"""The wheel as PyPI would get it: built once from this checkout (hatchling's PEP 517 hook, as
``python -m build`` calls it), it carries the built front end, the demo model and its lenses, says
what the package needs and supports, installs outside the repository and runs the demo.

``python -m build`` and ``twine check --strict`` themselves are the release recipe's
(docs/release.md): they need the network for their isolated build environment.
"""

from __future__ import annotations

import email
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from murano_widgets._version import __version__
from murano_widgets.backends.nnsight import NDIF_NNSIGHT

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "murano_widgets"
# What a user needs from the wheel that is not Python source: the bundle npm built, and the
# shipped model with the lenses fitted to it.
DATA = ("static", "demo_model/toy-world", "demo_model/toy-world-tuned-lens",
        "demo_model/toy-world-jacobian-lens")  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from this checkout into a temporary folder (about 3 s)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from hatchling.build import build_wheel; "
         "print(build_wheel(sys.argv[1]))", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


def _files(folder: str) -> list[str]:
    """The package's files under ``folder``, relative to the repository (from disk, so that
    the test runs from an sdist too; nothing there is ignored but caches)."""
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in (PACKAGE / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )


def test_the_wheel_carries_the_front_end_and_the_demo_model_with_its_lenses(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for folder in DATA:
            files = _files(folder)
            assert files, f"nothing under murano_widgets/{folder}"
            for name in files:
                assert name in names, f"the wheel lacks {name}"
                assert archive.read(name) == (ROOT / name).read_bytes(), f"{name} differs"
    assert {"murano_widgets/static/logit_lens.js", "murano_widgets/static/logit_lens.css"} <= names
    assert not [name for name in names if "__pycache__" in name or name.startswith("tests/")]


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"murano_widgets-{__version__}.dist-info/METADATA").decode()
    return email.message_from_string(text)


def test_the_metadata_names_the_pythons_the_license_and_the_project(wheel):
    meta = _metadata(wheel)
    assert meta["Name"] == "murano-widgets" and meta["Version"] == __version__
    requires = SpecifierSet(meta["Requires-Python"])
    classified = [
        c.rsplit(" :: ", 1)[-1]
        for c in meta.get_all("Classifier")
        if c.startswith("Programming Language :: Python :: 3.")
    ]
    assert classified == ["3.10", "3.11", "3.12", "3.13"]
    assert all(f"{minor}.0" in requires for minor in classified) and "3.9.0" not in requires
    assert meta["License-Expression"] == "MIT"
    assert meta["Description-Content-Type"] == "text/markdown"
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL"))
    assert {"Source", "Issues", "Documentation", "Changelog"} <= set(urls)


def test_the_dependencies_tell_the_nnsight_story(wheel):
    """The base install resolves to an nnsight NDIF accepts and keeps the newest transformers;
    the nnterp-local extra takes one NDIF refuses, as its name, the README and the remote
    error say; the old default-looking ``[nnterp]`` extra is gone."""
    meta = _metadata(wheel)
    requirements = [Requirement(text) for text in meta.get_all("Requires-Dist")]
    assert "nnterp" not in meta.get_all("Provides-Extra")
    assert "nnterp-local" in meta.get_all("Provides-Extra")
    base = {r.name: r.specifier for r in requirements if r.marker is None}
    local = {
        r.name: r.specifier
        for r in requirements
        if r.marker is not None and r.marker.evaluate({"extra": "nnterp-local"})
    }
    ndif = SpecifierSet(NDIF_NNSIGHT)
    assert "0.8.1" in base["nnsight"] and "0.8.1" in ndif and "0.7.0" in base["nnsight"]
    assert "0.7.0" in local["nnsight"] and not any(
        version in local["nnsight"] and version in ndif for version in ("0.8.0", "0.8.1", "0.8.9")
    )
    assert "nnterp" in local
    for version in ("5.15.0", "5.22.2", "5.23.0", "5.25.0"):  # Colab's; the newest checked
        assert version in base["transformers"], version


@pytest.mark.slow
def test_the_wheel_installs_outside_the_repository_and_runs_the_demo(wheel, tmp_path):
    """Into a fresh venv in a temporary folder, with this environment's packages visible
    beneath it (its dependencies, not this checkout): the installed copy runs the demo."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # A plain path line: this environment's site-packages without its .pth files, so an
    # editable install of this checkout is not on the path.
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_CONSTRAINT")}
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", "--no-cache-dir", str(wheel)],
        check=True, env={**env, "PIP_CONFIG_FILE": os.devnull}, timeout=300,
    )  # fmt: skip
    where = subprocess.run(
        [python, "-c", "import murano_widgets; print(murano_widgets.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True, env=env,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(venv), where
    page = tmp_path / "demo.html"
    done = subprocess.run(
        [venv / "bin" / "murano-widgets", "demo", "--out", str(page)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
        env={**env, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Paris" in done.stdout and page.is_file()
    assert "murano" in page.read_text(encoding="utf-8")


def test_the_citation_cites_this_version():
    """CITATION.cff (Citation File Format 1.2.0) names the version being released."""
    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert str(citation["version"]) == __version__, "CITATION.cff's version: docs/release.md"
    assert citation["title"] and citation["authors"] and citation["message"]
    assert citation["license"] == "MIT"
