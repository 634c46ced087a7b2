"""Every lens side by side: ``lens={"logit": None, "tuned": tuned, ...}`` in one trace.

Each named lens's result must equal the step run with that lens alone, field by field (bit for
bit: the same rows, chunks and kernels); the lenses must share one trace; the KL between them
must equal an independent computation in plain transformers; and every entry point must accept
named lenses or say clearly that it does not.
"""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
import torch
from reference import ReferenceLens

from murano_widgets import (
    Lens,
    LensResults,
    LogitLens,
    LogitLensResult,
    PromptBatch,
    TunedLens,
    load_demo_model,
    load_demo_tuned_lens,
)
from murano_widgets.lenses.tuned import model_width
from murano_widgets.run import run_logit_lens

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two", "Alice met Bob. Alice gave"]
ANSWERS = [" Paris", [" three", " four"], " Bob"]


class RandomLinear(Lens):
    """A lens of a fixed random ``d × d`` matrix per layer (the shape of a Jacobian lens):
    ``h ↦ h + M_l h``, written here, outside the package."""

    kind = "random-linear"
    title = "Random linear lens"

    def __init__(self, n_layers: int, width: int, seed: int = 0, scale: float = 0.3) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.matrices = torch.randn(n_layers, width, width, generator=generator) * scale
        self.matrices /= math.sqrt(width)

    def translate(self, layer, hidden):
        return hidden + hidden @ self.matrices[layer].to(hidden.dtype).T


def _random_tuned(model, seed: int = 1) -> TunedLens:
    lens = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(seed)
    lens.weight.normal_(0.0, 0.05, generator=generator)
    lens.bias.normal_(0.0, 0.05, generator=generator)
    return lens


def assert_same_result(got: LogitLensResult, expected: LogitLensResult, where: str) -> None:
    """Every field of two results equal (NaN where NaN), answer sets included.

    Bit for bit, by construction: each lens's numbers come from the same batch, the same block
    outputs and the same chunks of positions (``max_chunk_bytes`` fixed), whether it runs alone
    or beside others, so every matmul has the same shape (tests/numerics.py says why shapes
    matter). A change that made the chunks depend on the number of lenses would fail here."""
    for item in fields(LogitLensResult):
        a, b = getattr(got, item.name), getattr(expected, item.name)
        what = f"{where}: {item.name}"
        if isinstance(b, torch.Tensor):
            assert isinstance(a, torch.Tensor) and a.dtype == b.dtype, what
            assert torch.equal(a, b) or torch.equal(a.nan_to_num(-7.0), b.nan_to_num(-7.0)), what
        elif item.name == "answer_sets" and b is not None:
            assert list(a) == list(b), what
            for name in b:
                for part in ("probs", "ranks", "token_probs", "token_ranks"):
                    x, y = getattr(a[name], part), getattr(b[name], part)
                    assert torch.equal(x.nan_to_num(-7.0), y.nan_to_num(-7.0)), f"{what}.{part}"
                assert a[name].answers == b[name].answers and a[name].token_ids == b[name].token_ids
        else:
            assert a == b, what


# ---------------------------------------------------------------------------------------------
# The step


# Multi-token targets on purpose (their first token is tracked, as with one lens); the step
# says so, which test_entry_points.py checks.
@pytest.mark.filterwarnings("ignore:targets .* are several tokens long:UserWarning")
@pytest.mark.parametrize("reduce_in_trace", [False, True])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_each_named_lens_equals_the_step_with_that_lens_alone(load_tiny, arch, reduce_in_trace):
    model = load_tiny(arch)
    lenses = {
        "logit": None,
        "tuned": _random_tuned(model),
        "linear": RandomLinear(model.n_layers, model_width(model)),
    }
    options = {
        "targets": [" Rome", " two"],
        "top_k": 3,
        "store_full_probs": True,
        "reduce_in_trace": reduce_in_trace,
        # Several chunks: the final distribution computed once per chunk is shared correctly.
        "max_chunk_bytes": 4 * model.vocab_size * 7,
    }
    batch = PromptBatch(PROMPTS, answers={"set": ANSWERS, "other": [None, " three", " Bob"]})
    together = LogitLens(model, lens=lenses, **options)({"prompts": batch})["logit_lens"]
    assert isinstance(together, LensResults) and together.names == ["logit", "tuned", "linear"]
    assert together.kl_between is None
    together.validate()
    for name, lens in lenses.items():
        alone = LogitLens(model, lens=lens, **options)({"prompts": batch})["logit_lens"]
        assert_same_result(together[name], alone, name)
    # The lenses really differ (except at the last layer, which no lens translates).
    logit, linear = together["logit"], together["linear"]
    assert not torch.equal(logit.max_probs[:-1].nan_to_num(0), linear.max_probs[:-1].nan_to_num(0))
    assert torch.equal(logit.max_probs[-1].nan_to_num(0), linear.max_probs[-1].nan_to_num(0))


def test_one_named_lens_gives_lens_results_and_one_lens_a_result(load_tiny):
    model = load_tiny("gpt2")
    assert isinstance(LogitLens(model).run(PROMPTS), LogitLensResult)
    one = LogitLens(model, lens={"mine": None}).run(PROMPTS)
    assert isinstance(one, LensResults) and one.names == ["mine"]
    assert_same_result(one["mine"], LogitLens(model).run(PROMPTS), "mine")
    assert one["mine"].lens_kind == "logit"


def test_the_lenses_share_one_trace(load_tiny, monkeypatch):
    """One forward pass for any number of lenses: the step's trace is counted."""
    model = load_tiny("llama")
    calls = []
    trace, plain = model.trace, model.block_outputs

    def counted(*args, **kwargs):
        calls.append(1)
        return trace(*args, **kwargs)

    def counted_plain(*args, **kwargs):
        calls.append(1)
        return plain(*args, **kwargs)

    monkeypatch.setattr(model, "trace", counted)
    monkeypatch.setattr(model, "block_outputs", counted_plain)
    lenses = {"logit": None, "a": _random_tuned(model, 1), "b": _random_tuned(model, 2)}
    for reduce_in_trace in (False, True):
        calls.clear()
        LogitLens(model, lens=lenses, reduce_in_trace=reduce_in_trace).run(PROMPTS, ANSWERS)
        assert len(calls) == 1
    calls.clear()
    for lens in lenses.values():
        LogitLens(model, lens=lens).run(PROMPTS)
    assert len(calls) == 3


def test_kl_between_lenses_equals_plain_transformers(load_tiny, tiny_model_dirs):
    """KL(a ‖ b) between two lenses, and between each and the model's output, at every cell:
    hooks on the blocks, the lens, the norm and lm_head in float64, one prompt at a time."""
    model = load_tiny("llama")
    linear = RandomLinear(model.n_layers, model_width(model))
    lenses = {"logit": None, "linear": linear}
    reference = ReferenceLens(tiny_model_dirs["llama"])
    for reduce_in_trace in (False, True):
        results = LogitLens(
            model, lens=lenses, kl_between_lenses=True, reduce_in_trace=reduce_in_trace
        ).run(PROMPTS)
        kl = results.kl_between
        assert set(kl) == {
            (a, b)
            for a in ("logit", "linear", "final")
            for b in ("logit", "linear", "final")
            if a != b
        }
        for p, prompt in enumerate(PROMPTS):
            captured: list[torch.Tensor] = []
            hooks = [
                block.register_forward_hook(
                    lambda _m, _i, out, into=captured: into.append(
                        out[0] if isinstance(out, tuple) else out
                    )
                )
                for block in reference.blocks
            ]
            ids = reference.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
            with torch.no_grad():
                output = reference.model(**ids)
            for hook in hooks:
                hook.remove()
            last = len(captured) - 1
            log_final = output.logits[0].double().log_softmax(-1)
            positions = results.positions(p)
            for layer, hidden in enumerate(captured):
                h = hidden[0]
                with torch.no_grad():
                    read = {
                        "logit": h,
                        "linear": h if layer == last else linear.translate(layer, h),
                    }
                    logs = {
                        name: reference.model.lm_head(reference.norm(x)).double().log_softmax(-1)
                        for name, x in read.items()
                    }
                logs["final"] = log_final
                for (a, b), values in kl.items():
                    expected = (logs[a].exp() * (logs[a] - logs[b])).sum(-1) / math.log(2)
                    got = values[layer, p, positions].double()
                    torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
        # KL(final ‖ lens) is each lens's kl_to_final, computed another way.
        for name in lenses:
            torch.testing.assert_close(
                kl[("final", name)], results[name].kl_to_final, atol=2e-4, rtol=1e-4, equal_nan=True
            )
        mask = results.attention_mask.bool()
        assert torch.isnan(kl[("logit", "linear")][:, ~mask]).all()
        assert (kl[("logit", "linear")][-1][mask] == 0).all()  # the last layer: one reading


def test_named_lenses_through_run_logit_lens_generation_and_chat(load_tiny):
    model = load_tiny("gpt2")
    lenses = {"logit": None, "tuned": _random_tuned(model)}
    both = run_logit_lens(model, PROMPTS[:2], lens=lenses, generate=3, answers=ANSWERS[:2])
    assert isinstance(both, LensResults)
    for name, lens in lenses.items():
        alone = run_logit_lens(model, PROMPTS[:2], lens=lens, generate=3, answers=ANSWERS[:2])
        assert_same_result(both[name], alone, name)
        assert both[name].generated_texts == alone.generated_texts is not None
    assert_same_result(
        run_logit_lens(model, "one two", lens=lenses)["tuned"],
        run_logit_lens(model, "one two", lens=lenses["tuned"]),
        "one prompt",
    )


def test_named_lenses_on_a_chat_with_generation(tiny_model_dirs):
    from test_chat import CHAT, CHAT_TEMPLATE

    from murano_widgets import MuranoModel

    model = MuranoModel(tiny_model_dirs["llama"], backend="nnsight")
    model.tokenizer.chat_template = CHAT_TEMPLATE
    lenses = {"logit": None, "t": _random_tuned(model)}
    both = run_logit_lens(model, chat=CHAT, lens=lenses, generate=2)
    for name, lens in lenses.items():
        alone = run_logit_lens(model, chat=CHAT, lens=lens, generate=2)
        assert_same_result(both[name], alone, name)
    assert both["t"].token_roles is not None and both["t"].generation_starts is not None


def test_lens_results_read_like_one_batch_and_plot_every_lens(load_tiny):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = load_tiny("gpt2")
    results = LogitLens(model, lens={"logit": None, "tuned": _random_tuned(model)}).run(PROMPTS)
    assert results.prompts == PROMPTS and results.layers == list(range(model.n_layers))
    assert results.n_inputs == 3 and results.lengths == results["tuned"].lengths
    assert "LensResults(['logit', 'tuned'], 3 prompts" in repr(results)
    cells = results.describe_cell(1, 0, 1)
    assert set(cells) == {"logit", "tuned"}
    assert cells["tuned"] == results["tuned"].describe_cell(1, 0, 1)
    assert results.describe_cell(1, 0, 1, lens="logit") == results["logit"].describe_cell(1, 0, 1)
    with pytest.raises(KeyError, match=r"no lens named 'jacobian'.*\['logit', 'tuned'\]"):
        results["jacobian"]
    figure = results.plot(prompt=1)
    titles = [ax.get_title(loc="left") for ax in figure.axes if ax.get_title(loc="left")]
    assert [t.split(":")[0] for t in titles] == ["Logit lens", "Tuned lens"]
    plt.close(figure)
    one = results.plot(prompt=1, lens="tuned")
    assert one.axes[0].get_title(loc="left").startswith("Tuned lens: ")
    plt.close(one)


def test_results_of_different_batches_are_refused(load_tiny):
    model = load_tiny("gpt2")
    a = LogitLens(model).run(PROMPTS)
    b = LogitLens(model).run([*PROMPTS[:2], "another prompt"])
    with pytest.raises(
        ValueError, match=r"LensResults\['b'\]\.(attention_mask|input_ids|final_tokens)"
    ):
        LensResults({"a": a, "b": b}).validate()
    c = LogitLens(model, layers=[0, 1]).run(PROMPTS)
    with pytest.raises(ValueError, match=r"LensResults\['c'\] has layers \[0, 1\]"):
        LensResults({"a": a, "c": c}).validate()


# ---------------------------------------------------------------------------------------------
# Bad input, before any model work


@pytest.mark.parametrize(
    ("lens", "error", "match"),
    [
        ({}, ValueError, r"lens is an empty dict"),
        ({"": None}, ValueError, r"lens has the name ''"),
        ({"  ": None}, ValueError, r"lens has the name '  '"),
        ({1: None}, TypeError, r"lens must map names \(non-empty strings\).*int 1"),
        ({"final": None}, ValueError, r"lens has a lens named 'final'"),
        ({"a": "folder"}, TypeError, r"lens\['a'\] must be None.*TunedLens.load\('folder'"),
        ({"a": 3}, TypeError, r"lens\['a'\] must be None .*got int"),
        ([None, None], TypeError, r"lens must be None .*got list"),
    ],
)
def test_bad_named_lenses_are_refused_before_the_model_runs(load_tiny, lens, error, match):
    model = load_tiny("gpt2")
    with pytest.raises(error, match=match):
        LogitLens(model, lens=lens)
    with pytest.raises(error, match=match):
        run_logit_lens(model, PROMPTS, lens=lens)


def test_a_named_lens_for_another_model_is_named(load_tiny):
    model = load_tiny("gpt2")
    demo = load_demo_model()
    with pytest.raises(ValueError):
        LogitLens(model, lens={"logit": None, "tuned": load_demo_tuned_lens(demo)})


def test_kl_between_needs_named_lenses(load_tiny):
    model = load_tiny("gpt2")
    with pytest.raises(ValueError, match=r"kl_between_lenses=True .*lens=\{'logit': None"):
        LogitLens(model, kl_between_lenses=True)
    with pytest.raises(TypeError, match="kl_between_lenses"):
        LogitLens(model, lens={"a": None}, kl_between_lenses="yes")


def test_where_one_lens_is_taken_a_dict_says_where_named_lenses_go(load_tiny):
    from murano_widgets import compare_lenses

    model = load_tiny("gpt2")
    with pytest.raises(TypeError, match=r"lens_b must be None .* one murano_widgets.Lens here.*"):
        compare_lenses(model, PROMPTS, lens_b={"a": None})


# ---------------------------------------------------------------------------------------------
# The widget and its payload


@pytest.fixture(scope="module")
def demo_lenses():
    model = load_demo_model()
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(model)}
    prompts = ["The capital of France is", "Monday, Tuesday,"]
    results = LogitLens(model, lens=lenses).run(prompts, [" Paris", " Wednesday"])
    return model, lenses, prompts, results


def _decoded_strings(payload, lens_index: int) -> dict[str, np.ndarray]:
    """One lens's sections of a payload as values, token sections as strings."""
    from murano_widgets.payload.lens import SHARED_SECTIONS, decode_sections

    meta = payload.meta
    prefix = meta["lenses"][lens_index]["prefix"]
    out = {}
    for name in meta["sections"]:
        own = name[len(prefix) :] if prefix and name.startswith(prefix) else name
        if (prefix and not name.startswith(prefix) and name not in SHARED_SECTIONS) or (
            not prefix and "/" in name
        ):
            continue
        values = decode_sections(meta, {name: payload.arrays[name].tobytes()})[name]
        if own in ("input_ids", "final_tokens", "predicted_tokens", "topk_tokens"):
            values = np.asarray(meta["tokens"], dtype=object)[values]
        out[own] = values
    return out


def test_a_payload_of_lenses_holds_each_lens_as_its_own_payload_would(demo_lenses):
    from murano_widgets.payload.lens import LensPayload

    _, _, _, results = demo_lenses
    together = LensPayload.from_result(results)
    assert together.meta["version"] == 3 and together.lens_names == ["logit", "tuned"]
    assert [lens["title"] for lens in together.meta["lenses"]] == ["Logit lens", "Tuned lens"]
    for i, name in enumerate(results):
        alone = LensPayload.from_result(results[name])
        mine, theirs = _decoded_strings(together, i), _decoded_strings(alone, 0)
        assert set(mine) == set(theirs), name
        for section, values in theirs.items():
            assert np.array_equal(mine[section], values), f"{name}: {section}"
        assert (
            together.meta["lenses"][i].get("metrics", together.meta["metrics"])
            == (alone.meta["metrics"])
        )
    # The per-position sections go once; the second lens's own sections are prefixed.
    assert "1/max_probs" in together.base_sections() and "1/input_ids" not in together.arrays
    assert "1/entropy" in together.all_sections() and "1/entropy" not in together.base_sections()


def test_a_single_lens_payload_is_what_it_was(demo_lenses):
    """Bytes a cell of one lens: the sections of a one-lens payload are the same whether the
    result came alone or out of lenses side by side, and no section is prefixed."""
    from murano_widgets.payload.lens import LensPayload

    model, _, prompts, results = demo_lenses
    alone = LogitLens(model).run(prompts, [" Paris", " Wednesday"])
    a, b = LensPayload.from_result(alone), LensPayload.from_result(results["logit"])
    assert a.meta["lenses"] == [
        {"name": "logit", "kind": "logit", "title": "Logit lens", "prefix": ""}
    ]
    assert a.all_sections() == b.all_sections()
    assert not any("/" in name for name in a.arrays)


def test_the_widget_switches_lenses_from_python_and_describes_the_pin_under_each(demo_lenses):
    from murano_widgets import LogitLensWidget
    from murano_widgets.widgets.base import WidgetValueError

    _, _, _, results = demo_lenses
    widget = LogitLensWidget(results)
    assert widget.lens_names == ["logit", "tuned"] and widget.lens_name == "logit"
    assert widget.result is results["logit"] and widget.results is results
    widget.selected = {"prompt": 0, "layer_index": 1, "position": 2}
    assert widget.selected["lens"] == "logit"
    assert (
        widget.selected["predicted_token"]
        == results["logit"].describe_cell(0, 1, 2)["predicted_token"]
    )
    widget.lens_name = "tuned"
    assert widget.result is results["tuned"]
    expected = {**results["tuned"].describe_cell(0, 1, 2), "lens": "tuned"}
    assert widget.selected == expected
    with pytest.raises(
        WidgetValueError,
        match=r"lens_name must be one of the widget's lenses \['logit', 'tuned'\]; got 'jacobian'",
    ):
        widget.lens_name = "jacobian"
    assert widget.lens_name == "tuned"
    assert "lens='tuned' of ['logit', 'tuned']" in repr(widget)
    state = widget._standalone_state()
    assert state["lens"] == "tuned" and state["_meta"]["lenses"][1]["name"] == "tuned"
    assert widget._default_title() == "Logit lens · Tuned lens — toy-world"
    first = LogitLensWidget(results, lens_name="tuned")
    assert first.lens_name == "tuned"
    with pytest.raises(WidgetValueError, match="lens_name must be one of"):
        LogitLensWidget(results, lens_name="nope")
    # One lens: named by its kind, and its pin carries no lens name.
    one = LogitLensWidget(results["tuned"])
    assert one.lens_names == ["tuned"] and one.lens_name == "tuned"
    one.selected = {"prompt": 0, "layer_index": 1, "position": 2}
    assert "lens" not in one.selected


def test_show_logit_lens_with_named_lenses(demo_lenses, monkeypatch):
    from murano_widgets import show_logit_lens

    model, lenses, prompts, results = demo_lenses
    widget = show_logit_lens(
        model, prompts, lens=lenses, lens_name="tuned", answers=[" Paris", " Wednesday"]
    )
    assert widget.lens_name == "tuned" and widget.lens_names == ["logit", "tuned"]
    assert_same_result(widget.results["tuned"], results["tuned"], "shown")
    # A name that is not one of the lenses is refused before the model runs.
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(
        ValueError, match=r"lens_name must be one of the lenses \['logit', 'tuned'\]; got 'J'"
    ):
        show_logit_lens(model, prompts, lens=lenses, lens_name="J")
    with pytest.raises(ValueError, match=r"lens_name must be one of the lenses \['logit'\]"):
        show_logit_lens(model, prompts, lens_name="tuned")


def test_a_second_lens_beside_the_first_from_python(demo_lenses, monkeypatch, tmp_path):
    """lens_beside: another lens drawn as a second grid; checked against the lenses held,
    swapped when the lens shown becomes it, saved with the notebook and the export, and refused
    early by show_logit_lens."""
    from murano_widgets import LogitLensWidget, show_logit_lens
    from murano_widgets.widgets.base import WidgetValueError

    model, lenses, prompts, results = demo_lenses
    widget = LogitLensWidget(results)
    assert widget.lens_beside == ""  # one grid unless asked
    widget.lens_beside = "tuned"
    assert widget.get_state(["lens_beside"]) == {"lens_beside": "tuned"}
    # Showing the lens beside swaps the two grids; the pin is described under the lens shown.
    widget.selected = {"prompt": 0, "layer_index": 1, "position": 2}
    widget.lens_name = "tuned"
    assert (widget.lens_name, widget.lens_beside) == ("tuned", "logit")
    assert widget.selected == {**results["tuned"].describe_cell(0, 1, 2), "lens": "tuned"}
    with pytest.raises(
        WidgetValueError,
        match=r"lens_beside must be '' \(one grid\) or another of the widget's lenses "
        r"\['logit'\]; got 'tuned' \('tuned' is the lens shown, lens_name: choose another\)",
    ):
        widget.lens_beside = "tuned"
    with pytest.raises(WidgetValueError, match=r"lens_beside must be .*; got 'jacobian'"):
        widget.lens_beside = "jacobian"
    assert widget.lens_beside == "logit"
    widget.lens_beside = ""
    assert widget.lens_beside == "" and widget.lens_name == "tuned"
    with pytest.raises(
        WidgetValueError, match=r"lens_beside must be ''.*the widget holds one lens"
    ):
        LogitLensWidget(results["tuned"], lens_beside="logit")

    beside = LogitLensWidget(results, lens_name="tuned", lens_beside="logit")
    assert beside._standalone_state()["lens_beside"] == "logit"
    page = beside.save_html(tmp_path / "two_grids.html").read_text(encoding="utf-8")
    assert '"lens_beside": "logit"' in page or '"lens_beside":"logit"' in page

    # show_logit_lens refuses a bad one before the model runs.
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(ValueError, match=r"lens_beside must be .*\['tuned'\]; got 'logit'"):
        show_logit_lens(model, prompts, lens=lenses, lens_beside="logit")
    with pytest.raises(ValueError, match="the widget holds one lens"):
        show_logit_lens(model, prompts, lens_beside="tuned")


def test_the_export_keeps_every_lens(demo_lenses, tmp_path):
    from murano_widgets import LogitLensWidget

    _, _, _, results = demo_lenses
    widget = LogitLensWidget(results, lens_name="tuned")
    page = widget.save_html(tmp_path / "lenses.html").read_text(encoding="utf-8")
    assert "<title>Logit lens · Tuned lens — toy-world</title>" in page
    assert '"lens": "tuned"' in page or '"lens":"tuned"' in page
    assert "1/max_probs" in page and "1/topk_tokens" in page


# ---------------------------------------------------------------------------------------------
# Data sets


@pytest.fixture(scope="module")
def facts():
    """The demo world's capitals and languages, under the logit and the tuned lens, as one data
    set and as one data set per lens (batches of 5: several batches, one trace each)."""
    from murano_widgets import lens_dataset
    from murano_widgets.demo_model.corpus import COUNTRIES

    model = load_demo_model()
    tuned = load_demo_tuned_lens(model)
    countries = COUNTRIES[:8]
    prompts = [f"The capital of {c} is" for c, _, _ in countries] + [
        f"People in {c} speak" for c, _, _ in countries
    ]
    n = len(countries)
    answers = {
        "capital": [f" {capital}" for _, capital, _ in countries] + [None] * n,
        "language": [None] * n + [f" {language}" for _, _, language in countries],
    }
    options = {"batch_size": 5, "progress": False}
    both = lens_dataset(model, prompts, answers, lens={"logit": None, "tuned": tuned}, **options)
    alone = {
        name: lens_dataset(model, prompts, answers, lens=lens, **options)
        for name, lens in (("logit", None), ("tuned", tuned))
    }
    return model, tuned, prompts, answers, both, alone


def test_a_data_set_of_lenses_equals_one_data_set_per_lens(facts):
    import pandas as pd

    _, _, _, _, both, alone = facts
    assert both.lens_names == ["logit", "tuned"]
    for name, single in alone.items():
        part = both.lens(name)
        for field_name in ("entropy", "kl_to_final", "top1_tokens"):
            np.testing.assert_array_equal(getattr(part, field_name), getattr(single, field_name))
        for set_name in single.answers:
            np.testing.assert_array_equal(
                part.answer_probs[set_name], single.answer_probs[set_name]
            )
            np.testing.assert_array_equal(
                part.answer_ranks[set_name], single.answer_ranks[set_name]
            )
        assert part.provenance["lens_kind"] == single.provenance["lens_kind"]
        assert part.provenance["lens_title"] == single.provenance["lens_title"]
    # Tidy: every row of one lens's data set, with a lens column before the layer.
    frame = both.to_pandas()
    assert list(frame.columns[:6]) == [
        "prompt_index",
        "prompt",
        "answer",
        "answer_set",
        "lens",
        "layer",
    ]
    assert "commitment_layer" in frame.columns
    assert [lens["name"] for lens in frame.attrs["provenance"]["lenses"]] == ["logit", "tuned"]
    for name, single in alone.items():
        mine = frame[frame["lens"] == name].drop(columns="lens").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, single.to_pandas(), check_like=False)
    # Summaries per lens, with the same resamples of prompts for every lens.
    table = both.summary(n_boot=200)
    assert list(table.columns[:3]) == ["answer_set", "lens", "layer"]
    for name, single in alone.items():
        mine = table[table["lens"] == name].drop(columns="lens").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, single.summary(n_boot=200))
    with pytest.raises(AttributeError, match=r"dataset.lens\('logit'\).entropy"):
        both.entropy  # noqa: B018
    with pytest.raises(KeyError, match=r"no lens named 'J'.*\['logit', 'tuned'\]"):
        both.lens("J")
    assert "lenses ['logit', 'tuned']" in repr(both)


def test_a_data_set_of_lenses_runs_one_trace_a_batch(facts, monkeypatch):
    from murano_widgets import lens_dataset

    model, tuned, prompts, answers, _, _ = facts
    calls = []
    trace, plain = model.trace, model.block_outputs
    monkeypatch.setattr(model, "trace", lambda *a, **k: calls.append(1) or trace(*a, **k))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: calls.append(1) or plain(*a, **k))
    lens_dataset(
        model, prompts, answers, lens={"logit": None, "tuned": tuned}, batch_size=5, progress=False
    )
    assert len(calls) == -(-len(prompts) // 5)


def test_the_commitment_layer_equals_a_direct_count_on_the_top1_tokens(facts):
    """Where the answer (a one-token word here) stays the top-1 through the last layer, read
    from the per-layer top-1 token ids, prompt by prompt, from the last layer down."""
    model, _, prompts, answers, both, _ = facts
    seen_never = seen_early = False
    for lens in both.lens_names:
        part = both.lens(lens)
        for set_name, forms in answers.items():
            got = both.commitment_layers(set_name, lens=lens)
            assert got.dtype == np.int64 and got.shape == (len(prompts),)
            for p, answer in enumerate(forms):
                if answer is None:
                    assert got[p] == -1
                    continue
                ids = model.tokenizer(prompts[p] + answer)["input_ids"]
                first = ids[len(model.tokenizer(prompts[p])["input_ids"])]
                expected = -1
                for j in reversed(range(len(part.layers))):
                    if part.top1_tokens[j, p] != first:
                        break
                    expected = part.layers[j]
                assert got[p] == expected, (lens, set_name, p)
                seen_never |= expected == -1
                seen_early |= 0 <= expected < part.layers[-1]
        # The column in to_pandas: the same, on every layer row of the prompt; -1 is missing.
        frame = both.to_pandas()
        rows = frame[(frame["lens"] == lens) & (frame["answer_set"] == "capital")]
        per_prompt = rows.groupby("prompt_index")["commitment_layer"].agg(["min", "max"])
        expected_col = both.commitment_layers("capital", lens=lens)
        for p, (low, high) in per_prompt.iterrows():
            if expected_col[p] < 0:
                assert pd_isna(low) and pd_isna(high)
            else:
                assert low == high == expected_col[p]
        # summary()'s committed: the share of prompts committed at or before each layer.
        table = both.summary(n_boot=50)
        mine = table[(table["lens"] == lens) & (table["answer_set"] == "capital")]
        has = np.array([f is not None for f in answers["capital"]])
        layers = np.asarray(part.layers)
        commit = expected_col[has]
        direct = [np.mean((commit >= 0) & (commit <= layer)) for layer in layers]
        np.testing.assert_allclose(mine["committed"].to_numpy(), direct)
        assert (mine["committed_ci_low"] <= mine["committed"]).all()
        assert (mine["committed"] <= mine["committed_ci_high"]).all()
    assert seen_early, "some answer commits before the last layer"
    with pytest.raises(ValueError, match=r"holds the lenses \['logit', 'tuned'\]: name one"):
        both.commitment_layers("capital")
    with pytest.raises(ValueError, match=r"answer_set must be one of \['capital', 'language'\]"):
        both.commitment_layers("nope", lens="tuned")


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_commitment_layers_of_hand_made_ranks():
    from murano_widgets.dataset.stats import commitment_layers, committed_from

    ranks = np.array(
        [
            [0, 0, 0, 0],  # commits at the first layer
            [3, 0, 2, 0],  # lost and regained: commits at the last
            [0, 0, 1, 0],  # lost at the third: the last
            [0, 0, 0, 5],  # never: not the top-1 at the last layer
            [-1, -1, -1, -1],  # no answer
            [2, 0, -1, 0],  # a cell without a value breaks the streak
        ]
    )
    layers = [0, 2, 4, 6]
    assert commitment_layers(ranks, layers).tolist() == [0, 6, 6, -1, -1, 6]
    assert committed_from(ranks)[1].tolist() == [False, False, False, True]


def test_plot_draws_one_line_per_lens_and_answer_set(facts):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from murano_widgets.dataset.plot import SERIES_COLOURS, SERIES_LINESTYLES

    _, _, _, _, both, _ = facts
    for metric in ("answer_prob", "top1_accuracy", "committed"):
        figure = both.plot(metric=metric, n_boot=50)
        ax = figure.axes[0]
        lines = [line for line in ax.get_lines() if line.get_label()[:1] != "_"]
        labels = [line.get_label() for line in lines]
        assert labels == [
            "capital · Logit lens (n=8)",
            "language · Logit lens (n=8)",
            "capital · Tuned lens (n=8)",
            "language · Tuned lens (n=8)",
        ]
        # Colour by lens, style by answer set.
        assert [to_hex(line.get_color()) for line in lines] == [
            SERIES_COLOURS[0],
            SERIES_COLOURS[0],
            SERIES_COLOURS[1],
            SERIES_COLOURS[1],
        ]
        styles = [line.get_linestyle() for line in lines]
        assert styles[0] == styles[2] != styles[1] == styles[3]
        assert len(SERIES_LINESTYLES) >= 2
        expected = both.summary(n_boot=50)
        column = {"answer_prob": "answer_prob_mean"}.get(metric, metric)
        for line, (lens, name) in zip(
            lines,
            [
                ("logit", "capital"),
                ("logit", "language"),
                ("tuned", "capital"),
                ("tuned", "language"),
            ],
            strict=True,
        ):
            rows = expected[(expected["lens"] == lens) & (expected["answer_set"] == name)]
            np.testing.assert_allclose(line.get_ydata(), rows[column].to_numpy())
        assert ax.get_title().endswith("2 lenses")
        plt.close(figure)


def test_save_and_load_keep_the_lenses(facts, tmp_path):
    import json

    import pandas as pd

    from murano_widgets import LensDataset

    _, _, _, _, both, alone = facts
    both.save(tmp_path / "facts")
    sidecar = json.loads((tmp_path / "facts.json").read_text())
    assert sidecar["format_version"] == 2 and [e["name"] for e in sidecar["lenses"]] == [
        "logit",
        "tuned",
    ]
    loaded = LensDataset.load(tmp_path / "facts")
    assert loaded.lens_names == ["logit", "tuned"]
    pd.testing.assert_frame_equal(loaded.to_pandas(), both.to_pandas())
    pd.testing.assert_frame_equal(loaded.summary(n_boot=50), both.summary(n_boot=50))
    assert loaded.lens("tuned").provenance["lens_title"] == "Tuned lens"
    # One lens is still written as version 1.
    alone["logit"].save(tmp_path / "one")
    assert json.loads((tmp_path / "one.json").read_text())["format_version"] == 1
    # A damaged list of lenses is named.
    sidecar["lenses"][1]["name"] = "logit"
    (tmp_path / "facts.json").write_text(json.dumps(sidecar))
    with pytest.raises(ValueError, match="'lenses' must be a list of distinct lens names"):
        LensDataset.load(tmp_path / "facts")


def test_the_data_set_widget_shows_every_lens_and_opens_a_heatmap_of_all(facts):
    from murano_widgets.widgets.base import WidgetValueError

    model, tuned, _, _, both, _ = facts
    widget = both.show()
    chart = widget.chart
    sets = chart._meta["sets"]
    assert [(s["lens"], s["name"]) for s in sets] == [
        ("logit", "capital"),
        ("logit", "language"),
        ("tuned", "capital"),
        ("tuned", "language"),
    ]
    assert chart._meta["lenses"] == [
        {"name": "logit", "title": "Logit lens"},
        {"name": "tuned", "title": "Tuned lens"},
    ]
    assert chart._meta["title"] == "toy-world · Logit lens, Tuned lens · 16 prompts"
    probs = np.frombuffer(chart._data["prob_2"], dtype="<f4").reshape(16, -1)
    np.testing.assert_array_equal(probs, both.lens("tuned").answer_probs["capital"].T)
    assert chart.lens_name == "logit"
    chart.lens_name = "tuned"
    with pytest.raises(WidgetValueError, match=r"lens_name must be one of \['logit', 'tuned'\]"):
        chart.lens_name = "J"
    chart.open_request = {"prompt": 2, "answer_set": "capital", "lens": "tuned", "n": 1}
    heatmap = widget.heatmap
    assert heatmap is not None and heatmap.lens_names == ["logit", "tuned"]
    assert heatmap.lens_name == "tuned" and widget.opened == (2, "capital")
    # Shown again with other lenses: the names must be the same.
    with pytest.raises(
        ValueError, match=r"holds the lenses \['logit', 'tuned'\]: give lens= as a dict"
    ):
        both.show(model, lens={"tuned": tuned})
    assert both.show(model, lens={"logit": None, "tuned": tuned}).chart.lens_name == "logit"


def test_a_loaded_data_set_of_lenses_asks_for_them_to_open_a_heatmap(facts, tmp_path):
    from murano_widgets import LensDataset

    model, tuned, _, _, both, _ = facts
    both.save(tmp_path / "facts")
    loaded = LensDataset.load(tmp_path / "facts")
    reason = loaded.show(model).chart._meta["cannot_open_reason"]
    assert "show it with them: dataset.show(model=..., lens={'logit': ..., 'tuned': ...})" in reason
    widget = loaded.show(model, lens={"logit": None, "tuned": tuned})
    assert widget.chart._meta["can_open"]
    assert widget.open_prompt(0).lens_names == ["logit", "tuned"]


# ---------------------------------------------------------------------------------------------
# Agreement: is it the model or the lens?

AGREE_PROMPTS = [
    "The Eiffel Tower is in the city of Paris",
    "one two",
    "Alice met Bob. Alice gave",
    "three four five six",
    "Bob",
]


@pytest.mark.parametrize("positions", ["all", "last"])
def test_agreement_equals_a_direct_computation(load_tiny, positions):
    """Each lens run alone on each prompt alone (full distributions kept), then top-1 agreement
    and KL in float64 per position, averaged over the prompt: the per-prompt numbers; their
    plain means over prompts: the table's."""
    from murano_widgets import lens_agreement

    model = load_tiny("llama")
    lenses = {"logit": None, "linear": RandomLinear(model.n_layers, model_width(model), seed=3)}
    agreement = lens_agreement(
        model, AGREE_PROMPTS, lenses, positions=positions, batch_size=2, progress=False
    )
    assert agreement.pairs == [("logit", "linear"), ("logit", "final"), ("linear", "final")]
    for p, prompt in enumerate(AGREE_PROMPTS):
        probs = {
            name: LogitLens(model, lens=lens, store_full_probs=True).run([prompt]).all_probs[:, 0]
            for name, lens in lenses.items()
        }  # [L, seq, vocab]
        last = model.n_layers - 1
        probs["final"] = probs["logit"][last].expand_as(probs["logit"])
        cells = slice(None) if positions == "all" else slice(-1, None)
        for a, b in agreement.pairs:
            pa, pb = probs[a][:, cells].double(), probs[b][:, cells].double()
            agree = (pa.argmax(-1) == pb.argmax(-1)).double().mean(-1)
            kl_ab = (pa * (pa.log() - pb.log())).sum(-1).mean(-1) / math.log(2)
            kl_ba = (pb * (pb.log() - pa.log())).sum(-1).mean(-1) / math.log(2)
            got = {
                what: agreement.values[((a, b), what)][:, p]
                for what in ("top1_agreement", "kl_a_to_b", "kl_b_to_a")
            }
            np.testing.assert_array_equal(got["top1_agreement"], agree.numpy())
            np.testing.assert_allclose(got["kl_a_to_b"], kl_ab.numpy(), atol=2e-4, rtol=1e-4)
            np.testing.assert_allclose(got["kl_b_to_a"], kl_ba.numpy(), atol=2e-4, rtol=1e-4)
    frame = agreement.to_pandas(n_boot=100)
    assert list(frame.columns[:4]) == ["a", "b", "layer", "n_prompts"]
    for (a, b), rows in frame.groupby(["a", "b"], sort=False):
        for what in ("top1_agreement", "kl_a_to_b", "kl_b_to_a"):
            np.testing.assert_allclose(
                rows[what].to_numpy(), agreement.values[((a, b), what)].mean(axis=1)
            )
            assert (rows[f"{what}_ci_low"] <= rows[what] + 1e-12).all()
            assert (rows[what] <= rows[f"{what}_ci_high"] + 1e-12).all()
        last_row = rows[rows["layer"] == model.n_layers - 1].iloc[0]
        assert last_row["top1_agreement"] == 1 and last_row["kl_a_to_b"] == 0
    assert (frame["n_prompts"] == len(AGREE_PROMPTS)).all()


def test_agreement_intervals_are_the_bootstrap_of_the_per_prompt_numbers(load_tiny):
    """The interval of one pair and layer, from a plain loop over resamples drawn as the
    bootstrap documents them."""
    from murano_widgets import lens_agreement

    model = load_tiny("llama")
    lenses = {"logit": None, "tuned": _random_tuned(model, 4)}
    agreement = lens_agreement(model, AGREE_PROMPTS, lenses, progress=False)
    frame = agreement.to_pandas(ci=0.9, n_boot=300, seed=7)
    values = agreement.values[(("logit", "tuned"), "kl_a_to_b")][1]
    rng = np.random.default_rng(7)
    n = len(values)
    means = [values[rng.integers(0, n, size=n, dtype=np.int32)].mean() for _ in range(300)]
    row = frame[(frame["a"] == "logit") & (frame["b"] == "tuned") & (frame["layer"] == 1)].iloc[0]
    assert row["kl_a_to_b_ci_low"] == pytest.approx(np.percentile(means, 5))
    assert row["kl_a_to_b_ci_high"] == pytest.approx(np.percentile(means, 95))


def test_agreement_runs_one_trace_a_batch_and_reads_well(load_tiny, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from murano_widgets import lens_agreement

    model = load_tiny("gpt2")
    lenses = {"logit": None, "a": _random_tuned(model, 1), "b": _random_tuned(model, 2)}
    calls = []
    trace, plain = model.trace, model.block_outputs
    monkeypatch.setattr(model, "trace", lambda *a, **k: calls.append(1) or trace(*a, **k))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: calls.append(1) or plain(*a, **k))
    agreement = lens_agreement(model, AGREE_PROMPTS, lenses, batch_size=2, progress=False)
    assert len(calls) == 3
    assert len(agreement.pairs) == 3 + 3
    table = agreement.table(n_boot=50)
    assert table.index.name == "layer" and list(table.index) == agreement.layers
    assert "top-1 agree logit · a" in table.columns and "KL(final ‖ b)" in table.columns
    assert table.iloc[-1]["top-1 agree a · b"] == "100% [100%, 100%]"
    assert table.iloc[-1]["KL(a ‖ b)"] == "0.00 [0.00, 0.00] bits"
    figure = agreement.plot(n_boot=50)
    left, right = figure.axes
    assert len([line for line in left.get_lines()]) == 6 == len(right.get_lines())
    # Two lenses of one kind stay apart: their names join their titles.
    assert [t.get_text() for t in right.get_legend().get_texts()] == [
        "KL(Logit lens ‖ Tuned lens (a))",
        "KL(Logit lens ‖ Tuned lens (b))",
        "KL(Tuned lens (a) ‖ Tuned lens (b))",
        "KL(final output ‖ Logit lens)",
        "KL(final output ‖ Tuned lens (a))",
        "KL(final output ‖ Tuned lens (b))",
    ]
    plt.close(figure)
    assert "LensAgreement(['logit', 'a', 'b'], 5 prompts" in repr(agreement)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lenses": None}, TypeError, r"lenses must be a dict of named lenses"),
        ({"lenses": {"final": None}}, ValueError, r"lenses has a lens named 'final'"),
        ({"lenses": {}}, ValueError, r"lenses is an empty dict"),
        (
            {"lenses": {"a": None}, "positions": "first"},
            ValueError,
            r"positions must be 'all' or 'last'",
        ),
        ({"lenses": {"a": None}, "batch_size": 0}, ValueError, r"batch_size"),
        ({"lenses": {"a": None}, "layers": [99]}, ValueError, r"layers holds 99"),
    ],
)
def test_agreement_refuses_bad_input_before_the_model_runs(
    load_tiny, monkeypatch, kwargs, error, match
):
    from murano_widgets import lens_agreement

    model = load_tiny("gpt2")
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(error, match=match):
        lens_agreement(model, AGREE_PROMPTS, progress=False, **kwargs)


def test_a_lens_is_labelled_by_its_title_and_by_its_name_where_that_says_more():
    from murano_widgets.lenses import lens_label

    assert lens_label("logit", "Logit lens") == "Logit lens"
    assert lens_label("tuned", "Tuned lens") == "Tuned lens"
    assert lens_label("a", "Tuned lens") == "Tuned lens (a)"
    assert lens_label("Jacobian", "Jacobian lens") == "Jacobian lens"


def test_a_view_of_one_lens_given_several_says_how_to_take_one(load_tiny):
    from murano_widgets import plot_logit_lens

    model = load_tiny("gpt2")
    results = LogitLens(model, lens={"logit": None, "t": _random_tuned(model)}).run(PROMPTS)
    with pytest.raises(TypeError, match=r"holds the lenses \['logit', 't'\].*results\['logit'\]"):
        plot_logit_lens(results)


def test_non_finite_cells_are_named_per_lens_and_the_models_output_once(tiny_model_dirs, tmp_path):
    """The poisoned GPT-2 of test_non_finite (its last block writes NaN): each lens's warning
    names the lens; the model's own output, the same under every lens, is named once."""
    import warnings

    from tiny_models import build_tokenizer
    from transformers import AutoModelForCausalLM

    from murano_widgets import MuranoModel

    hf = AutoModelForCausalLM.from_pretrained(tiny_model_dirs["gpt2"])
    with torch.no_grad():
        hf.transformer.h[-1].mlp.c_proj.bias[3] = float("nan")
    hf.save_pretrained(tmp_path / "gpt2")
    build_tokenizer().save_pretrained(tmp_path / "gpt2")
    model = MuranoModel(tmp_path / "gpt2")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = LogitLens(model, lens={"logit": None, "t": _random_tuned(model)}).run(PROMPTS[:2])
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 2
    assert (
        messages[0].startswith("logit lens, lens 'logit': ") and "final_token_probs" in messages[0]
    )
    assert (
        messages[1].startswith("logit lens, lens 't': ") and "final_token_probs" not in messages[1]
    )
    mask = results.attention_mask.bool()
    assert torch.isnan(results["t"].kl_to_final[:, mask]).all()
