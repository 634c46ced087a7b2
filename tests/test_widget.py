"""The widget's Python side: traits, validation, the binary payload and duck-typed results."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
import torch
from traitlets import TraitError

from murano_widgets import METRICS, LogitLens, LogitLensWidget, PromptBatch, show_logit_lens
from murano_widgets.payload.lens import decode_sections
from murano_widgets.widgets.lens import WidgetValueError

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two", "Alice met Bob."]


@pytest.fixture(scope="module")
def lens(load_tiny):
    model = load_tiny("llama")
    return LogitLens(model, top_k=5)({"prompts": PromptBatch(PROMPTS)})["logit_lens"]


@pytest.fixture
def widget(lens):
    return LogitLensWidget(lens)


def real_cells(lens, tensor):
    """``tensor[layer, prompt, real positions]`` laid out as the payload does: [L, T, ...]."""
    mask = lens.attention_mask.bool()
    return tensor[:, mask].numpy()


def test_traits_validate_with_clear_errors(widget, lens):
    n_layers = len(lens.layers)
    assert widget.layer == n_layers - 1 and widget.prompt == 0 and widget.metric == "prob"
    widget.prompt = 2
    widget.layer = 0
    with pytest.raises(
        ValueError, match=r"prompt must be an int from 0 to 2 \(the result has 3 prompts\); got 3"
    ):
        widget.prompt = 3
    with pytest.raises(ValueError, match="layer must be from 0"):
        widget.layer = -1
    with pytest.raises(WidgetValueError, match="metric must be one of prob, entropy"):
        widget.metric = "loss"
    with pytest.raises(ValueError, match="must be an int"):
        widget.prompt = True
    assert widget.prompt == 2 and widget.layer == 0
    for metric in METRICS:
        if metric == "answer":  # this result has no answers: refused with the reason
            with pytest.raises(ValueError, match="no answers were given"):
                widget.metric = metric
            continue
        if metric == "target":  # nor targets
            with pytest.raises(ValueError, match="no tokens are tracked: pass targets="):
                widget.metric = metric
            continue
        if metric == "logit_diff":  # nor foils
            with pytest.raises(ValueError, match="needs foils: run with answers"):
                widget.metric = metric
            continue
        if metric == "group":  # nor token groups
            with pytest.raises(ValueError, match="needs groups: run with groups="):
                widget.metric = metric
            continue
        widget.metric = metric
    # No token is tracked: the target is "" and stays so.
    assert widget.target == ""
    with pytest.raises(WidgetValueError, match="target must be '' while no token is tracked"):
        widget.target = " Paris"


TARGETS = [" Paris", " two", " Bob"]


@pytest.fixture(scope="module")
def tracked(load_tiny):
    model = load_tiny("llama")
    step = LogitLens(model, top_k=5, targets=TARGETS)
    return step({"prompts": PromptBatch(PROMPTS)})["logit_lens"]


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_the_target_metric_is_the_chosen_tracked_tokens_probability(tracked):
    widget = LogitLensWidget(tracked, metric="target", target=" two")
    assert widget.metric == "target" and widget.target == " two"
    assert widget._details  # target_probs is a detail section: sent with the others
    info = widget.payload.metric("target")
    assert info["available"] and info["per_target"] and info["domain"] == [0.0, 1.0]
    assert info["target_label"] == "Probability of “{target}”"
    values = decode_sections(widget._meta, widget._sections)["target_probs"]
    step = widget._meta["sections"]["target_probs"]["scale"]
    expected = real_cells(tracked, tracked.target_probs)  # [L, T, n_targets]
    assert values.shape == expected.shape == (len(tracked.layers), sum(tracked.lengths), 3)
    # Every tracked token's value at every real cell, within half the section's quantisation
    # step (a value under half a step is stored as one step: only an exact 0 reads 0).
    assert np.isfinite(expected).all() and step == pytest.approx(1 / 65535)
    stored = np.where((expected > 0) & (expected < step / 2), step, expected)
    np.testing.assert_allclose(values, stored, rtol=0, atol=step / 2 + 1e-12)
    # The pinned cell describes every target, as before, with the same numbers.
    widget.selected = {"prompt": 0, "layer_index": 1, "position": 2}
    seq = int(tracked.positions(0)[2])
    assert widget.selected["targets"][" two"]["prob"] == pytest.approx(
        tracked.target_probs[1, 0, seq, 1].item()
    )
    # The default: the first target; the others can be chosen, any other text cannot.
    assert LogitLensWidget(tracked).target == " Paris"
    widget.target = " Bob"
    for bad in (" Tokyo", "", "paris"):
        with pytest.raises(
            WidgetValueError,
            match=r"target must be one of the tracked tokens \[' Paris', ' two', ' Bob'\]; "
            rf"got {bad!r}",
        ):
            widget.target = bad
    with pytest.raises(TraitError, match="expected a unicode string, not the int 3"):
        widget.target = 3
    assert widget.target == " Bob"
    with pytest.raises(WidgetValueError, match=r"target must be one of .*got ' Tokyo'"):
        LogitLensWidget(tracked, target=" Tokyo")
    # The export carries it.
    assert widget._standalone_state()["target"] == " Bob"


def test_selected_is_filled_in_exactly(widget, lens):
    # What the front end sends on a click: the cell's coordinates.
    widget.selected = {"prompt": 1, "layer_index": 1, "position": 1}
    chosen = widget.selected
    seq = lens.positions(1)[1].item()
    assert chosen["sequence_index"] == seq and chosen["layer"] == lens.layers[1]
    assert chosen["input_token"] == lens.input_words[1][seq]
    assert chosen["predicted_token"] == lens.predicted_words[1][1][seq]
    assert chosen["probability"] == pytest.approx(lens.max_probs[1, 1, seq].item())
    assert chosen["top_k"][0] == (chosen["predicted_token"], chosen["probability"])
    assert chosen["final_token_ranks"] == lens.final_token_ranks[1, 1, seq].item()
    # Out of range: the prompt has only its real tokens (padding cannot be pinned).
    length = int(lens.attention_mask[1].sum())
    with pytest.raises(
        ValueError, match=rf"selected\['position'\] must be an int from 0 to {length - 1}"
    ):
        widget.selected = {"prompt": 1, "layer_index": 0, "position": length}
    with pytest.raises(ValueError, match="layer_index"):
        widget.selected = {"prompt": 0, "layer_index": 99, "position": 0}
    with pytest.raises(TraitError, match="dict or None"):
        widget.selected = [0, 1]
    assert widget.selected == chosen
    widget.selected = None
    assert widget.selected is None


def test_show_logit_lens_takes_one_string_and_step_options(load_tiny):
    widget = show_logit_lens(
        load_tiny("gpt2"), "one two three", layers=[0, -1], top_k=3, metric="kl"
    )
    assert widget.result.prompts == ["one two three"] and widget.result.layers == [0, 2]
    assert widget.metric == "kl" and "kl_to_final" in widget._sections
    assert widget._meta["top_k"] == 3
    with pytest.raises(ValueError, match="metric"):
        show_logit_lens(load_tiny("gpt2"), "x", metric="nope")
    with pytest.raises(ValueError, match="empty"):
        show_logit_lens(load_tiny("gpt2"), [])


def test_a_result_whose_shapes_disagree_is_refused(lens):
    import dataclasses

    broken = dataclasses.replace(lens, max_probs=lens.max_probs[:, :2])
    with pytest.raises(ValueError, match=r"max_probs has shape \(3, 2, \d+\)"):
        LogitLensWidget(broken)
    broken = dataclasses.replace(lens, input_words=lens.input_words[:2])
    with pytest.raises(ValueError, match="input_words"):
        LogitLensWidget(broken)


def test_non_results_get_a_type_error_naming_what_is_missing():
    with pytest.raises(TypeError, match="lacks max_probs, predicted_tokens"):
        LogitLensWidget({"max_probs": 1})
    with pytest.raises(TypeError, match=r"addresses \(or layer_indices\)"):
        LogitLensWidget(
            types.SimpleNamespace(max_probs=0, predicted_tokens=0, predicted_words=0, input_words=0)
        )


def test_murano_style_result_is_accepted_by_duck_typing(lens, load_tiny):
    """The released murano library's result: layer_indices, always all_probs, no reduced fields."""
    model = load_tiny("llama")
    full = LogitLens(model, top_k=5, store_full_probs=True)({"prompts": PromptBatch(PROMPTS)})[
        "logit_lens"
    ]
    probs = torch.nan_to_num(full.all_probs, nan=1.0 / model.vocab_size)
    murano = types.SimpleNamespace(
        all_probs=probs,
        max_probs=torch.nan_to_num(full.max_probs),
        predicted_tokens=full.predicted_tokens.clamp_min(0),
        predicted_words=full.predicted_words,
        input_words=full.input_words,
        attention_mask=full.attention_mask,
        layer_indices=list(full.layers),
    )
    # Its model's depth comes from the caller: here the result holds the last layer.
    widget = LogitLensWidget(murano, model=model)
    shown = widget.result
    mask = full.attention_mask.bool()
    assert shown.layers == full.layers
    # The last row stands for the final distribution, as it is the model's last layer here.
    torch.testing.assert_close(
        shown.kl_to_final[:, mask], full.kl_to_final[:, mask], atol=1e-4, rtol=1e-3
    )
    torch.testing.assert_close(shown.entropy[:, mask], full.entropy[:, mask], atol=1e-4, rtol=1e-3)
    assert torch.equal(shown.topk_tokens[:, mask], full.topk_tokens[:, mask])
    assert torch.equal(shown.final_token_ranks[:, mask], full.final_token_ranks[:, mask])
    widget._details = True
    table = widget._meta["tokens"]
    values = decode_sections(widget._meta, widget._sections)
    words = [table[i] for i in values["topk_tokens"][-1, :, 0]]
    assert words == [full.token_strings[int(i)] for i in full.topk_tokens[-1][mask][:, 1]]


def test_widget_repr_is_short(widget):
    text = repr(widget)
    assert text.startswith("LogitLensWidget(3 prompts") and len(text) < 200


def test_displaying_the_widget_emits_one_widget_view(widget):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    with capture_output() as captured:
        display(widget)
    views = [
        o.data for o in captured.outputs if "application/vnd.jupyter.widget-view+json" in o.data
    ]
    assert len(views) == 1
    assert views[0]["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id


def test_show_logit_lens_returns_the_widget_without_displaying_it(load_tiny):
    """One mechanism: the returned widget shows as the cell's value, like any Jupyter widget."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    with capture_output() as captured:
        widget = show_logit_lens(load_tiny("gpt2"), "one two")
    assert captured.outputs == []
    assert isinstance(widget, LogitLensWidget)


def chat_roles(lens):
    """Chat roles over ``lens``'s real tokens: each prompt opens with two template tokens."""
    return [["template", "template"] + ["user"] * (n - 2) for n in lens.lengths]


def exported_state(widget):
    """The state the exported page hands to ``renderStandalone``."""
    import json
    import re

    block = re.search(
        r'<script type="application/json" id="murano-state">(.*?)</script>',
        widget.to_html(),
        re.DOTALL,
    )
    return json.loads(block.group(1))["state"]


def test_hide_template_is_a_synced_trait_refused_without_template_tokens(widget, lens):
    assert widget.hide_template is False
    assert widget.trait_metadata("hide_template", "sync") is True
    assert widget.get_state()["hide_template"] is False
    # No chat roles, so nothing to hide: refused, naming the trait, the value and why.
    with pytest.raises(TraitError, match=r"hide_template=True is not allowed: .*no chat roles"):
        widget.hide_template = True
    with pytest.raises(WidgetValueError, match="hide_template=True is not allowed"):
        LogitLensWidget(lens, hide_template=True)
    # Chat roles without a template token: refused too.
    no_template = dataclasses.replace(lens, token_roles=[["user"] * n for n in lens.lengths])
    with pytest.raises(TraitError, match="no token of the result has the chat template's role"):
        LogitLensWidget(no_template).hide_template = True
    with pytest.raises(TypeError, match="hide_template must be True or False, got str 'yes'"):
        LogitLensWidget(lens, hide_template="yes")
    widget.hide_template = False
    assert widget.hide_template is False


def test_hide_template_with_template_tokens_round_trips_and_is_exported(lens):
    chat = dataclasses.replace(lens, token_roles=chat_roles(lens))
    widget = LogitLensWidget(chat, hide_template=True)
    assert widget.hide_template is True and widget.get_state()["hide_template"] is True
    assert exported_state(widget)["hide_template"] is True
    # What the front end sends when the box is unticked.
    widget.set_state({"hide_template": False})
    assert widget.hide_template is False
    assert exported_state(widget)["hide_template"] is False
    widget.hide_template = True
    assert exported_state(widget)["hide_template"] is True
    with pytest.raises(TraitError, match="hide_template"):
        widget.hide_template = "yes"
    assert widget.hide_template is True


def test_show_logit_lens_checks_hide_template_before_the_model_runs(load_tiny, monkeypatch):
    model = load_tiny("gpt2")  # never run: the arguments are refused first
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(TypeError, match="hide_template must be True or False, got int 1"):
        show_logit_lens(model, "one two", hide_template=1)
    with pytest.raises(ValueError, match="hide_template=True is not allowed without chat"):
        show_logit_lens(model, "one two", hide_template=True)
