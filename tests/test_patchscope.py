"""The Patchscope lens against a hooked forward pass in plain transformers, and nnterp's."""

from __future__ import annotations

import pytest
import torch
from numerics import assert_same_numbers
from transformers import AutoModelForCausalLM, AutoTokenizer

from murano_widgets import (
    LogitLens,
    PatchscopeLens,
    compare_lenses,
    load_demo_model,
    patch_lens,
    run_logit_lens,
)
from murano_widgets.lenses.patchscope import IDENTITY_PROMPT

PROMPTS = ["The capital of France is Paris", "one two three"]


class ReferencePatchscope:
    """Every cell of a Patchscope, one plain forward pass per cell, in plain transformers:
    the source's block outputs through forward hooks, then the target prompt run with a hook
    that replaces the target block's output at the placeholder; the model's own logits there."""

    def __init__(self, folder):
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.blocks = _blocks(self.model)

    @torch.no_grad()
    def probs(self, prompt, target_prompt, position, target_layer=None, zero=None) -> torch.Tensor:
        """``[layers, seq, vocab]`` for one source prompt (no padding); ``zero=(layer,
        position)`` zeroes that block output of the source's pass first (a patched run)."""
        ids = self.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        outputs = []
        hooks = []
        if zero is not None:

            def ablate(_m, _i, out, at=zero[1]):
                hidden = _first(out).clone()
                hidden[0, at] = 0
                return (hidden, *out[1:]) if isinstance(out, tuple) else hidden

            hooks.append(self.blocks[zero[0]].register_forward_hook(ablate))
        hooks += [
            block.register_forward_hook(lambda _m, _i, out: outputs.append(_first(out)))
            for block in self.blocks
        ]
        try:
            own = self.model(**ids).logits[0].softmax(-1)
        finally:
            for hook in hooks:
                hook.remove()
        target = self.tokenizer(target_prompt, return_tensors="pt", return_token_type_ids=False)
        last = len(self.blocks) - 1
        rows = []
        for layer, states in enumerate(outputs):
            if layer == last:
                rows.append(own)  # the last layer is the model's own output
                continue
            at = layer if target_layer is None else target_layer
            cells = []
            for state in states[0]:

                def swap(_m, _i, out, state=state):
                    hidden = _first(out).clone()
                    hidden[0, position] = state
                    return (hidden, *out[1:]) if isinstance(out, tuple) else hidden

                hook = self.blocks[at].register_forward_hook(swap)
                try:
                    logits = self.model(**target).logits[0, position]
                finally:
                    hook.remove()
                cells.append(logits.softmax(-1))
            rows.append(torch.stack(cells))
        return torch.stack(rows)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _blocks(model):
    base = model.base_model
    return base.h if hasattr(base, "h") else base.layers


@pytest.fixture(scope="module")
def references(tiny_model_dirs):
    cache = {}

    def get(arch):
        if arch not in cache:
            cache[arch] = ReferencePatchscope(tiny_model_dirs[arch])
        return cache[arch]

    return get


def _check_cells(result, reference, lens, position):
    probs = result.all_probs
    for i, prompt in enumerate(PROMPTS):
        expected = reference.probs(prompt, lens.target_prompt, position, lens.target_layer)
        real = result.attention_mask[i].bool()
        assert_same_numbers(probs[:, i][:, real], expected, f"prompt {i}")
        assert torch.isnan(probs[:, i][:, ~real]).all()


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gemma2"])
def test_every_cell_equals_a_hooked_forward_pass(load_tiny, references, arch):
    model = load_tiny(arch)
    reference = references(arch)
    lens = PatchscopeLens()
    result = run_logit_lens(model, PROMPTS, lens=lens, store_full_probs=True)
    assert result.lens_kind == "patchscope" and result.lens_title == "Patchscope"
    position = len(reference.tokenizer(IDENTITY_PROMPT)["input_ids"]) - 1
    _check_cells(result, reference, lens, position)
    # Every reduced field comes out of the same distributions.
    top = result.all_probs.nan_to_num(-1).max(-1)
    real = result.attention_mask.bool()
    assert_same_numbers(result.max_probs[:, real], top.values[:, real], "max_probs")


def test_target_layer_and_a_placeholder_string_and_small_batches(load_tiny, references):
    model = load_tiny("llama")
    reference = references("llama")
    target = "Paris is in France. Rome is in Italy. X is in"
    lens = PatchscopeLens(target, placeholder="X", target_layer=0)
    # The placeholder's token found independently: the tokens of the text up to it.
    position = len(reference.tokenizer(target[: target.rfind("X") + 1])["input_ids"]) - 1
    assert lens.target_tokens(model.tokenizer)[1] == position
    # A tiny budget: one row per forward pass (and per chunk), the same numbers.
    step = LogitLens(model, lens=lens, store_full_probs=True, max_chunk_bytes=2048)
    result = step({"prompts": PROMPTS})["logit_lens"]
    _check_cells(result, reference, lens, position)


def test_a_token_index_placeholder_and_the_last_occurrence(load_tiny, references):
    model = load_tiny("gpt2")
    reference = references("gpt2")
    target = "one two one two"
    ids = reference.tokenizer(target)["input_ids"]
    assert PatchscopeLens(target, placeholder=1).target_tokens(model.tokenizer)[1] == 1
    assert PatchscopeLens(target, placeholder=-2).target_tokens(model.tokenizer)[1] == len(ids) - 2
    # "one" occurs twice: the last occurrence's token.
    last_one = len(reference.tokenizer("one two one")["input_ids"]) - 1
    assert last_one > 1
    assert PatchscopeLens(target, placeholder="one").target_tokens(model.tokenizer)[1] == last_one
    # Index 0: no tokens before the placeholder, so each row runs the whole target prompt.
    for index in (1, 0):
        lens = PatchscopeLens(target, placeholder=index, target_layer=-2)
        result = run_logit_lens(model, PROMPTS, lens=lens, store_full_probs=True)
        expected = reference.probs(PROMPTS[1], target, index, target_layer=1)
        real = result.attention_mask[1].bool()
        assert_same_numbers(result.all_probs[:, 1][:, real], expected, f"placeholder={index}")


def test_side_by_side_with_the_logit_lens(load_tiny):
    model = load_tiny("llama")
    lens = PatchscopeLens()
    both = run_logit_lens(model, PROMPTS, lens={"logit": None, "patchscope": lens})
    alone = run_logit_lens(model, PROMPTS, lens=lens)
    logit = run_logit_lens(model, PROMPTS)
    for name in ("max_probs", "kl_to_final", "entropy", "topk_tokens"):
        assert_same_numbers(
            getattr(both["patchscope"], name).float(), getattr(alone, name).float(), name
        )
        assert_same_numbers(
            getattr(both["logit"], name).float(), getattr(logit, name).float(), name
        )
    # They differ below the last layer, and agree on it (the model's own output).
    assert not torch.allclose(
        both["patchscope"].max_probs[:-1].nan_to_num(), both["logit"].max_probs[:-1].nan_to_num()
    )
    assert_same_numbers(both["patchscope"].max_probs[-1], both["logit"].max_probs[-1], "last")


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"target_prompt": ""}, ValueError, "target_prompt is empty"),
        ({"target_prompt": "  \n"}, ValueError, "target_prompt is empty"),
        ({"target_prompt": 3}, TypeError, "target_prompt must be a string"),
        ({"placeholder": "zebra"}, ValueError, "placeholder 'zebra' is not in target_prompt"),
        ({"placeholder": ""}, ValueError, "placeholder is an empty string"),
        ({"placeholder": 1.5}, TypeError, "placeholder must be None"),
        ({"target_layer": "2"}, TypeError, "target_layer must be None"),
        ({"target_layer": True}, TypeError, "target_layer must be None"),
    ],
)
def test_bad_values_are_refused_when_made(kwargs, error, words):
    with pytest.raises(error, match=words):
        PatchscopeLens(**kwargs)


def test_bad_values_for_the_model_are_refused_before_any_model_work(load_tiny, monkeypatch):
    model = load_tiny("llama")

    def no_model_work(*args, **kwargs):
        raise AssertionError("the model ran")

    monkeypatch.setattr(type(model), "block_outputs", no_model_work)
    monkeypatch.setattr(type(model), "trace", no_model_work)
    n = model.n_layers
    with pytest.raises(ValueError, match=f"target_layer is {n}, out of range .* {-n} to {n - 1}"):
        run_logit_lens(model, PROMPTS, lens=PatchscopeLens(target_layer=n))
    with pytest.raises(ValueError, match="placeholder is the token index 999, out of range"):
        run_logit_lens(model, PROMPTS, lens={"logit": None, "ps": PatchscopeLens(placeholder=999)})
    with pytest.raises(ValueError, match="not supported with decompose=True"):
        LogitLens(model, lens=PatchscopeLens(), decompose=True)
    with pytest.raises(ValueError, match="resid_mid"):
        LogitLens(model, lens=PatchscopeLens(), sites=("resid_mid", "resid_post"))
    with pytest.raises(ValueError, match="no translation of a state"):
        PatchscopeLens().translate(0, torch.zeros(1, 4))


def test_the_identity_patchscope_on_the_demo_model_reads_what_the_state_holds():
    """The identity prompt asks the model to repeat what it is given. Measured on the demo
    model (printed): its readout at early layers is almost never the input token (the toy
    model never learned ``x -> x``), but it is the model's own next token far more often than a
    shuffled control's (another cell's): the readout follows the patched state."""
    model = load_demo_model()
    prompts = [
        "The capital of France is Paris and the capital of Italy is Rome",
        "Monday, Tuesday, Wednesday, Thursday, Friday",
        "The opposite of hot is cold and the opposite of big is small",
        "Alice gave the book to Bob because he asked for it",
    ]
    layers = [0, 1, 2]
    result = run_logit_lens(model, prompts, lens=PatchscopeLens(), layers=layers)
    real = result.attention_mask.bool()
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(int(real.sum()), generator=generator)
    rates = {}
    for name, wanted in (("input", result.input_ids[real]), ("next", result.final_tokens[real])):
        for row, layer in enumerate(layers):
            top1 = result.predicted_tokens[row][real]
            rates[name, layer] = (
                round((top1 == wanted).float().mean().item(), 3),
                round((top1 == wanted[order]).float().mean().item(), 3),
            )
    print("identity Patchscope on the demo model, (rate, shuffled control):", rates)
    assert rates["next", 0][0] > rates["next", 0][1]


def test_equals_nnterps_patchscope_lens(load_tiny):
    interventions = pytest.importorskip(
        "nnterp.interventions", reason="nnterp does not import here (it needs nnsight 0.7)"
    )
    model = load_tiny("llama")
    if getattr(model, "nnterp", None) is None:
        pytest.skip(f"the tiny model loaded with backend {model.backend_choice!r}, not nnterp")
    prompt = PROMPTS[0]
    lens = PatchscopeLens()  # the identity prompt, its last token patched
    result = run_logit_lens(model, [prompt], lens=lens, store_full_probs=True)
    layers = list(range(model.n_layers - 1))
    theirs = interventions.patchscope_lens(
        model.nnterp,
        source_prompts=[prompt],
        target_patch_prompts=interventions.TargetPrompt(IDENTITY_PROMPT, -1),
        layers=layers,
    )  # [prompts, layers, vocab], the last token of each source prompt
    last = int(result.attention_mask[0].sum()) - 1
    assert_same_numbers(result.all_probs[:-1, 0, last], theirs[0], "nnterp's patchscope_lens")


def test_describe_a_cell_is_transformers_greedy_generation_from_the_patched_prompt(
    load_tiny, references
):
    model = load_tiny("llama")
    reference = references("llama")
    lens = PatchscopeLens()
    text = lens.describe(model, PROMPTS[0], layer=1, position=2, max_new_tokens=4)
    # Reference: transformers' own greedy generate, the block output patched on the prompt's pass.
    tokenizer, hf = reference.tokenizer, reference.model
    outputs = []
    hook = reference.blocks[1].register_forward_hook(
        lambda _m, _i, out: outputs.append(_first(out))
    )
    with torch.no_grad():
        hf(**tokenizer(PROMPTS[0], return_tensors="pt", return_token_type_ids=False))
    hook.remove()
    state = outputs[0][0, 2]
    target = tokenizer(IDENTITY_PROMPT, return_tensors="pt", return_token_type_ids=False)
    length = target["input_ids"].shape[1]

    def swap(_m, _i, out):
        hidden = _first(out)
        if hidden.shape[1] != length:  # the generated tokens' passes run as they are
            return None
        hidden = hidden.clone()
        hidden[0, length - 1] = state
        return (hidden, *out[1:]) if isinstance(out, tuple) else hidden

    hook = reference.blocks[1].register_forward_hook(swap)
    try:
        with torch.no_grad():
            ids = hf.generate(**target, max_new_tokens=4, do_sample=False)
    finally:
        hook.remove()
    assert text == tokenizer.decode(ids[0, length:])
    with pytest.raises(ValueError, match="layer"):
        lens.describe(model, PROMPTS[0], layer=model.n_layers)
    with pytest.raises(ValueError, match="position"):
        lens.describe(model, PROMPTS[0], layer=0, position=999)
    with pytest.raises(ValueError, match="max_new_tokens"):
        lens.describe(model, PROMPTS[0], layer=0, max_new_tokens=0)


def _kl_bits(p, q):
    return (p * (p.log2() - q.log2())).sum(-1)


def _identity_position(reference):
    return len(reference.tokenizer(IDENTITY_PROMPT)["input_ids"]) - 1


def test_compare_lenses_reads_each_side_through_its_patchscope(load_tiny, references):
    model, reference = load_tiny("gpt2"), references("gpt2")
    a, b = PatchscopeLens(), PatchscopeLens(target_layer=0)
    comparison = compare_lenses(model, PROMPTS[1], lens_a=a, lens_b=b)
    position = _identity_position(reference)
    pa = reference.probs(PROMPTS[1], IDENTITY_PROMPT, position)
    pb = reference.probs(PROMPTS[1], IDENTITY_PROMPT, position, target_layer=0)
    token = comparison.token[0]
    assert (token >= 0).all()
    cells = torch.arange(len(token))
    assert_same_numbers(comparison.token_prob_a[:, 0], pa[:, cells, token], "token_prob_a")
    assert_same_numbers(comparison.token_prob_b[:, 0], pb[:, cells, token], "token_prob_b")
    assert comparison.kl_a_to_b is not None
    assert_same_numbers(comparison.kl_a_to_b[:, 0], _kl_bits(pa, pb), "kl_a_to_b")


@pytest.mark.parametrize("in_trace", [False, True])
def test_patch_lens_reads_the_clean_and_the_patched_run_through_a_patchscope(
    load_tiny, references, in_trace
):
    """Each cell of both runs is the Patchscope readout of that run's state; with
    ``reduce_in_trace`` the patched passes run inside the step's trace (as on NDIF)."""
    model, reference = load_tiny("gpt2"), references("gpt2")
    comparison = patch_lens(
        model,
        PROMPTS[1],
        layer=0,
        position=1,
        source="zero",
        lens=PatchscopeLens(),
        reduce_in_trace=in_trace,
    )
    position = _identity_position(reference)
    clean = reference.probs(PROMPTS[1], IDENTITY_PROMPT, position)
    patched = reference.probs(PROMPTS[1], IDENTITY_PROMPT, position, zero=(0, 1))
    assert_same_numbers(comparison.a.max_probs[:, 0], clean.max(-1).values, "clean max_probs")
    assert_same_numbers(comparison.b.max_probs[:, 0], patched.max(-1).values, "patched max_probs")
    assert comparison.kl_a_to_b is not None
    assert_same_numbers(comparison.kl_a_to_b[:, 0], _kl_bits(clean, patched), "kl_a_to_b")
    # Before the patched position nothing changed; from it on the patch is read.
    assert torch.equal(
        comparison.b.predicted_tokens[:, 0, :1], comparison.a.predicted_tokens[:, 0, :1]
    )
    assert not torch.allclose(
        comparison.a.max_probs[:-1, 0, 1:], comparison.b.max_probs[:-1, 0, 1:]
    )


def test_a_long_run_shows_its_cells_done_out_of_all(load_tiny, capsys, monkeypatch):
    from murano_widgets.lenses import patchscope_progress

    model = load_tiny("gpt2")
    result = run_logit_lens(model, PROMPTS, lens=PatchscopeLens(progress=True))
    # A patched pass per real position at every layer but the last (the model's own output).
    total = int(result.attention_mask.sum()) * (model.n_layers - 1)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith(f"PatchscopeLens: {total}/{total} cells (100%)"), lines
    # By default a short run shows nothing; one that has taken long enough shows its bar.
    run_logit_lens(model, PROMPTS, lens=PatchscopeLens())
    assert "PatchscopeLens" not in capsys.readouterr().err
    monkeypatch.setattr(patchscope_progress, "LONG_RUN_SECONDS", 0.0)
    run_logit_lens(model, PROMPTS, lens=PatchscopeLens())
    assert f"/{total} cells" in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress must be None"):
        PatchscopeLens(progress="yes")


def test_the_widget_describes_a_cell_as_describe_does(load_tiny):
    """The front end's "Describe this cell" request (``describe_patchscope``, as its message) is
    answered with the text PatchscopeLens.describe gives for that cell; offered only for a
    Patchscope shown."""
    from murano_widgets import show_logit_lens
    from murano_widgets.live.describe import DESCRIBE_TOKENS

    model = load_tiny("llama")
    lens = PatchscopeLens()
    widget = show_logit_lens(
        model, PROMPTS, lens={"logit": None, "patchscope": lens}, lens_name="patchscope"
    )
    replies = []
    widget.send = replies.append
    widget._handle_custom_msg(
        {"action": "describe_patchscope", "id": 3, "prompt": 1, "layer": 1, "position": 2}, []
    )
    assert widget._live.worker.wait_idle(30)
    expected = lens.describe(model, PROMPTS[1], layer=1, position=2, max_new_tokens=DESCRIBE_TOKENS)
    assert expected and replies[-1] == {"action": "done", "id": 3, "message": expected}
    assert widget.describe_patchscope(layer=0, position=-1, prompt=0) == lens.describe(
        model, PROMPTS[0], layer=0, position=-1, max_new_tokens=DESCRIBE_TOKENS
    )
    # The logit lens shown: refused, saying why.
    widget.lens_name = "logit"
    widget._handle_custom_msg(
        {"action": "describe_patchscope", "id": 4, "prompt": 0, "layer": 1, "position": 2}, []
    )
    assert widget._live.worker.wait_idle(30)
    assert replies[-1]["action"] == "error" and "needs a Patchscope" in replies[-1]["message"]
    widget.close()
