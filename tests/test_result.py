"""LogitLensResult: its validation (ragged or empty fields refused, by the plot and the widget
too) and results of the released murano library (depth, string addresses)."""

from __future__ import annotations

import dataclasses
import types

import pytest
import torch
from test_logit_lens import run_lens

from murano_widgets import (
    LogitLensResult,
    LogitLensWidget,
    load_demo_model,
    plot_logit_lens,
    run_logit_lens,
)
from murano_widgets.results.result import SPECS
from murano_widgets.results.schema import Spec, specs

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two"]


@pytest.fixture(scope="module")
def demo():
    return load_demo_model()


def murano_result(demo, layers):
    """What the released murano library returns: layer_indices or string addresses, all_probs."""
    full = run_lens(demo, ["The capital of France is"], layers=layers, store_full_probs=True)
    return types.SimpleNamespace(
        all_probs=full.all_probs,
        max_probs=full.max_probs,
        predicted_tokens=full.predicted_tokens,
        predicted_words=full.predicted_words,
        input_words=full.input_words,
        addresses=[str(node) for node in full.addresses],
    ), full


def test_murano_result_without_the_last_layer_has_no_final_based_metrics(demo):
    murano, _ = murano_result(demo, [0, 1])
    for options in ({}, {"model": demo}, {"n_model_layers": 6}):
        widget = LogitLensWidget(murano, **options)
        result = widget.result
        assert result.layers == [0, 1], "string addresses are read as nodes"
        assert result.final_token_probs is None and result.kl_to_final is None
        assert result.final_token_ranks is None and result.final_tokens is None
        metrics = {m["name"]: m for m in widget._meta["metrics"]}
        assert metrics["prob"]["available"] and metrics["entropy"]["available"]
        for name in ("final_prob", "final_rank", "kl"):
            assert not metrics[name]["available"]
            assert "final layer" in metrics[name]["unavailable_reason"]
        with pytest.raises(ValueError, match="cannot be shown"):
            widget.metric = "kl"
        with pytest.raises(ValueError, match="final layer"):
            plot_logit_lens(result, metric="final_prob")


def test_murano_result_with_the_last_layer_and_its_depth_gets_final_metrics(demo):
    murano, full = murano_result(demo, [0, 5])
    shown = LogitLensWidget(murano, n_model_layers=6).result
    torch.testing.assert_close(shown.kl_to_final, full.kl_to_final, atol=1e-4, rtol=1e-3)
    assert torch.equal(shown.final_token_ranks, full.final_token_ranks)
    # Without the depth the highest row could be any layer: nothing is measured against it.
    assert LogitLensWidget(murano).result.kl_to_final is None


def test_bad_string_addresses_are_named(demo):
    murano, _ = murano_result(demo, [0, 1])
    murano.addresses = ["L0.resid_post", "layer one"]
    with pytest.raises(ValueError, match=r"L<layer>\.<module>"):
        LogitLensWidget(murano)


@pytest.fixture(scope="module")
def small_lens(load_tiny):
    return run_lens(load_tiny("gpt2"), PROMPTS)


def test_ragged_word_lists_and_empty_results_are_refused_by_validate(small_lens):
    import dataclasses

    ragged = [list(row) for row in small_lens.input_words]
    ragged[1] = ragged[1][:-1]
    with pytest.raises(ValueError, match=r"input_words\[1\] has \d+ entries, expected"):
        dataclasses.replace(small_lens, input_words=ragged).validate()
    deep = [[list(row) for row in layer] for layer in small_lens.predicted_words]
    deep[2][1][3] = 7
    with pytest.raises(ValueError, match=r"predicted_words\[2\]\[1\]\[3\] must be a string"):
        dataclasses.replace(small_lens, predicted_words=deep).validate()
    empty_layers = dataclasses.replace(
        small_lens,
        addresses=[],
        max_probs=small_lens.max_probs[:0],
        predicted_tokens=small_lens.predicted_tokens[:0],
    )
    with pytest.raises(ValueError, match="no layers"):
        LogitLensWidget(empty_layers)
    with pytest.raises(ValueError, match="no layers"):
        plot_logit_lens(empty_layers)
    no_prompts = LogitLensResult(
        None,
        torch.zeros(1, 0, 3),
        torch.zeros(1, 0, 3, dtype=torch.long),
        [[]],
        [],
        torch.zeros(0, 3),
        small_lens.addresses[:1],
    )
    with pytest.raises(ValueError, match="no prompts"):
        LogitLensWidget(no_prompts)


def test_plot_validates_shapes(small_lens):
    import dataclasses

    broken = dataclasses.replace(small_lens, max_probs=small_lens.max_probs[:, :1])
    with pytest.raises(ValueError, match="max_probs has shape"):
        plot_logit_lens(broken)


def test_a_widget_that_fails_to_build_leaves_no_widget_behind(small_lens):
    from ipywidgets import Widget

    before = set(Widget.widgets)
    for options in ({"prompt": 9}, {"layer": 9}, {"metric": "loss"}):
        with pytest.raises(ValueError):
            LogitLensWidget(small_lens, **options)
    assert set(Widget.widgets) == before


# ---------------------------------------------------------------------------------------------
# The schema: every field's layout declared once, on the field


def test_every_field_has_one_layout_and_one_without_is_refused():
    assert list(SPECS) == [item.name for item in dataclasses.fields(LogitLensResult)]
    assert all(isinstance(spec, Spec) for spec in SPECS.values())

    @dataclasses.dataclass
    class Unlaid:
        extra: int = 0

    with pytest.raises(TypeError, match=r"Unlaid\.extra has no layout"):
        specs(Unlaid)
    with pytest.raises(ValueError, match="unknown axes"):
        Spec("tensor", ("layer", "heads"))


def test_every_tensor_of_a_full_result_has_its_declared_axes(demo):
    """A result with every option on: each tensor's shape is its declared axes' sizes, read
    from the rows, the mask and the label lists (not from the code that made it)."""
    full = run_logit_lens(
        demo,
        PROMPTS,
        answers=[" Paris", None],
        foils=[" Rome", None],
        targets=[" Paris", " the"],
        groups={"paris": "Paris", "each": ["Rome", "the"]},
        decompose=True,
        store_full_probs=True,
        top_k=4,
    )
    n_layers, (n_inputs, seq) = len(full.addresses), full.attention_mask.shape
    sizes = {
        "layer": n_layers,
        "prompt": n_inputs,
        "seq": seq,
        "k": 4,
        "vocab": demo.vocab_size,
        "target": 2,
        "group": 2,
        "component": 1 + 2 * demo.n_layers,  # embed, then each block's attention and MLP
    }
    seen = 0
    for name, spec in SPECS.items():
        value = getattr(full, name)
        if spec.role == "tensor" and value is not None:
            assert tuple(value.shape) == tuple(sizes[axis] for axis in spec.axes), name
            seen += 1
    assert seen == sum(spec.role == "tensor" for spec in SPECS.values())


def test_validate_checks_every_declared_axis(demo):
    """Fields the step writes with a components or targets axis are checked too: one
    component short, or one target short, is named."""
    full = run_lens(demo, PROMPTS, targets=[" Paris", " the"], decompose=True)
    for name, cut in [
        ("target_contributions", lambda t: t[..., :-1]),
        ("target_bias", lambda t: t[..., :1]),
        ("contributions", lambda t: t[..., :-1]),
    ]:
        broken = dataclasses.replace(full, **{name: cut(getattr(full, name))})
        with pytest.raises(ValueError, match=name):
            broken.validate()
    floats = dataclasses.replace(full, entropy=full.predicted_tokens.clone())
    with pytest.raises(ValueError, match="entropy must hold floats"):
        floats.validate()
