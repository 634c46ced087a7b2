"""``LogitLens(MuranoModel(path, backend="nnsight"), remote=True)`` on a real NDIF server:
every field equals the local run's, on ragged batches, on several architectures.

The local server holds at most three models at once (Ray has 4 CPUs, the controller takes one,
each model actor one); a fourth deployment waits for a CPU forever. So the suite uses three
models: gpt2, llama and granite. Granite divides its logits by ``logits_scaling`` after lm_head:
it checks that the model's logit transform (murano_widgets.backends.architectures.LogitTransform, the same call
that soft-caps Gemma 2) travels with the trace and runs on the server, and that the self-check
of a model whose weights stay on the server runs there (one small job before the first trace).
"""

from __future__ import annotations

import pytest
import torch


def assert_same_result(remote: dict, local: dict) -> None:
    assert remote.keys() == local.keys()
    for name, ours in remote.items():
        theirs = local[name]
        if isinstance(ours, torch.Tensor):
            assert isinstance(theirs, torch.Tensor) and ours.dtype == theirs.dtype, name
            torch.testing.assert_close(
                ours,
                theirs,
                atol=1e-6,
                rtol=1e-5,
                equal_nan=True,
                msg=lambda _, n=name, r=ours, t=theirs: where(n, r, t),
            )
        else:
            assert ours == theirs, name


def where(name: str, remote: torch.Tensor, local: torch.Tensor) -> str:
    """Which entries differ and by how much: a failure on another machine must say enough to
    tell rounding (every entry a little) from a wrong value (a few entries, or NaN against a
    number)."""
    if remote.shape != local.shape:
        return f"{name}: shape {tuple(remote.shape)} remote, {tuple(local.shape)} local"
    if not remote.is_floating_point():
        bad = (remote != local).nonzero()
        return f"{name}: {len(bad)} entries differ, first at {bad[:5].tolist()}"
    nan_mismatch = remote.isnan() != local.isnan()
    diff = (remote.double() - local.double()).abs().nan_to_num(0.0)
    bad = ((diff > 1e-6 + 1e-5 * local.double().abs().nan_to_num(0.0)) | nan_mismatch).nonzero()
    first = [
        f"{tuple(i)}: {remote[tuple(i)].item():.9g} remote, {local[tuple(i)].item():.9g} local"
        for i in bad[:5].tolist()
    ]
    return (
        f"{name}: {len(bad)} of {remote.numel()} entries differ (NaN on one side only: "
        f"{int(nan_mismatch.sum())}); largest difference {diff.max().item():.3g}; "
        + "; ".join(first)
    )


def run_lens(ndif, folder, out, *options):
    summary, stderr = ndif.client_json("lens", str(folder), str(out), *options)
    both = torch.load(out, weights_only=False)
    return both["remote"], both["local"], summary, stderr


@pytest.fixture(scope="module")
def model_dirs(tiny_model_dirs, tmp_path_factory):
    from tiny_models import build_tiny_model

    granite = build_tiny_model("granite", tmp_path_factory.mktemp("remote-granite") / "granite")
    return {**tiny_model_dirs, "granite": granite}


@pytest.mark.parametrize("arch", ["gpt2", "llama", "granite"])
def test_remote_lens_equals_the_local_one(arch, ndif, model_dirs, tmp_path):
    remote, local, summary, stderr = run_lens(ndif, model_dirs[arch], tmp_path / "lens.pt")
    assert_same_result(remote, local)
    assert summary["self_checked"] is True
    assert summary["logit_transform"] == ("logits ÷ 4" if arch == "granite" else "none")
    mask = remote["attention_mask"].bool()
    # Ragged: the short prompt is mostly padding, and padding holds no prediction.
    assert (~mask).sum() > 10 and (remote["predicted_tokens"][:, ~mask] == -1).all()
    assert torch.isfinite(remote["max_probs"][:, mask]).all()
    # nnsight's job status came through the package's progress line.
    for status in ("received", "running", "completed"):
        assert f": {status}" in stderr, stderr[-2000:]


def test_full_probs_a_subset_of_layers_and_right_padding(ndif, tiny_model_dirs, tmp_path):
    remote, local, summary, _ = run_lens(
        ndif,
        tiny_model_dirs["llama"],
        tmp_path / "lens.pt",
        "--full-probs",
        "--layers",
        "0,-1",
        "--top-k",
        "3",
        "--right-padding",
    )
    assert summary["padding_side"] == "right"
    assert_same_result(remote, local)
    assert remote["all_probs"].shape[:2] == (2, 4)
    assert remote["attention_mask"][1, 0] == 1 and remote["attention_mask"][1, -1] == 0


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_answers_and_targets_travel_reduced(arch, ndif, tiny_model_dirs, tmp_path):
    """Teacher-forced answers (extra rows for alternatives) and 30 targets (the histogram
    path of the rank count) run inside the remote trace and equal the local run."""
    remote, local, _, _ = run_lens(
        ndif, tiny_model_dirs[arch], tmp_path / "lens.pt", "--answers", "--targets", "30"
    )
    assert_same_result(remote, local)
    probs = remote["answer_sets.answer.probs"]
    assert probs.shape == (remote["max_probs"].shape[0], 4)
    assert torch.isnan(probs[:, 2]).all() and torch.isfinite(probs[:, [0, 1, 3]]).all()
    assert remote["target_ranks"].shape[-1] == len(remote["targets"]) > 12


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_jacobian_lens_travels_with_the_trace_and_reads_as_locally(
    arch, ndif, tiny_model_dirs, tmp_path
):
    """The lens's matrices go to the server by value with the trace; every field equals the
    local run's, answers included, and the lens changed the early layers' reading."""
    remote, local, _, _ = run_lens(
        ndif, tiny_model_dirs[arch], tmp_path / "lens.pt", "--jacobian", "--answers"
    )
    assert_same_result(remote, local)
    assert remote["lens_kind"] == "jacobian" and remote["lens_title"] == "Jacobian lens"
    plain, _, _, _ = run_lens(ndif, tiny_model_dirs[arch], tmp_path / "plain.pt", "--answers")
    mask = remote["attention_mask"].bool()
    assert not torch.allclose(remote["max_probs"][0][mask], plain["max_probs"][0][mask])
    torch.testing.assert_close(remote["max_probs"][-1], plain["max_probs"][-1], equal_nan=True)


def test_named_lenses_run_side_by_side_in_one_remote_trace_as_locally(
    ndif, tiny_model_dirs, tmp_path
):
    """lens={"logit": None, "jacobian": ...} with kl_between_lenses: every lens's fields and
    the KL between the lenses equal the local run's; the logit lens's entry equals the plain
    step's remote result."""
    remote, local, _, _ = run_lens(
        ndif, tiny_model_dirs["llama"], tmp_path / "lens.pt", "--named", "--answers"
    )
    assert_same_result(remote, local)
    assert remote["logit.lens_kind"] == "logit" and remote["jacobian.lens_kind"] == "jacobian"
    assert ("kl.logit.jacobian") in remote and ("kl.final.jacobian") in remote
    plain, _, _, _ = run_lens(ndif, tiny_model_dirs["llama"], tmp_path / "plain.pt", "--answers")
    mask = remote["logit.attention_mask"].bool()
    torch.testing.assert_close(
        remote["logit.max_probs"][:, mask], plain["max_probs"][:, mask], atol=1e-6, rtol=1e-5
    )


def test_a_server_error_is_one_clear_message(ndif, tiny_model_dirs):
    error, stderr = ndif.client_json("fail", str(tiny_model_dirs["llama"]))
    assert error["type"] == "NDIFError" and error["module"] == "murano_widgets.backends.nnsight"
    message = error["message"]
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(f"NDIF job {error['job_id']} on http://127.0.0.1:8001 failed: ")
    assert "mat1 and mat2 shapes cannot be multiplied" in message, message
    assert "mat1 and mat2" in error["details"]
    assert ": error" in stderr


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_direct_logit_attribution_runs_inside_the_remote_trace_as_locally(
    arch, ndif, tiny_model_dirs, tmp_path
):
    """decompose=True with heads, resid_mid rows, answers and foils: the contributions are
    computed on the server (only they come back) and equal the local run's, and every cell's
    contributions plus its bias are its top-1 logit."""
    remote, local, _, _ = run_lens(
        ndif, tiny_model_dirs[arch], tmp_path / "lens.pt", "--decompose", "--answers"
    )
    assert_same_result(remote, local)
    mask = remote["attention_mask"].bool()
    total = remote["contributions"].nansum(-1) + remote["contribution_bias"]
    torch.testing.assert_close(total[:, mask], remote["top1_logits"][:, mask], atol=1e-4, rtol=1e-4)
    assert remote["component_labels"][1].endswith(".H0")
    assert [str(node) for node in remote["addresses"][:2]] == ["L0.resid_mid", "L0.resid_post"]
    answers = remote["answer_contributions"]
    assert torch.isfinite(answers[:, [0, 3]]).all() and torch.isnan(answers[:, [1, 2]]).all()
