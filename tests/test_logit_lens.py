"""The LogitLens step against an independent computation in plain transformers."""

from __future__ import annotations

import pytest
import torch
from reference import ReferenceLens, token_word
from tiny_models import ARCHITECTURES

from murano_widgets import RESID_POST, LogitLens, Node, PromptBatch, Results

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two", "Alice met Bob. Alice gave"]
CELL_FIELDS = (
    "max_probs",
    "topk_probs",
    "entropy",
    "final_token_probs",
    "kl_to_final",
)
ID_FIELDS = ("predicted_tokens", "topk_tokens", "final_token_ranks")


def run_lens(model, prompts=PROMPTS, **options):
    results = Results()
    results["prompts"] = PromptBatch(list(prompts))
    return LogitLens(model, **options)(results)["logit_lens"]


def assert_matches_reference(lens, reference, prompts, layers=None):
    """Each prompt's real positions in the batched lens equal the prompt run alone."""
    for p, prompt in enumerate(prompts):
        ref = reference.run(prompt, top_k=lens.topk_tokens.shape[-1])
        positions = lens.positions(p)
        assert torch.equal(lens.input_ids[p, positions], ref["input_ids"])
        rows = lens.layers if layers is None else layers
        for name in CELL_FIELDS + ID_FIELDS:
            ours = getattr(lens, name)[:, p, positions]
            theirs = ref[name][rows]
            if name in ID_FIELDS:
                assert torch.equal(ours, theirs), f"{name} of prompt {p}"
            else:
                torch.testing.assert_close(ours, theirs, atol=2e-4, rtol=1e-3, msg=f"{name} of {p}")
        assert torch.equal(lens.final_tokens[p, positions], ref["final_tokens"])
        words = [lens.predicted_words[-1][p][s] for s in positions.tolist()]
        expected = [
            token_word(reference.tokenizer, int(t)) for t in ref["predicted_tokens"][rows[-1]]
        ]
        assert words == expected


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_lens_matches_plain_transformers(arch, load_tiny, tiny_model_dirs):
    model = load_tiny(arch)
    assert model.tokenizer.padding_side == "left"
    lens = run_lens(model, top_k=5)
    assert lens.all_probs is None
    assert lens.addresses == [Node(i, RESID_POST) for i in range(model.n_layers)]
    assert_matches_reference(lens, ReferenceLens(tiny_model_dirs[arch]), PROMPTS)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gpt_neox", "qwen3"])
def test_right_padding_equals_one_by_one(arch, tiny_model_dirs):
    from murano_widgets import MuranoModel

    model = MuranoModel(tiny_model_dirs[arch])
    model.tokenizer.padding_side = "right"
    lens = run_lens(model, top_k=3)
    assert lens.attention_mask[1, 0] == 1 and lens.attention_mask[1, -1] == 0
    assert_matches_reference(lens, ReferenceLens(tiny_model_dirs[arch]), PROMPTS)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gemma2", "gpt_neox"])
def test_full_probs_rows_sum_to_one_and_last_layer_is_the_model_output(
    arch, load_tiny, tiny_model_dirs
):
    model = load_tiny(arch)
    lens = run_lens(model, store_full_probs=True, top_k=2)
    assert lens.all_probs.shape == (
        model.n_layers,
        len(PROMPTS),
        lens.attention_mask.shape[1],
        model.vocab_size,
    )
    reference = ReferenceLens(tiny_model_dirs[arch])
    mask = lens.attention_mask.bool()
    sums = lens.all_probs[:, mask].sum(-1)
    torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-5, rtol=0)
    assert torch.isnan(lens.all_probs[:, ~mask]).all()
    for p, prompt in enumerate(PROMPTS):
        ref = reference.run(prompt)
        ours = lens.all_probs[-1, p, lens.positions(p)]
        torch.testing.assert_close(ours, ref["model_probs"], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(
            lens.all_probs[:, p, lens.positions(p)], ref["probs"], atol=1e-5, rtol=1e-4
        )


def test_final_fields_use_the_model_output_when_the_last_layer_is_not_requested(
    load_tiny, tiny_model_dirs
):
    model = load_tiny("llama")
    lens = run_lens(model, layers=[0, -2], top_k=3)
    assert lens.layers == [0, model.n_layers - 2]
    assert_matches_reference(
        lens, ReferenceLens(tiny_model_dirs["llama"]), PROMPTS, layers=lens.layers
    )
    # And these layers are not the final one: their KL to the final distribution is not zero.
    assert (lens.kl_to_final[:, lens.attention_mask.bool()] > 1e-3).any()


@pytest.mark.parametrize("arch", ["gpt2", "gemma2"])
def test_in_trace_reduction_equals_after_trace(arch, load_tiny):
    model = load_tiny(arch)
    after = run_lens(model, top_k=4, store_full_probs=True)
    inside = run_lens(model, top_k=4, store_full_probs=True, reduce_in_trace=True)
    for name in (*CELL_FIELDS, *ID_FIELDS, "all_probs", "final_tokens"):
        torch.testing.assert_close(getattr(inside, name), getattr(after, name), equal_nan=True)
    assert inside.predicted_words == after.predicted_words


@pytest.mark.parametrize("rows", [1, 5])
def test_chunk_size_does_not_change_the_result(rows, load_tiny):
    model = load_tiny("qwen2")
    default = run_lens(model)
    # With 5 rows a chunk the last chunk is shorter, and reuses a slice of the buffers.
    assert int(default.attention_mask.sum()) % rows != 0 or rows == 1
    chunked = run_lens(model, max_chunk_bytes=4 * model.vocab_size * rows)
    for name in (*CELL_FIELDS, *ID_FIELDS):
        torch.testing.assert_close(getattr(chunked, name), getattr(default, name), equal_nan=True)


def test_padding_holds_no_prediction(load_tiny):
    lens = run_lens(load_tiny("gpt2"))
    pad = ~lens.attention_mask.bool()
    assert pad.any()
    for name in ("max_probs", "entropy", "final_token_probs", "kl_to_final"):
        assert torch.isnan(getattr(lens, name)[:, pad]).all()
    assert (lens.predicted_tokens[:, pad] == -1).all() and (
        lens.final_token_ranks[:, pad] == -1
    ).all()
    p, s = torch.nonzero(pad)[0].tolist()
    assert lens.predicted_words[0][p][s] == "" and lens.input_words[p][s] == ""
    assert (lens.max_probs[:, ~pad] > 0).all()


def test_each_distinct_token_is_decoded_once(load_tiny, monkeypatch):
    """Once per tokenizer: a second call decodes only the ids it has not seen."""
    model = load_tiny("llama")
    calls = []

    class CountingBackend:
        """Stands in for the Rust tokenizer and records each decode."""

        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def decode(self, ids, **kwargs):
            calls.append(list(ids))
            return self.inner.decode(ids, **kwargs)

        def decode_batch(self, ids, **kwargs):
            calls.extend(list(i) for i in ids)
            return self.inner.decode_batch(ids, **kwargs)

    # A new Rust tokenizer: what was decoded with the old one is not reused.
    monkeypatch.setattr(model.tokenizer, "_tokenizer", CountingBackend(model.tokenizer._tokenizer))
    lens = run_lens(model, top_k=5)
    assert all(len(ids) == 1 for ids in calls)
    decoded = [ids[0] for ids in calls]
    assert len(decoded) == len(set(decoded))
    assert set(decoded) == set(lens.token_strings)
    assert set(decoded) >= set(lens.topk_tokens[lens.topk_tokens >= 0].tolist())
    calls.clear()
    again = run_lens(model, top_k=5)
    assert calls == [] and again.token_strings == lens.token_strings
    other = run_lens(model, ["Zebras quickly vex"], top_k=5)
    assert sorted(ids[0] for ids in calls) == sorted(set(other.token_strings) - set(decoded))
    monkeypatch.undo()
    # The words are what the tokenizer's own decode gives, id by id (a split character's bytes
    # as <0xE6>).
    assert lens.token_strings == {i: token_word(model.tokenizer, i) for i in decoded}


def test_half_precision_model_gives_finite_float32_fields(tiny_model_dirs):
    from murano_widgets import MuranoModel

    model = MuranoModel(tiny_model_dirs["llama"], dtype=torch.bfloat16)
    assert model.dtype == torch.bfloat16
    lens = run_lens(model)
    real = lens.attention_mask.bool()
    for name in ("max_probs", "entropy", "kl_to_final", "topk_probs"):
        values = getattr(lens, name)
        assert values.dtype == torch.float32
        assert torch.isfinite(values[:, real]).all(), name
    full = run_lens(MuranoModel(tiny_model_dirs["llama"]))
    # bfloat16 keeps about 3 digits: the picture is the same.
    torch.testing.assert_close(
        lens.max_probs[:, real], full.max_probs[:, real], atol=0.05, rtol=0.1
    )


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_forward_pass_skips_what_the_lens_does_not_use(arch, load_tiny):
    """No key/value cache and no lm_head over every position: each would cost memory for nothing."""
    model = load_tiny(arch)
    run_lens(model)  # nnsight swaps in the real modules on first use: hook those
    inner = model.nnterp._model
    caches, head_rows = [], []
    hooks = [
        inner.base_model.register_forward_hook(
            lambda _m, _i, output: caches.append(output.past_key_values)
        ),
        inner.get_output_embeddings().register_forward_hook(
            lambda _m, inputs, _o: head_rows.append(inputs[0].shape[-2])
        ),
    ]
    try:
        lens = run_lens(model)
    finally:
        for hook in hooks:
            hook.remove()
    assert caches == [None], "one forward pass, without a key/value cache"
    assert head_rows == [1], "the model's own lm_head runs on one position only"
    assert lens.max_probs.shape[0] == model.n_layers


def test_a_tuned_lens_runs_inside_the_same_reductions_on_both_paths(load_tiny, tiny_model_dirs):
    """Every field, the final-based ones included, against a direct computation in plain torch:
    block outputs by hooks, translator l + 1 on block l, then the model's norm and lm_head."""
    from murano_widgets import TunedLens

    model = load_tiny("llama")
    lens = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        lens.weight.normal_(0.0, 0.2, generator=generator)
        lens.bias.normal_(0.0, 0.2, generator=generator)
    after = run_lens(model, top_k=4, lens=lens)
    inside = run_lens(model, top_k=4, lens=lens, reduce_in_trace=True)
    reference = ReferenceLens(tiny_model_dirs["llama"])
    for p, prompt in enumerate(PROMPTS):
        ids = reference.tokenizer(prompt, return_tensors="pt")
        captured = []
        hooks = [
            b.register_forward_hook(
                lambda _m, _i, o, captured=captured: captured.append(
                    o[0] if isinstance(o, tuple) else o
                )
            )
            for b in reference.blocks
        ]
        with torch.no_grad():
            final = reference.model(**ids).logits[0].double().softmax(-1)
            for hook in hooks:
                hook.remove()
            weight, bias = lens.weight.double(), lens.bias.double()
            probs = []
            for layer, h in enumerate(captured):
                h = h[0].double()
                if layer < len(captured) - 1:  # translator layer + 1 acts on block layer's output
                    h = h + h @ weight[layer + 1].T + bias[layer + 1]
                logits = reference.model.lm_head(reference.norm(h.float())).double()
                probs.append(logits.softmax(-1))
        probs = torch.stack(probs)
        kl = (final * (final.log() - probs.log())).sum(-1) / torch.log(torch.tensor(2.0))
        chosen = probs.gather(-1, final.argmax(-1).expand(len(captured), -1).unsqueeze(-1))[..., 0]
        positions = after.positions(p)
        for result in (after, inside):
            torch.testing.assert_close(
                result.kl_to_final[:, p, positions].double(), kl, atol=2e-4, rtol=1e-3
            )
            torch.testing.assert_close(
                result.final_token_probs[:, p, positions].double(), chosen, atol=2e-5, rtol=1e-4
            )
            assert torch.equal(result.predicted_tokens[:, p, positions], probs.argmax(-1))
    assert after.lens_kind == inside.lens_kind == "tuned"
    # The translators change what the early layers read, so this is not the plain lens.
    plain = run_lens(model, top_k=4)
    assert not torch.allclose(plain.kl_to_final[:-1], after.kl_to_final[:-1], equal_nan=True)


def _tensor_fields(result):
    from dataclasses import fields

    return {
        f.name: getattr(result, f.name)
        for f in fields(result)
        if isinstance(getattr(result, f.name), torch.Tensor)
    }


@pytest.mark.parametrize("backend", ["nnterp", "nnsight"])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_plain_forward_pass_equals_the_trace(arch, backend, load_tiny, tiny_model_dirs):
    """Block outputs alone come from the model's forward pass with hooks, without an nnsight
    trace: the same tensors, so every field is bit-identical to the traced run."""
    from murano_widgets import MuranoModel

    model = (
        load_tiny(arch)
        if backend == "nnterp"
        else MuranoModel(tiny_model_dirs[arch], backend="nnsight")
    )
    assert model.backend == backend
    batch = PromptBatch(PROMPTS, answers=[" Paris", " three", " Bob"])
    options = dict(layers=[0, 1], top_k=3, targets=[" the"], store_full_probs=True)

    def run(plain: bool):
        step = LogitLens(model, **options)
        step._PLAIN_FORWARD = plain
        return step({"prompts": batch})["logit_lens"]

    # First the plain pass: the nnsight backend loads its weights there, and its self-check
    # (one probe trace) runs before the first lens.
    checks = 0 if model._self_checked else 1
    opened = []
    real_trace = model.trace
    model.trace = lambda *args, **kwargs: opened.append(1) or real_trace(*args, **kwargs)
    try:
        plain = run(True)
    finally:
        del model.trace
    assert len(opened) == checks, "no trace for block outputs alone"
    assert model._self_checked
    traced = run(False)
    for name, value in _tensor_fields(traced).items():
        assert torch.equal(value.nan_to_num(-7.0), getattr(plain, name).nan_to_num(-7.0)), name
    for name, scores in traced.answer_sets.items():
        for field in ("probs", "ranks", "token_probs", "token_ranks"):
            ours, theirs = getattr(plain.answer_sets[name], field), getattr(scores, field)
            assert torch.equal(ours.nan_to_num(-7.0), theirs.nan_to_num(-7.0)), field
    assert plain.predicted_words == traced.predicted_words
    assert plain.token_strings == traced.token_strings


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_layers_reduced_together_equal_one_at_a_time(arch, load_tiny, monkeypatch):
    """Small chunks reduce several layers as one tensor; every field is bit-identical to one
    layer at a time (answers, targets, full probabilities, two lenses side by side)."""
    from murano_widgets import TunedLens
    from murano_widgets.step import chunk_loop, reductions

    model = load_tiny(arch)
    tuned = TunedLens.identity(model)
    with torch.no_grad():
        tuned.weight.normal_(0.0, 0.2, generator=torch.Generator().manual_seed(5))
    batch = PromptBatch(PROMPTS, answers=[" Paris", [" three", " four"], None])
    options = dict(targets=[" the"], store_full_probs=True, top_k=4)
    sizes = []
    reduce_logits = reductions.reduce_logits

    def counted(logits, *args, **kwargs):
        sizes.append(logits.shape[0])
        return reduce_logits(logits, *args, **kwargs)

    monkeypatch.setattr(reductions, "reduce_logits", counted)

    def run(**more):
        return LogitLens(model, **options, **more)({"prompts": batch})["logit_lens"]

    together = [run(), run(lens={"logit": None, "tuned": tuned})]
    grouped = list(sizes)
    sizes.clear()
    monkeypatch.setattr(chunk_loop, "_GROUP_ENTRIES", 1)
    alone = [run(), run(lens={"logit": None, "tuned": tuned})]
    # Together: one call per lens for all layers but the last; alone: one per layer.
    assert len(grouped) == 3 and len(sizes) == 3 * (model.n_layers - 1)
    pairs = [(together[0], alone[0])]
    pairs += [(together[1][name], alone[1][name]) for name in ("logit", "tuned")]
    for ours, theirs in pairs:
        for name, value in _tensor_fields(theirs).items():
            assert torch.equal(getattr(ours, name).nan_to_num(-7.0), value.nan_to_num(-7.0)), name
        for name, scores in theirs.answer_sets.items():
            for field in ("probs", "ranks", "token_probs", "token_ranks"):
                mine = getattr(ours.answer_sets[name], field)
                assert torch.equal(mine.nan_to_num(-7.0), getattr(scores, field).nan_to_num(-7.0))


@pytest.mark.parametrize("arch", ["llama", "gpt2", "gemma2"])
def test_unembedding_blocks_of_rows_equals_one_block_at_a_time(arch, load_tiny, monkeypatch):
    """The norm once over all the rows, a matmul per block: bit-identical to one call per block
    (blocks of 1 and 3 rows too, where a matmul over more rows would round differently); a
    final norm holding a linear map (OPT's projection) runs block by block."""
    model = load_tiny(arch)
    generator = torch.Generator().manual_seed(11)
    d = model._lm_head.weight.shape[1]
    for rows, blocks in ((1, 5), (3, 4), (7, 2), (48, 5)):
        hidden = torch.randn(rows * blocks, d, generator=generator) * 3
        out = torch.empty(rows * blocks, model.vocab_size)
        with torch.inference_mode():
            together = model.unembed_blocks(hidden, blocks, out).clone()
            alone = torch.cat([model.unembed(part) for part in hidden.split(rows)])
        assert torch.equal(together, alone), (rows, blocks)
    projection = torch.nn.Sequential(model._final_norm, torch.nn.Linear(d, d))
    monkeypatch.setattr(type(model), "_final_norm", property(lambda _self: projection))
    hidden = torch.randn(15, d, generator=generator)
    with torch.inference_mode():
        together = model.unembed_blocks(hidden, 5, torch.empty(15, model.vocab_size)).clone()
        alone = torch.cat([model.unembed(part) for part in hidden.split(3)])
    assert torch.equal(together, alone)
