"""A Patchscope on NDIF: its patched passes run on the server, inside the step's trace, and
every field equals the local run's (where the passes run after the trace, on the client).

The local run is held to plain transformers hooks by tests/test_patchscope.py; this one holds
the server's readout to it."""

from __future__ import annotations

import torch
from test_remote_lens import assert_same_result, run_lens


def test_a_patchscope_runs_its_patched_passes_on_the_server_as_locally(
    ndif, tiny_model_dirs, tmp_path
):
    remote, local, _, stderr = run_lens(
        ndif, tiny_model_dirs["gpt2"], tmp_path / "lens.pt", "--patchscope", "--answers"
    )
    assert_same_result(remote, local)
    assert remote["patchscope.lens_kind"] == "patchscope"
    assert "kl.logit.patchscope" in remote and "kl.patchscope.at0" in remote
    mask = remote["logit.attention_mask"].bool()
    # The Patchscope read the early layers differently from the logit lens and from the
    # other target prompt (so the server really ran each), and equally at the last layer.
    for other in ("logit", "at0"):
        assert not torch.allclose(
            remote["patchscope.max_probs"][:-1][:, mask], remote[f"{other}.max_probs"][:-1][:, mask]
        )
        torch.testing.assert_close(
            remote["patchscope.max_probs"][-1], remote[f"{other}.max_probs"][-1], equal_nan=True
        )
    assert ": completed" in stderr
