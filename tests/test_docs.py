"""The documentation's promises that need no site build: ``help(show_logit_lens)`` explains
every option it takes, and every public name has an entry in the generated API reference.

The site itself (built with ``mkdocs build --strict``, its notebook pages in Chromium) is tested
by ``tests/docs/`` through ``bash .ci/docs.sh``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
# The sub-modules whose names users import (the README and guides say `from murano_widgets.run
# import run_logit_lens`, `murano_widgets.live.concat_results`, ...): each of their __all__ has
# a reference entry too, under the module or, for a name the package re-exports, at the top.
PUBLIC_SUBMODULES = [
    "murano_widgets.run",
    "murano_widgets.live",
    "murano_widgets.dataset",
    "murano_widgets.lenses",
    "murano_widgets.attribution",
    "murano_widgets.metrics",
    "murano_widgets.results",
    "murano_widgets.options",
    "murano_widgets.backends.architectures",
    "murano_widgets.backends.nnsight",
    "murano_widgets.demo_model",
]
DIRECTIVE = re.compile(r"^:::\s+(?P<path>[\w.]+)\s*$", re.M)
OPTION_ITEM = re.compile(r"^\s*- ``(?P<name>\w+)``: \S", re.M)


def _own_parameters(function, leave_out: set[str]) -> list[str]:
    """A callable's named parameters (no ``*args``/``**kwargs``), in order."""
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        and name not in leave_out
    ]


def _forwarded_options() -> list[str]:
    """What ``show_logit_lens(**options)`` forwards: run_logit_lens's named parameters, the
    generation options one by one (the fields of its ``generation=`` record, which its
    ``**options`` also takes), then those of the LogitLens step, derived from the signatures,
    less those show_logit_lens names itself (``lens``: its Args explain them)."""
    from murano_widgets import Generation, LogitLens, show_logit_lens
    from murano_widgets.run import run_logit_lens

    own = set(_own_parameters(show_logit_lens, set()))
    run = _own_parameters(run_logit_lens, {"model", "prompts", "layers"} | own)
    run += _own_parameters(Generation, own)
    step = _own_parameters(LogitLens.__init__, {"self", "model", "layers"} | own)
    return run + [name for name in step if name not in run]


def _args_section(doc: str) -> str:
    """The ``Args:`` section of a Google-style docstring (up to the next section)."""
    found = re.search(r"^    Args:\n(?P<body>.*?)(?=^    \w[\w ]*:\n|\Z)", doc, re.M | re.S)
    assert found, "no Args: section"
    return found["body"]


def test_forwarded_options_are_derived_from_the_signatures():
    """Guards the derivation: it finds what the step and run_logit_lens really take (a
    derivation that found nothing would make the next test pass)."""
    options = _forwarded_options()
    for name in ("answers", "generate", "chat", "top_k", "max_chunk_bytes", "decompose", "targets"):
        assert name in options, options
    # The step's lens= is show_logit_lens's own parameter, explained under its Args.
    assert "model" not in options and "self" not in options and "lens" not in options
    assert len(options) == len(set(options)) >= 20, options


def test_show_logit_lens_docstring_explains_every_option():
    """``help(show_logit_lens)`` and ``show_logit_lens?`` show the docstring: each of its own
    parameters has an ``name:`` entry under Args, and each option that ``**options`` forwards
    (to run_logit_lens and the step) a ``- ``name``: meaning`` item."""
    from murano_widgets import show_logit_lens

    doc = inspect.getdoc(show_logit_lens)
    assert doc is not None
    args = _args_section("    " + doc.replace("\n", "\n    "))
    own = _own_parameters(show_logit_lens, set())
    missing = [name for name in own if not re.search(rf"^        {name}: \S", args, re.M)]
    assert not missing, f"show_logit_lens's Args do not explain {missing}"
    listed = OPTION_ITEM.findall(args)
    missing = [name for name in _forwarded_options() if name not in listed]
    assert not missing, (
        f"show_logit_lens(**options) forwards {missing}, which its docstring does not explain: "
        "add a '- ``name``: what it does' item under **options"
    )
    unknown = [name for name in listed if name not in _forwarded_options()]
    assert not unknown, f"the docstring explains options nothing takes: {unknown}"


def _documented() -> set[str]:
    """Every object path with a ``::: path`` entry on the reference pages."""
    paths = set()
    for page in sorted(REFERENCE.glob("*.md")):
        paths.update(DIRECTIVE.findall(page.read_text(encoding="utf-8")))
    return paths


def test_every_reference_entry_names_a_real_object():
    """An entry for a name that is gone fails mkdocs build --strict too; this says which."""
    wrong = []
    for path in sorted(_documented()):
        module_name, _, attribute = path.rpartition(".")
        try:
            module = importlib.import_module(path)
        except ImportError:
            module = importlib.import_module(module_name)
            if not hasattr(module, attribute):
                wrong.append(path)
    assert not wrong, f"reference entries for names that do not exist: {wrong}"


@pytest.mark.parametrize("module_name", ["murano_widgets", *PUBLIC_SUBMODULES])
def test_every_public_name_has_a_reference_entry(module_name):
    import murano_widgets

    documented = _documented()
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert names, f"{module_name} has an empty __all__"
    # A name the package itself exports is documented once, at the top.
    top = {id(getattr(murano_widgets, name)): name for name in murano_widgets.__all__}
    missing = []
    for name in names:
        if f"{module_name}.{name}" in documented:
            continue
        value = getattr(module, name)
        at_top = top.get(id(value))
        if module_name != "murano_widgets" and at_top and f"murano_widgets.{at_top}" in documented:
            continue
        missing.append(name)
    assert not missing, (
        f"{module_name}'s public names {missing} have no entry in docs/reference/*.md: add "
        f"'::: {module_name}.<name>' to the page where it belongs"
    )
