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
    """Every field of two results equal (NaN where NaN), answer sets included."""
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
    trace = model.trace

    def counted(*args, **kwargs):
        calls.append(1)
        return trace(*args, **kwargs)

    monkeypatch.setattr(model, "trace", counted)
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
    with pytest.raises(ValueError, match=r"LensResults\['b'\]\.(attention_mask|input_ids)"):
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
    assert "lens_name='tuned' of ['logit', 'tuned']" in repr(widget)
    state = widget._standalone_state()
    assert state["lens_name"] == "tuned" and state["_meta"]["lenses"][1]["name"] == "tuned"
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
    with pytest.raises(
        ValueError, match=r"lens_name must be one of the lenses \['logit', 'tuned'\]; got 'J'"
    ):
        show_logit_lens(model, prompts, lens=lenses, lens_name="J")
    with pytest.raises(ValueError, match=r"lens_name must be one of the lenses \['logit'\]"):
        show_logit_lens(model, prompts, lens_name="tuned")


def test_the_export_keeps_every_lens(demo_lenses, tmp_path):
    from murano_widgets import LogitLensWidget

    _, _, _, results = demo_lenses
    widget = LogitLensWidget(results, lens_name="tuned")
    page = widget.save_html(tmp_path / "lenses.html").read_text(encoding="utf-8")
    assert "<title>Logit lens · Tuned lens — toy-world</title>" in page
    assert '"lens_name": "tuned"' in page or '"lens_name":"tuned"' in page
    assert "1/max_probs" in page and "1/topk_tokens" in page
