"""Non-finite values (a NaN or an infinity in the model) are missing cells, named in one
warning, and reach the payload and the plot as missing, never as a colour."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from test_logit_lens import run_lens
from tiny_models import build_tokenizer
from transformers import (
    AutoModelForCausalLM,
)

from murano_widgets import (
    MuranoModel,
    plot_logit_lens,
)
from murano_widgets.payload.lens import LensPayload, decode_sections

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two"]


@pytest.fixture(scope="module")
def poisoned_gpt2(tiny_model_dirs, tmp_path_factory):
    """A tiny GPT-2 whose last block writes NaN: every layer before it is fine."""
    folder = tmp_path_factory.mktemp("poisoned") / "gpt2"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dirs["gpt2"])
    with torch.no_grad():
        model.transformer.h[-1].mlp.c_proj.bias[3] = float("nan")
    model.save_pretrained(folder)
    build_tokenizer().save_pretrained(folder)
    return MuranoModel(folder)


def test_non_finite_cells_are_missing_and_named_in_one_warning(poisoned_gpt2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lens = run_lens(poisoned_gpt2, PROMPTS)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "layer 2 of prompt 0" in messages[0]
    assert "final_token_probs" in messages[0]
    real = lens.attention_mask.bool()
    # The poisoned last layer: no prediction, no rank, no KL (not rank 0 and KL 0).
    assert torch.isnan(lens.max_probs[-1][real]).all()
    assert (lens.predicted_tokens[-1][real] == -1).all()
    assert (lens.final_token_ranks[:, real] == -1).all()
    assert torch.isnan(lens.kl_to_final[:, real]).all()
    assert torch.isnan(lens.final_token_probs[:, real]).all()
    assert (lens.final_tokens[real] == -1).all()
    assert all(word == "" for row in lens.predicted_words[-1] for word in row)
    # The layers before it still read what they read.
    assert torch.isfinite(lens.max_probs[:-1][:, real]).all()
    assert (lens.predicted_tokens[:-1][:, real] >= 0).all()
    assert torch.isfinite(lens.entropy[:-1][:, real]).all()


def test_non_finite_cells_reach_the_payload_and_plot_as_missing(poisoned_gpt2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lens = run_lens(poisoned_gpt2, PROMPTS)
    payload = LensPayload.from_result(lens)
    values = decode_sections(payload.meta, payload.all_sections())
    assert values["missing"][-1].all() and not values["missing"][:-1].any()
    assert values["final_missing"].all()
    fig = plot_logit_lens(lens, metric="kl")
    image = fig.axes[0].images[0].get_array()
    assert np.ma.getmaskarray(image).all(), "KL has no value anywhere: all cells grey"
    fig = plot_logit_lens(lens, metric="prob")
    mask = np.ma.getmaskarray(fig.axes[0].images[0].get_array())
    assert mask[-1].all() and not mask[:-1].any()


@pytest.mark.parametrize("poison", [float("nan"), float("inf")])
def test_one_bad_logit_makes_its_row_missing(poison):
    from murano_widgets.step.reductions import reduce_final, reduce_logits

    generator = torch.Generator().manual_seed(0)
    final_z, z = (torch.randn(4, 300, generator=generator) for _ in range(2))
    z[1, 7] = poison
    final_z[2, 9] = poison
    final, last = reduce_final(final_z, 3, keep_probs=False)
    fields = reduce_logits(z, final, 3, keep_probs=False)
    assert final.valid.tolist() == [True, True, False, True]
    assert final.predictions.tolist()[2] == -1
    for name in ("entropy", "final_token_probs", "kl_to_final"):
        assert torch.isnan(fields[name][1]), name
        assert torch.isfinite(fields[name][[0, 3]]).all(), name
    assert fields["final_token_ranks"][1] == -1 and (fields["topk_tokens"][1] == -1).all()
    # Row 2's own distribution is fine; only what is measured against the final one is missing.
    assert fields["topk_tokens"][2, 0] >= 0 and torch.isfinite(fields["entropy"][2])
    assert fields["final_token_ranks"][2] == -1 and torch.isnan(fields["kl_to_final"][2])
    assert torch.isnan(last["kl_to_final"][2]) and last["final_token_ranks"][2] == -1
