"""How equal two float computations of one quantity are, when they ran in different shapes.

The same numbers at another row of a batch, in a batch of another size or padding, or on another
CPU's kernels are not bit-for-bit the same: MKL picks its GEMM micro-kernel by instruction set
(AVX-512 on a server, AVX2 on most laptops) and by where a row falls in the block it computes,
and ATen's softmax and reductions are vectorised by CPU capability, so the order of a sum
changes and with it the last bits. A test that compares such computations with ``torch.equal``
passes on the machine it was written on and fails on a user's laptop (issue 31: three patching
tests on an AVX2-only EPYC, deterministic there).

So a comparison across shapes uses :data:`ACROSS_SHAPES`; ``torch.equal`` stays for what is
equal by construction (one tensor read two ways, a file read back, integers from integers), and
says so where that is not obvious.

The tolerance, measured (``patch_lens`` on the tiny GPT-2 and Llama and the demo model, the
clean and patched rows outside the patch's causal cone, which are the same computation at
another row of the batch; native AVX2, ``ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2``
and ``ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2``): the largest difference was
2.7e-7 on a probability, 1.4e-6 on an entropy of about 10 bits (1.4e-7 relative) and 1.1e-6 on a
KL in bits. 5e-6 absolute plus 5e-6 relative is about four times that, and far below the
smallest effect these tests look for (a patched cell's KL above 1e-4 bits, a wrong row or
position moves probabilities by 1e-3 and more).
"""

from __future__ import annotations

import torch

#: ``torch.testing.assert_close`` keywords for float32 results of one quantity computed in
#: different batch shapes, row offsets or CPU kernels (see the module's docstring).
ACROSS_SHAPES = {"atol": 5e-6, "rtol": 5e-6}


def assert_same_numbers(got: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Equal up to rounding across shapes: NaN where the other is NaN, else within
    :data:`ACROSS_SHAPES`."""
    torch.testing.assert_close(got, expected, equal_nan=True, msg=what, **ACROSS_SHAPES)


def assert_same_choice(
    got: torch.Tensor, expected: torch.Tensor, probs: torch.Tensor, what: str
) -> None:
    """The same top-k tokens, except where rounding could swap them.

    Args:
        got: ``[..., k]`` token ids (or ``[...]`` top-1 ids) of one computation.
        expected: The same of the other.
        probs: ``[..., k']`` the expected side's top-k probabilities (``k' > k`` where the
            ids are top-1 only: the runner-up is needed), sorted from the most probable.
        what: The field's name, for the message.

    Two ids may differ only where a neighbour in the ranking is within the tolerance's reach
    (a near-tie: a difference of rounding decides it); everywhere else they are equal.
    """
    if got.shape == expected.shape and torch.equal(got, expected):
        return
    assert got.shape == expected.shape, (
        f"{what}: shapes {tuple(got.shape)} vs {tuple(expected.shape)}"
    )
    k = 1 if got.shape == probs.shape[:-1] else got.shape[-1]
    ids_got = got.reshape(-1, k)
    ids_expected = expected.reshape(-1, k)
    ranked = probs.reshape(-1, probs.shape[-1]).double()
    reach = ACROSS_SHAPES["atol"] + ACROSS_SHAPES["rtol"] * ranked.abs()
    gaps = ranked[:, :-1] - ranked[:, 1:]  # [cells, k' - 1]: between neighbours
    tied = gaps <= 2 * reach[:, :-1]
    for cell, slot in (ids_got != ids_expected).nonzero().tolist():
        near = tied[cell, max(slot - 1, 0) : slot + 1].any()
        assert near, (
            f"{what}: cell {cell}, slot {slot}: token {ids_got[cell, slot].item()} vs "
            f"{ids_expected[cell, slot].item()}, with no near-tie "
            f"(probabilities {ranked[cell, : k + 1].tolist()})"
        )
