"""Generation (``show_logit_lens(model, prompt, generate=N)``): the tokens against transformers'
own ``generate`` on the same tiny model, with both backends; the lens over prompt + generated
tokens against the independent reference lens; the stop at end of sequence; bad arguments.

These run with whichever nnsight is installed (0.7 here, with both backends; 0.8 in the remote
suite's venv, where nnterp does not import and only the nnsight backend runs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reference import ReferenceLens
from transformers import AutoModelForCausalLM, AutoTokenizer

from murano_widgets import LogitLensWidget, MuranoModel, show_logit_lens
from murano_widgets.backends.loading import nnterp_works
from murano_widgets.generation import check_generation
from murano_widgets.payload.lens import LensPayload, decode_sections
from murano_widgets.run import run_logit_lens

# Two of equal token length share a generation batch; the others run alone.
PROMPTS = ["The Eiffel Tower is in the city of", "one two", "Alice met Bob. Alice", "one two"]
BACKENDS = [
    pytest.param(
        "nnterp",
        marks=pytest.mark.skipif(
            not nnterp_works(), reason="nnterp does not import with this nnsight (0.8)"
        ),
    ),
    "nnsight",
]
ARCHS = ("gpt2", "llama")


@pytest.fixture(scope="module")
def models(tiny_model_dirs):
    """Models of this module's own (tests here change a generation config for a while)."""
    cache = {}

    def load(arch, backend):
        if (arch, backend) not in cache:
            cache[arch, backend] = MuranoModel(tiny_model_dirs[arch], backend=backend)
        return cache[arch, backend]

    return load


@pytest.fixture(scope="module")
def hf_models(tiny_model_dirs):
    cache = {}

    def load(arch):
        if arch not in cache:
            folder = tiny_model_dirs[arch]
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
            cache[arch] = (model, AutoTokenizer.from_pretrained(folder))
        return cache[arch]

    return load


def hf_generate(hf_model, tokenizer, prompt, seed=None, **kwargs):
    """transformers' own generate on one prompt, alone: the new token ids up to and including
    the first end-of-sequence token."""
    ids = tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        out = hf_model.generate(**ids, pad_token_id=tokenizer.eos_token_id, **kwargs)
    new = out[0, ids["input_ids"].shape[1] :].tolist()
    eos = hf_model.generation_config.eos_token_id
    stops = {eos} if isinstance(eos, int) else set(eos or [])
    for index, token in enumerate(new):
        if token in stops:
            return ids["input_ids"][0].tolist(), new[: index + 1]
    return ids["input_ids"][0].tolist(), new


def new_tokens(result, prompt):
    ids = result.input_ids[prompt, result.positions(prompt)].tolist()
    return ids[: result.generation_starts[prompt]], ids[result.generation_starts[prompt] :]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_generation_matches_transformers(models, hf_models, arch, backend):
    model = models(arch, backend)
    hf_model, tokenizer = hf_models(arch)
    result = run_logit_lens(model, PROMPTS, generate=6)
    assert result.generation_starts is not None and result.generated_texts is not None
    for p, prompt in enumerate(PROMPTS):
        prompt_ids, expected = hf_generate(
            hf_model, tokenizer, prompt, max_new_tokens=6, do_sample=False
        )
        got_prompt, got = new_tokens(result, p)
        assert got_prompt == prompt_ids
        assert got == expected, f"prompt {p}: {got} != transformers' {expected}"
        assert result.generated_texts[p] == tokenizer.decode(expected, skip_special_tokens=True)
        assert result.prompts[p] == prompt + result.generated_texts[p]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampling_matches_transformers_with_the_same_seed(models, hf_models, backend):
    model = models("llama", backend)
    hf_model, tokenizer = hf_models("llama")
    prompt = "Alice met Bob."
    options = {"do_sample": True, "temperature": 1.7}
    before = torch.get_rng_state()
    runs = {
        seed: new_tokens(run_logit_lens(model, prompt, generate=8, seed=seed, **options), 0)[1]
        for seed in (0, 1, 2)
    }
    # The caller's random state is left as it was.
    assert torch.equal(torch.get_rng_state(), before)
    for seed, got in runs.items():
        _, expected = hf_generate(
            hf_model, tokenizer, prompt, seed=seed, max_new_tokens=8, **options
        )
        assert got == expected, f"seed {seed}"
    again = run_logit_lens(model, prompt, generate=8, seed=1, **options)
    assert new_tokens(again, 0)[1] == runs[1]
    assert len({tuple(tokens) for tokens in runs.values()}) > 1, "three seeds, one sample"


@pytest.mark.parametrize("backend", BACKENDS)
def test_generation_stops_at_end_of_sequence(models, hf_models, backend):
    model = models("gpt2", backend)
    hf_model, tokenizer = hf_models("gpt2")
    prompt = "one two"
    _, free = hf_generate(hf_model, tokenizer, prompt, max_new_tokens=8, do_sample=False)
    stop = free[2]  # make the third greedy token the end of sequence
    assert stop not in free[:2]
    lm = model.nnterp if backend == "nnterp" else model.lm
    ours = lm._module.generation_config
    kept = ours.eos_token_id, hf_model.generation_config.eos_token_id
    ours.eos_token_id = hf_model.generation_config.eos_token_id = stop
    try:
        result = run_logit_lens(model, [prompt, "Alice met"], generate=8)
        _, expected = hf_generate(hf_model, tokenizer, prompt, max_new_tokens=8, do_sample=False)
        _, expected_other = hf_generate(
            hf_model, tokenizer, "Alice met", max_new_tokens=8, do_sample=False
        )
    finally:
        ours.eos_token_id, hf_model.generation_config.eos_token_id = kept
    assert expected == free[:3]
    assert new_tokens(result, 0)[1] == expected  # the stop token kept, nothing after it
    assert new_tokens(result, 1)[1] == expected_other
    assert result.lengths[0] == result.generation_starts[0] + 3


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch", ARCHS)
def test_lens_over_generated_tokens_matches_reference(models, tiny_model_dirs, arch, backend):
    model = models(arch, backend)
    reference = ReferenceLens(tiny_model_dirs[arch])
    result = run_logit_lens(model, PROMPTS[:3], generate=5, top_k=3)
    for p in range(3):
        positions = result.positions(p)
        ids = result.input_ids[p, positions].tolist()
        probs = reference.probs_of_ids(ids)  # [layers, seq, vocab]
        top = probs.topk(3, dim=-1)
        torch.testing.assert_close(
            result.max_probs[:, p, positions], top.values[..., 0], atol=1e-5, rtol=1e-4
        )
        torch.testing.assert_close(
            result.topk_probs[:, p, positions], top.values, atol=1e-5, rtol=1e-4
        )
        assert torch.equal(result.predicted_tokens[:, p, positions], top.indices[..., 0])
        # Greedy: each generated token is the last layer's top-1 at the position before it.
        start = result.generation_starts[p]
        last = result.predicted_tokens[-1, p, positions]
        assert last[start - 1 : -1].tolist() == ids[start:]


def test_result_and_widget_mark_generated_tokens(models):
    model = models("gpt2", "nnsight")
    widget = show_logit_lens(model, PROMPTS[:2], generate=4, layer=1)
    assert isinstance(widget, LogitLensWidget)
    lens = widget.result
    starts = lens.generation_starts
    assert starts == [len(model.tokenizer(p)["input_ids"]) for p in PROMPTS[:2]]
    cell = lens.describe_cell(0, 0, starts[0])
    assert cell["generated"] is True
    assert lens.describe_cell(0, 0, starts[0] - 1)["generated"] is False
    meta, sections = widget._meta, widget._sections
    assert meta["generation_starts"] == starts
    assert meta["generated_texts"] == lens.generated_texts
    assert meta["roles"] == []
    generated = decode_sections(meta, {"generated": sections["generated"]})["generated"]
    expected = np.concatenate(
        [np.arange(n) >= s for n, s in zip(lens.lengths, starts, strict=True)]
    ).astype(np.uint8)
    assert generated.tolist() == expected.tolist()
    # The widget picks the selection's flag up from the result.
    widget.selected = {"layer_index": 0, "position": starts[0] + 1}
    assert widget.selected["generated"] is True


def test_result_checks_generation_fields(models):
    lens = run_logit_lens(models("gpt2", "nnsight"), "one two", generate=2)
    lens.generation_starts = [lens.lengths[0] + 1]
    with pytest.raises(ValueError, match=r"generation_starts\[0\]"):
        lens.validate()
    lens.generation_starts = [1, 2]
    with pytest.raises(ValueError, match="one entry per prompt"):
        lens.validate()
    lens.generation_starts = [1]
    lens.token_roles = [["user"]]
    with pytest.raises(ValueError, match=r"token_roles\[0\] must hold one role per real token"):
        lens.validate()
    lens.token_roles = None
    assert LensPayload.from_result(lens.validate()).meta["generation_starts"] == [1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"generate": 0}, "generate must be an int of at least 1"),
        ({"generate": -2}, "generate must be an int of at least 1"),
        ({"generate": 2.0}, "generate must be None or an int"),
        ({"generate": True}, "generate must be None or an int"),
        ({"generate": "3"}, "generate must be None or an int"),
        ({"generate": 3, "temperature": 0.5}, "temperature only apply to sampling"),
        ({"generate": 3, "seed": 1}, "seed only apply to sampling"),
        ({"generate": 3, "top_p": 0.9}, "top_p only apply to sampling"),
        ({"do_sample": True}, "only apply to generation"),
        ({"seed": 4}, "only apply to generation"),
        (
            {"generate": 3, "do_sample": True, "temperature": 0},
            "temperature must be a number above 0",
        ),
        ({"generate": 3, "do_sample": True, "temperature": "hot"}, "temperature must be a number"),
        ({"generate": 3, "do_sample": True, "top_p": 1.5}, r"top_p must be a number in \(0, 1\]"),
        ({"generate": 3, "do_sample": True, "top_p": 0}, r"top_p must be a number in \(0, 1\]"),
        ({"generate": 3, "do_sample": True, "seed": -1}, "seed must be an int from 0"),
        ({"generate": 3, "do_sample": True, "seed": 1.5}, "seed must be None or an int"),
    ],
)
def test_bad_generation_arguments_fail_before_any_model_work(models, monkeypatch, kwargs, message):
    model = models("gpt2", "nnsight")

    def no_model_work(*args, **kw):
        raise AssertionError("the model ran before the arguments were checked")

    monkeypatch.setattr(model, "generate", no_model_work)
    monkeypatch.setattr(model, "trace", no_model_work)
    monkeypatch.setattr(model, "block_outputs", no_model_work)
    with pytest.raises(ValueError, match=message):
        show_logit_lens(model, "one two", **kwargs)
    with pytest.raises(ValueError, match=message):
        run_logit_lens(model, "one two", **kwargs)


def test_do_sample_must_be_a_bool():
    with pytest.raises(TypeError, match="do_sample must be True or False"):
        check_generation(3, do_sample="yes")


def test_generation_beyond_the_context_fails_before_generating(models, monkeypatch):
    model = models("gpt2", "nnsight")  # 256 absolute positions
    monkeypatch.setattr(
        model, "generate", lambda *a, **k: pytest.fail("generated past the context")
    )
    with pytest.raises(ValueError, match="more than the model's context of 256 tokens"):
        run_logit_lens(model, "one two", generate=300)


def test_generation_with_remote_is_refused_before_any_work(models):
    with pytest.raises(ValueError, match="generate= runs the model locally"):
        run_logit_lens(models("gpt2", "nnsight"), "one two", generate=2, remote=True)


def test_a_model_without_generate_says_so():
    class NoGenerate:
        tokenizer = None
        context_length = None

    from murano_widgets.generation import GenerationOptions, generate_tokens

    with pytest.raises(TypeError, match="has no generate method"):
        generate_tokens(NoGenerate(), [[1, 2]], GenerationOptions(2))
