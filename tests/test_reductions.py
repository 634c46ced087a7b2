"""The reduction kernels against plain torch on random logits (large vocabulary paths too)."""

from __future__ import annotations

import math

import pytest
import torch

from murano_widgets.step.reductions import (
    Buffers,
    _rowdot,
    _rowdot_batched,
    fast_topk,
    reduce_final,
    reduce_logits,
)


@pytest.mark.parametrize("vocab", [50_257, 32_000, 2_048 * 5 + 3])
def test_fast_topk_equals_torch_topk(vocab):
    generator = torch.Generator().manual_seed(vocab)
    z = torch.randn(37, vocab, generator=generator) * 4
    z[3, 100] = z[3].max() + 5  # a clear winner inside a group
    z[5, -1] = z[5].max() + 5  # and one in the tail past the last whole group
    values, ids = fast_topk(z, 7)
    expected = torch.topk(z, 7, dim=-1)
    assert torch.equal(ids, expected.indices) and torch.equal(values, expected.values)


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
