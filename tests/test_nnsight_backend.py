"""The plain-nnsight backend: the same reference tests as the nnterp backend, on every tiny
architecture (plus OPT and Phi-3), and the same fields as the nnterp backend where nnterp runs.

These run with whichever nnsight is installed (0.7 in the main environment, 0.8 in the remote
suite's); the remote path itself is tested against a real NDIF server in ``tests/remote/``.
"""

from __future__ import annotations

import pytest
import torch
from reference import ReferenceLens
from tiny_models import ARCHITECTURES, build_tiny_model

from murano_widgets import LogitLens, MuranoModel, PromptBatch, Results
from murano_widgets.backends.architectures import LAYOUTS, Layout
from murano_widgets.backends.loading import nnterp_works
from murano_widgets.backends.nnsight import (
    NDIFError,
    NNsightModel,
    _JobStatus,
    _ReportedJob,
)

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two", "Alice met Bob. Alice gave"]
CELL_FIELDS = ("max_probs", "topk_probs", "entropy", "final_token_probs", "kl_to_final")
ID_FIELDS = ("predicted_tokens", "topk_tokens", "final_token_ranks")
EXTRA = ("opt", "phi3")  # built here only: not in ARCHITECTURES
ALL = (*ARCHITECTURES, *EXTRA)


@pytest.fixture(scope="module")
def model_dirs(tiny_model_dirs, tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-extra")
    return {**tiny_model_dirs, **{arch: build_tiny_model(arch, root / arch) for arch in EXTRA}}


@pytest.fixture(scope="module")
def load_nnsight(model_dirs):
    cache = {}

    def load(arch):
        if arch not in cache:
            cache[arch] = MuranoModel(model_dirs[arch], backend="nnsight")
        return cache[arch]

    return load


class _DecoderReference(ReferenceLens):
    """reference.py's lens for OPT, whose blocks and final norm sit under ``model.decoder``."""

    def __init__(self, folder):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        decoder = self.model.model.decoder
        assert decoder.project_out is None
        self.blocks, self.norm = decoder.layers, decoder.final_layer_norm
        self.cap = None
        self.scale = lambda logits: logits  # OPT does nothing after lm_head


def reference_for(arch, folder):
    return _DecoderReference(folder) if arch == "opt" else ReferenceLens(folder)


def run_lens(model, prompts=PROMPTS, **options):
    results = Results()
    results["prompts"] = PromptBatch(list(prompts))
    return LogitLens(model, **options)(results)["logit_lens"]


def assert_matches_reference(lens, reference, prompts=PROMPTS):
    """Each prompt's real positions in the batched lens equal the prompt run alone."""
    for p, prompt in enumerate(prompts):
        ref = reference.run(prompt, top_k=lens.topk_tokens.shape[-1])
        positions = lens.positions(p)
        assert torch.equal(lens.input_ids[p, positions], ref["input_ids"])
        for name in CELL_FIELDS + ID_FIELDS:
            ours = getattr(lens, name)[:, p, positions]
            theirs = ref[name][lens.layers]
            if name in ID_FIELDS:
                assert torch.equal(ours, theirs), f"{name} of prompt {p}"
            else:
                torch.testing.assert_close(ours, theirs, atol=2e-4, rtol=1e-3, msg=f"{name} of {p}")
        assert torch.equal(lens.final_tokens[p, positions], ref["final_tokens"])


def assert_same_lens(ours, theirs, atol=1e-5):
    for name in (*CELL_FIELDS, *ID_FIELDS, "final_tokens", "attention_mask", "input_ids"):
        a, b = getattr(ours, name), getattr(theirs, name)
        if a.is_floating_point():
            torch.testing.assert_close(a, b, atol=atol, rtol=1e-4, equal_nan=True, msg=name)
        else:
            assert torch.equal(a, b), name
    assert ours.predicted_words == theirs.predicted_words
    assert ours.input_words == theirs.input_words


@pytest.mark.parametrize("arch", ALL)
def test_lens_matches_plain_transformers(arch, load_nnsight, model_dirs):
    model = load_nnsight(arch)
    assert isinstance(model, NNsightModel) and isinstance(model, MuranoModel)
    assert model.tokenizer.padding_side == "left"
    assert model.n_layers == 3 and model.vocab_size == 320
    lens = run_lens(model, top_k=5)
    assert lens.all_probs is None
    assert_matches_reference(lens, reference_for(arch, model_dirs[arch]))


@pytest.mark.skipif(not nnterp_works(), reason="nnterp does not work with this nnsight")
@pytest.mark.parametrize("arch", ALL)
def test_same_fields_as_the_nnterp_backend(arch, load_nnsight, model_dirs):
    nnterp_model = MuranoModel(model_dirs[arch], backend="nnterp")
    ours = load_nnsight(arch)
    assert (ours.context_length, ours.trained_length) == (
        nnterp_model.context_length,
        nnterp_model.trained_length,
    )
    assert ours.forward_kwargs == nnterp_model.forward_kwargs
    assert_same_lens(run_lens(ours, top_k=4), run_lens(nnterp_model, top_k=4))


@pytest.mark.parametrize("arch", ["gpt2", "gemma2", "opt"])
def test_in_trace_reduction_equals_after_trace(arch, load_nnsight):
    model = load_nnsight(arch)
    after = run_lens(model, top_k=4, store_full_probs=True)
    inside = run_lens(model, top_k=4, store_full_probs=True, reduce_in_trace=True)
    assert_same_lens(inside, after)
    torch.testing.assert_close(inside.all_probs, after.all_probs, equal_nan=True)


@pytest.mark.parametrize("arch", ["gpt2", "phi3"])
def test_right_padding_equals_one_by_one(arch, model_dirs):
    model = MuranoModel(model_dirs[arch], backend="nnsight")
    model.tokenizer.padding_side = "right"
    lens = run_lens(model, top_k=3)
    assert lens.attention_mask[1, 0] == 1 and lens.attention_mask[1, -1] == 0
    assert_matches_reference(lens, reference_for(arch, model_dirs[arch]))
    # Loading the weights at the first trace leaves the tokenizer as it was set.
    assert model.tokenizer.padding_side == "right"


def test_gemma2_soft_capping_is_applied(load_nnsight):
    model = load_nnsight("gemma2")
    assert model.final_logit_softcapping == 5.0
    lens = run_lens(model, store_full_probs=True, top_k=1)
    # Capped logits lie in (-5, 5): no token can be more than e^10 times likelier than another.
    probs = lens.all_probs[:, lens.attention_mask.bool()]
    assert float((probs.max(-1).values / probs.min(-1).values).max()) < torch.e**10


def test_position_limits(load_nnsight):
    assert (load_nnsight("gpt2").context_length, load_nnsight("gpt2").trained_length) == (256, None)
    assert (load_nnsight("llama").context_length, load_nnsight("llama").trained_length) == (
        None,
        256,
    )
    # OPT's learned positions sit under model.decoder, and start at an offset of 2.
    assert load_nnsight("opt").context_length == 256


def _more_configs(vocab, bos):
    """Tiny configs of the other architectures in LAYOUTS (two layers each)."""
    import transformers as t

    common = {"vocab_size": vocab, "bos_token_id": bos, "eos_token_id": bos}
    small = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": 256,
        **common,
    }
    moe = {"num_experts_per_tok": 1, "moe_intermediate_size": 32}
    return {
        "gpt_neo": lambda: t.GPTNeoConfig(
            hidden_size=32,
            num_layers=2,
            num_heads=4,
            attention_types=[[["global", "local"], 1]],
            max_position_embeddings=256,
            intermediate_size=64,
            window_size=16,
            **common,
        ),
        "gptj": lambda: t.GPTJConfig(
            n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=256, **common
        ),
        "bloom": lambda: t.BloomConfig(hidden_size=32, n_layer=2, n_head=4, **common),
        "falcon": lambda: t.FalconConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, **common
        ),
        "gpt_bigcode": lambda: t.GPTBigCodeConfig(
            n_embd=32, n_layer=2, n_head=4, n_positions=256, **common
        ),
        "mixtral": lambda: t.MixtralConfig(
            num_key_value_heads=2, num_local_experts=2, num_experts_per_tok=1, **small
        ),
        "qwen2_moe": lambda: t.Qwen2MoeConfig(
            num_key_value_heads=2, num_experts=2, shared_expert_intermediate_size=32, **moe, **small
        ),
        "qwen3_moe": lambda: t.Qwen3MoeConfig(
            num_key_value_heads=2, head_dim=8, num_experts=2, **moe, **small
        ),
        "gemma3_text": lambda: t.Gemma3TextConfig(
            num_key_value_heads=2, head_dim=8, final_logit_softcapping=5.0, **small
        ),
        "phi": lambda: t.PhiConfig(**small),
        "olmo": lambda: t.OlmoConfig(**small),
        "olmo2": lambda: t.Olmo2Config(num_key_value_heads=2, **small),
        "stablelm": lambda: t.StableLmConfig(num_key_value_heads=2, **small),
        "starcoder2": lambda: t.Starcoder2Config(num_key_value_heads=2, **small),
        # The ones that transform lm_head's output (the self-check at load and the comparison
        # below both fail without it): Cohere multiplies, Granite divides.
        "cohere": lambda: t.CohereConfig(num_key_value_heads=2, logit_scale=0.3, **small),
        "cohere2": lambda: t.Cohere2Config(num_key_value_heads=2, logit_scale=0.3, **small),
        "granite": lambda: t.GraniteConfig(num_key_value_heads=2, logits_scaling=4.0, **small),
        "granitemoe": lambda: t.GraniteMoeConfig(
            num_key_value_heads=2, logits_scaling=4.0, num_local_experts=2, **small
        ),
        "granitemoeshared": lambda: t.GraniteMoeSharedConfig(
            num_key_value_heads=2,
            logits_scaling=4.0,
            num_local_experts=2,
            shared_intermediate_size=32,
            **small,
        ),
    }


MORE = (
    "gpt_neo",
    "gptj",
    "bloom",
    "falcon",
    "gpt_bigcode",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "gemma3_text",
    "phi",
    "olmo",
    "olmo2",
    "stablelm",
    "starcoder2",
    "cohere",
    "cohere2",
    "granite",
    "granitemoe",
    "granitemoeshared",
)


@pytest.mark.parametrize("arch", MORE)
def test_every_known_layout_ends_at_the_model_output(arch, tmp_path):
    """The other architectures in LAYOUTS: the last layer's lens is the model's own output
    distribution (so blocks, final norm, unembedding and soft-capping are the right ones)."""
    from tiny_models import build_tokenizer
    from transformers import AutoModelForCausalLM

    assert set(MORE) | set(ALL) == set(LAYOUTS)
    tokenizer = build_tokenizer()
    config = _more_configs(len(tokenizer), tokenizer.bos_token_id)[arch]()
    torch.manual_seed(0)
    hf_model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for parameter in hf_model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.3)
    hf_model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model = MuranoModel(tmp_path, backend="nnsight")
    assert model.layout == LAYOUTS[arch] and model.n_layers == 2
    lens = run_lens(model, PROMPTS[:2], store_full_probs=True, top_k=2)
    for p, prompt in enumerate(PROMPTS[:2]):
        ids = tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        with torch.no_grad():
            expected = hf_model(**ids).logits[0].float().softmax(-1)
        ours = lens.all_probs[-1, p, lens.positions(p)]
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_a_users_own_nnsight_model(model_dirs, load_nnsight):
    from murano_widgets.backends.nnsight import _load

    lm = _load(str(model_dirs["qwen2"]), dtype=torch.float32)
    model = MuranoModel(lm, backend="nnsight")
    assert model.lm is lm and model.n_layers == 3
    assert_same_lens(run_lens(model), run_lens(load_nnsight("qwen2")), atol=0)
    with pytest.raises(ValueError, match="already loaded"):
        MuranoModel(lm, backend="nnsight", dtype="bfloat16")


def test_an_explicit_layout(model_dirs, load_nnsight):
    model = MuranoModel(
        model_dirs["llama"],
        backend="nnsight",
        layout={"blocks": "model.layers", "norm": "model.norm", "lm_head": "lm_head"},
    )
    assert model.layout == LAYOUTS["llama"]
    assert_same_lens(run_lens(model), run_lens(load_nnsight("llama")), atol=0)
    with pytest.raises(ValueError, match=r"no list of decoder blocks at 'model\.blocks'"):
        MuranoModel(
            model_dirs["llama"], backend="nnsight", layout=Layout("model.blocks", None, "x")
        )


def test_an_unknown_architecture_is_one_clear_error(tmp_path):
    from tiny_models import build_unknown_architecture

    from murano_widgets import UnsupportedModelError

    build_unknown_architecture(tmp_path)
    with pytest.raises(UnsupportedModelError) as error:
        MuranoModel(tmp_path, backend="nnsight")
    message = str(error.value)
    assert "PersimmonForCausalLM" in message and "'persimmon'" in message and "layout=" in message


def test_a_remote_trace_runs_from_what_is_sent(load_nnsight):
    """``remote="local"`` is nnsight's own dry run of the remote path: the block and the
    objects it uses (this backend included) are serialized, loaded back and run."""
    model = load_nnsight("llama")
    inputs = dict(
        model.tokenizer(PROMPTS, return_tensors="pt", padding=True, return_token_type_ids=False)
    )
    mask = inputs["attention_mask"].bool()
    with model.trace(inputs, remote="local"):
        remote = model.project_on_vocab(model.layer(1)[mask]).save()
    with torch.no_grad(), model.trace(inputs):
        local = model.project_on_vocab(model.layer(1)[mask]).save()
    torch.testing.assert_close(torch.as_tensor(remote), torch.as_tensor(local), atol=0, rtol=0)


# -- remote niceties, without a server ------------------------------------------------------------


class _Status:
    def __init__(self, name):
        self.name = name


class _Response:
    """What nnsight 0.8 hands its status printer."""

    def __init__(self, status, description="", job_id="job-1"):
        self.status, self.description, self.id = _Status(status), description, job_id


def test_job_status_shows_as_one_progress_line(capsys):
    status = _JobStatus()
    for name in ("RECEIVED", "QUEUED", "RUNNING"):
        status.update(_Response(name))  # nnsight 0.8's call
        assert status.status == name and status.job_id == "job-1"
    status.refresh()
    status.update("job-1", "COMPLETED", "")  # nnsight 0.7's call
    status.update()  # nnsight 0.7's refresh
    status.close()
    shown = capsys.readouterr().err
    for word in ("queued", "running", "completed"):
        assert f"NDIF job job-1: {word}" in shown


class RemoteError(Exception):
    """Stands in for nnsight's own (nnsight.intervention.backends.remote.RemoteError)."""


class _FailingBackend:
    host = "http://ndif.example"
    job_id = "abc123"

    def __init__(self, error):
        self.error, self.display = error, None

    def __call__(self, tracer):
        self.display.update(_Response("RUNNING", job_id=self.job_id))
        raise self.error


def test_a_server_error_is_one_clear_message():
    server_traceback = (
        "Traceback (most recent call last):\n"
        '  File "/srv/ndif/actor.py", line 10, in run\n'
        "    ...\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"
    )
    backend = _ReportedJob(_FailingBackend(RemoteError(server_traceback)))
    with pytest.raises(NDIFError) as caught:
        backend(tracer=None)
    error = caught.value
    assert str(error) == (
        "NDIF job abc123 on http://ndif.example failed: "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"
    )
    assert error.job_id == "abc123" and error.details == server_traceback
    assert error.__cause__ is None and error.__suppress_context__


def test_a_refused_request_and_an_unreachable_server_are_clear():
    refused = _FailingBackend(RemoteError("Failed to send request: Invalid API key"))
    refused.job_id = None
    with pytest.raises(NDIFError, match=r"refused the request: Invalid API key \(set nnsight"):
        _ReportedJob(refused)(tracer=None)
    down = _FailingBackend(ConnectionRefusedError(111, "Connection refused"))
    down.job_id = None
    with pytest.raises(NDIFError, match=r"cannot run the trace on NDIF at http://ndif\.example"):
        _ReportedJob(down)(tracer=None)


def test_other_errors_pass_through_unchanged():
    with pytest.raises(KeyError):
        _ReportedJob(_FailingBackend(KeyError("a bug on this side")))(tracer=None)


def test_the_steps_module_state_pickles_as_a_remote_trace_sends_it(load_tiny):
    """``remote=True`` sends the package's code to NDIF by value (nnsight's
    ``register("murano_widgets")``), with every global that code names: each module-level
    value of the step must pickle, caches included, after a local call has filled them (a
    weak-keyed cache of decoded tokens once failed every remote run). The remote suite runs
    the whole path against a real server; this is its quick, local guard."""
    import inspect
    import pickle

    import cloudpickle

    from murano_widgets import LogitLens, PromptBatch
    from murano_widgets.step import (
        assemble,
        chunk_loop,
        config,
        inputs,
        logit_lens,
        reductions,
        token_strings,
        trace,
    )

    model = load_tiny("gpt2")
    LogitLens(model, top_k=3)({"prompts": PromptBatch(["The capital of France is"])})
    assert token_strings._TOKEN_STRINGS, "the call filled the decoded-token cache"
    for module in (
        logit_lens,
        config,
        trace,
        chunk_loop,
        reductions,
        assemble,
        token_strings,
        inputs,
    ):
        state = {
            name: value
            for name, value in vars(module).items()
            if not name.startswith("__")
            and not (inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value))
        }
        for name, value in state.items():
            restored = pickle.loads(cloudpickle.dumps(value))
            assert type(restored) is type(value), f"{module.__name__}.{name}"
