"""Loading a model: dtypes, devices, hub ids and folders, the backend's surface and a quiet
first call. (Logit transforms, the self-check and the fall back: test_logit_transforms.py.)"""

from __future__ import annotations

import time

import pytest
import torch
import transformers
from test_logit_lens import run_lens
from tiny_models import build_tokenizer
from transformers import (
    AutoModelForCausalLM,
)

from murano_widgets import (
    LogitLens,
    ModelBackend,
    MuranoModel,
    Step,
    load_demo_model,
)

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two"]


def test_dtype_auto_loads_the_checkpoint_dtype():
    """Every non-CPU default goes through dtype='auto', which nnsight's meta load cannot take."""
    model = load_demo_model(dtype="auto")
    assert model.dtype == torch.float32  # what the demo checkpoint was saved in
    lens = run_lens(model, ["The capital of France is"])
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


def test_murano_model_surface(load_tiny):
    model = load_tiny("llama")
    assert isinstance(model, ModelBackend)
    assert isinstance(LogitLens(model), Step)
    assert model.dtype == torch.float32  # float32 on CPU unless asked
    assert model.n_layers == 3
    # The tiny tokenizers have no pad token: batching falls back to EOS.
    assert model.tokenizer.pad_token == model.tokenizer.eos_token
    assert "MuranoModel" in repr(model)


def _no_loading_nor_waiting(monkeypatch) -> None:
    """'At once' without a stopwatch (a time bound fails on a loaded machine): nothing is
    loaded through transformers (whose hub client retries with back-off) and nothing sleeps."""

    def refuse(what):
        def called(*args, **kwargs):
            raise AssertionError(f"{what} was called: the error did not come at once")

        return called

    monkeypatch.setattr(time, "sleep", refuse("time.sleep"))
    for name in ("AutoConfig", "AutoTokenizer", "AutoModelForCausalLM"):
        auto = getattr(transformers, name)
        monkeypatch.setattr(auto, "from_pretrained", refuse(f"transformers.{name}.from_pretrained"))


def test_uncached_hub_id_fails_at_once_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _no_loading_nor_waiting(monkeypatch)
    with pytest.raises(OSError, match=r"not in the local Hugging Face cache.*local folder"):
        MuranoModel("someone/not-a-cached-model")


def test_uncached_hub_id_fails_at_once_without_network(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # An endpoint nothing listens on stands for a machine with no route to the hub.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    _no_loading_nor_waiting(monkeypatch)
    with pytest.raises(OSError, match="cannot be reached"):
        MuranoModel("someone/not-a-cached-model")


def test_missing_local_folder_is_named(tmp_path):
    with pytest.raises(OSError, match="not an existing folder"):
        MuranoModel(str(tmp_path / "nope"))
    with pytest.raises(OSError, match=r"without config\.json"):
        MuranoModel(tmp_path)
    with pytest.raises(TypeError, match="model_id_or_path"):
        MuranoModel(None)


def test_no_loading_bar_lands_in_the_first_lens_call(tiny_model_dirs, capfd):
    """nnsight loads the real weights lazily: without the fix, transformers' 'Loading weights'
    bar printed into the notebook cell of the first lens call, above the widget."""
    model = MuranoModel(tiny_model_dirs["qwen2"])
    capfd.readouterr()
    run_lens(model, ["one two"])
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err + captured.out
