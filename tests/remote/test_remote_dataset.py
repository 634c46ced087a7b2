"""``lens_dataset(..., remote=True)`` on a real NDIF server: batches as jobs reduced inside the
trace (only the per-prompt numbers come back), their statuses in the data set's progress bar, a
failed job sent once more, and a run resumed from its folder after Ctrl-C, all equal to the
same data set run locally."""

from __future__ import annotations

import numpy as np


def test_a_remote_data_set_resumes_retries_and_equals_the_local_one(
    ndif, tiny_model_dirs, tmp_path
):
    summary, stderr = ndif.client_json(
        "dataset", str(tiny_model_dirs["llama"]), str(tmp_path), timeout=600
    )
    runs = {name: dict(np.load(tmp_path / f"{name}.npz")) for name in
            ("whole", "one_job", "three_jobs", "resumed", "retried", "local")}  # fmt: skip
    whole, local = runs["whole"], runs["local"]
    assert summary["remote"] is True and summary["jobs"] == summary["n_batches"] > 10
    # Reduced on the server, as locally.
    for key in ("prob", "entropy", "kl", "final_prob"):
        np.testing.assert_allclose(whole[key], local[key], rtol=1e-4, atol=1e-6, err_msg=key)
    np.testing.assert_array_equal(whole["top1"], local["top1"])
    np.testing.assert_array_equal(whole["final_rank"], local["final_rank"])
    np.testing.assert_array_equal(whole["rank"], local["rank"])
    # One job at a time or three in flight: every batch sent once, the same numbers.
    for name in ("one_job", "three_jobs"):
        assert summary[f"jobs_{name}"] == summary["n_batches"], name
        for key, value in runs[name].items():
            np.testing.assert_array_equal(value, whole[key], err_msg=f"{name}: {key}")
    # Interrupted from the stream, resumed: only the missing batches were sent, and the result
    # is the uninterrupted run's, bit for bit (the same batches, on the same server).
    assert summary["interrupted"] and 0 < summary["shards_before"] < summary["n_batches"]
    assert summary["resumed_jobs"] == summary["n_batches"] - summary["shards_before"]
    for key, value in runs["resumed"].items():
        np.testing.assert_array_equal(value, whole[key], err_msg=key)
    # The first job failed on the server and was sent once more.
    assert len(summary["retry_warnings"]) == 1, summary["retry_warnings"]
    assert (
        "failed" in summary["retry_warnings"][0]
        and "sending it once more" in (summary["retry_warnings"][0])
    )
    assert summary["retry_jobs"] == summary["n_batches"] + 1
    for key, value in runs["retried"].items():
        np.testing.assert_array_equal(value, whole[key], err_msg=key)
    # The jobs' statuses showed in the data set's one bar, not as a line per job.
    bar = stderr.split("--- interrupted")[0]
    assert "NDIF job" in bar and "running" in bar and "completed)" in bar, bar[-2000:]
    # Two in flight (the default): the bar counted them by state at least once.
    assert "NDIF jobs: " in bar, bar[-2000:]
    assert "prompts/s" in bar and "time left unknown" in bar


def test_a_remote_data_set_keeps_token_groups_and_the_logit_difference(
    ndif, tiny_model_dirs, tmp_path
):
    summary, _ = ndif.client_json("dataset_groups", str(tiny_model_dirs["llama"]), str(tmp_path))
    assert summary["n_batches"] == 2 and summary["groups"] == ["the", "answer"]
    remote, local = (dict(np.load(tmp_path / f"{name}.npz")) for name in ("remote", "local"))
    assert set(remote) == {"logit_diff", "group_the", "group_answer"}
    for key, value in remote.items():
        assert np.isfinite(value).all(), key
        np.testing.assert_allclose(value, local[key], rtol=1e-4, atol=1e-6, err_msg=key)
