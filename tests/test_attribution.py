"""Sublayer rows, component outputs and direct logit attribution, against plain transformers.

Every reference here is computed with forward hooks on the Hugging Face modules and the terms
each architecture's forward adds, written out from transformers' modeling files (not from
murano_widgets): the attention's output (after Gemma 2's post-attention norm, times Granite's
residual multiplier) and the MLP's (likewise).
"""

from __future__ import annotations

import pytest
import torch
from reference import _blocks_and_norm
from tiny_models import ARCHITECTURES, TRANSFORMING, build_tiny_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from murano_widgets import (
    LogitLens,
    MuranoModel,
    PromptBatch,
    component_outputs,
    load_demo_jacobian_lens,
    load_demo_model,
    load_demo_tuned_lens,
)
from murano_widgets.run import run_logit_lens
from murano_widgets.types import Node

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two", "Alice met Bob. Alice gave"]
EXTRA = (*TRANSFORMING, "phi", "phi3", "opt")
ALL = (*ARCHITECTURES, *EXTRA)
PARALLEL = ("gpt_neox", "phi", "cohere")


@pytest.fixture(scope="module")
def folders(tiny_model_dirs, tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-attribution")
    return {**tiny_model_dirs, **{arch: build_tiny_model(arch, root / arch) for arch in EXTRA}}


@pytest.fixture(scope="module")
def load(folders):
    cache = {}

    def get(arch):
        if arch not in cache:
            cache[arch] = MuranoModel(folders[arch])
        return cache[arch]

    return get


# -- the reference: plain transformers ---------------------------------------------------------


def _term_modules(block, model_type):
    """The modules whose outputs are the attention's and the MLP's terms, and their factor."""
    if model_type == "gpt2":
        return block.attn, block.mlp
    if model_type == "gpt_neox":
        return block.attention, block.mlp
    if model_type == "gemma2":
        return block.post_attention_layernorm, block.post_feedforward_layernorm
    if model_type == "opt":
        return block.self_attn, block.fc2
    return block.self_attn, block.mlp


class Reference:
    """One prompt through plain transformers, with every term captured by hooks."""

    def __init__(self, folder):
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.blocks, self.norm = _blocks_and_norm(self.model)
        self.config = self.model.config
        self.factor = float(getattr(self.config, "residual_multiplier", 1.0) or 1.0)

    @torch.no_grad()
    def run(self, prompt):
        ids = self.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        seen = {"in": [], "out": [], "attn": [], "mlp": [], "z": []}
        hooks = []

        def first(value):
            return value[0] if isinstance(value, tuple) else value

        for block in self.blocks:
            attn, mlp = _term_modules(block, self.config.model_type)
            hooks.append(
                block.register_forward_pre_hook(
                    lambda _m, args, kwargs: seen["in"].append(
                        args[0] if args else kwargs["hidden_states"]
                    ),
                    with_kwargs=True,
                )
            )
            hooks.append(
                block.register_forward_hook(lambda _m, _i, out: seen["out"].append(first(out)))
            )
            hooks.append(
                attn.register_forward_hook(lambda _m, _i, out: seen["attn"].append(first(out)))
            )
            hooks.append(
                mlp.register_forward_hook(lambda _m, _i, out: seen["mlp"].append(first(out)))
            )
        try:
            logits = self.model(**ids).logits[0]
        finally:
            for hook in hooks:
                hook.remove()
        # OPT runs its MLP on [batch * seq, d]: one prompt, so that is [seq, d] already.
        return (
            {key: [t[0] if t.dim() == 3 else t for t in values] for key, values in seen.items()},
            logits,
            ids["input_ids"][0],
        )

    def terms(self, prompt):
        """``[seq, 1 + 2 L, d]``: the embedding, then each layer's attention and MLP terms."""
        seen, _, _ = self.run(prompt)
        parts = [seen["in"][0]]
        for attn, mlp in zip(seen["attn"], seen["mlp"], strict=True):
            parts += [attn * self.factor, mlp * self.factor]
        return torch.stack(parts, dim=1), torch.stack(seen["out"])


# -- component outputs ------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ALL)
def test_component_outputs_are_the_terms_the_model_adds(load, folders, arch):
    model = load(arch)
    reference = Reference(folders[arch])
    components = component_outputs(model, PROMPTS)
    assert components.labels[:3] == ["embed", "L0.attn", "L0.mlp"]
    for index, prompt in enumerate(PROMPTS):
        terms, outputs = reference.terms(prompt)
        n = terms.shape[0]
        mask = components.attention_mask[index].bool()
        ours = components.vectors[index][mask]
        assert ours.shape == terms.shape
        scale = terms.abs().max()
        torch.testing.assert_close(ours, terms, atol=1e-5 * scale, rtol=1e-5)
        # The invariant: the embedding plus every term up to a layer is that layer's output.
        running = ours.cumsum(dim=1)[:, 2::2]  # after each MLP
        for layer in range(outputs.shape[0]):
            error = (running[:, layer] - outputs[layer]).norm() / outputs[layer].norm()
            assert error <= 1e-5, (arch, layer, float(error))
        assert n == int(mask.sum())


@pytest.mark.parametrize("arch", ALL)
def test_heads_and_bias_sum_to_the_attention_term(load, folders, arch):
    model = load(arch)
    whole = component_outputs(model, PROMPTS[:2])
    split = component_outputs(model, PROMPTS[:2], heads=True)
    n_layers = model.n_layers
    n_heads = (len(split.labels) - 1) // n_layers - 2
    assert split.labels[1 : n_heads + 3] == [
        *(f"L0.H{h}" for h in range(n_heads)),
        "L0.attn_bias",
        "L0.mlp",
    ]
    for layer in range(n_layers):
        start = 1 + layer * (n_heads + 2)
        summed = split.vectors[:, :, start : start + n_heads + 1].sum(dim=2)
        attention = whole.vectors[:, :, 1 + 2 * layer]
        scale = attention.abs().max()
        torch.testing.assert_close(summed, attention, atol=1e-5 * scale, rtol=1e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gpt_neox", "qwen3"])
def test_one_heads_share_is_its_slice_through_the_projection(load, folders, arch):
    """The reference head share: the projection run on its input with every other head's
    slice zeroed, minus the projection's bias."""
    model = load(arch)
    reference = Reference(folders[arch])
    split = component_outputs(model, PROMPTS[:1], heads=True)
    n_heads = (len(split.labels) - 1) // model.n_layers - 2
    block = reference.blocks[1]
    projection = {"gpt2": lambda b: b.attn.c_proj, "gpt_neox": lambda b: b.attention.dense}.get(
        arch, lambda b: b.self_attn.o_proj
    )(block)
    captured = []
    hook = projection.register_forward_pre_hook(lambda _m, args: captured.append(args[0][0]))
    reference.run(PROMPTS[0])
    hook.remove()
    z = captured[0]
    width = z.shape[-1] // n_heads
    bias = projection.bias if projection.bias is not None else 0.0
    with torch.no_grad():
        for head in range(n_heads):
            alone = torch.zeros_like(z)
            alone[:, head * width : (head + 1) * width] = z[:, head * width : (head + 1) * width]
            expected = projection(alone) - bias
            ours = split.vectors[0, : z.shape[0], 1 + (n_heads + 2) + head]
            torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)


# -- direct logit attribution -----------------------------------------------------------------


def _reference_attribution(reference, prompt, token, foil=None):
    """The answer's direct logit attribution at the last position, written out: the final norm
    as a linear map with its scale from the last block's output."""
    terms, outputs = reference.terms(prompt)
    config = reference.config
    final = outputs[-1][-1]
    norm = reference.norm
    eps = getattr(norm, "eps", getattr(norm, "variance_epsilon", None))
    weight = norm.weight.detach()
    centred = isinstance(norm, torch.nn.LayerNorm) or config.model_type == "cohere"
    gain = 1 + weight if config.model_type in ("gemma", "gemma2") else weight
    x = final - final.mean() if centred else final
    s = torch.rsqrt(x.pow(2).mean() + eps)
    unembedding = reference.model.get_output_embeddings().weight.detach()
    w = unembedding[token] - (unembedding[foil] if foil is not None else 0)
    w = w * {
        "cohere": getattr(config, "logit_scale", 1.0),
        "granite": 1 / getattr(config, "logits_scaling", 1.0),
    }.get(config.model_type, 1.0)
    direction = gain * w
    if centred:
        direction = direction - direction.mean()
    return (terms[-1] * s * direction).sum(-1)


@pytest.mark.parametrize("arch", ALL)
def test_answer_contributions_match_the_written_out_attribution(load, folders, arch):
    model = load(arch)
    reference = Reference(folders[arch])
    tokens = reference.tokenizer
    answers = [" Paris", " three", " Bob"]
    foils = [" Rome", None, " Alice"]
    result = run_logit_lens(model, PROMPTS, answers=answers, foils=foils, decompose=True)
    assert result.component_labels == [
        "embed",
        *(f"L{layer}.{part}" for layer in range(model.n_layers) for part in ("attn", "mlp")),
    ]
    for index, prompt in enumerate(PROMPTS):
        answer = tokens(prompt + answers[index])["input_ids"][len(tokens(prompt)["input_ids"])]
        foil = foils[index]
        foil_id = None
        if foil is not None:
            foil_id = tokens(prompt + foil)["input_ids"][len(tokens(prompt)["input_ids"])]
        ours = result.answer_contributions[:, index]
        if foil is None:
            # Foils were given for the others: a prompt without one has no difference.
            assert torch.isnan(ours).all()
            continue
        expected = _reference_attribution(reference, prompt, answer, foil_id)
        torch.testing.assert_close(ours, expected, atol=1e-4, rtol=1e-4)
        # With the bias: the model's own logit difference (before any soft-cap).
        _, logits, _ = reference.run(prompt)
        last = logits[-1]
        if reference.config.model_type == "gemma2":
            cap = reference.config.final_logit_softcapping
            last = torch.atanh(last / cap) * cap
        total = ours.sum() + result.answer_contribution_bias[index]
        torch.testing.assert_close(total, last[answer] - last[foil_id], atol=1e-4, rtol=1e-4)


def _lenses():
    return {"logit": None, "tuned": load_demo_tuned_lens(), "jacobian": load_demo_jacobian_lens()}


@pytest.fixture(scope="module")
def demo():
    return load_demo_model()


def test_every_cell_sums_to_its_top1_logit_under_every_lens(demo):
    """The sum property on every cell, against logits computed from plain hooks: the block
    outputs through the lens, the final norm and the unembedding."""
    prompts = ["The capital of France is", "Water boils at a temperature of one hundred"]
    results = run_logit_lens(demo, prompts, lens=_lenses(), decompose=True, heads=True)
    hf = demo._hf_model
    blocks = demo._blocks
    for name, result in results.items():
        lens = results[name]
        lens_object = _lenses()[name] or None
        for index, prompt in enumerate(prompts):
            captured = []
            hooks = [
                b.register_forward_hook(
                    lambda _m, _i, o, into=captured: into.append(
                        o[0] if isinstance(o, tuple) else o
                    )
                )
                for b in blocks
            ]
            ids = demo.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
            with torch.no_grad():
                hf(**ids)
            for hook in hooks:
                hook.remove()
            real = result.attention_mask[index].bool()
            for row, layer in enumerate(range(demo.n_layers)):
                h = captured[layer][0]
                if lens_object is not None and layer < demo.n_layers - 1:
                    h = lens_object.translate(layer, h)
                with torch.no_grad():
                    logits = hf.lm_head(hf.model.norm(h))
                top = result.predicted_tokens[row, index][real]
                want = logits.gather(-1, top[:, None])[:, 0]
                cells = result.contributions[row, index][real]
                got = cells.nansum(-1) + result.contribution_bias[row, index][real]
                torch.testing.assert_close(got, want, atol=2e-4, rtol=1e-4)
                torch.testing.assert_close(
                    result.top1_logits[row, index][real], want, atol=2e-4, rtol=1e-4
                )
                assert torch.equal(top, logits.argmax(-1)) or name != "logit"
                # Components after the row's layer hold no value; those up to it do.
                limit = 1 + (layer + 1) * (len(result.component_labels) - 1) // demo.n_layers
                assert not torch.isnan(cells[:, :limit]).any()
                assert torch.isnan(cells[:, limit:]).all()
        assert lens.logit_softcap is None


def test_target_and_answer_rows_sum_to_their_logits(demo):
    prompts = ["The capital of France is", "The capital of Italy is"]
    result = run_logit_lens(
        demo, prompts, answers=[" Paris", " Rome"], targets=[" Rome"], decompose=True
    )
    # At the last position and the last layer the answer's row is the model's own readout.
    last = result.attention_mask.sum(1) - 1
    for index in range(2):
        row = result.answer_row_contributions[-1, index]
        torch.testing.assert_close(row, result.answer_contributions[:, index])
        target = result.target_contributions[-1, index, last[index], 0]
        total = target.nansum() + result.target_bias[-1, index, last[index], 0]
        answer_total = row.nansum() + result.answer_row_bias[-1, index]
        # Prompt 1's answer is the target: the same logit both ways.
        if index == 1:
            torch.testing.assert_close(total, answer_total)
    assert result.answer_contributions.shape == (len(result.component_labels), 2)


# -- sublayer rows ----------------------------------------------------------------------------


def test_resid_mid_rows_read_the_stream_after_each_attention(load, folders):
    model = load("llama")
    reference = Reference(folders["llama"])
    both = run_logit_lens(model, PROMPTS, sites=("resid_mid", "resid_post"))
    plain = run_logit_lens(model, PROMPTS)
    n = model.n_layers
    assert both.addresses == [
        Node(layer, site) for layer in range(n) for site in ("resid_mid", "resid_post")
    ]
    torch.testing.assert_close(both.max_probs[1::2], plain.max_probs, equal_nan=True)
    for index, prompt in enumerate(PROMPTS):
        captured = []
        hooks = [
            b.post_attention_layernorm.register_forward_pre_hook(
                lambda _m, a, into=captured: into.append(a[0][0])
            )
            for b in reference.blocks
        ]
        reference.run(prompt)
        for hook in hooks:
            hook.remove()
        for layer, mid in enumerate(captured):
            with torch.no_grad():
                probs = reference.model.lm_head(reference.norm(mid)).softmax(-1)
            real = both.attention_mask[index].bool()
            torch.testing.assert_close(
                both.max_probs[2 * layer, index][real], probs.max(-1).values, atol=1e-5, rtol=1e-5
            )


def test_resid_mid_rows_under_a_tuned_lens_use_the_translator_before_them(demo):
    tuned = load_demo_tuned_lens()
    result = run_logit_lens(
        demo, ["The capital of France is"], layers=[2], sites=("resid_mid",), lens=tuned
    )
    captured = []
    hook = demo._blocks[2].post_attention_layernorm.register_forward_pre_hook(
        lambda _m, a: captured.append(a[0][0])
    )
    with torch.no_grad():
        demo._hf_model(**demo.tokenizer("The capital of France is", return_tensors="pt"))
    hook.remove()
    with torch.no_grad():
        probs = demo._hf_model.lm_head(
            demo._hf_model.model.norm(tuned.translate(1, captured[0]))
        ).softmax(-1)
    torch.testing.assert_close(result.max_probs[0, 0], probs.max(-1).values, atol=1e-5, rtol=1e-5)
    assert result.addresses == [Node(2, "resid_mid")]


@pytest.mark.parametrize("arch", PARALLEL)
def test_resid_mid_on_a_parallel_block_is_a_clear_error(load, arch):
    model = load(arch)
    with pytest.raises(ValueError, match="side by side") as error:
        LogitLens(model, sites=("resid_mid", "resid_post"))
    assert "decompose=True still" in str(error.value)
    # The decomposition still works there.
    result = run_logit_lens(model, PROMPTS[:1], decompose=True)
    assert result.contributions.shape[-1] == 1 + 2 * model.n_layers


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sites": "resid_mid"}, TypeError, "sites must be a tuple"),
        ({"sites": ()}, ValueError, "sites is empty"),
        ({"sites": ("resid_pre",)}, ValueError, "'resid_pre'; allowed"),
        ({"sites": ("resid_post", "resid_post")}, ValueError, "twice"),
        ({"heads": True}, ValueError, "pass decompose=True"),
        ({"decompose": "yes"}, TypeError, "decompose"),
    ],
)
def test_bad_step_arguments_are_named(demo, kwargs, error, match):
    with pytest.raises(error, match=match):
        LogitLens(demo, **kwargs)


def test_bad_foils_are_named_before_the_model_runs(demo):
    with pytest.raises(ValueError, match="give answers"):
        PromptBatch(["a b"], foils=[" c"])
    with pytest.raises(ValueError, match="1 entries for 2 prompts"):
        PromptBatch(["a", "b"], answers=[" x", " y"], foils=[" c"])
    with pytest.raises(TypeError, match=r"foils\[0\]: expected a non-empty string or None, got"):
        run_logit_lens(demo, ["a"], answers=[" x"], foils=[3], decompose=True)
    with pytest.raises(ValueError, match=r"foils\[0\]: expected .*, got '' \(the empty string\)"):
        run_logit_lens(demo, ["a"], answers=[" x"], foils=[""], decompose=True)
    with pytest.raises(
        ValueError,
        match=r"foils\[0\]: expected valid Unicode text, got one that holds a lone surrogate",
    ):
        PromptBatch(["a"], answers=[" x"], foils=[" \ud800"])


def test_default_step_has_no_attribution_fields(demo):
    result = run_logit_lens(demo, ["The capital of France is"])
    assert result.contributions is None and result.component_labels is None
    assert result.addresses == [Node(layer, "resid_post") for layer in range(demo.n_layers)]


def test_a_remote_trace_does_not_carry_the_models_weights(demo):
    """Pickled (as a remote trace sends the step), the readout and the components leave the
    unembedding and the output projections behind: the trace reads the server's."""
    import pickle

    step = LogitLens(demo, decompose=True, heads=True)
    weights = demo._lm_head.weight.numel() * 4
    assert len(pickle.dumps(step.readout)) < weights / 20
    layout = pickle.loads(pickle.dumps(step.components))
    assert layout.out_weights == [] and len(step.components.out_weights) == demo.n_layers
    readout = pickle.loads(pickle.dumps(step.readout))
    assert readout.head is None and step.readout.head is not None


def test_the_answer_is_attributed_at_every_cell(demo):
    """answer_token_contributions: the answer's first token (minus the foil's) at every cell;
    at the last position it is answer_row_contributions; each cell sums to the difference of
    the two tokens' lens logits (from the top-1 logit and the probabilities' ratio)."""
    prompts = ["The capital of France is", "The capital of Italy is the city of"]
    result = run_logit_lens(
        demo, prompts, answers=[" Paris", " Rome"], foils=[" Rome", " Paris"], decompose=True
    )
    cells = result.answer_token_contributions
    assert cells.shape == (*result.max_probs.shape, len(result.component_labels))
    last = result.attention_mask.sum(1) - 1
    for index in range(2):
        position = int(last[index]) if demo.tokenizer.padding_side == "right" else -1
        torch.testing.assert_close(
            cells[:, index, position], result.answer_row_contributions[:, index], equal_nan=True
        )
    # Every real cell has a value (the embedding's, at least); padding has none.
    real = result.attention_mask.bool()
    assert not torch.isnan(cells[:, real, 0]).any() and torch.isnan(cells[:, ~real]).all()
    # logit(a) - logit(b) = log p(a) - log p(b): the probabilities come from the reductions,
    # the contributions from the decomposition.
    tokens = demo.tokenizer
    paris = tokens(prompts[0] + " Paris")["input_ids"][-1]
    rome = tokens(prompts[0] + " Rome")["input_ids"][-1]
    full = run_logit_lens(demo, prompts, store_full_probs=True)
    logratio = full.all_probs[..., paris].log() - full.all_probs[..., rome].log()
    total = cells.nansum(-1) + result.answer_token_bias
    torch.testing.assert_close(
        total[:, 0][:, real[0]], logratio[:, 0][:, real[0]], atol=2e-4, rtol=1e-4
    )


# -- every row's parts against plain hooks (issue 36) ------------------------------------------


@pytest.mark.parametrize(
    "prompt", ["The capital of France is", "Everyone knows that the capital of France is"]
)
def test_every_rows_parts_at_the_last_position_match_plain_hooks(demo, prompt):
    """Each component's part of a cell's logit depends on the row it is read at (the final
    norm's scale is that row's): at every row, the top-1's and the answer-minus-foil's parts
    at the last position equal ReferenceAttribution's (plain transformers hooks), component by
    component. The README's prompt and notebook 07's give block 0's MLP 4.54 and 4.83 at the
    last row: two prompts, one quantity."""
    from reference import ReferenceAttribution

    from murano_widgets.demo_model import DEMO_MODEL_PATH

    reference = ReferenceAttribution(DEMO_MODEL_PATH)
    paris, berlin = (reference.token_id(prompt, word) for word in (" Paris", " Berlin"))
    result = run_logit_lens(demo, prompt, answers=" Paris", foils=" Berlin", decompose=True)
    labels = result.component_labels
    last = int(result.attention_mask[0].sum()) - 1
    for row in range(demo.n_layers):
        top1 = int(result.predicted_tokens[row, 0, last])
        want = reference.attribute(prompt, top1, row=row)
        assert want["top1"] == top1
        for name, field, bias in (
            ("top1", result.contributions, result.contribution_bias),
            ("answer", result.answer_token_contributions, result.answer_token_bias),
        ):
            if name == "answer":
                want = reference.attribute(prompt, paris, foil=berlin, row=row)
            got = dict(zip(labels, field[row, 0, last].tolist(), strict=True))
            assert [k for k, v in got.items() if v == v] == list(want["parts"]), (name, row)
            for label, value in want["parts"].items():
                assert got[label] == pytest.approx(value, abs=1e-4), (name, row, label)
            assert float(bias[row, 0, last]) == pytest.approx(want["bias"], abs=1e-4)
            total = sum(want["parts"].values()) + want["bias"]
            assert total == pytest.approx(want["logit"], abs=1e-4), "the reference adds up"
    # The last row is the model's own readout: answer_contributions, as notebook 07 tabulates.
    want = reference.attribute(prompt, paris)
    plain = run_logit_lens(demo, prompt, answers=" Paris", decompose=True)
    got = dict(zip(labels, plain.answer_contributions[:, 0].tolist(), strict=True))
    assert got == pytest.approx(want["parts"], abs=1e-4)
    expected = {"The capital of France is": 4.54, "Everyone knows": 4.83}
    assert round(got["L0.mlp"], 2) == next(v for k, v in expected.items() if prompt.startswith(k))
