"""The options the entry points forward are declared once (murano_widgets/options.py), equal to
the parameters they reach, and a type checker sees them: a misspelled option in a user's
notebook code is an error before it runs."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import typing

import pytest
import torch

from murano_widgets import (
    Generation,
    LiveSession,
    LogitLens,
    load_demo_model,
    run_logit_lens,
    show_logit_lens,
)
from murano_widgets.generation import GENERATION_KEYWORDS
from murano_widgets.options import (
    GenerateOptions,
    PromptOptions,
    RunOptions,
    ShowOptions,
    StepOptions,
)


@pytest.fixture(scope="module")
def demo():
    return load_demo_model()


def _keywords(function, leave_out=()):
    return {
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        and name not in {"self", "model", "prompts", "layers", *leave_out}
    }


def test_each_option_set_is_the_parameters_it_forwards_to():
    assert set(StepOptions.__annotations__) == _keywords(LogitLens.__init__, {"lens"})
    # The generation options one by one are the record's fields.
    assert set(GenerateOptions.__annotations__) == set(GENERATION_KEYWORDS)
    assert set(GENERATION_KEYWORDS) == _keywords(Generation)
    assert set(RunOptions.__annotations__) == set(StepOptions.__annotations__) | set(
        GenerateOptions.__annotations__
    )
    # The lens and the generation record are parameters wherever they are taken.
    session = _keywords(LiveSession.__init__)
    assert session == {"lens", "generation"}
    run = _keywords(run_logit_lens)
    assert session <= run
    assert set(PromptOptions.__annotations__) == run - session
    # show_logit_lens forwards everything but its own parameters (lens among them).
    assert set(ShowOptions.__annotations__) == (set(RunOptions.__annotations__) | run) - _keywords(
        show_logit_lens
    )
    assert "lens" in _keywords(show_logit_lens)


def test_one_lens_in_is_one_result_out_for_a_type_checker():
    """run_logit_lens's overloads: a lens (or none) gives a LogitLensResult, lenses by name a
    LensResults; the implementation's own signature is their union."""
    overloads = typing.get_overloads(run_logit_lens)
    assert [(o.__annotations__["lens"], o.__annotations__["return"]) for o in overloads] == [
        ("Lens | None", "LogitLensResult"),
        ("Mapping[str, Lens | None]", "LensResults"),
    ]
    signature = inspect.signature(run_logit_lens)
    assert {name for name in signature.parameters} == {
        name for o in overloads for name in inspect.signature(o).parameters
    }


def test_the_generation_record_and_its_keywords_are_one_request(demo):
    """generation=Generation(...) and the same options as keywords run the same request; both
    at once, or a bad option in the record, are refused before any model work."""
    prompt = "The capital of France is"
    record = run_logit_lens(demo, prompt, generation=Generation(generate=3), top_k=2)
    keywords = run_logit_lens(demo, prompt, generate=3, top_k=2)
    assert record.generated_texts == keywords.generated_texts
    assert record.generation_starts == keywords.generation_starts
    assert torch.equal(record.max_probs.nan_to_num(-1), keywords.max_probs.nan_to_num(-1))
    with pytest.raises(TypeError, match="not both"):
        run_logit_lens(demo, prompt, generation=Generation(generate=3), generate=3)
    with pytest.raises(TypeError, match=r"generation must be a murano_widgets\.Generation"):
        LiveSession(demo, generation={"generate": 3})
    with pytest.raises(ValueError, match="temperature"):
        Generation(generate=3, temperature=0.5)
    session = LiveSession(demo, generate=2, lens=None)
    assert session.generation is not None and session.generation.max_new_tokens == 2


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
