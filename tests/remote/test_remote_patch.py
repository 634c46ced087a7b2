"""``patch_lens(..., remote=True)`` on a real NDIF server: the patch and the pair reduction run
inside the remote trace, and every field equals the local run's."""

from __future__ import annotations

import pytest
import torch
from test_remote_lens import assert_same_result


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_remote_patch_lens_equals_the_local_one(arch, ndif, tiny_model_dirs, tmp_path):
    out = tmp_path / "patch.pt"
    summary, stderr = ndif.client_json("patch", str(tiny_model_dirs[arch]), str(out))
    # Three jobs ran on the server (one per source), each to completion.
    assert stderr.count(": completed") >= 3, stderr[-2000:]
    runs = torch.load(out, weights_only=False)
    for name in ("prompt", "zero", "mean"):
        remote, local = runs[f"{name}.remote"], runs[f"{name}.local"]
        assert_same_result(remote, local)
        # The patch did something, and only inside its causal cone.
        patch = remote["patch"]
        assert remote["kl_a_to_b"].abs().max() > 1e-3, name
        before = remote["kl_a_to_b"][:, :, : patch["position"]]
        assert before.abs().max() <= 1e-6, name
        probs = remote["b.answer_sets.answer.probs"]
        assert torch.isfinite(probs).all() and not torch.equal(
            probs, remote["a.answer_sets.answer.probs"]
        )
    assert set(summary["seconds"]) == {
        f"{n}.{w}" for n in ("prompt", "zero", "mean") for w in ("remote", "local")
    }
