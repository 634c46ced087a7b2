"""The house: the package's import circles are exactly the deliberate ones (none through the
step, the backends or generation), every folder of the package says what it holds, the version
is written once and the package says it is typed (the registry's field list: test_metrics.py)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import murano_widgets

PACKAGE = Path(murano_widgets.__file__).parent
ROOT = PACKAGE.parent


#: The import circles the package keeps on purpose (at most two), each with why. A circle is
#: a set of modules each of which reaches the others through imports that run (at the top or
#: inside a function; an ``if TYPE_CHECKING:`` import never runs).
DELIBERATE_CIRCLES = {
    # A result draws itself (LogitLensResult.plot, LensResults.plot import plot inside the
    # method, at call time), and plot_logit_lens reads any result through _adapters, which
    # knows the result classes: the method is where users look for the figure, and the figure
    # code stays out of the data class.
    frozenset(
        {
            "murano_widgets.results.result",
            "murano_widgets.results.lenses",
            "murano_widgets.plot",
            "murano_widgets._adapters",
        }
    ),
}


def _is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(source: str) -> set[str]:
    """The ``murano_widgets`` names a module's source imports where the import runs: at the
    top, inside functions and classes (``ast.walk`` reaches them), not in the body of an
    ``if TYPE_CHECKING:`` (only a type checker reads it). ``from a import b`` names both ``a``
    and ``a.b`` (``b`` may be a module)."""
    tree = ast.parse(source)
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and _is_type_checking(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError("a relative import: the package imports absolutely")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("murano_"):
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("murano_")}
    return found


def _module_graph() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports where the import runs
    (read from the source, not by importing)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph = {}
    for name, path in modules.items():
        try:
            found = _imports_of(path.read_text(encoding="utf-8"))
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None
        graph[name] = {module for module in found if module in modules}
    return graph


def _circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The graph's import circles: each set of modules that all reach one another (a module
    importing itself is one). The package has about a hundred modules: a search from each is
    quick and plain."""

    def reached(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        return seen

    reach = {module: reached(module) for module in graph}
    return {
        frozenset({module} | {other for other in reach[module] if module in reach[other]})
        for module in graph
        if module in reach[module]
    }


def test_the_import_graph_reads_every_import_that_runs():
    source = """
from typing import TYPE_CHECKING
from murano_widgets.a import b
import murano_widgets.c
if TYPE_CHECKING:
    from murano_widgets.typing_only import T
def f():
    from murano_widgets.lazy import g
class K:
    def m(self):
        import murano_widgets.deep
"""
    assert _imports_of(source) == {
        "murano_widgets.a",
        "murano_widgets.a.b",
        "murano_widgets.c",
        "murano_widgets.lazy",
        "murano_widgets.lazy.g",
        "murano_widgets.deep",
    }
    # The circle finder on a graph whose components are known by hand.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"d"}}
    assert _circles(graph) == {frozenset("abc"), frozenset("e")}


def test_the_only_import_circles_are_the_deliberate_ones():
    graph = _module_graph()
    assert len(graph) > 60 and len(DELIBERATE_CIRCLES) <= 2, sorted(graph)
    circles = _circles(graph)
    unexpected = sorted(sorted(circle) for circle in circles - DELIBERATE_CIRCLES)
    gone = sorted(sorted(circle) for circle in DELIBERATE_CIRCLES - circles)
    assert not unexpected, f"import circles: {unexpected}"
    assert not gone, f"deliberate circles that are gone (take them off the list): {gone}"
    # None of them runs through the step, the backends or generation: the core imports none of
    # the views.
    core = {"step", "backends", "generation"}
    assert not [m for circle in circles for m in circle if set(m.split(".")[1:2]) & core]


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


def test_architectures_are_known_in_one_place():
    """Every table keyed by Hugging Face model types is a view of
    ``backends/architectures.py``'s one record per type: no other module of the package spells
    out three or more of the known model types as the keys of a dict, or as a list or set of
    strings (a second table that a new architecture would have to be added to)."""
    from murano_widgets.backends import architectures

    known = set(architectures.ARCHITECTURES)
    home = PACKAGE / "backends" / "architectures.py"
    tables = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                items = node.keys
            elif isinstance(node, (ast.List, ast.Set, ast.Tuple)):
                items = node.elts
            else:
                continue
            named = {
                item.value
                for item in items
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            }
            if len(named & known) >= 3:
                tables.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(named & known)}")
    assert not tables, tables
    # Every architecture the nnsight backend reads can also be split into attention and MLP.
    assert set(architectures.LAYOUTS) <= set(architectures.SUBLAYERS)


def test_only_the_results_package_tells_one_lens_from_several():
    """Nothing outside ``results/`` asks whether it holds one lens or several
    (``isinstance(x, LensResults)``): every module reads a result through ``lenses_of`` (name →
    result, one lens one entry) and gives back the kind it took with ``as_given``."""
    home = PACKAGE / "results"
    forks = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if home in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
                and "LensResults" in ast.unparse(node.args[1])
            ):
                forks.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not forks, forks


# ------------------------------------------------------------------------------------------------
# The heatmap's view state: one table (murano_widgets/widgets/view_state.py)

VIEW_STATE_JS = ROOT / "js" / "src" / "heatmap" / "view" / "view_state.js"


def _js_view_traits() -> list[str]:
    """The names of the front end's table of view traits, in order."""
    source = VIEW_STATE_JS.read_text(encoding="utf-8")
    body = source.split("export const VIEW_TRAITS = Object.freeze({", 1)[1].split("\n});", 1)[0]
    return re.findall(r"^  (\w+): ", body, re.MULTILINE)


def _annotated_for_type_checkers(cls_name: str, path: Path) -> set[str]:
    """The names a class declares under ``if TYPE_CHECKING:`` in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name]
    return {
        target.target.id
        for node in cls.body
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for target in node.body
        if isinstance(target, ast.AnnAssign) and isinstance(target.target, ast.Name)
    }


def test_the_view_traits_are_named_in_one_table_that_both_sides_read():
    from murano_widgets import LogitLensWidget
    from murano_widgets.widgets.view_state import VIEW_TRAITS, ViewOptions

    names = [line.name for line in VIEW_TRAITS]
    old = [name for line in VIEW_TRAITS for name in line.old_names]
    # The front end's table lists the same names, in the same order; its store holds each.
    assert _js_view_traits() == names, "js/src/heatmap/view/view_state.js's VIEW_TRAITS"
    store = (VIEW_STATE_JS.parent / "store.js").read_text(encoding="utf-8")
    initial = store.split("export function initialState()", 1)[1].split("};", 1)[0]
    # (`position` is the grid's scroll: the scroller holds it, and reports it back.)
    kept = set(names) - {"position"}
    assert kept <= set(re.findall(r"(\w+): ", initial)), "store.js's initialState keys"
    # What type checkers read: the constructor's keywords and the class's attributes.
    assert set(ViewOptions.__annotations__) == {*names, *old}
    lens_py = PACKAGE / "widgets" / "lens.py"
    assert _annotated_for_type_checkers("LogitLensWidget", lens_py) == {
        *names,
        *old,
        "_view_traits",
    }
    # Each is a synced trait of the widget, with the table's default (else its type's).
    traits = LogitLensWidget.class_traits()
    for line in VIEW_TRAITS:
        assert traits[line.name].metadata.get("sync") is True, line.name
        assert isinstance(traits[line.name], line.kind), line.name
        if line.default is not None:
            assert traits[line.name].default_value == line.default, line.name


def test_a_new_view_trait_is_one_line_of_the_table(load_tiny):
    """A trait added to the table is synced, checked when set and when built, refused under a
    near-miss name, exported, and checked before a model runs: nothing else is written."""
    import traitlets

    from murano_widgets import LogitLens, LogitLensWidget, PromptBatch
    from murano_widgets.widgets.base import WidgetValueError
    from murano_widgets.widgets.view_state import (
        VIEW_TRAITS,
        Planned,
        ViewTrait,
        check_planned,
        trait_namespace,
    )

    def check_zoom(value, shown):
        if not 1 <= value <= shown.result.n_inputs + 2:
            raise WidgetValueError(f"zoom must be in 1..{shown.result.n_inputs + 2}; got {value}")
        return value

    def planned_zoom(value, plan):
        if value < 1:
            raise ValueError(f"zoom must be at least 1; got {value}")

    table = (*VIEW_TRAITS, ViewTrait("zoom", traitlets.Int, 1, check_zoom, planned_zoom))

    class Zoomed(LogitLensWidget):
        locals().update(trait_namespace(table))

    result = LogitLens(load_tiny("llama"), top_k=2)({"prompts": PromptBatch(["one two"])})
    result = result["logit_lens"]
    widget = Zoomed(result, zoom=2, metric="entropy")
    assert (widget.zoom, widget.metric) == (2, "entropy")
    assert widget.get_state()["zoom"] == 2  # synced to the front end
    assert Zoomed(result).zoom == 1  # the table's default
    with pytest.raises(WidgetValueError, match=r"zoom must be in 1\.\.3; got 9"):
        widget.zoom = 9
    assert widget.zoom == 2
    with pytest.raises(WidgetValueError, match=r"zoom must be in 1\.\.3; got 0"):
        Zoomed(result, zoom=0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'zom' \(did you mean 'zoom'"):
        Zoomed(result, zom=2)
    # The exported page starts from it.
    page = widget.to_html()
    state = page.split('<script type="application/json" id="murano-state">', 1)[1]
    assert json.loads(state.split("</script>", 1)[0])["state"]["zoom"] == 2
    # show_logit_lens's early check, before any model work.
    plan = Planned(
        n_prompts=1,
        layers=lambda: pytest.fail("no check here reads the layers"),
        targets=[],
        lens_names=lambda: ["logit"],
        chosen={"zoom": 0},
        chat=False,
        decompose=False,
    )
    with pytest.raises(ValueError, match="zoom must be at least 1; got 0"):
        check_planned(plan, table)
    # The table as it stands refuses the unknown keyword, and takes the renamed one.
    with pytest.raises(TypeError, match=r"LogitLensWidget\(\) got an unexpected keyword .*'zoom'"):
        LogitLensWidget(result, zoom=2)
    assert LogitLensWidget(result, lens_name="logit").lens_name == "logit"
    with pytest.raises(TypeError, match="got 'lens' twice, as lens= and lens_name="):
        LogitLensWidget(result, lens="logit", lens_name="logit")
