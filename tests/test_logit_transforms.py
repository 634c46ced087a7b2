"""Models that change lm_head's output, the self-check against the model's own output, and
``backend="auto"``'s fall back: never a silently wrong number.

Cohere multiplies its logits by ``logit_scale`` and Granite divides them by ``logits_scaling``
after ``lm_head``. Every lens path (after the trace, inside it, the tuned lens, generation) is
checked here against ``reference.py``, which writes those transforms out itself from
transformers' modeling code, and against the model's own output distribution.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from reference import ReferenceLens
from test_logit_lens import PROMPTS, assert_matches_reference, run_lens
from tiny_models import TRANSFORMING, build_tiny_model

from murano_widgets import (
    LensSelfCheckError,
    LogitTransform,
    MuranoModel,
    UnsupportedModelError,
)
from murano_widgets.backends.architectures import LOGIT_TRANSFORMS
from murano_widgets.backends.loading import nnterp_works

BACKENDS = ["auto", "nnsight"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-transforming")
    return {arch: build_tiny_model(arch, root / arch) for arch in (*TRANSFORMING, "phi")}


@pytest.fixture(scope="module")
def load(dirs):
    cache = {}

    def load(arch, backend="auto"):
        if (arch, backend) not in cache:
            cache[arch, backend] = MuranoModel(dirs[arch], backend=backend)
        return cache[arch, backend]

    return load


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch", TRANSFORMING)
def test_transformed_logits_match_plain_transformers(arch, backend, load, dirs):
    """Every field, after the trace and inside it, on each backend: the lens does what the
    model does after lm_head."""
    model = load(arch, backend)
    expected = {"cohere": LogitTransform(multiply=0.3), "granite": LogitTransform(divide=4.0)}
    assert model.logit_transform == expected[arch]
    reference = ReferenceLens(dirs[arch])
    for reduce_in_trace in (False, True):
        lens = run_lens(model, top_k=5, reduce_in_trace=reduce_in_trace)
        assert_matches_reference(lens, reference, PROMPTS)


@pytest.mark.parametrize("arch", TRANSFORMING)
def test_the_last_layer_is_the_models_own_output(arch, load, dirs):
    """The independent check: no lens code at all on the other side, only the model's logits."""
    model = load(arch)
    lens = run_lens(model, store_full_probs=True, top_k=2)
    hf_model = ReferenceLens(dirs[arch]).model
    for p, prompt in enumerate(PROMPTS):
        ids = model.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        with torch.no_grad():
            own = hf_model(**ids).logits[0].float().softmax(-1)
        torch.testing.assert_close(
            lens.all_probs[-1, p, lens.positions(p)], own, atol=1e-5, rtol=1e-4
        )
    # And the transform matters on these models: without it the last layer is far off, so
    # the comparison above could not pass by chance.
    captured = []
    hook = hf_model.model.layers[-1].register_forward_hook(
        lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple) else out)
    )
    with torch.no_grad():
        own = hf_model(**ids).logits[0].softmax(-1)
        hook.remove()
        untransformed = hf_model.lm_head(hf_model.model.norm(captured[0][0])).softmax(-1)
    assert float((untransformed - own).abs().max()) > 0.05


@pytest.mark.parametrize("arch", TRANSFORMING)
def test_a_tuned_lens_reads_through_the_transform(arch, load, dirs):
    """A tuned lens's translated states go through the same final norm, lm_head and transform:
    checked against plain torch (hooks, the translator, the model's norm and lm_head, and the
    transform as reference.py writes it)."""
    from murano_widgets import TunedLens

    model = load(arch)
    tuned = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        tuned.weight.normal_(0.0, 0.2, generator=generator)
        tuned.bias.normal_(0.0, 0.2, generator=generator)
    lens = run_lens(model, top_k=3, lens=tuned, store_full_probs=True)
    reference = ReferenceLens(dirs[arch])
    prompt = PROMPTS[0]
    ids = reference.tokenizer(prompt, return_tensors="pt")
    captured = []
    hooks = [
        block.register_forward_hook(
            lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple) else out)
        )
        for block in reference.blocks
    ]
    with torch.no_grad():
        reference.model(**ids)
        for hook in hooks:
            hook.remove()
        expected = []
        for layer, h in enumerate(captured):
            h = h[0]
            if layer < len(captured) - 1:
                h = h + h @ tuned.weight[layer + 1].T + tuned.bias[layer + 1]
            logits = reference.scale(reference.model.lm_head(reference.norm(h)))
            expected.append(logits.softmax(-1))
    torch.testing.assert_close(
        lens.all_probs[:, 0, lens.positions(0)], torch.stack(expected), atol=1e-5, rtol=1e-4
    )


@pytest.mark.skipif(not nnterp_works(), reason="generation's reference runs on nnsight 0.7")
@pytest.mark.parametrize("arch", TRANSFORMING)
def test_generated_tokens_are_the_lens_final_top1(arch, load, dirs):
    """Greedy generation (the model's own logits, in transformers' generate) picks at each step
    the token the lens's last layer ranks first: the two agree only with the transform."""
    from transformers import AutoModelForCausalLM

    from murano_widgets.run import run_logit_lens

    model = load(arch)
    result = run_logit_lens(model, ["one two"], generate=4)
    hf_model = AutoModelForCausalLM.from_pretrained(dirs[arch], dtype=torch.float32).eval()
    ids = model.tokenizer(["one two"], return_tensors="pt", return_token_type_ids=False)
    with torch.no_grad():
        generated = hf_model.generate(**ids, max_new_tokens=4, do_sample=False)[0]
    positions = result.positions(0)
    shown = result.input_ids[0, positions]
    assert torch.equal(shown, generated[: len(shown)])
    start = ids["input_ids"].shape[1]
    # Position i predicts token i + 1: the lens's final top-1 is what generate chose.
    predicted = result.final_tokens[0, positions][start - 1 : len(shown) - 1]
    assert torch.equal(predicted, generated[start : len(shown)])


# -- the self-check -----------------------------------------------------------------------------


@pytest.fixture
def granite_unknown(monkeypatch):
    """The backend no longer knows Granite's divisor: a model whose transform it does not know."""
    monkeypatch.delitem(LOGIT_TRANSFORMS, "granite")


@pytest.mark.skipif(not nnterp_works(), reason="nnterp does not import with this nnsight")
def test_the_self_check_refuses_an_unknown_transform_at_load(dirs, granite_unknown):
    with pytest.raises(LensSelfCheckError) as error:
        MuranoModel(dirs["granite"], backend="nnterp")
    message = str(error.value)
    assert "model_type 'granite'" in message and "GraniteForCausalLM" in message
    assert f"{error.value.max_abs_diff:.3g}" in message and error.value.max_abs_diff > 1e-3
    assert error.value.model_type == "granite"


def test_the_self_check_refuses_before_the_first_lazy_trace(dirs, granite_unknown):
    """The nnsight backend loads weights at the first trace: the check runs there, and the step
    returns nothing."""
    model = MuranoModel(dirs["granite"], backend="nnsight")
    for _ in range(2):  # and again: a refused model stays refused
        with pytest.raises(LensSelfCheckError, match="model_type 'granite'"):
            run_lens(model)


@pytest.mark.skipif(not nnterp_works(), reason="nnterp does not import with this nnsight")
def test_auto_names_both_backends_when_both_fail_the_check(dirs, granite_unknown):
    with pytest.raises(UnsupportedModelError) as error:
        MuranoModel(dirs["granite"])
    message = str(error.value)
    assert "nnterp: LensSelfCheckError" in message and "nnsight: LensSelfCheckError" in message


def test_self_check_false_warns_instead(dirs, granite_unknown):
    with pytest.warns(RuntimeWarning, match="model_type 'granite'"):
        model = MuranoModel(dirs["granite"], backend="nnsight", self_check=False)
        run_lens(model)
    with pytest.raises(TypeError, match="self_check must be True or False, got str 'no'"):
        MuranoModel(dirs["granite"], backend="nnsight", self_check="no")


def test_the_self_check_passes_quietly_on_known_models(load):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load("granite", "nnsight")
        assert model.self_check() <= 1e-6


# -- backend="auto" falls back --------------------------------------------------------------------


@pytest.mark.skipif(not nnterp_works(), reason="nnterp does not import with this nnsight")
def test_auto_falls_back_to_nnsight_where_nnterp_cannot_rename(load, dirs):
    """Phi: nnterp 1.3 finds no final norm to rename; plain nnsight reads it, exactly."""
    with pytest.raises(UnsupportedModelError, match="nnterp cannot rename"):
        MuranoModel(dirs["phi"], backend="nnterp")
    model = load("phi")
    assert model.backend == "nnsight"
    assert model.backend_choice == "nnsight (auto: nnterp cannot rename it)"
    assert "RenamingError" in model.backend_fallback_reason or "ln_final" in (
        model.backend_fallback_reason
    )
    assert "nnsight (auto: nnterp cannot rename it)" in repr(model)
    assert_matches_reference(run_lens(model), ReferenceLens(dirs["phi"]), PROMPTS)


def test_the_backend_choice_is_in_a_data_sets_provenance(load):
    from murano_widgets import lens_dataset

    data = lens_dataset(load("phi"), ["one two", "Alice met"], [" three", " Bob"], progress=False)
    assert data.provenance["backend"] == "nnsight"
    assert data.provenance["backend_choice"] == load("phi").backend_choice
    assert data.provenance["logit_transform"] == "none"


@pytest.mark.skipif(not nnterp_works(), reason="nnterp does not import with this nnsight")
def test_an_architecture_neither_backend_reads_names_both_reasons(tmp_path):
    from tiny_models import build_unknown_architecture

    build_unknown_architecture(tmp_path)  # Persimmon: nnterp 1.3 finds no final norm either
    with pytest.raises(UnsupportedModelError) as error:
        MuranoModel(tmp_path)
    message = str(error.value)
    assert "neither backend" in message and "nnterp: UnsupportedModelError" in message
    assert "nnsight: UnsupportedModelError" in message and "'persimmon'" in message


def test_repr_names_the_transform(load):
    model = load("cohere", "nnsight")
    assert "logit_transform='logits × 0.3'" in repr(model)
    assert model.final_logit_softcapping is None
