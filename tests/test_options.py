"""The options the entry points forward are declared once (murano_widgets/options.py), equal to
the parameters they reach, and a type checker sees them: a misspelled option in a user's
notebook code is an error before it runs."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap

import pytest

from murano_widgets import LiveSession, LogitLens, run_logit_lens, show_logit_lens
from murano_widgets.options import (
    GenerateOptions,
    PromptOptions,
    RunOptions,
    ShowOptions,
    StepOptions,
)


def _keywords(function, leave_out=()):
    return {
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        and name not in {"self", "model", "prompts", "layers", *leave_out}
    }


def test_each_option_set_is_the_parameters_it_forwards_to():
    assert set(StepOptions.__annotations__) == _keywords(LogitLens.__init__, {"lens"})
    assert set(RunOptions.__annotations__) == set(StepOptions.__annotations__) | {"lens"}
    generation = _keywords(LiveSession.__init__)
    assert set(GenerateOptions.__annotations__) == generation
    run = _keywords(run_logit_lens)
    assert generation <= run
    assert set(PromptOptions.__annotations__) == run - generation
    # show_logit_lens forwards everything but its own parameters (lens among them).
    assert set(ShowOptions.__annotations__) == (run | _keywords(LogitLens.__init__)) - _keywords(
        show_logit_lens
    )
    assert "lens" in _keywords(show_logit_lens)


def test_each_entry_point_types_its_forwarded_options():
    for function, kind in [
        (run_logit_lens, "RunOptions"),
        (LiveSession.__init__, "RunOptions"),
        (show_logit_lens, "ShowOptions"),
    ]:
        (var,) = [
            p for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_KEYWORD
        ]
        assert var.annotation == f"Unpack[{kind}]", function


@pytest.mark.slow
def test_a_type_checker_refuses_a_misspelled_option_and_takes_the_right_ones(tmp_path):
    """mypy on a user's cell: the right calls (and a MuranoModel as the model) pass, a
    misspelled option and a value outside its choices are named."""
    user = tmp_path / "notebook_cell.py"
    user.write_text(
        textwrap.dedent(
            """
            from murano_widgets import (
                LiveSession, MuranoModel, load_demo_model, run_logit_lens, show_logit_lens,
            )

            model = load_demo_model()
            other = MuranoModel("gpt2")
            show_logit_lens(model, "The capital of France is", top_k=3, answers=[" Paris"])
            show_logit_lens(other, ["a", "b"], generate=4, do_sample=True, decompose=True)
            run_logit_lens(model, "x", positions="last", lens={"logit": None})
            LiveSession(model, targets=[" Paris"], generate=2)
            show_logit_lens(model, "x", top_kk=3)  # line 12
            run_logit_lens(model, "x", positions="first")  # line 13
            LiveSession(model, decompse=True)  # line 14
            """
        ),
        encoding="utf-8",
    )
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(user),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    errors = [line for line in found.stdout.splitlines() if ": error:" in line]
    lines = sorted(int(line.split(":")[1]) for line in errors)
    assert lines == [12, 13, 14], found.stdout
    assert 'Unexpected keyword argument "top_kk"' in found.stdout
    assert 'did you mean "decompose"' in found.stdout
