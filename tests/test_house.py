"""The house: no import circle runs through the step, the backends or generation, and every
folder of the package says what it holds (the registry's field list: test_metrics.py)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import murano_widgets

PACKAGE = Path(murano_widgets.__file__).parent
ROOT = PACKAGE.parent


def _module_graph() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports, lazy imports included
    (read from the source, not by importing)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                raise AssertionError(f"{name} imports relatively: the package imports absolutely")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("murano_"):
                found.add(node.module)
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {module for module in found if module in modules}
    return graph


def test_no_import_circle_runs_through_the_step_the_backends_or_generation():
    graph = _module_graph()
    watched = [m for m in graph if m.split(".")[1:2] in (["step"], ["backends"], ["generation"])]
    assert len(watched) >= 7, watched

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            module = todo.pop()
            for nxt in graph[module]:
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    circles = [m for m in watched if reaches(m, m)]
    assert circles == [], f"import circles through {circles}"


def test_every_folder_of_the_package_says_what_it_holds():
    for folder in PACKAGE.iterdir():
        if folder.is_dir() and any(folder.glob("*.py")):
            init = folder / "__init__.py"
            assert init.is_file(), f"{folder.name}/ has no __init__.py"
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
            assert doc and len(doc) > 80, f"{folder.name}/__init__.py says nothing of the folder"


def test_the_version_is_written_once_and_npm_repeats_it():
    """murano_widgets/_version.py holds the version; the wheel's metadata is read from it by
    hatch (not written again in pyproject.toml), and npm's own field must say the same."""
    from hatchling.metadata.core import ProjectMetadata
    from hatchling.plugin.manager import PluginManager

    # What a build would write into the wheel's METADATA, computed by hatch itself.
    metadata = ProjectMetadata(str(ROOT), PluginManager())
    assert "version" not in metadata.config["project"], "pyproject.toml writes the version again"
    assert metadata.hatch.version.config == {"path": "murano_widgets/_version.py"}
    assert metadata.version == murano_widgets.__version__
    package_json = json.loads((ROOT / "js" / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text(encoding="utf-8"))
    assert package_json["version"] == murano_widgets.__version__, "js/package.json's version"
    assert lock["version"] == lock["packages"][""]["version"] == package_json["version"], (
        "js/package-lock.json's version: run npm install in js/ after changing package.json's"
    )


def test_the_package_says_it_is_typed():
    """PEP 561: the marker that tells a user's type checker to read the package's annotations
    (the wheel ships it: tests/test_cli.py's installed-wheel test)."""
    assert (PACKAGE / "py.typed").is_file()
