"""The step's inputs: every bad layer, prompt, option or over-long prompt is refused with a
clear error before any model work; numpy numbers work where Python's do; the pipeline types."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_logit_lens import run_lens
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
    LogitLensWidget,
    MuranoModel,
    Node,
    PromptBatch,
    Results,
    show_logit_lens,
)


@pytest.fixture
def model_that_must_not_run(load_tiny, monkeypatch):
    """A model whose trace fails the test: errors must come before any model work."""
    model = load_tiny("gpt2")
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: pytest.fail("the model ran"))
    return model


@pytest.mark.parametrize(
    ("layers", "error", "words"),
    [
        ("some", ValueError, ["'all'", "'some'"]),
        ("", ValueError, ["'all'"]),
        ([], ValueError, ["empty"]),
        ([0, 3], ValueError, ["3", "out of range", "-3 to 2"]),
        ([-4], ValueError, ["-4", "out of range"]),
        ([1, -2], ValueError, ["twice", "1"]),
        ([0, 0], ValueError, ["twice"]),
        ([0.5], TypeError, ["ints", "float"]),
        ([True], TypeError, ["ints", "bool"]),
        (["0"], TypeError, ["ints", "str"]),
        (2, TypeError, ["layers=[2]"]),
        (None, TypeError, ["NoneType"]),
    ],
)
def test_bad_layers_are_refused_before_the_model_runs(
    model_that_must_not_run, layers, error, words
):
    with pytest.raises(error) as raised:
        LogitLens(model_that_must_not_run, layers=layers)
    message = str(raised.value)
    assert "layers" in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("prompts", "error", "words"),
    [
        ([], ValueError, ["empty"]),
        ([""], ValueError, ["prompts[0]", "empty"]),
        (["fine", "   \n"], ValueError, ["prompts[1]"]),
        (["fine", 3], TypeError, ["prompts[1]", "int"]),
        (["fine", None], TypeError, ["prompts[1]", "NoneType"]),
        ("one string", TypeError, ["single string", "list"]),
        (42, TypeError, ["int"]),
    ],
)
def test_bad_prompts_are_refused(model_that_must_not_run, prompts, error, words):
    with pytest.raises(error) as raised:
        PromptBatch(prompts)
    for word in words:
        assert word in str(raised.value)
    # A plain list in the results is checked by the step as well.
    with pytest.raises(error):
        LogitLens(model_that_must_not_run)({"prompts": prompts})


def test_missing_prompts_and_bad_options(model_that_must_not_run):
    with pytest.raises(KeyError, match="PromptBatch"):
        LogitLens(model_that_must_not_run)(Results())
    for top_k in (0, -1, 10**9, 2.0, True):
        with pytest.raises(ValueError, match="top_k"):
            LogitLens(model_that_must_not_run, top_k=top_k)
    with pytest.raises(ValueError, match="max_chunk_bytes"):
        LogitLens(model_that_must_not_run, max_chunk_bytes=0)
    with pytest.raises(TypeError, match="store_full_probs"):
        LogitLens(model_that_must_not_run, store_full_probs="yes")


def test_prompt_longer_than_the_context_is_refused_before_the_trace(model_that_must_not_run):
    too_long = "one two " * 300
    with pytest.raises(ValueError, match=r"prompts\[1\].*context of 256"):
        LogitLens(model_that_must_not_run)({"prompts": ["short", too_long]})


def test_negative_layers_count_from_the_end_and_rows_are_ascending(load_tiny):
    step = LogitLens(load_tiny("gpt2"), layers=[-1, 0])
    assert step.layers == [0, 2]


def test_pipeline_types():
    node = Node(5, "resid_post")
    assert str(node) == "L5.resid_post"
    assert Node.parse("L5.resid_post") == node
    assert Node.parse(str(Node(-1, "mlp_out"))) == Node(-1, "mlp_out")
    with pytest.raises(ValueError, match="L<layer>"):
        Node.parse("5.resid_post")
    batch = PromptBatch(["a b"], source="test", metadata={"k": 1})
    assert batch.raw_prompts is None and len(batch) == 1
    results = Results(prompts=batch)
    assert results["prompts"] is batch and "PromptBatch" in repr(results)


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


def _save(config, folder):
    tokenizer = build_tokenizer()
    config.vocab_size = len(tokenizer)
    config.bos_token_id = config.eos_token_id = tokenizer.bos_token_id
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("arch", sorted(ABSOLUTE))
def test_absolute_position_models_refuse_long_prompts_before_any_work(arch, tmp_path, monkeypatch):
    model = MuranoModel(_save(ABSOLUTE[arch], tmp_path / arch))
    assert model.context_length == 24 and model.trained_length is None
    fits = "one two three"  # a few tokens of this tokenizer
    lens = run_lens(model, [fits])
    assert torch.isfinite(lens.max_probs[:, lens.attention_mask.bool()]).all()
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
    monkeypatch.setattr(model, "block_outputs", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(ValueError, match=r"prompts\[1\] is \d+ tokens long.*context of 24"):
        run_lens(model, [fits, "one two " * 20])


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
        lens = run_lens(model, ["one two " * 20])
    assert torch.isfinite(lens.max_probs).all()


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
def test_bad_arguments_fail_before_the_model_runs(model_that_must_not_run, call, error, words):
    with pytest.raises(error) as raised:
        call(model_that_must_not_run)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize(
    ("prompts", "error", "words"),
    [
        ({"b", "a"}, TypeError, ["prompts", "set", "list"]),
        (["fine", "bad \ud83d here"], ValueError, ["prompts[1]", "U+D83D", "surrogate"]),
    ],
)
def test_unordered_or_unencodable_prompts_are_refused(
    model_that_must_not_run, prompts, error, words
):
    with pytest.raises(error) as raised:
        PromptBatch(prompts)
    for word in words:
        assert word in str(raised.value)
