"""Installing the package into Colab's runtime changes nothing Colab preinstalled.

``.ci/colab.sh`` builds a venv with exactly Colab's packages (``.ci/colab-pins.txt``) and
installs the package's wheel into it as a user's pip does, writing pip's installation report
(``--report``, ``COLAB_INSTALL_REPORT``). A pinned package in that report is one pip upgraded
or downgraded: on Colab that asks for a runtime restart, and an ipywidgets 8 breaks Colab's
front end. nnsight is not preinstalled on Colab, so it (and what it needs) is installed.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import distribution, version
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.colab


def changed_pins(report: dict, pins: dict[str, str]) -> list[str]:
    """The pinned packages a pip installation report installs (pip lists a package it upgrades
    or downgrades among those it installs), each as "name pinned -> installed"."""
    changed = []
    for item in report["install"]:
        name = canonicalize_name(item["metadata"]["name"])
        if name in pins:
            changed.append(f"{name} {pins[name]} -> {item['metadata']['version']}")
    return changed


def test_changed_pins_reads_a_report():
    """The check on a report made here: a pinned package pip installs is named, with both
    versions; a package Colab does not have is not."""
    report = {
        "install": [
            {"metadata": {"name": "murano-widgets", "version": "0.1.0"}},
            {"metadata": {"name": "ipywidgets", "version": "8.1.9"}},
            {"metadata": {"name": "Traitlets", "version": "5.16.1"}},
            {"metadata": {"name": "nnsight", "version": "0.8.1"}},
        ]
    }
    pins = {"ipywidgets": "7.7.1", "traitlets": "5.7.1", "numpy": "2.1.3"}
    assert changed_pins(report, pins) == ["ipywidgets 7.7.1 -> 8.1.9", "traitlets 5.7.1 -> 5.16.1"]
    assert changed_pins({"install": report["install"][:1]}, pins) == []


@pytest.fixture(scope="module")
def report() -> dict:
    path = os.environ.get("COLAB_INSTALL_REPORT")
    if not path:
        pytest.fail("COLAB_INSTALL_REPORT is not set: run `bash .ci/colab.sh`")
    return json.loads(Path(path).read_text())


def test_installing_the_wheel_changes_no_preinstalled_package(report, pins):
    installed = {canonicalize_name(item["metadata"]["name"]) for item in report["install"]}
    assert "murano-widgets" in installed, f"the report installs no murano-widgets: {installed}"
    changed = changed_pins(report, pins)
    assert not changed, (
        "installing murano-widgets into Colab's runtime changes what Colab preinstalled "
        "(a runtime restart; ipywidgets 8 breaks Colab's front end): " + ", ".join(changed)
    )
    print("pip installed:", ", ".join(sorted(installed)))


def test_the_venv_is_colabs_runtime(pins):
    """What runs this suite is Colab's stack, after the package is installed."""
    wrong = {name: version(name) for name in pins if version(name) != pins[name]}
    assert not wrong, f"not Colab's versions: {wrong} (pinned: {pins})"


def test_the_suite_imports_the_installed_wheel():
    """The package under test is the installed wheel (its front end included), not the
    checkout's source folder."""
    import murano_widgets

    files = distribution("murano-widgets").locate_file("murano_widgets")
    assert Path(murano_widgets.__file__).parent == Path(str(files)), murano_widgets.__file__
    assert (Path(murano_widgets.__file__).parent / "static" / "logit_lens.js").is_file()
