"""The nnsight versions story: which nnsight, nnterp and transformers work together, and what a
user is told where they do not.

- The tokenizer is handed to nnsight's loader: nnsight 0.8.1's meta load finds none by itself
  on transformers 5.23+ ("Impossible to guess which tokenizer to use"). The test makes nnsight's
  own tokenizer lookup come up empty, as it does there, on whichever nnsight is installed (0.7
  in the main venv, 0.8 in .ci/remote.sh's), and loads through every backend.
- ``remote=True`` with an nnsight NDIF's server refuses is one clear error before any work.
- ``backend="nnterp"`` without a working nnterp says what happened and both ways on;
  ``backend="auto"`` says why it took the nnsight backend.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util

import pytest
import torch
from transformers import AutoTokenizer

from murano_widgets import LogitLens, MuranoModel
from murano_widgets.backends.loading import nnterp_works, with_tokenizer
from murano_widgets.backends.nnsight import NDIF_NNSIGHT, NDIFError, check_ndif_client

TEXT = "The Eiffel Tower is in the city of Paris"


@pytest.fixture
def nnsight_finds_no_tokenizer(monkeypatch):
    """nnsight's own tokenizer lookup finds nothing, as nnsight 0.8.1's does on transformers
    5.23+ (the pipeline registry holds class names, so "does this task load a tokenizer" reads
    False); on nnsight 0.7, whose ``LanguageModel`` loads one with ``AutoTokenizer``, that
    load fails with the same message."""
    from nnsight.modeling.transformers import TransformersModel

    if hasattr(TransformersModel, "_loaded_preprocessors"):  # nnsight 0.8
        monkeypatch.setattr(TransformersModel, "_loaded_preprocessors", lambda self: set())
    else:  # nnsight 0.7: LanguageModel._load_tokenizer, only when no tokenizer was given
        import nnsight.modeling.language as language

        class Unguessable:
            @staticmethod
            def from_pretrained(*args, **kwargs):
                raise Exception("Impossible to guess which tokenizer to use.")

        monkeypatch.setattr(language, "AutoTokenizer", Unguessable)


def _same_tokenizer(model, folder):
    expected = AutoTokenizer.from_pretrained(folder)(TEXT)["input_ids"]
    assert model.tokenizer(TEXT)["input_ids"] == expected


@pytest.mark.parametrize("backend", ["nnsight", "nnterp"])
def test_every_backend_hands_nnsight_the_tokenizer(
    backend, tiny_model_dirs, nnsight_finds_no_tokenizer
):
    if backend == "nnterp" and not nnterp_works():
        pytest.skip("nnterp does not import with this nnsight (the nnsight 0.8 venv)")
    folder = tiny_model_dirs["llama"]
    model = MuranoModel(folder, backend=backend)  # the meta load: what a remote user runs
    _same_tokenizer(model, folder)
    assert model.tokenizer.padding_side == "left", "as nnsight pads when it loads one itself"
    # And it runs: the last layer's lens is the model's own distribution (the self-check
    # ran at load or runs at this first trace).
    lens = LogitLens(model, layers=[model.n_layers - 1], store_full_probs=True)
    from murano_widgets import PromptBatch, Results

    out = lens(Results(prompts=PromptBatch([TEXT])))["logit_lens"]
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")
    with torch.no_grad():
        expected = hf(**ids).logits[0].softmax(-1)
    torch.testing.assert_close(out.all_probs[-1, 0, out.positions(0)], expected)


def test_a_tokenizer_given_is_used_and_its_options_reach_the_load(tiny_model_dirs):
    folder = str(tiny_model_dirs["gpt2"])
    mine = AutoTokenizer.from_pretrained(folder)
    assert with_tokenizer(folder, {"tokenizer": mine, "dtype": torch.float32}) == {
        "tokenizer": mine,
        "dtype": torch.float32,
    }
    kwargs = with_tokenizer(
        folder, {"tokenizer_kwargs": {"padding_side": "right"}, "revision": "main"}
    )
    assert kwargs["tokenizer"].padding_side == "right" and kwargs["revision"] == "main"
    assert "tokenizer_kwargs" not in kwargs, "nnsight 0.8 takes no tokenizer_kwargs"


# -- remote=True and the nnsight NDIF accepts --------------------------------------------------


@pytest.fixture
def installed(monkeypatch):
    """Pretends the named distributions are installed at the given versions."""
    real = importlib.metadata.version

    def pretend(**versions):
        def version(name):
            return versions[name] if name in versions else real(name)

        monkeypatch.setattr(importlib.metadata, "version", version)

    return pretend


def test_an_nnsight_ndif_refuses_is_named_with_the_fix(installed):
    installed(nnsight="0.7.0")
    with pytest.raises(NDIFError) as error:
        check_ndif_client()
    message = str(error.value)
    assert "nnsight 0.7.0" in message and f"nnsight{NDIF_NNSIGHT}" in message
    assert "pip install 'nnsight>=0.8,<0.9'" in message and "remote=False" in message
    installed(nnsight="0.8.1")
    check_ndif_client()  # accepted: no error
    installed(nnsight="0.9.0")
    with pytest.raises(NDIFError, match=r"this environment has nnsight 0\.9\.0"):
        check_ndif_client()


def test_remote_true_with_a_refused_nnsight_fails_before_any_work(installed, load_tiny):
    model = load_tiny("gpt2")
    installed(nnsight="0.7.0")
    with pytest.raises(NDIFError, match=r"nnsight 0\.7\.0"):
        LogitLens(model, remote=True)
    # The backends' own remote trace too, before the model is touched.
    with pytest.raises(NDIFError, match=r"nnsight 0\.7\.0"):
        model.trace({"input_ids": torch.tensor([[1, 2]])}, remote=True)
    # An argument error is still said first.
    from murano_widgets import run_logit_lens

    with pytest.raises(ValueError, match="generate= runs the model locally"):
        run_logit_lens(model, "one two", generate=2, remote=True)
    installed(nnsight="0.8.1")
    assert LogitLens(model, remote=True).remote


# -- nnterp missing or broken ------------------------------------------------------------------


@pytest.fixture
def nnterp_missing(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "nnterp" else real(name, *args),
    )


@pytest.fixture
def nnterp_broken(monkeypatch, installed):
    """nnterp 1.3 installed next to nnsight 0.8: its import fails as it does there."""
    real_find, real_import = importlib.util.find_spec, importlib.import_module
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: object() if name == "nnterp" else real_find(name, *args),
    )

    def import_module(name, *args):
        if name == "nnterp":
            raise ModuleNotFoundError("No module named 'nnsight.intervention.tracing'")
        return real_import(name, *args)

    monkeypatch.setattr(importlib, "import_module", import_module)
    installed(nnterp="1.3.0", nnsight="0.8.1")


def test_backend_nnterp_without_nnterp_says_how_to_install_it(nnterp_missing, tiny_model_dirs):
    with pytest.raises(ImportError) as error:
        MuranoModel(tiny_model_dirs["gpt2"], backend="nnterp")
    message = str(error.value)
    assert type(error.value) is ImportError, "not a bare ModuleNotFoundError"
    assert "nnterp is not installed" in message
    assert "pip install 'murano-widgets[nnterp-local]'" in message
    assert "NDIF" in message and "backend='nnsight'" in message


def test_backend_nnterp_broken_by_this_nnsight_says_so(nnterp_broken, tiny_model_dirs):
    with pytest.raises(ImportError) as error:
        MuranoModel(tiny_model_dirs["gpt2"], backend="nnterp")
    message = str(error.value)
    assert "nnterp 1.3.0 does not import with nnsight 0.8.1" in message
    assert "nnsight.intervention.tracing" in message
    assert "murano-widgets[nnterp-local]" in message and "backend='nnsight'" in message


def test_auto_says_nnterp_is_not_installed(nnterp_missing, tiny_model_dirs):
    model = MuranoModel(tiny_model_dirs["gpt2"])
    assert model.backend == "nnsight"
    assert model.backend_choice == "nnsight (auto: nnterp is not installed)"
    assert model.backend_fallback_reason == "nnterp is not installed"


def test_auto_says_nnterp_does_not_import_with_this_nnsight(nnterp_broken, tiny_model_dirs):
    model = MuranoModel(tiny_model_dirs["gpt2"])
    assert model.backend == "nnsight"
    assert model.backend_choice == (
        "nnsight (auto: nnterp 1.3.0 does not import with nnsight 0.8.1)"
    )
    assert "nnsight.intervention.tracing" in model.backend_fallback_reason
