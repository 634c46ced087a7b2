"""compare(a, b), compare_lenses(...) and the diff widget's payload, checked against two
independent reference lenses (plain transformers with hooks, one prompt at a time)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from reference import ReferenceLens, _blocks_and_norm
from tiny_models import build_tokenizer
from transformers import AutoModelForCausalLM, GPT2Config

from murano_widgets import (
    LogitLens,
    MuranoModel,
    PromptBatch,
    load_demo_model,
    load_demo_tuned_lens,
    metrics,
)
from murano_widgets.comparison.compare import LensComparison, compare, compare_lenses
from murano_widgets.metrics import DIFF_CHANGES
from murano_widgets.payload.lens import decode_sections as decode
from murano_widgets.widgets.diff import LensDiffWidget, show_lens_diff
from murano_widgets.widgets.lens import WidgetValueError

LN2 = math.log(2.0)
PROMPTS = ["The Eiffel Tower is in the city of", "one two three", "Monday Tuesday"]


def _build_gpt2(folder, n_layer: int, seed: int):
    """A tiny GPT-2 of ``n_layer`` blocks with the shared tokenizer of tests/tiny_models.py."""
    tokenizer = build_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=32,
        n_layer=n_layer,
        n_head=4,
        n_positions=256,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.bos_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.3)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Three tiny GPT-2s sharing one tokenizer: 3 layers (two seeds) and 5 layers."""
    root = tmp_path_factory.mktemp("compare-models")
    folders = {
        "a": _build_gpt2(root / "a", 3, seed=1),
        "b": _build_gpt2(root / "b", 3, seed=2),
        "deep": _build_gpt2(root / "deep", 5, seed=3),
    }
    models = {name: MuranoModel(folder) for name, folder in folders.items()}
    refs = {name: ReferenceLens(folder) for name, folder in folders.items()}
    return models, refs


def _expected(ref_a, ref_b, prompt_a, prompt_b, layer_map, position_map, token=None):
    """Reference delta, KL (torch's kl_div on full distributions) and top-1 differs.

    ``layer_map[la] = lb``; ``position_map[j] = jb`` or -1 (positions among real tokens).
    Returns ``[layers_a, n_a]`` tensors, NaN (or False) where no partner.
    """
    ra, rb = ref_a.run(prompt_a), ref_b.run(prompt_b)
    n_layers, n = ra["probs"].shape[:2]
    tokens = ra["final_tokens"] if token is None else torch.full((n,), token)
    delta = torch.full((n_layers, n), float("nan"))
    kl = torch.full((n_layers, n), float("nan"))
    differs = torch.zeros((n_layers, n), dtype=torch.bool)
    for la, lb in layer_map.items():
        for j, jb in enumerate(position_map):
            if jb < 0:
                continue
            p, q = ra["probs"][la, j].double(), rb["probs"][lb, jb].double()
            t = int(tokens[j])
            delta[la, j] = float(q[t] - p[t])
            kl[la, j] = float(F.kl_div(q.log(), p, reduction="sum") / LN2)
            differs[la, j] = bool(p.argmax() != q.argmax())
    return delta, kl, differs


def _on_real_positions(comparison: LensComparison, field: torch.Tensor, prompt: int):
    """``[rows, n_real]`` of a ``[rows, n_inputs, seq]`` field, padding dropped."""
    return field[:, prompt, comparison.a.positions(prompt)]


def _assert_cells(comparison, prompt, delta, kl, differs, layer_rows=None):
    rows = range(len(comparison.layers)) if layer_rows is None else layer_rows
    for row_index, row in enumerate(rows):
        got_delta = _on_real_positions(comparison, comparison.delta_prob, prompt)[row_index]
        got_kl = _on_real_positions(comparison, comparison.kl_a_to_b, prompt)[row_index]
        got_differs = _on_real_positions(comparison, comparison.top1_differs, prompt)[row_index]
        aligned = _on_real_positions(comparison, comparison.aligned, prompt)[row_index]
        expected_aligned = ~torch.isnan(delta[row])
        assert torch.equal(aligned, expected_aligned), (prompt, row)
        # Cells without a partner are missing, never shifted onto a neighbour.
        assert torch.isnan(got_delta[~aligned]).all() and torch.isnan(got_kl[~aligned]).all()
        torch.testing.assert_close(
            got_delta[aligned].double(), delta[row][aligned].double(), atol=2e-5, rtol=0
        )
        torch.testing.assert_close(
            got_kl[aligned].double(), kl[row][aligned].double(), atol=1e-4, rtol=1e-4
        )
        assert torch.equal(got_differs[aligned], differs[row][aligned]), (prompt, row)


def test_two_models_with_one_tokenizer_match_two_reference_lenses(pair):
    models, refs = pair
    comparison = compare_lenses(models["a"], PROMPTS, model_b=models["b"])
    assert comparison.align == "tokens" and comparison.source == "run together"
    assert comparison.layer_rows == [0, 1, 2]
    assert tuple(comparison.delta_prob.shape) == tuple(comparison.a.max_probs.shape)
    for p, prompt in enumerate(PROMPTS):
        n = comparison.a.lengths[p]
        delta, kl, differs = _expected(
            refs["a"], refs["b"], prompt, prompt, {0: 0, 1: 1, 2: 2}, list(range(n))
        )
        _assert_cells(comparison, p, delta, kl, differs)
    # Both models do differ: the test is not comparing zeros.
    assert float(torch.nan_to_num(comparison.kl_a_to_b).max()) > 0.1
    assert bool(comparison.top1_differs.any())
    # Padding is never aligned.
    assert not comparison.aligned[:, comparison.a.attention_mask == 0].any()


def test_each_model_runs_once(pair, monkeypatch):
    """The pair's reductions read the block outputs the steps' own traces saved."""
    models, _ = pair
    traces = {"a": 0, "b": 0}
    for name in traces:
        # The model runs through a trace, or through its plain forward pass with hooks.
        for door in ("trace", "block_outputs"):
            original = getattr(models[name], door)

            def counted(*args, _name=name, _original=original, **kwargs):
                traces[_name] += 1
                return _original(*args, **kwargs)

            monkeypatch.setattr(models[name], door, counted)
    comparison = compare_lenses(models["a"], PROMPTS, model_b=models["b"])
    assert traces == {"a": 1, "b": 1}
    assert bool(comparison.aligned.any())


def test_compare_on_full_probability_results_equals_running_them_together(pair):
    models, _ = pair
    together = compare_lenses(models["a"], PROMPTS, model_b=models["b"])
    results = [
        LogitLens(models[name], store_full_probs=True)({"prompts": PromptBatch(PROMPTS)})[
            "logit_lens"
        ]
        for name in ("a", "b")
    ]
    apart = compare(*results)
    assert apart.source == "results"
    assert torch.equal(apart.aligned, together.aligned)
    torch.testing.assert_close(
        apart.delta_prob, together.delta_prob, equal_nan=True, atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        apart.kl_a_to_b, together.kl_a_to_b, equal_nan=True, atol=1e-4, rtol=1e-4
    )
    assert torch.equal(apart.top1_differs, together.top1_differs)


def test_compare_from_reduced_results_is_exact_where_known_and_says_where_not(pair):
    models, _ = pair
    together = compare_lenses(models["a"], PROMPTS, model_b=models["b"], top_k=3)
    a = LogitLens(models["a"], top_k=3)({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    b = LogitLens(models["b"], top_k=3)({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    with pytest.warns(RuntimeWarning, match="compare_lenses"):
        apart = compare(a, b)
    assert apart.kl_a_to_b is None
    known = ~torch.isnan(apart.delta_prob)
    # Known cells are exact; the others are the cells where b's probability of a's final token
    # is neither b's final prediction nor in its top-3.
    torch.testing.assert_close(
        apart.delta_prob[known], together.delta_prob[known], atol=1e-6, rtol=0
    )
    unknown = apart.aligned & ~known
    assert unknown.any()
    in_topk_b = (b.topk_tokens == a.final_tokens.unsqueeze(0).unsqueeze(-1)).any(-1)
    assert not (in_topk_b & unknown).any()
    assert torch.equal(apart.top1_differs, together.top1_differs)


def test_models_of_different_depths_align_by_relative_depth(pair):
    models, refs = pair
    comparison = compare_lenses(models["a"], PROMPTS, model_b=models["deep"])
    # round(l * 4 / 2): 0 -> 0, 1 -> 2, 2 -> 4.
    assert comparison.b_layers == [0, 2, 4]
    assert comparison.b.layers == [0, 2, 4]  # b ran only the partner layers
    assert "relative depth" in comparison.alignment_note
    assert "0→0, 1→2, 2→4" in comparison.alignment_note
    for p, prompt in enumerate(PROMPTS):
        n = comparison.a.lengths[p]
        delta, kl, differs = _expected(
            refs["a"], refs["deep"], prompt, prompt, {0: 0, 1: 2, 2: 4}, list(range(n))
        )
        _assert_cells(comparison, p, delta, kl, differs)
    # And the other way round: 5 layers onto 3, round(l * 2 / 4) with halves rounded up.
    back = compare_lenses(models["deep"], PROMPTS[:1], model_b=models["a"], layers=[0, 1, 3, 4])
    assert back.b_layers == [0, 1, 2, 2]
    assert back.layer_rows == [0, 1, 2, 2]


def test_a_partner_layer_b_did_not_compute_is_missing(pair):
    models, _ = pair
    a = LogitLens(models["a"])({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    b = LogitLens(models["b"], layers=[0, 2])({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    with pytest.warns(RuntimeWarning, match="probability is unknown"):
        comparison = compare(a, b)
    assert comparison.layer_rows == [0, -1, 1]
    assert not comparison.aligned[1].any()
    assert torch.isnan(comparison.delta_prob[1]).all()
    assert comparison.aligned[0, comparison.a.attention_mask.bool()].all()
    assert "lacks the partner of layer 1" in comparison.alignment_note


def _shared_prefix(tokenizer, x: str, y: str) -> int:
    ids_x, ids_y = tokenizer(x)["input_ids"], tokenizer(y)["input_ids"]
    shared = 0
    for s, t in zip(ids_x, ids_y, strict=False):
        if s != t:
            break
        shared += 1
    return shared


@pytest.mark.parametrize("align", ["end", "prefix"])
def test_unequal_prompts_align_from_the_end_or_by_shared_prefix_cell_by_cell(pair, align):
    models, refs = pair
    prompts_a = ["The capital of France is Paris", "one two three", "Monday"]
    prompts_b = ["The capital of Italy is Rome and", "two three", "Monday Tuesday Wednesday"]
    comparison = compare_lenses(models["a"], prompts_a, prompts_b=prompts_b, align=align)
    assert comparison.align == align
    tokenizer = refs["a"].tokenizer
    for p, (x, y) in enumerate(zip(prompts_a, prompts_b, strict=True)):
        na, nb = len(tokenizer(x)["input_ids"]), len(tokenizer(y)["input_ids"])
        if align == "end":
            partner = [j + nb - na if 0 <= j + nb - na < nb else -1 for j in range(na)]
        else:
            shared = _shared_prefix(tokenizer, x, y)
            partner = [j if j < shared else -1 for j in range(na)]
        # The position map, in sequence indices of the padded tensors.
        got = comparison.positions[p, comparison.a.positions(p)].tolist()
        expected = [int(comparison.b.positions(p)[jb]) if jb >= 0 else -1 for jb in partner]
        assert got == expected, (p, got, expected)
        delta, kl, differs = _expected(refs["a"], refs["a"], x, y, {0: 0, 1: 1, 2: 2}, partner)
        _assert_cells(comparison, p, delta, kl, differs)
    # Each mode leaves some cells without a partner here, and pairs some.
    assert (
        comparison.aligned.any()
        and (~comparison.aligned & comparison.a.attention_mask.bool()).any()
    )


def test_auto_and_tokens_refuse_prompts_whose_tokens_differ(pair):
    models, _ = pair
    a = LogitLens(models["a"])({"prompts": PromptBatch(["one two three"])})["logit_lens"]
    b = LogitLens(models["a"])({"prompts": PromptBatch(["one two four"])})["logit_lens"]
    for align in ("auto", "tokens"):
        with pytest.raises(ValueError, match=r"prompt 0 differs.*align='end'.*align='prefix'"):
            compare(a, b, align=align)


def _tuned_reference(model_folder, lens, prompt):
    """The tuned lens by hand: hooks on the blocks, h + h A^T + b (translator l + 1), final
    norm, lm_head; the last block untranslated."""
    ref = ReferenceLens(model_folder)
    blocks, norm = _blocks_and_norm(ref.model)
    ids = ref.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
    captured = []
    hooks = [
        block.register_forward_hook(
            lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple) else out)
        )
        for block in blocks
    ]
    with torch.no_grad():
        try:
            ref.model(**ids)
        finally:
            for hook in hooks:
                hook.remove()
        probs = []
        for layer, hidden in enumerate(captured):
            h = hidden[0].double()
            if layer < len(captured) - 1:
                weight, bias = lens.weight[layer + 1].double(), lens.bias[layer + 1].double()
                h = h + h @ weight.T + bias
            logits = ref.model.lm_head(norm(h.float()))
            probs.append(logits.float().softmax(-1))
    return torch.stack(probs)


def test_logit_against_tuned_lens_on_the_demo_model():
    from murano_widgets.demo_model import DEMO_MODEL_PATH

    model = load_demo_model()
    lens = load_demo_tuned_lens(model)
    prompts = ["The capital of France is", "The opposite of hot is cold"]
    comparison = compare_lenses(model, prompts, lens_b=lens)
    assert comparison.a.lens_kind == "logit" and comparison.b.lens_kind == "tuned"
    ref = ReferenceLens(DEMO_MODEL_PATH)
    for p, prompt in enumerate(prompts):
        plain = ref.run(prompt)
        tuned = _tuned_reference(DEMO_MODEL_PATH, lens, prompt)
        tokens = plain["final_tokens"]
        n = len(tokens)
        got_delta = _on_real_positions(comparison, comparison.delta_prob, p)
        got_kl = _on_real_positions(comparison, comparison.kl_a_to_b, p)
        for layer in range(model.n_layers):
            p_a, p_b = plain["probs"][layer].double(), tuned[layer].double()
            expected = (p_b - p_a)[torch.arange(n), tokens]
            torch.testing.assert_close(got_delta[layer].double(), expected, atol=5e-5, rtol=0)
            kl = F.kl_div(p_b.log(), p_a, reduction="none").sum(-1) / LN2
            torch.testing.assert_close(got_kl[layer].double(), kl, atol=2e-4, rtol=1e-3)
        # The last layer is never translated: both lenses agree there exactly.
        assert float(got_kl[-1].abs().max()) < 1e-5
        assert float(got_delta[:-1].abs().max()) > 1e-3


def test_chosen_token_as_an_id_a_text_or_a_tensor(pair):
    models, refs = pair
    a = LogitLens(models["a"], store_full_probs=True)({"prompts": PromptBatch(PROMPTS)})[
        "logit_lens"
    ]
    b = LogitLens(models["b"], store_full_probs=True)({"prompts": PromptBatch(PROMPTS)})[
        "logit_lens"
    ]
    token_id = int(a.input_ids[0, a.positions(0)[1]])
    text = a.token_strings[token_id]
    by_id = compare(a, b, token=token_id)
    by_text = compare(a, b, token=text)
    grid = torch.full(tuple(a.attention_mask.shape), token_id)
    by_tensor = compare(a, b, token=grid)
    together = compare_lenses(models["a"], PROMPTS, model_b=models["b"], token=token_id)
    for other in (by_text, by_tensor, together):
        torch.testing.assert_close(
            other.delta_prob, by_id.delta_prob, equal_nan=True, atol=1e-6, rtol=0
        )
    assert by_id.token_rule == f"token {token_id}" and by_text.token_rule == f"token {text!r}"
    for p, prompt in enumerate(PROMPTS):
        n = a.lengths[p]
        delta, _, _ = _expected(
            refs["a"], refs["b"], prompt, prompt, {0: 0, 1: 1, 2: 2}, list(range(n)), token_id
        )
        got = _on_real_positions(by_id, by_id.delta_prob, p)
        torch.testing.assert_close(got.double(), delta.double(), atol=2e-5, rtol=0)


def test_chunks_hold_only_their_rows_and_give_the_same_numbers(pair, monkeypatch):
    import importlib

    # The module, not the function murano_widgets exports under the same name.
    compare_module = importlib.import_module("murano_widgets.comparison.compare")

    models, _ = pair
    whole = compare_lenses(models["a"], PROMPTS, model_b=models["b"])
    asked: list[tuple[str, int, int]] = []
    real_get = compare_module.Buffers.get

    def recording_get(self, role, rows, vocab, device):
        asked.append((role, rows, vocab))
        return real_get(self, role, rows, vocab, device)

    monkeypatch.setattr(compare_module.Buffers, "get", recording_get)
    vocab = int(models["a"].vocab_size)
    # Room for 3 rows of float32 logits per buffer.
    chunked = compare_lenses(
        models["a"], PROMPTS, model_b=models["b"], max_chunk_bytes=3 * 4 * vocab
    )
    ours = [entry for entry in asked if entry[0] in ("logits_a", "logits_b", "scratch")]
    assert ours and max(rows for _, rows, _ in ours) <= 3
    # Three [rows, vocab] buffers, as in the lens step's own chunks.
    assert {role for role, _, _ in ours} == {"logits_a", "logits_b", "scratch"}
    torch.testing.assert_close(
        chunked.kl_a_to_b, whole.kl_a_to_b, equal_nan=True, atol=1e-6, rtol=1e-6
    )
    torch.testing.assert_close(
        chunked.delta_prob, whole.delta_prob, equal_nan=True, atol=1e-6, rtol=0
    )
    # Nothing of size vocab is kept: every field is per cell.
    for name in (
        "delta_prob",
        "token_prob_a",
        "token_prob_b",
        "kl_a_to_b",
        "top1_differs",
        "aligned",
    ):
        assert tuple(getattr(chunked, name).shape) == tuple(chunked.a.max_probs.shape)
    assert chunked.a.all_probs is None and chunked.b.all_probs is None


def test_bad_input_is_refused_with_the_argument_named(pair):
    models, _ = pair
    a = LogitLens(models["a"])({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    b2 = LogitLens(models["a"])({"prompts": PromptBatch(PROMPTS[:2])})["logit_lens"]
    with pytest.raises(
        ValueError, match=r"align must be one of 'auto', 'tokens', 'end', 'prefix'; got 'start'"
    ):
        compare(a, a, align="start")
    with pytest.raises(ValueError, match="a has 3 prompts and b has 2"):
        compare(a, b2, align="end")
    with pytest.raises(TypeError, match="b must be a LogitLensResult"):
        compare(a, {"logit_lens": a})
    with pytest.raises(ValueError, match=r"token must be an int from 0 to 319"):
        compare(a, a, token=320)
    with pytest.raises(ValueError, match="token 'zzz-not-a-token' is not among"):
        compare(a, a, token="zzz-not-a-token")
    with pytest.raises(ValueError, match=r"token as a tensor must hold integer ids of shape"):
        compare(a, a, token=torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="token must be None"):
        compare(a, a, token=1.5)
    with pytest.raises(ValueError, match="prompts_a has 3 prompts and prompts_b has 1"):
        compare_lenses(models["a"], PROMPTS, prompts_b=["x"])
    with pytest.raises(ValueError, match="align must be one of"):
        compare_lenses(models["a"], PROMPTS, align="middle")
    with pytest.raises((TypeError, ValueError), match="prompts_a"):
        compare_lenses(models["a"], [])
    with pytest.raises(ValueError, match="layers holds 7"):
        compare_lenses(models["a"], PROMPTS, layers=[7])
    demo = load_demo_model()
    with pytest.raises(ValueError, match="vocabulary of 320 tokens and model_b one of 1536"):
        compare_lenses(models["a"], PROMPTS, model_b=demo)
    c = LogitLens(demo)({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    with pytest.raises(ValueError, match="vocabulary"):
        compare(a, c, align="end")


# ---------------------------------------------------------------------------------------------
# The widget's Python side


def test_the_payload_carries_the_comparison_and_both_top_k(pair):
    models, _ = pair
    comparison = compare_lenses(models["a"], PROMPTS, model_b=models["deep"], top_k=4)
    widget = LensDiffWidget(comparison)
    meta = widget._meta
    arrays = decode(meta, widget._sections)
    assert meta["format"] == "lens_diff" and meta["b_layers"] == [0, 2, 4]
    assert meta["depth_a"] == 3 and meta["depth_b"] == 5
    mask = comparison.a.attention_mask.bool()
    aligned = comparison.aligned[:, mask].numpy()
    assert np.array_equal(arrays["aligned"].astype(bool), aligned)
    delta = comparison.delta_prob[:, mask].numpy()
    np.testing.assert_allclose(arrays["delta_prob"][aligned], delta[aligned], atol=1 / 32767)
    kl = comparison.kl_a_to_b[:, mask].numpy()
    np.testing.assert_allclose(
        arrays["kl_a_to_b"][aligned], kl[aligned], atol=meta["sections"]["kl_a_to_b"]["scale"]
    )
    # Both sides' top-k, b's moved onto a's grid, as indices into the token table.
    table = meta["tokens"]
    row, prompt, position = 1, 0, 2
    t = meta["offsets"][prompt] + position
    seq = int(comparison.a.positions(prompt)[position])
    for side, result, cell_row in (
        ("a", comparison.a, row),
        ("b", comparison.b, comparison.layer_rows[row]),
    ):
        ids = result.topk_tokens[cell_row, prompt, seq].tolist()
        got = [table[i] for i in arrays[f"topk_tokens_{side}"][row, t]]
        assert got == [result.token_strings[i] for i in ids]
    # The domain of the diverging scale is symmetric about zero.
    domain = next(m for m in meta["metrics"] if m["name"] == "delta_prob")["domain"]
    assert domain[0] == -domain[1] and domain[1] >= float(np.nanmax(np.abs(delta)))


def test_widget_traits_are_validated_and_selected_is_described(pair):
    models, _ = pair
    a = LogitLens(models["a"])({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    b = LogitLens(models["b"])({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    with pytest.warns(RuntimeWarning):
        widget = show_lens_diff(a, b, metric="top1_differs")
    with pytest.raises(WidgetValueError, match="metric 'kl' cannot be shown: needs both full"):
        widget.metric = "kl"
    with pytest.raises(
        WidgetValueError, match="metric must be one of delta_prob, kl, top1_differs"
    ):
        widget.metric = "prob"
    with pytest.raises(WidgetValueError, match="prompt must be an int from 0 to 2"):
        widget.prompt = 3
    with pytest.raises(WidgetValueError, match=r"selected\['position'\]"):
        widget.selected = {"prompt": 1, "layer_index": 0, "position": 99}
    widget.selected = {"prompt": 1, "layer_index": 2, "position": 1}
    chosen = widget.selected
    assert chosen["a"]["layer"] == 2 and chosen["b"]["layer"] == 2
    assert chosen["top1_differs"] == bool(
        widget.comparison.top1_differs[2, 1, int(a.positions(1)[1])]
    )
    with pytest.raises(TypeError, match="needs two results"):
        show_lens_diff(a)
    with pytest.raises(TypeError, match="takes no b"):
        show_lens_diff(widget.comparison, b)
    with pytest.raises(TypeError, match="comparison must be a LensComparison"):
        LensDiffWidget(a)
    # No cell knows the chosen token's probability: the widget opens on what it can show.
    blind = dataclasses.replace(
        widget.comparison, delta_prob=torch.full_like(widget.comparison.delta_prob, float("nan"))
    )
    assert LensDiffWidget(blind).metric == "top1_differs"
    with pytest.raises(ValueError, match="metric 'delta_prob' cannot be shown: no aligned cell"):
        LensDiffWidget(blind, metric="delta_prob")


def _plain_change(a, b, field, row, row_b, p, seq, seq_b):
    """``b``'s field minus ``a``'s at one pair of cells by plain indexing, or NaN where either
    side has no value (a rank's -1, a NaN)."""
    value_a = float(getattr(a, field)[row, p, seq])
    value_b = float(getattr(b, field)[row_b, p, seq_b])
    if field.endswith("_ranks") and (value_a < 0 or value_b < 0):
        return float("nan")
    return value_b - value_a


def test_each_heatmap_metric_changes_as_b_minus_a_on_aligned_cells(pair):
    """Every reduced heatmap metric (and the top-1 probability) reaches the diff: its change is
    b's field minus a's at the partner cell, from the two results by plain indexing; the
    payload carries it (and both sides) in its unit's codec, and describe_cell reports it."""
    models, _ = pair
    prompts_a = ["The capital of France is Paris", "one two three"]
    prompts_b = ["The capital of Italy is Rome and", "two three"]
    comparison = compare_lenses(
        models["a"], prompts_a, model_b=models["deep"], prompts_b=prompts_b, align="end"
    )
    a, b = comparison.a, comparison.b
    # Without answers and foils there is no logit difference (a metric that needs foils).
    held = {name: metric for name, metric in DIFF_CHANGES.items() if not metric.needs}
    assert (
        set(comparison.metric_deltas)
        == set(held)
        == {
            "delta_max_probs",
            "delta_entropy",
            "delta_final_token_probs",
            "delta_final_token_ranks",
            "delta_kl_to_final",
        }
    )
    layer_b = {0: 0, 1: 2, 2: 4}  # 3 layers against 5, by relative depth
    # Each field's change, and a's and b's values where it is known, by plain indexing.
    expected_sides = {}
    for name, metric in held.items():
        got = comparison.metric_deltas[name]
        expected = torch.full_like(got, float("nan"))
        side_a, side_b = torch.full_like(got, float("nan")), torch.full_like(got, float("nan"))
        for p in range(len(prompts_a)):
            real_a, real_b = a.positions(p).tolist(), b.positions(p).tolist()
            shift = len(real_b) - len(real_a)  # "end": the last tokens pair
            for j, seq in enumerate(real_a):
                if not 0 <= j + shift < len(real_b):
                    continue
                for row in range(len(a.layers)):
                    row_b = b.layers.index(layer_b[a.layers[row]])
                    seq_b = real_b[j + shift]
                    change = _plain_change(a, b, metric.field, row, row_b, p, seq, seq_b)
                    expected[row, p, seq] = change
                    if change == change:
                        side_a[row, p, seq] = float(getattr(a, metric.field)[row, p, seq])
                        side_b[row, p, seq] = float(getattr(b, metric.field)[row_b, p, seq_b])
        expected_sides[name] = (side_a, side_b)
        assert torch.equal(torch.isnan(got), torch.isnan(expected)), name
        torch.testing.assert_close(got, expected, equal_nan=True, atol=1e-6, rtol=0)
        assert (got[~torch.isnan(got)] != 0).any(), f"{name}: the two models differ somewhere"
        if metric.unit == "rank":
            known = got[~torch.isnan(got)]
            assert torch.equal(known, known.round()), "a rank's change is a whole number"
    # Positions without a partner have no change.
    unpaired = a.attention_mask.bool() & (comparison.positions < 0)
    assert (
        unpaired.any() and torch.isnan(comparison.metric_deltas["delta_entropy"][:, unpaired]).all()
    )

    # describe_cell reports each change.
    described = comparison.describe_cell(0, 2, len(a.positions(0)) - 1)
    seq = int(a.positions(0)[-1])
    for name in held:
        assert described[name] == pytest.approx(float(comparison.metric_deltas[name][2, 0, seq]))

    # The payload: each change in its unit's codec, both sides' values, the known mask.
    widget = LensDiffWidget(comparison, metric="delta_entropy")
    meta, arrays = widget._meta, decode(widget._meta, widget._sections)
    mask = a.attention_mask.bool()
    for name, metric in held.items():
        spec = meta["sections"][name]
        entry = next(m for m in meta["metrics"] if m["name"] == name)
        assert entry["available"] and entry["unit"] == metric.unit and entry["scale"] == "diverging"
        assert entry["change"] == {
            "a": f"{metric.field}_a",
            "b": f"{metric.field}_b",
            "known": f"known_{name}",
        }
        want = comparison.metric_deltas[name][:, mask].numpy()
        known = np.isfinite(want)
        assert np.array_equal(arrays[f"known_{name}"].astype(bool), known)
        assert (
            spec["dtype"] == {"rank": "int32", "probability": "int16", "bits": "int16"}[metric.unit]
        )
        # Exact for ranks; within half a step otherwise.
        np.testing.assert_allclose(arrays[name][known], want[known], atol=spec["scale"] / 2 + 1e-9)
        values_a, values_b = (t[:, mask].numpy() for t in expected_sides[name])
        for side, values in (("a", values_a), ("b", values_b)):
            section = f"{metric.field}_{side}"
            step = meta["sections"][section]["scale"]
            np.testing.assert_allclose(arrays[section][known], values[known], atol=step / 2 + 1e-9)
        low, high = entry["domain"]
        assert low == -high and high >= float(np.abs(want[known]).max())
        assert entry["log"] == (metric.unit == "rank")
    assert widget.metric == "delta_entropy"
    assert next(m for m in meta["metrics"] if m["name"] == "delta_entropy")["label"] == (
        "Change in entropy (bits) (b − a)"
    )


def test_a_new_reduced_metric_reaches_the_diff_without_diff_code(pair, monkeypatch):
    """A reduced Metric added to the heatmap's registry reaches the comparison, the payload and
    the widget's metric trait: the registry is all that changes. (A real metric also declares
    its field on LogitLensResult and computes it in the reductions; here the field is set on
    both results, as the step would fill it.)"""
    models, _ = pair
    # The registry's diff entries are the fixed three plus one per change (DIFF_CHANGES).
    fixed = {n: m for n, m in metrics.DIFF_METRICS.items() if n not in metrics.DIFF_CHANGES}

    def diff_registry(heatmap):
        changes = metrics.diff_changes(heatmap)
        return changes, {**fixed, **{n: metrics.change_metric(n, m) for n, m in changes.items()}}

    assert diff_registry(metrics.METRICS) == (metrics.DIFF_CHANGES, metrics.DIFF_METRICS)
    surprise = metrics.Metric(
        "surprise",
        "surprise_bits",
        "Surprise of the final prediction (bits)",
        "bits",
        "magma",
        description="-log2 of the final prediction's probability.",
        final_based=True,
        reduced=True,
    )
    changes, registry = diff_registry({**metrics.METRICS, "surprise": surprise})
    monkeypatch.setattr(metrics, "DIFF_CHANGES", changes)
    monkeypatch.setattr(metrics, "DIFF_METRICS", registry)

    comparison = compare_lenses(models["a"], PROMPTS, model_b=models["b"])
    for result in (comparison.a, comparison.b):
        result.surprise_bits = -torch.log2(result.final_token_probs)
    got = comparison.metric_deltas["delta_surprise_bits"]
    a, b = comparison.a, comparison.b
    expected = b.surprise_bits - a.surprise_bits  # one tokenizer, one prompt list: same grid
    expected = expected.masked_fill(~comparison.aligned, float("nan"))
    torch.testing.assert_close(got, expected, equal_nan=True)
    assert comparison.describe_cell(0, 1, 2)["delta_surprise_bits"] == pytest.approx(
        float(expected[1, 0, int(a.positions(0)[2])])
    )
    widget = LensDiffWidget(comparison, metric="delta_surprise_bits")
    entry = next(m for m in widget._meta["metrics"] if m["name"] == "delta_surprise_bits")
    assert entry["label"] == "Change in surprise of the final prediction (bits) (b − a)"
    assert entry["unit"] == "bits" and entry["available"] and entry["final_based"]
    arrays = decode(widget._meta, widget._sections)
    mask = a.attention_mask.bool()
    want = got[:, mask].numpy()
    known = np.isfinite(want)
    step = widget._meta["sections"]["delta_surprise_bits"]["scale"]
    np.testing.assert_allclose(arrays["delta_surprise_bits"][known], want[known], atol=step)
    assert "surprise_bits_a" in arrays and "surprise_bits_b" in arrays


def test_a_change_neither_result_can_give_is_unavailable_and_says_why(pair):
    models, _ = pair
    comparison = compare_lenses(models["a"], PROMPTS, model_b=models["b"])
    comparison.b.entropy = None  # a result without the field (another library's, say)
    assert "delta_entropy" not in comparison.metric_deltas
    assert "delta_entropy" not in comparison.describe_cell(0, 0, 0)
    with pytest.raises(ValueError, match="b has no entropy"):
        comparison.delta("entropy")
    widget = LensDiffWidget(comparison)
    entries = {m["name"]: m for m in widget._meta["metrics"]}
    assert not entries["delta_entropy"]["available"]
    assert entries["delta_entropy"]["unavailable_reason"] == "b has no entropy"
    assert entries["delta_kl_to_final"]["available"], "the others stay"
    assert "delta_entropy" not in widget._sections and "entropy_a" not in widget._sections
    with pytest.raises(WidgetValueError, match="'delta_entropy' cannot be shown: b has no entropy"):
        widget.metric = "delta_entropy"
    # The menu's order is the registry's (less the logit difference: no foils, so not listed).
    assert list(entries) == [n for n, m in metrics.DIFF_METRICS.items() if not m.needs]
