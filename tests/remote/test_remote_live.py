"""The live lens on a remote model (``show_logit_lens(..., remote=True)``) on a real NDIF
server: a prompt added, a token tracked and a cell patched through the widget run as NDIF jobs,
and the widget then holds exactly what the same calls give locally."""

from __future__ import annotations

import torch
from test_remote_lens import assert_same_result


def test_a_live_widget_on_a_remote_model_equals_the_local_one(ndif, tiny_model_dirs, tmp_path):
    out = tmp_path / "live.pt"
    summary, stderr = ndif.client_json("live", str(tiny_model_dirs["llama"]), str(out))
    runs = torch.load(out, weights_only=False)
    remote, local = runs["remote"], runs["local"]
    # show, add_prompt, track (every prompt again) and patch: each at least one job.
    assert stderr.count(": completed") >= 4, stderr[-2000:]
    assert remote["prompts"][-1] == "The capital of Italy is" and len(remote["prompts"]) == 3
    assert remote["targets"] == [" Paris"]
    assert_same_result(remote, local)
    assert set(summary["seconds"]) == {
        f"{w}.{step}" for w in ("remote", "local") for step in ("show", "add_prompt", "patch")
    }
