"""The heatmap's payload: what the widget sends (compact binary sections, one string table, the
detail sections on request) decodes back to the result, as the front end decodes it."""

from __future__ import annotations

import numpy as np
import pytest

from murano_widgets import LogitLens, LogitLensWidget, PromptBatch
from murano_widgets.payload.lens import BASE_SECTIONS, LensPayload, decode_sections

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two", "Alice met Bob."]


@pytest.fixture(scope="module")
def result(load_tiny):
    model = load_tiny("llama")
    return LogitLens(model, top_k=5)({"prompts": PromptBatch(PROMPTS)})["logit_lens"]


@pytest.fixture
def widget(result):
    return LogitLensWidget(result)


def real_cells(result, tensor):
    """``tensor[layer, prompt, real positions]`` laid out as the payload does: [L, T, ...]."""
    mask = result.attention_mask.bool()
    return tensor[:, mask].numpy()


def test_payload_round_trip_gives_back_the_result(widget, result):
    widget._details = True
    meta, sections = widget._meta, widget._sections
    values = decode_sections(meta, sections)
    table = meta["tokens"]
    mask = result.attention_mask.bool()
    assert meta["lengths"] == result.attention_mask.sum(1).tolist()
    assert meta["layers"] == result.layers and meta["prompts"] == PROMPTS
    # Token indices point at the decoded strings of the right ids.
    words = result.token_strings
    assert [table[i] for i in values["input_ids"]] == [
        words[int(i)] for i in result.input_ids[mask]
    ]
    assert [table[i] for i in values["final_tokens"]] == [
        words[int(i)] for i in result.final_tokens[mask]
    ]
    top1 = values["predicted_tokens"]
    assert [[table[i] for i in row] for row in top1] == [
        [words[int(i)] for i in row] for row in real_cells(result, result.predicted_tokens)
    ]
    topk = values["topk_tokens"]
    assert topk.shape[-1] == 4
    expected_topk = real_cells(result, result.topk_tokens)[..., 1:]
    assert (
        np.vectorize(lambda i: table[i])(topk).tolist()
        == np.vectorize(lambda i: words[int(i)])(expected_topk).tolist()
    )
    # Quantised values are within half a step of the exact ones.
    np.testing.assert_allclose(
        values["max_probs"], real_cells(result, result.max_probs), atol=0.5 / 65535 + 1e-7
    )
    np.testing.assert_allclose(
        values["final_token_probs"],
        real_cells(result, result.final_token_probs),
        atol=0.5 / 65535 + 1e-7,
    )
    np.testing.assert_allclose(
        values["topk_probs"],
        real_cells(result, result.topk_probs)[..., 1:],
        atol=0.5 / 65535 + 1e-7,
    )
    entropy_step = meta["max_entropy"] / 65535
    np.testing.assert_allclose(
        values["entropy"], real_cells(result, result.entropy), atol=entropy_step
    )
    kl_step = meta["sections"]["kl_to_final"]["scale"]
    np.testing.assert_allclose(
        values["kl_to_final"], real_cells(result, result.kl_to_final), atol=kl_step
    )
    assert (
        values["final_token_ranks"].tolist()
        == real_cells(result, result.final_token_ranks).tolist()
    )
    assert "missing" not in values


def test_default_payload_is_small_and_details_come_on_request(widget, result):
    cells = len(result.layers) * int(result.attention_mask.sum())
    # Masks are sent only when some cell is marked, answer sections only with answers, the
    # generation and chat-role sections only with generate= or chat=.
    absent = {"missing", "final_missing", "answer_probs", "answer_ranks", "answer_top1"}
    absent |= {"generated", "token_roles", "target_probs"}  # target_probs only with targets
    absent |= {"group_probs"}  # only with groups
    assert set(widget._sections) == set(BASE_SECTIONS) - absent
    sizes = widget.payload_nbytes()
    per_cell = (sizes["predicted_tokens"] + sizes["max_probs"]) / cells
    assert per_cell == 4
    widget.metric = "entropy"  # switching the metric asks for the detail sections
    assert {"entropy", "kl_to_final", "final_token_ranks", "topk_tokens"} <= set(widget._sections)
    sizes = widget.payload_nbytes()
    topk_per_cell = (
        sizes["predicted_tokens"] + sizes["max_probs"] + sizes["topk_tokens"] + sizes["topk_probs"]
    ) / cells
    # Ranks 2..5: a uint16 token index and a uint16 probability each (issue 21: the uint8
    # probabilities of before, 16 bytes a cell, printed rounded numbers as exact ones).
    assert topk_per_cell == 4 + 4 * (2 + 2)


def test_the_base_sections_hold_the_final_prediction_at_each_last_position(widget, result):
    # The trajectory chart opens on each prompt's last position: its final-prediction line comes
    # with the first payload (issue 21, item 6), read here from the result's own tensors.
    assert not widget._details
    values = decode_sections(widget._meta, widget._sections)
    assert "final_token_probs" not in values
    last = [int(result.positions(p)[-1]) for p in range(result.n_inputs)]
    assert len(set(result.lengths)) == 3  # each prompt ends at its own place in the payload
    probs = result.final_token_probs[:, range(result.n_inputs), last].numpy()
    np.testing.assert_allclose(values["final_last_probs"], probs, atol=0.5 / 65535 + 1e-7)
    ranks = result.final_token_ranks[:, range(result.n_inputs), last].numpy()
    assert values["final_last_ranks"].tolist() == ranks.tolist()
    sizes = widget.payload_nbytes()
    assert sizes["final_last_probs"] == sizes["final_last_ranks"] == 2 * len(result.layers) * 3


def test_tracked_tokens_come_with_the_first_payload():
    # The chart draws every tracked token at the column it opens on, and a notebook saved where
    # no page asked for the details (nbclient, a headless run) must still draw them: the
    # targets' probabilities are a base section, read here against the result's own floats.
    from murano_widgets import LogitLensWidget, load_demo_model
    from murano_widgets.run import run_logit_lens

    result = run_logit_lens(
        load_demo_model(), ["The capital of France is", "Monday,"], targets=[" Paris", " Tuesday"]
    )
    widget = LogitLensWidget(result)
    assert not widget._details and "topk_probs" not in widget._sections
    values = decode_sections(widget._meta, widget._sections)["target_probs"]
    mask = result.attention_mask.bool()
    expected = result.target_probs[:, mask].numpy()  # [L, T, n_targets], real positions
    # Within half a step; a positive value below that is stored as one step (never "0").
    np.testing.assert_allclose(values, expected, atol=1 / 65535 + 1e-7)
    assert ((values > 0) == (expected > 0)).all()


def test_state_is_binary_not_nested_lists(widget):
    state = widget.get_state()
    assert all(isinstance(v, (bytes, memoryview)) for v in state["_sections"].values())
    assert isinstance(state["_meta"]["tokens"], list)


# The last digit the front end prints of a probability: two decimals of a percent
# (js/src/format.js, formatProb), 0.0001.
FINEST_PRINTED_PROBABILITY = 1e-4


def probability_fields(result) -> dict[str, np.ndarray]:
    """Each probability section's values, read from the result ([L, T, ...] or [L, P, S])."""
    fields = {
        "max_probs": real_cells(result, result.max_probs),
        "final_token_probs": real_cells(result, result.final_token_probs),
        "topk_probs": real_cells(result, result.topk_probs)[..., 1:],  # rank 1 is max_probs
    }
    if result.answer_sets:
        sets = list(result.answer_sets.values())
        fields["answer_probs"] = np.stack([s.probs.numpy() for s in sets], axis=-1)
        fields["answer_token_probs"] = real_cells(result, sets[0].token_probs)
    if result.target_probs is not None:
        fields["target_probs"] = real_cells(result, result.target_probs)
    return fields


@pytest.mark.parametrize("case", ["tiny llama", "rounding"])
def test_every_probability_is_the_results_to_within_its_stated_step(result, case):
    """What the tooltip prints is what the payload holds: each probability section's step (its
    ``scale``) is finer than the last digit printed, every decoded value is within half a step
    of the result's float, and a positive value never decodes to 0 (it would read "0%")."""
    from golden_payloads import rounding_result

    if case == "rounding":  # a result with probabilities of 3e-6 and 9e-5, answers and targets
        result = rounding_result()
    payload = LensPayload.from_result(result)
    decoded = decode_sections(payload.meta, payload.all_sections())
    expected = probability_fields(result)
    assert {"max_probs", "final_token_probs", "topk_probs"} <= set(expected)
    for name, exact in expected.items():
        step = payload.meta["sections"][name]["scale"]
        assert step <= FINEST_PRINTED_PROBABILITY, (name, step)
        exact = exact.astype(np.float64)
        got = decoded[name]
        known = np.isfinite(exact)
        assert known.any(), name
        big = known & (exact >= step / 2)
        np.testing.assert_allclose(got[big], exact[big], rtol=0, atol=step / 2 + 1e-12)
        tiny = known & (exact > 0) & (exact < step / 2)
        # Below half a step: the smallest positive level, so that a stored 0 is an exact 0.
        np.testing.assert_array_equal(got[tiny], step)
        np.testing.assert_array_equal(got[known & (exact == 0)], 0.0)
    if case == "rounding":
        tiny = expected["topk_probs"] < payload.meta["sections"]["topk_probs"]["scale"] / 2
        assert tiny.any(), "the case must hold a probability below half a step"
