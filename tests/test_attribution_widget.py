"""The direct logit attribution in the heatmap's payload and widget (issue 23, item 4).

The payload's attribution sections are the result's floats at its real positions; a result
without attribution (or with block outputs alone) sends what it always did; the widget's
``explain`` and ``view`` traits are checked against what the result can show, and the export
carries them. The demo model's results get their attribution from the step
(``decompose=True``), and, for what the demo model lacks (a soft-cap), from
``attribution_data.decompose`` (the contract's fields, made-up numbers).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from attribution_data import decompose, with_sublayers

from murano_widgets import LogitLensWidget, load_demo_model
from murano_widgets.metrics import ATTRIBUTION_SECTIONS
from murano_widgets.payload.lens import (
    BASE_SECTIONS,
    DETAIL_SECTIONS,
    LensPayload,
    decode_sections,
)
from murano_widgets.results import LensResults
from murano_widgets.run import run_logit_lens
from murano_widgets.widgets.base import WidgetValueError
from murano_widgets.widgets.show import show_logit_lens

PROMPTS = ["The capital of France is", "Monday, Tuesday,"]


@pytest.fixture(scope="module")
def model():
    return load_demo_model()


@pytest.fixture(scope="module")
def plain(model):
    return run_logit_lens(model, PROMPTS, answers=[" Paris", None], targets=[" London", " Rome"])


@pytest.fixture(scope="module")
def decomposed(model):
    """The step's own attribution: heads, a row after each attention, a foil for prompt 0."""
    return run_logit_lens(
        model,
        PROMPTS,
        answers=[" Paris", None],
        foils=[" Rome", None],
        targets=[" London", " Rome"],
        decompose=True,
        heads=True,
        sites=("resid_mid", "resid_post"),
    )


def _real(result, tensor):
    """A ``[rows, prompts, seq, ...]`` field's real cells, ``[rows, T, ...]``, as the payload
    lays them out."""
    b, s = torch.nonzero(result.attention_mask.bool(), as_tuple=True)
    return tensor.numpy()[:, b.numpy(), s.numpy()]


def test_the_attribution_sections_are_the_results_floats(decomposed):
    payload = LensPayload.from_result(decomposed)
    decoded = decode_sections(payload.meta, payload.all_sections())
    expected = {
        "contributions": _real(decomposed, decomposed.contributions),
        "contribution_bias": _real(decomposed, decomposed.contribution_bias),
        "top1_logits": _real(decomposed, decomposed.top1_logits),
        "target_contributions": _real(decomposed, decomposed.target_contributions),
        "target_bias": _real(decomposed, decomposed.target_bias),
        "answer_token_contributions": _real(decomposed, decomposed.answer_token_contributions),
        "answer_token_bias": _real(decomposed, decomposed.answer_token_bias),
    }
    # The answer at the last position is the every-cell answer's slice: not sent twice.
    superseded = {"answer_row_contributions", "answer_row_bias"}
    assert set(expected) == set(ATTRIBUTION_SECTIONS) - superseded
    assert not superseded & set(payload.meta["sections"])
    for name, values in expected.items():
        spec = payload.meta["sections"][name]
        assert spec["dtype"] == "float32" and spec["scale"] == 1.0, name
        # Bit for bit, NaN where a component has no part (after the row's point).
        np.testing.assert_array_equal(decoded[name], values.astype(np.float32), err_msg=name)
    assert np.isnan(decoded["contributions"]).any() and np.isfinite(decoded["contributions"]).any()
    # The parts and the bias sum to the logit, as the panel shows them.
    total = np.nansum(decoded["contributions"], -1) + decoded["contribution_bias"]
    np.testing.assert_allclose(total, decoded["top1_logits"], atol=1e-4)
    # The answer at every real cell: prompt 0 (an answer and a foil) has a value everywhere,
    # prompt 1 (no answer) none; at each prompt's last position it is answer_row_*.
    answer = decoded["answer_token_contributions"]
    first = decomposed.lengths[0]
    assert np.isfinite(answer[:, :first, 0]).all() and np.isnan(answer[:, first:]).all()
    last = first - 1
    np.testing.assert_array_equal(
        answer[:, last], decomposed.answer_row_contributions[:, 0].numpy()
    )
    np.testing.assert_array_equal(
        decoded["answer_token_bias"][:, last], decomposed.answer_row_bias[:, 0].numpy()
    )


def test_a_result_with_the_answer_at_the_last_position_only_sends_that(plain):
    """A result made before the step attributed every cell (``answer_row_*`` alone) sends its
    last-position parts as before, and its ``explain`` still offers the answer."""
    old = decompose(copy.copy(plain), seed=3)
    assert getattr(old, "answer_token_contributions", None) is None
    payload = LensPayload.from_result(old)
    decoded = decode_sections(payload.meta, payload.all_sections())
    np.testing.assert_array_equal(
        decoded["answer_row_contributions"], old.answer_row_contributions.numpy()
    )
    assert "answer_token_contributions" not in payload.meta["sections"]
    assert LogitLensWidget(old, explain="answer").explain == "answer"


def test_the_metadata_names_components_rows_softcap_and_foils(decomposed, plain):
    meta = LensPayload.from_result(decomposed).meta
    assert meta["components"] == decomposed.component_labels
    assert meta["components"][:6] == ["embed", "L0.H0", "L0.H1", "L0.H2", "L0.H3", "L0.attn_bias"]
    assert "logit_softcap" not in meta  # the demo model has none
    capped = decompose(copy.copy(plain), softcap=30.0)
    assert LensPayload.from_result(capped).meta["logit_softcap"] == 30.0
    assert meta["foils"] == [" Rome", None]
    assert meta["addresses"] == [str(node) for node in decomposed.addresses]
    assert meta["addresses"][:2] == ["L0.resid_mid", "L0.resid_post"]
    assert meta["layers"] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert meta["detail_sections"] == [
        *DETAIL_SECTIONS,
        *(name for name in ATTRIBUTION_SECTIONS if not name.startswith("answer_row")),
    ]
    # Sent with the details, never with the first view.
    payload = LensPayload.from_result(decomposed)
    assert not set(payload.base_sections()) & set(ATTRIBUTION_SECTIONS)
    sent = set(ATTRIBUTION_SECTIONS) & set(payload.meta["detail_sections"])
    assert {"contributions", "answer_token_contributions", "target_bias"} <= sent
    assert sent <= set(payload.all_sections())


def test_a_result_without_attribution_sends_what_it_always_did(plain):
    payload = LensPayload.from_result(plain)
    for key in ("components", "logit_softcap", "foils", "addresses"):
        assert key not in payload.meta
    # Every detail but a metric that needs what this run was not given (the logit difference:
    # foils).
    from murano_widgets.metrics import METRICS

    needs = {metric.field for metric in METRICS.values() if metric.needs}
    assert "logit_diff" in needs
    assert payload.meta["detail_sections"] == [n for n in DETAIL_SECTIONS if n not in needs]
    assert not set(payload.all_sections()) & set(ATTRIBUTION_SECTIONS)
    # Sublayer rows alone (no attribution): the addresses, nothing else new.
    sub = LensPayload.from_result(with_sublayers(plain))
    assert sub.meta["addresses"][0] == "L0.resid_mid"
    assert "components" not in sub.meta
    assert set(sub.base_sections()) == {n for n in BASE_SECTIONS if n in sub.arrays}


def test_lenses_side_by_side_each_send_their_own_attribution(plain):
    a = decompose(copy.copy(plain), seed=1)
    b = decompose(copy.copy(plain), seed=2)
    b.lens_kind = "tuned"
    payload = LensPayload.from_result(LensResults({"logit": a, "tuned": b}))
    decoded = decode_sections(payload.meta, payload.all_sections())
    np.testing.assert_array_equal(decoded["contributions"], _real(a, a.contributions))
    np.testing.assert_array_equal(decoded["1/contributions"], _real(b, b.contributions))
    assert payload.meta["components"] == a.component_labels


def test_explain_and_view_are_checked_against_the_result(decomposed, plain):
    widget = LogitLensWidget(decomposed)
    assert (widget.explain, widget.view) == ("top1", "layers")
    widget.explain = "answer"
    widget.explain = "target: London"
    assert widget.explain == "target: London"
    widget.explain = " Rome"  # a target's text alone
    assert widget.explain == "target: Rome"
    with pytest.raises(WidgetValueError, match=r"explain must be one of \['top1', 'answer'"):
        widget.explain = "target: Berlin"
    widget.view = "components"
    with pytest.raises(WidgetValueError, match="view must be one of layers, components"):
        widget.view = "heads"
    bare = LogitLensWidget(plain)
    with pytest.raises(WidgetValueError, match="no direct logit attribution: run with decompose"):
        bare.explain = "answer"
    with pytest.raises(WidgetValueError, match="view='components' needs the direct logit"):
        bare.view = "components"
    with pytest.raises(WidgetValueError, match="view='components' needs"):
        LogitLensWidget(plain, view="components")
    assert LogitLensWidget(decomposed, explain="answer", view="components").explain == "answer"


def test_show_logit_lens_checks_the_view_before_the_model_runs(model):
    with pytest.raises(ValueError, match="view='components' needs the direct logit attribution"):
        show_logit_lens(model, PROMPTS, view="components")
    with pytest.raises(ValueError, match="view must be one of layers, components"):
        show_logit_lens(model, PROMPTS, view="rows")


def test_a_sublayer_row_is_pinned_and_described_as_itself(decomposed):
    widget = LogitLensWidget(decomposed)
    assert widget.layer == 5
    widget.selected = {"prompt": 0, "layer_index": 6, "position": 4}
    assert widget.selected["layer"] == 3
    # The layer alone does not say which of its two rows: the address does.
    assert widget.selected["address"] == "L3.resid_mid"
    assert decomposed.describe_cell(0, 7, 4)["address"] == "L3.resid_post"
    assert widget.selected["predicted_token"] == decomposed.predicted_words[6][0][4]
    widget.layer = 2  # a model layer (rows 4, after its attention, and 5, the block): taken
    assert widget.layer == 2


def test_a_result_of_block_outputs_describes_its_cells_as_before(plain):
    """No ``address`` where every row is a block output: the layer says which row it is."""
    assert "address" not in plain.describe_cell(0, 1, 2)
    assert "address" not in LensResults({"logit": plain}).describe_cell(0, 1, 2, lens="logit")
    described = with_sublayers(plain).describe_cell(0, 2, 2)
    assert (described["layer"], described["address"]) == (1, "L1.resid_mid")


def test_the_export_carries_the_attribution_and_the_choices(decomposed):
    widget = LogitLensWidget(decomposed, explain="answer", view="components")
    state = widget._standalone_state()
    assert (state["explain"], state["view"]) == ("answer", "components")
    assert set(ATTRIBUTION_SECTIONS) & set(state["_meta"]["detail_sections"]) <= set(
        state["_sections"]
    )
    assert "answer_token_contributions" in state["_sections"]
    assert state["_meta"]["components"] == decomposed.component_labels


def test_switching_to_a_lens_that_cannot_explain_it_falls_back_in_python(model, decomposed):
    """The page shows the top-1 and the heatmap under a lens without the attribution (or
    without the answer's); explain and view say so at once, whoever switched the lens."""
    bare = run_logit_lens(
        model,
        PROMPTS,
        answers=[" Paris", None],
        targets=[" London", " Rome"],
        sites=("resid_mid", "resid_post"),
    )
    no_answer = copy.copy(decomposed)
    no_answer.answer_token_contributions = no_answer.answer_token_bias = None
    no_answer.answer_row_contributions = no_answer.answer_row_bias = None
    results = LensResults({"dla": decomposed, "no_answer": no_answer, "bare": bare})
    widget = LogitLensWidget(results, explain="answer", view="components")
    sent = []
    widget.observe(lambda change: sent.append((change["name"], change["new"])), ["explain", "view"])
    widget.lens_name = "no_answer"  # the attribution, but not the answer's
    assert (widget.explain, widget.view) == ("top1", "components")
    widget.lens_name = "dla"
    assert widget.explain == "top1", "as the page: the choice does not come back"
    widget.explain = "target: Rome"
    widget.lens_name = "no_answer"
    assert widget.explain == "target: Rome", "the targets' attribution is there: kept"
    widget.lens_name = "bare"  # no attribution at all
    assert (widget.explain, widget.view) == ("top1", "layers")
    assert sent == [
        ("explain", "top1"),
        ("explain", "target: Rome"),
        ("explain", "top1"),
        ("view", "layers"),
    ]
    # The page's own switch (a message from the lens menu) does the same.
    widget.lens_name = "dla"
    widget.explain, widget.view = "answer", "components"
    widget.set_state({"lens": "bare"})
    assert (widget.lens_name, widget.explain, widget.view) == ("bare", "top1", "layers")
