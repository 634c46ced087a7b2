"""Issue 10: the GPU default path, non-finite values, released-murano depth, the context guard
and the validation gaps an outside audit found. Each test failed before its fix."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import torch
from tiny_models import build_tokenizer
from transformers import (
    AutoModelForCausalLM,
    GPT2Config,
    GPTBigCodeConfig,
    GPTNeoConfig,
    LlamaConfig,
    OPTConfig,
)

from murano_widgets import (
    LogitLens,
    LogitLensResult,
    LogitLensWidget,
    MuranoModel,
    PromptBatch,
    load_demo_model,
    plot_logit_lens,
    show_logit_lens,
)
from murano_widgets.payload import LensPayload, decode_sections

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two"]


def lens_of(model, prompts=PROMPTS, **options):
    return LogitLens(model, **options)({"prompts": PromptBatch(list(prompts))})["logit_lens"]


# -- 1. The GPU default path ------------------------------------------------------------------


def test_dtype_auto_loads_the_checkpoint_dtype():
    """Every non-CPU default goes through dtype='auto', which nnsight's meta load cannot take."""
    model = load_demo_model(dtype="auto")
    assert model.dtype == torch.float32  # what the demo checkpoint was saved in
    lens = lens_of(model, ["The capital of France is"])
    assert torch.isfinite(lens.max_probs).all()


def test_dtype_auto_reads_a_bfloat16_checkpoint(tiny_model_dirs, tmp_path):
    folder = tmp_path / "bf16"
    AutoModelForCausalLM.from_pretrained(
        tiny_model_dirs["llama"], dtype=torch.bfloat16
    ).save_pretrained(folder)
    build_tokenizer().save_pretrained(folder)
    assert MuranoModel(folder, dtype="auto").dtype == torch.bfloat16


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"dtype": "nope"}, ["dtype", "'nope'", "'bfloat16'"]),
        ({"dtype": torch.int8}, ["dtype", "floating"]),
        ({"device": "potato"}, ["device", "'potato'"]),
        ({"backend": "jax"}, ["backend", "'jax'", "'nnsight'"]),
    ],
)
def test_bad_model_options_name_the_argument(options, words):
    with pytest.raises(ValueError) as raised:
        load_demo_model(**options)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the message on a machine without a GPU"
)
def test_a_gpu_that_is_not_there_is_named():
    with pytest.raises(ValueError, match=r"device 'cuda' is not available.*device='cpu'"):
        load_demo_model(device="cuda")


# -- 2. Non-finite values ---------------------------------------------------------------------


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
        lens = lens_of(poisoned_gpt2)
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
        lens = lens_of(poisoned_gpt2)
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
    from murano_widgets._reductions import reduce_final, reduce_logits

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


# -- 3. Released-murano results ---------------------------------------------------------------


@pytest.fixture(scope="module")
def demo():
    return load_demo_model()


def murano_result(demo, layers):
    """What the released murano library returns: layer_indices or string addresses, all_probs."""
    full = lens_of(demo, ["The capital of France is"], layers=layers, store_full_probs=True)
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


# -- 4. The context guard ---------------------------------------------------------------------


def _save(config, folder):
    tokenizer = build_tokenizer()
    config.vocab_size = len(tokenizer)
    config.bos_token_id = config.eos_token_id = tokenizer.bos_token_id
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


ABSOLUTE = {
    "gpt2": GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=24),
    "opt": OPTConfig(
        hidden_size=32,
        ffn_dim=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=24,
        word_embed_proj_dim=32,
    ),
    "gpt_neo": GPTNeoConfig(
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        attention_types=[[["global"], 2]],
        max_position_embeddings=24,
    ),
    "gpt_bigcode": GPTBigCodeConfig(n_embd=32, n_layer=2, n_head=4, n_positions=24),
}


@pytest.mark.parametrize("arch", sorted(ABSOLUTE))
def test_absolute_position_models_refuse_long_prompts_before_any_work(arch, tmp_path, monkeypatch):
    model = MuranoModel(_save(ABSOLUTE[arch], tmp_path / arch))
    assert model.context_length == 24 and model.trained_length is None
    fits = "one two three"  # a few tokens of this tokenizer
    lens = lens_of(model, [fits])
    assert torch.isfinite(lens.max_probs[:, lens.attention_mask.bool()]).all()
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(ValueError, match=r"prompts\[1\] is \d+ tokens long.*context of 24"):
        lens_of(model, [fits, "one two " * 20])


def test_rotary_models_warn_beyond_their_trained_length(tmp_path):
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16,
    )
    model = MuranoModel(_save(config, tmp_path / "llama"))
    assert model.context_length is None and model.trained_length == 16
    with pytest.warns(UserWarning, match=r"prompts\[0\] is \d+ tokens long, beyond the 16"):
        lens = lens_of(model, ["one two " * 20])
    assert torch.isfinite(lens.max_probs).all()


# -- 5. Validation gaps -----------------------------------------------------------------------


@pytest.fixture
def must_not_run(load_tiny, monkeypatch):
    model = load_tiny("gpt2")
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    return model


def test_numpy_integers_and_booleans_work_where_python_ones_do(load_tiny):
    model = load_tiny("gpt2")
    step = LogitLens(
        model,
        layers=np.array([0, -1]),
        store_full_probs=np.bool_(False),
        top_k=np.int64(3),
        max_chunk_bytes=np.int32(1 << 20),
    )
    assert step.layers == [0, 2] and step.top_k == 3 and step.store_full_probs is False
    lens = step({"prompts": PromptBatch(["one two"])})["logit_lens"]
    widget = LogitLensWidget(lens, prompt=np.int64(0), layer=np.int64(2))
    widget.layer = np.int64(0)
    assert widget.layer == 0


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m: LogitLens(m, layers=np.array(1)), TypeError, ["layers=[1]"]),
        (lambda m: LogitLens(m, layers={0, 1}), TypeError, ["layers", "set", "list"]),
        (lambda m: LogitLens(m, store_full_probs=1), TypeError, ["store_full_probs", "int"]),
        (lambda m: LogitLens(m)(None), TypeError, ["results", "PromptBatch", "NoneType"]),
        (lambda m: LogitLens(m)([]), TypeError, ["results", "list"]),
        (lambda m: show_logit_lens(m, ["a", "b"], prompt=5), ValueError, ["prompt", "0 to 1"]),
        (lambda m: show_logit_lens(m, ["a"], layer=7), ValueError, ["layer", "0 to 2"]),
        (lambda m: show_logit_lens(m, ["a"], metric="loss"), ValueError, ["metric", "kl"]),
    ],
)
def test_bad_arguments_fail_before_the_model_runs(must_not_run, call, error, words):
    with pytest.raises(error) as raised:
        call(must_not_run)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize(
    ("prompts", "error", "words"),
    [
        ({"b", "a"}, TypeError, ["prompts", "set", "list"]),
        (["fine", "bad \ud83d here"], ValueError, ["prompts[1]", "U+D83D", "surrogate"]),
    ],
)
def test_unordered_or_unencodable_prompts_are_refused(must_not_run, prompts, error, words):
    with pytest.raises(error) as raised:
        PromptBatch(prompts)
    for word in words:
        assert word in str(raised.value)


@pytest.fixture(scope="module")
def small_lens(load_tiny):
    return lens_of(load_tiny("gpt2"))


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


# -- 8. A first run with no stumbles ----------------------------------------------------------


def test_no_loading_bar_lands_in_the_first_lens_call(tiny_model_dirs, capfd):
    """nnsight loads the real weights lazily: without the fix, transformers' 'Loading weights'
    bar printed into the notebook cell of the first lens call, above the widget."""
    model = MuranoModel(tiny_model_dirs["qwen2"])
    capfd.readouterr()
    lens_of(model, ["one two"])
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err + captured.out
