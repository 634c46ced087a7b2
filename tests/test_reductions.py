"""The reduction kernels against plain torch on random logits (large vocabulary paths too)."""

from __future__ import annotations

import math

import pytest
import torch

from murano_widgets.step.reductions import (
    Buffers,
    _rank_from_top,
    _rowdot,
    _rowdot_batched,
    fast_topk,
    reduce_final,
    reduce_logits,
)


# 1,536 (the demo model's) and 32,000 take the whole-groups path, 50,257 and 10,243 the one with
# a partial last group, 1,000 (fewer groups than 4 k) torch's own.
@pytest.mark.parametrize("vocab", [50_257, 32_000, 2_048 * 5 + 3, 1_536, 1_000])
def test_fast_topk_equals_torch_topk(vocab):
    generator = torch.Generator().manual_seed(vocab)
    z = torch.randn(37, vocab, generator=generator) * 4
    z[3, 100] = z[3].max() + 5  # a clear winner inside a group
    z[5, -1] = z[5].max() + 5  # and one in the tail past the last whole group
    values, ids = fast_topk(z, 7)
    expected = torch.topk(z, 7, dim=-1)
    assert torch.equal(ids, expected.indices) and torch.equal(values, expected.values)


@pytest.mark.parametrize("vocab", [50_257, 1_536])
def test_fast_topk_on_ties_and_non_finite_rows(vocab):
    """Equal logits: the values are torch's, and the ids name distinct tokens that hold them
    (torch.topk promises no order among ties, so neither is compared with torch's order)."""
    generator = torch.Generator().manual_seed(2)
    z = (torch.randn(64, vocab, generator=generator) * 2).round()  # many exact ties
    z[0] = float("nan")
    z[1, 7] = float("inf")
    z[2] = float("-inf")
    z[3, ::5] = float("nan")
    values, ids = fast_topk(z, 5)
    expected = torch.topk(z, 5, dim=-1).values
    assert torch.equal(values.nan_to_num(7.0), expected.nan_to_num(7.0))
    assert torch.equal(z.gather(-1, ids).nan_to_num(7.0), values.nan_to_num(7.0))
    assert all(len(set(row)) == 5 for row in ids.tolist())


@pytest.mark.parametrize("outside", [0, 3, 40], ids=["all-in-top", "few-outside", "most-outside"])
def test_rank_from_top_counts_what_a_full_comparison_counts(outside):
    """Ranks read from the top k where the token is in it, counted elsewhere: the same as one
    comparison with the whole row, ties (at the k-th logit too) and NaN rows included."""
    generator = torch.Generator().manual_seed(outside)
    z = (torch.randn(64, 1_536, generator=generator) * 3).round()  # ties everywhere
    _, top_ids = fast_topk(z, 5)
    position = torch.randint(0, 5, (64,), generator=generator)
    chosen = top_ids.gather(-1, position[:, None])  # a token of each row's top 5 ...
    chosen[:outside] = torch.randint(0, 1_536, (outside, 1), generator=generator)  # ... or not
    z[60] = float("nan")
    z[61, 9] = float("nan")
    logit = z.gather(-1, chosen)
    expected = (z > logit).sum(dim=-1)
    got = _rank_from_top(z, logit, fast_topk(z, 5)[0], torch.empty_like(z))
    assert torch.equal(got, expected)


def assert_fields_match_the_definitions(fields, z, final_z, top_k):
    """Each field against its definition, in float64, from layer logits ``z``."""
    p, pf = z.double().softmax(-1), final_z.double().softmax(-1)
    top = p.topk(top_k)
    assert torch.equal(fields["topk_tokens"], top.indices)
    torch.testing.assert_close(fields["topk_probs"].double(), top.values, rtol=1e-4, atol=1e-7)
    torch.testing.assert_close(fields["probs"].double(), p, rtol=1e-4, atol=1e-9)
    entropy = -(p * p.log()).sum(-1) / math.log(2)
    # float32 sums over 50k terms: about 1e-4 relative error against float64.
    torch.testing.assert_close(fields["entropy"].double(), entropy, rtol=1e-3, atol=1e-4)
    kl = (pf * (pf.log() - p.log())).sum(-1) / math.log(2)
    torch.testing.assert_close(fields["kl_to_final"].double(), kl, rtol=1e-3, atol=1e-4)
    token = pf.argmax(-1)
    chosen = p.gather(-1, token[:, None]).squeeze(-1)
    torch.testing.assert_close(fields["final_token_probs"].double(), chosen, rtol=1e-4, atol=1e-9)
    assert torch.equal(fields["final_token_ranks"], (p > chosen[:, None]).sum(-1))


@pytest.mark.parametrize("reuse", [True, False], ids=["buffers", "fresh"])
def test_reductions_match_the_definitions(reuse):
    generator = torch.Generator().manual_seed(1)
    vocab = 50_257
    # Logits far from zero: the shift by the row maximum must keep float32 sums accurate.
    z = torch.randn(9, vocab, generator=generator) * 3 + 40
    final_z = torch.randn(9, vocab, generator=generator) * 3 - 25
    given_z, given_final = z.clone(), final_z.clone()
    buffers = Buffers() if reuse else None
    final, last_fields = reduce_final(given_final, 5, keep_probs=True, buffers=buffers)
    # The last layer against itself: rank 0 and KL 0 are derived, not counted.
    assert_fields_match_the_definitions(last_fields, final_z, final_z, 5)
    assert torch.equal(final.tokens, final_z.double().argmax(-1))
    fields = reduce_logits(given_z, final, 5, keep_probs=True, buffers=buffers)
    assert_fields_match_the_definitions(fields, z, final_z, 5)
    if not reuse:  # the in-trace path writes to nothing it is given
        assert torch.equal(given_z, z) and torch.equal(given_final, final_z)


@pytest.mark.parametrize("rows", [0, 1, 6])
def test_row_dot_products_agree_on_both_paths(rows):
    """The CPU path (a BLAS dot per row) and the accelerator path (one batched matmul)."""
    generator = torch.Generator().manual_seed(rows)
    a, b = (torch.randn(rows, 50_257, generator=generator) for _ in range(2))
    expected = (a.double() * b.double()).sum(-1)
    for ours in (_rowdot(a, b), _rowdot_batched(a, b)):
        assert ours.shape == (rows,)
        torch.testing.assert_close(ours.double(), expected, rtol=1e-5, atol=1e-3)
