"""Bad input gets a clear error before any model work; the model backend and pipeline types."""

from __future__ import annotations

import time

import pytest
import torch

from murano_widgets import LogitLens, ModelBackend, MuranoModel, Node, PromptBatch, Results, Step


@pytest.fixture
def model_that_must_not_run(load_tiny, monkeypatch):
    """A model whose trace fails the test: errors must come before any model work."""
    model = load_tiny("gpt2")
    monkeypatch.setattr(model, "trace", lambda *a, **k: pytest.fail("the model ran"))
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


def test_murano_model_surface(load_tiny):
    model = load_tiny("llama")
    assert isinstance(model, ModelBackend)
    assert isinstance(LogitLens(model), Step)
    assert model.dtype == torch.float32  # float32 on CPU unless asked
    assert model.n_layers == 3
    # The tiny tokenizers have no pad token: batching falls back to EOS.
    assert model.tokenizer.pad_token == model.tokenizer.eos_token
    assert "MuranoModel" in repr(model)


def test_uncached_hub_id_fails_at_once_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(OSError, match=r"not in the local Hugging Face cache.*local folder"):
        MuranoModel("someone/not-a-cached-model")
    assert time.perf_counter() - start < 5


def test_uncached_hub_id_fails_at_once_without_network(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # An endpoint nothing listens on stands for a machine with no route to the hub.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    start = time.perf_counter()
    with pytest.raises(OSError, match="cannot be reached"):
        MuranoModel("someone/not-a-cached-model")
    assert time.perf_counter() - start < 10


def test_missing_local_folder_is_named(tmp_path):
    with pytest.raises(OSError, match="not an existing folder"):
        MuranoModel(str(tmp_path / "nope"))
    with pytest.raises(OSError, match=r"without config\.json"):
        MuranoModel(tmp_path)
    with pytest.raises(TypeError, match="model_id_or_path"):
        MuranoModel(None)
