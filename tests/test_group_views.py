"""Token groups in the views: the heatmap payload's "group" metric (one section, the names in
meta) for one lens and lenses side by side, the widget's ``group`` trait, ``plot()`` and the HTML
export, each against the result's own ``group_probs`` (computed by the step; the step's sums are
checked against independent computations in tests/test_groups.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from murano_widgets import Lens, LogitLensWidget, TokenGroup, run_logit_lens
from murano_widgets.payload.diff import diff_payload
from murano_widgets.payload.lens import LensPayload, decode_sections
from murano_widgets.plot import plot_logit_lens

PROMPTS = ["The Eiffel Tower is in the city of", "one two three"]


class Shift(Lens):
    """Every block output but the last moved by a fixed vector (as tests/test_groups.py's)."""

    kind = "shift"
    title = "Shift lens"

    def translate(self, layer, hidden):
        return hidden + torch.linspace(-2.0, 2.0, hidden.shape[-1]).to(hidden.dtype)


@pytest.fixture(scope="module")
def grouped(load_tiny):
    model = load_tiny("gpt2")
    groups = {"paris": TokenGroup.word(model.tokenizer, "Paris"), "<i>x</i>": [" one", " two"]}
    return model, groups, run_logit_lens(model, PROMPTS, groups=groups)


def real_cells(result, field: str) -> np.ndarray:
    return getattr(result, field)[:, result.attention_mask.bool()].numpy()


def test_the_payload_sends_each_groups_probability_and_names(grouped):
    _, _, result = grouped
    payload = LensPayload.from_result(result)
    assert payload.meta["groups"] == ["paris", "<i>x</i>"]
    entry = next(m for m in payload.meta["metrics"] if m["name"] == "group")
    assert entry["available"] and entry["per_group"] and not entry["per_target"]
    assert "group_probs" in payload.meta["base_sections"]
    values = decode_sections(payload.meta, payload.base_sections())["group_probs"]
    np.testing.assert_allclose(values, real_cells(result, "group_probs"), atol=0.5 / 65535)
    # Two bytes a cell and group, as compact as every probability section.
    assert payload.meta["sections"]["group_probs"]["dtype"] == "uint16"


def test_without_groups_the_payload_is_as_it_was(load_tiny):
    payload = LensPayload.from_result(run_logit_lens(load_tiny("gpt2"), PROMPTS))
    assert "groups" not in payload.meta
    assert "group" not in {m["name"] for m in payload.meta["metrics"]}
    assert "group_probs" not in [*payload.meta["base_sections"], *payload.meta["sections"]]
    assert "needs groups" in payload.metric("group")["unavailable_reason"]


def test_groups_with_lenses_side_by_side_reach_every_lens(grouped):
    model, groups, _ = grouped
    both = run_logit_lens(model, PROMPTS, groups=groups, lens={"logit": None, "shift": Shift()})
    payload = LensPayload.from_result(both)
    decoded = decode_sections(payload.meta, payload.base_sections())
    for name, prefix in (("logit", ""), ("shift", "1/")):
        np.testing.assert_allclose(
            decoded[f"{prefix}group_probs"],
            real_cells(both[name], "group_probs"),
            atol=0.5 / 65535,
        )
    shift_metrics = payload.meta["lenses"][1]["metrics"]
    assert any(m["name"] == "group" and m["available"] for m in shift_metrics)
    widget = LogitLensWidget(both, metric="group", group="<i>x</i>", lens_name="shift")
    assert (widget.metric, widget.group) == ("group", "<i>x</i>")


def test_the_widget_takes_a_group_and_refuses_an_unknown_one(grouped):
    _, _, result = grouped
    widget = LogitLensWidget(result, metric="group")
    assert widget.group == "paris"
    widget.group = "<i>x</i>"
    with pytest.raises(ValueError, match=r"group must be one of the result's token groups"):
        widget.group = "nope"
    with pytest.raises(ValueError, match="needs groups"):
        LogitLensWidget(run_logit_lens(grouped[0], PROMPTS[:1]), metric="group")


def test_plot_draws_the_chosen_group(grouped):
    import matplotlib

    matplotlib.use("Agg")
    _, _, result = grouped
    fig = plot_logit_lens(result, prompt=0, metric="group", group="<i>x</i>")
    image = fig.axes[0].images[0].get_array()
    positions = result.positions(0)
    expected = result.group_probs[:, 0, positions, 1].double().numpy()
    np.testing.assert_allclose(np.ma.filled(image, np.nan), expected)
    assert fig.axes[1].get_ylabel() == "Probability of group “<i>x</i>”"
    with pytest.raises(ValueError, match="group must be one of"):
        plot_logit_lens(result, metric="group", group="nope")
    with pytest.raises(ValueError, match="group is for the metric of each token group"):
        plot_logit_lens(result, metric="prob", group="paris")


def test_the_html_export_holds_the_groups_and_escapes_their_names(grouped, tmp_path):
    _, _, result = grouped
    widget = LogitLensWidget(result, metric="group", group="<i>x</i>")
    path = widget.save_html(tmp_path / "groups.html")
    page = path.read_text()
    # The group shown and every group's name travel as script-safe JSON: text, never markup.
    assert '"group":"\\u003ci\\u003ex\\u003c/i\\u003e"' in page
    assert '"group_probs"' in page and "<i>x</i>" not in page


def test_the_diff_shows_each_groups_change(grouped):
    from murano_widgets import compare
    from murano_widgets.payload.codec import section_bytes
    from murano_widgets.widgets.diff import LensDiffWidget

    model, groups, a = grouped
    b = run_logit_lens(model, PROMPTS, groups=groups, lens=Shift())
    comparison = compare(a, b)
    meta, arrays = diff_payload(comparison)
    entries = [m for m in meta["metrics"] if m["name"].startswith("delta_group_")]
    assert [m["group"] for m in entries] == ["paris", "<i>x</i>"]
    mask = a.attention_mask.bool()
    for g, entry in enumerate(entries):
        # Same prompts, one to one: b's cell is a's; the change is b's value minus a's.
        expected = (b.group_probs[..., g] - a.group_probs[..., g])[:, mask].numpy()
        got = arrays[entry["name"]].astype(np.float64) / np.iinfo(np.int16).max
        np.testing.assert_allclose(got, expected, atol=1 / 32767)
        assert np.abs(expected).max() > 0.001  # the shift moved the groups' probabilities
    section_bytes(arrays)  # every section encodes
    widget = LensDiffWidget(comparison, metric=entries[1]["name"])
    assert widget.metric == "delta_group_1"
    plain = diff_payload(compare(run_logit_lens(model, PROMPTS), run_logit_lens(model, PROMPTS)))
    assert not [m for m in plain[0]["metrics"] if m["name"].startswith("delta_group_")]


def test_a_word_typed_in_the_live_widget_is_its_word_group(load_tiny):
    from murano_widgets import show_logit_lens
    from murano_widgets.live.controller import handle_message

    model = load_tiny("gpt2")
    widget = show_logit_lens(model, PROMPTS)
    widget.track_word("Paris")
    assert (widget.metric, widget.group) == ("group", "Paris")
    group = TokenGroup.word(model.tokenizer, "Paris")
    result = widget.result
    assert result.group_names == ["Paris"]
    assert all(ids == [list(group.ids)] for ids in result.group_token_ids)
    alone = run_logit_lens(model, PROMPTS, groups={"Paris": group})
    torch.testing.assert_close(result.group_probs, alone.group_probs, equal_nan=True)
    # A prompt added later keeps the group; a word no token starts is refused, nothing changed.
    widget.add_prompt("one two")
    assert widget.result.group_names == ["Paris"] and widget.result.n_inputs == 3
    with pytest.raises(ValueError, match="word"):
        widget.track_word("   ")
    assert widget.result.group_names == ["Paris"]
    # The front end's message: the same action, a second group beside the first.
    handle_message(widget, widget._live, {"action": "group", "id": 1, "text": "one"})
    widget._live.worker.wait_idle()
    assert widget.result.group_names == ["Paris", "one"] and widget.group == "one"
    widget.close()


def test_a_cells_description_holds_each_groups_probability(grouped):
    _, _, result = grouped
    seq = int(result.positions(1)[2])
    described = result.describe_cell(1, 2, 2)
    assert described["groups"] == {
        "paris": float(result.group_probs[2, 1, seq, 0]),
        "<i>x</i>": float(result.group_probs[2, 1, seq, 1]),
    }
    widget = LogitLensWidget(result)
    widget.selected = {"prompt": 1, "layer_index": 2, "position": 2}
    assert widget.selected["groups"] == described["groups"]
