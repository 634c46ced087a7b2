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


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__.py``)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _module_graph() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports where the import runs
    (read from the source, not by importing)."""
    modules = _modules()
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


# ---------------------------------------------------------------------------------------------
# No private name crosses a module; no long function without a reason; the layers as drawn


#: Private names still imported from another module, each with why (none now: issue 48 made
#: every shared name public). Take an entry off once it is gone (the test says which are).
PRIVATE_IMPORTS_ALLOWED: dict[str, str] = {}


def _private_imports(source: str, module: str, modules: set[str]) -> set[str]:
    """``"importer <- module.name"`` for each private name (``_x``, not ``__x__``) that
    ``source`` (the module ``module``) imports from another module of the package, where the
    import runs or not. A private *module* (``murano_widgets._checks``) is the package's own
    shared code, not a private name, and may be imported."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.module == module:
            continue
        if not (node.module or "").startswith("murano_widgets"):
            continue
        for alias in node.names:
            name = alias.name
            private = name.startswith("_") and not name.startswith("__")
            if private and f"{node.module}.{name}" not in modules:
                found.add(f"{module} <- {node.module}.{name}")
    return found


def test_the_private_import_finder():
    source = """
from murano_widgets.a import public, _private, __version__
from murano_widgets import _checks
from murano_widgets.m import _own
def f():
    from murano_widgets.b import _late
"""
    modules = {"murano_widgets.a", "murano_widgets.b", "murano_widgets._checks"}
    assert _private_imports(source, "murano_widgets.m", modules) == {
        "murano_widgets.m <- murano_widgets.a._private",
        "murano_widgets.m <- murano_widgets.b._late",
    }


def test_no_private_name_is_imported_across_modules():
    """A helper two modules share is public in the module it lives in (or moved to where both
    can reach it): a private name is the module's own, free to change without a search."""
    modules = _modules()
    found = set()
    for name, path in modules.items():
        found |= _private_imports(path.read_text(encoding="utf-8"), name, set(modules))
    new = sorted(found - set(PRIVATE_IMPORTS_ALLOWED))
    gone = sorted(set(PRIVATE_IMPORTS_ALLOWED) - found)
    assert not new, f"private names imported across modules (make them public): {new}"
    assert not gone, f"allowed private imports that are gone (take them off the list): {gone}"


#: The most lines a function's code may run to (its docstring not counted: a public function's
#: Args are documentation, not code to read).
LONGEST_FUNCTION = 100

#: Functions over that, each with why it is read best as one piece (or who is splitting it).
LONG_FUNCTIONS = {
    "murano_widgets/demo_model/train.py::model_card": (
        "the demo model's card: one Markdown template filled in order, read as the page it writes"
    ),
    "murano_widgets/exercises/checks.py::check_top1": (
        "an exercise's check: the tokens' checks, then the table of the student's known "
        "mistakes, each rebuilt from the model, in the order an answer fails them"
    ),
}


def _long_functions(source: str, limit: int) -> dict[str, int]:
    """``qualified name -> lines`` of each function (methods and nested ones too) whose code,
    from its first statement after the docstring to its end, runs over ``limit`` lines."""
    found = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = child.body
                if (
                    len(body) > 1
                    and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)
                ):
                    body = body[1:]
                lines = (child.end_lineno or child.lineno) - body[0].lineno + 1
                if lines > limit:
                    found[prefix + child.name] = lines
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_long_function_finder():
    body = "\n".join(f"    x = {i}" for i in range(5))
    source = f'def short():\n    """Doc.\n\n    More.\n    """\n{body}\n'
    source += f"class K:\n    def method(self):\n{body.replace('    ', '        ')}\n"
    assert _long_functions(source, 5) == {}
    assert _long_functions(source, 4) == {"short": 5, "K.method": 5}


def test_no_function_runs_over_a_hundred_lines_without_a_reason():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for name, lines in _long_functions(
            path.read_text(encoding="utf-8"), LONGEST_FUNCTION
        ).items():
            found[f"{where}::{name}"] = lines
    new = {name: lines for name, lines in found.items() if name not in LONG_FUNCTIONS}
    gone = sorted(set(LONG_FUNCTIONS) - set(found))
    assert not new, (
        f"functions over {LONGEST_FUNCTION} lines of code (split them into named steps, or "
        f"give the reason in LONG_FUNCTIONS): {new}"
    )
    assert not gone, f"LONG_FUNCTIONS entries that are short now (take them off): {gone}"


CONTRIBUTING = ROOT / "docs" / "contributing.md"


def _drawn_layers() -> tuple[list[list[str]], set[tuple[str, str]]]:
    """The contributors' map's drawing (docs/contributing.md, "The layers"): its layers top to
    bottom, each the folders (``dataset/``) and top-level modules (``plot``) in it, and the
    imports drawn as running upwards, ``(importer, imported)``."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    drawing = text.split("### The layers", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    layers: list[list[str]] = []
    upwards = set()
    for line in drawing.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) == 4:  # "│ name │ members │": a row, or a name-less row that goes on
            if cells[1]:
                layers.append([])
            layers[-1] += cells[2].split()
        elif "──▶" in line:
            importer, rest = line.split("──▶")
            upwards.add((importer.strip(), rest.split()[0]))
    return layers, upwards


def _placed_as(module: str, packages: set[str]) -> str:
    """A module's place in the drawing: its top-level folder (``dataset/``) or module
    (``plot``); the package's ``__init__`` is ``__init__``."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    return f"{parts[0]}/" if f"murano_widgets.{parts[0]}" in packages else parts[0]


def test_the_layers_drawn_in_the_contributors_map_are_the_imports():
    layers, upwards = _drawn_layers()
    level = {member: depth for depth, members in enumerate(layers) for member in members}
    assert len(level) == sum(len(members) for members in layers), "a member drawn twice"
    modules = _modules()
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    places = {_placed_as(module, packages) for module in modules}
    assert places == set(level), (
        f"not drawn: {sorted(places - set(level))}; drawn but gone: {sorted(set(level) - places)}"
    )
    found = set()
    for module, imported in _module_graph().items():
        for other in imported:
            a, b = _placed_as(module, packages), _placed_as(other, packages)
            if level[b] < level[a]:  # a lower layer (drawn further down) importing a higher one
                found.add((a, b))
    assert found <= upwards, f"imports running upwards, not drawn: {sorted(found - upwards)}"
    assert upwards <= found, f"drawn upward imports that are gone: {sorted(upwards - found)}"


def test_the_contributors_map_has_one_line_per_module():
    """docs/contributing.md's "The modules, one line each": every module of the package (but a
    folder's ``__init__.py``, which says what the folder holds) on one line, once."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    section = text.split("### The modules, one line each", 1)[1].split("\n## ", 1)[0]
    listed = [line.split("`")[1] for line in section.splitlines() if line.startswith("- `")]
    expected = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or path.parent == PACKAGE
    } | {"demo_model/__init__.py"}
    twice = sorted({name for name in listed if listed.count(name) > 1})
    assert not twice, f"listed twice: {twice}"
    assert set(listed) == expected, (
        f"not listed: {sorted(expected - set(listed))}; "
        f"listed but gone: {sorted(set(listed) - expected)}"
    )
