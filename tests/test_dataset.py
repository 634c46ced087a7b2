"""lens_dataset and LensDataset: per-prompt numbers against the independent reference lens, the
bootstrap intervals against a direct loop, the batching's order, the files, the figure, the
widget's Python side, and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from reference import ReferenceLens

from murano_widgets import LensDataset, LogitLens, lens_dataset
from murano_widgets.dataset import stats
from murano_widgets.dataset.runner import batch_order
from murano_widgets.dataset.table import METRIC_FIELDS, fields_for, is_integer

# ---------------------------------------------------------------------------------------------
# Synthetic data sets (for the parts that do not need a model)


def synthetic(
    n=40, layers=(0, 2, 5), named=True, seed=1, missing=True, names=None, foils=False
) -> LensDataset:
    """A data set with random numbers, some prompts without an answer and some missing cells;
    with ``foils``, the logit difference too (a run with foils keeps it)."""
    rng = np.random.default_rng(seed)
    n_layers = len(layers)
    names = names or (["capital", "language"] if named else ["answer"])
    answers, probs, ranks = {}, {}, {}
    for k, name in enumerate(names):
        forms = [[f" a{k}{i}"] if not (missing and i % 7 == 3) else None for i in range(n)]
        p = rng.random((n, n_layers)).astype(np.float32)
        r = rng.integers(0, 4, (n, n_layers))
        has = np.array([f is not None for f in forms])
        p[~has], r[~has] = np.nan, -1
        if missing:
            p[5, 1], r[5, 1] = np.nan, -1  # a non-finite cell
        answers[name], probs[name], ranks[name] = forms, p, r

    def layers_first(values):  # drawn one row per prompt; a data set holds [n_layers, n_prompts]
        return np.ascontiguousarray(values.T)

    return LensDataset(
        prompts=[f"prompt {i} <b>&" for i in range(n)],
        layers=list(layers),
        answers=answers,
        answer_probs={name: layers_first(values) for name, values in probs.items()},
        answer_ranks={name: layers_first(values) for name, values in ranks.items()},
        entropy=layers_first(rng.random((n, n_layers)).astype(np.float32) * 8),
        kl_to_final=layers_first(rng.random((n, n_layers)).astype(np.float32)),
        final_token_probs=layers_first(rng.random((n, n_layers)).astype(np.float32)),
        final_token_ranks=layers_first(rng.integers(-1, 50, (n, n_layers)).astype(np.int32)),
        top1_tokens=layers_first(rng.integers(0, 3, (n, n_layers))),
        logit_diff=layers_first(rng.normal(0, 3, (n, n_layers)).astype(np.float32))
        if foils
        else None,
        token_strings={0: " x", 1: " y", 2: "\n"},
        provenance={"model_name": "synthetic", "lens_kind": "logit", "n_model_layers": 6},
        named_sets=named,
    )


def loop_bootstrap(values: np.ndarray, ci: float, n_boot: int, seed: int):
    """The textbook bootstrap, one resample at a time: mean of the finite values picked."""
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    means = []
    for _ in range(n_boot):
        picks = rng.integers(0, n, size=n, dtype=np.int32)
        sample = values[picks]
        with np.errstate(all="ignore"):
            means.append(np.nanmean(sample, axis=0))
    means = np.array(means)
    tail = (1 - ci) / 2 * 100
    return np.nanmean(values, axis=0), *np.nanpercentile(means, [tail, 100 - tail], axis=0)


# ---------------------------------------------------------------------------------------------
# summary


@pytest.mark.parametrize("block", [1 << 22, 37])
def test_summary_matches_a_direct_bootstrap_loop(block, monkeypatch):
    # A small block forces many blocks of resamples (and one cut in the middle of a resample's
    # worth of prompts never happens: blocks hold whole resamples).
    monkeypatch.setattr(stats, "_BLOCK_ELEMENTS", block)
    data = synthetic()
    table = data.summary(ci=0.9, n_boot=300, seed=7)
    for name in data.answers:
        rows = table[table["answer_set"] == name]
        has = np.array([f is not None for f in data.answers[name]])
        probs = data.answer_probs[name][:, has].T.astype(np.float64)
        ranks = data.answer_ranks[name][:, has].T
        top1 = np.where(ranks >= 0, (ranks == 0).astype(float), np.nan)
        mean, low, high = loop_bootstrap(np.stack([probs, top1], -1), 0.9, 300, 7)
        np.testing.assert_allclose(rows["answer_prob_mean"], mean[:, 0], rtol=1e-12)
        np.testing.assert_allclose(rows["answer_prob_ci_low"], low[:, 0], rtol=1e-12)
        np.testing.assert_allclose(rows["answer_prob_ci_high"], high[:, 0], rtol=1e-12)
        np.testing.assert_allclose(rows["top1_accuracy"], mean[:, 1], rtol=1e-12)
        np.testing.assert_allclose(rows["top1_accuracy_ci_low"], low[:, 1], rtol=1e-12)
        np.testing.assert_allclose(rows["top1_accuracy_ci_high"], high[:, 1], rtol=1e-12)
        for j in range(len(data.layers)):
            valid = ranks[:, j] >= 0
            assert rows["answer_rank_median"].iloc[j] == np.median(ranks[valid, j])
        # Every metric field's mean and interval: the same textbook loop, ranks' -1 as none.
        for field in data.fields:
            values = getattr(data, field)[:, has].T.astype(np.float64)
            if is_integer(field):
                values[values < 0] = np.nan
            mean, low, high = loop_bootstrap(values, 0.9, 300, 7)
            np.testing.assert_allclose(rows[f"{field}_mean"], mean, rtol=1e-9, err_msg=field)
            np.testing.assert_allclose(rows[f"{field}_ci_low"], low, rtol=1e-9, err_msg=field)
            np.testing.assert_allclose(rows[f"{field}_ci_high"], high, rtol=1e-9, err_msg=field)
        assert (rows["n_prompts"] == has.sum()).all()
        assert list(rows["layer"]) == data.layers


def test_summary_interval_agrees_with_the_normal_approximation_on_many_prompts():
    # For the mean of n independent values the bootstrap interval approaches
    # mean ± z·sd/sqrt(n): a closed form the resampling must agree with.
    rng = np.random.default_rng(3)
    n = 4000
    values = rng.beta(2, 5, size=(n, 2))
    out = stats.bootstrap_means(values, ci=0.95, n_boot=2000, seed=0)
    half = 1.959964 * values.std(axis=0, ddof=0) / math.sqrt(n)
    np.testing.assert_allclose(out["high"] - out["mean"], half, rtol=0.1)
    np.testing.assert_allclose(out["mean"] - out["low"], half, rtol=0.1)


def test_a_named_set_without_answers_has_no_values_rather_than_an_error():
    data = synthetic()
    data.answers["language"] = [None] * data.n_prompts
    data.answer_probs["language"][:] = np.nan
    data.answer_ranks["language"][:] = -1
    rows = data.summary(n_boot=50).query("answer_set == 'language'")
    assert (rows["n_prompts"] == 0).all()
    assert rows[["answer_prob_mean", "answer_prob_ci_low", "top1_accuracy"]].isna().all().all()
    assert data.plot(n_boot=50) is not None


def test_summary_is_seeded_and_one_row_per_layer_without_named_sets():
    data = synthetic(named=False)
    a, b = data.summary(seed=5, n_boot=200), data.summary(seed=5, n_boot=200)
    assert a.equals(b)
    assert "answer_set" not in a.columns and len(a) == len(data.layers)
    assert not a.equals(data.summary(seed=6, n_boot=200))
    assert a.attrs["ci"] == 0.95 and a.attrs["provenance"]["model_name"] == "synthetic"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"ci": 1.0}, ValueError, "ci must be between 0 and 1"),
        ({"ci": "95%"}, TypeError, "ci must be a number"),
        ({"n_boot": 0}, ValueError, "n_boot must be an int from 1 to"),
        ({"seed": -1}, ValueError, "seed must be an int at least 0"),
        ({"seed": 1.5}, TypeError, "seed must be an int or None"),
    ],
)
def test_summary_rejects_bad_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        synthetic().summary(**kwargs)


# ---------------------------------------------------------------------------------------------
# to_pandas, plot, files


def test_to_pandas_is_tidy_and_carries_provenance():
    import pandas as pd

    data = synthetic()
    frame = data.to_pandas()
    n_layers, n = data.entropy.shape
    assert len(frame) == 2 * n * n_layers
    assert list(frame.columns) == [
        "prompt_index", "prompt", "answer", "answer_set", "layer", "answer_prob", "answer_rank",
        "answer_is_top1", "entropy", "final_token_probs", "final_token_ranks", "kl_to_final",
        "top1_token", "commitment_layer",
    ]  # fmt: skip
    assert frame.attrs["provenance"] == data.provenance
    for name in data.answers:
        part = frame[frame["answer_set"] == name]
        for p, j in [(0, 0), (3, 2), (5, 1), (n - 1, n_layers - 1)]:
            row = part[(part["prompt_index"] == p) & (part["layer"] == data.layers[j])]
            assert len(row) == 1
            row = row.iloc[0]
            assert row["prompt"] == data.prompts[p]
            rank = data.answer_ranks[name][j, p]
            if rank < 0:
                assert row["answer_rank"] is pd.NA and row["answer_is_top1"] is pd.NA
            else:
                assert row["answer_rank"] == rank and row["answer_is_top1"] == (rank == 0)
            prob = data.answer_probs[name][j, p]
            assert (math.isnan(row["answer_prob"]) and math.isnan(prob)) or row[
                "answer_prob"
            ] == pytest.approx(float(prob))
            assert row["entropy"] == pytest.approx(float(data.entropy[j, p]))
            final_rank = data.final_token_ranks[j, p]
            assert (
                (row["final_token_ranks"] is pd.NA)
                if final_rank < 0
                else (row["final_token_ranks"] == final_rank)
            )
            assert row["top1_token"] == data.token_strings[int(data.top1_tokens[j, p])]
            forms = data.answers[name][p]
            if forms is None:
                assert pd.isna(row["answer"]), "no answer: missing"
            else:
                assert row["answer"] == forms[0]
    single = synthetic(named=False).to_pandas()
    assert "answer_set" not in single.columns and len(single) == n * n_layers


def test_plot_draws_each_sets_mean_and_interval_as_vectors(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    data = synthetic()
    table = data.summary(n_boot=200)
    fig = data.plot(n_boot=200)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label().startswith(("capital", "langu"))]
    assert len(lines) == 2
    for line, name in zip(lines, data.answers, strict=True):
        rows = table[table["answer_set"] == name]
        np.testing.assert_allclose(line.get_xdata(), data.layers)
        np.testing.assert_allclose(line.get_ydata(), rows["answer_prob_mean"])
    assert len(ax.collections) == 2, "one shaded interval per set"
    band = ax.collections[0].get_paths()[0].vertices
    rows = table[table["answer_set"] == "capital"]
    assert band[:, 1].max() == pytest.approx(rows["answer_prob_ci_high"].max())
    assert band[:, 1].min() == pytest.approx(rows["answer_prob_ci_low"].min())
    fig.savefig(tmp_path / "f.svg")
    svg = (tmp_path / "f.svg").read_text()
    assert "<image" not in svg, "nothing rasterized"
    fig.savefig(tmp_path / "f.pdf")
    assert (tmp_path / "f.pdf").stat().st_size > 1000
    top1 = data.plot(metric="top1_accuracy", n_boot=200).axes[0].get_lines()[0]
    np.testing.assert_allclose(
        top1.get_ydata(), table[table["answer_set"] == "capital"]["top1_accuracy"]
    )
    with pytest.raises(ValueError, match="metric must be one of answer_prob, top1_accuracy"):
        data.plot(metric="prob")


def test_plot_draws_the_sets_in_the_widgets_palette_in_order():
    """Issue 21, item 10c: the figure's curves had matplotlib's default colours (tab10, whose
    orange and green merge with protanopia); they take the widgets' series palette, the light
    values of js/src/shared/theme.css, in order, then the same colours dashed."""
    import re
    from pathlib import Path

    import matplotlib
    from matplotlib.colors import to_hex

    from murano_widgets.dataset.plot import SERIES_COLOURS

    matplotlib.use("Agg")
    theme = (
        Path(__file__).resolve().parents[1] / "js" / "src" / "shared" / "theme.css"
    ).read_text()
    light = re.findall(r"--murano-series-\d+: var\(--murano-light, (#[0-9a-fA-F]{6})\)", theme)
    assert list(SERIES_COLOURS) == [c.lower() for c in light] and len(light) == 6
    names = [f"set {k}" for k in range(8)]
    fig = synthetic(names=names, missing=False).plot(n_boot=50)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label().startswith("set ")]
    assert [line.get_label().split(" (")[0] for line in lines] == names
    assert [to_hex(line.get_color()) for line in lines] == [*SERIES_COLOURS, *SERIES_COLOURS[:2]]
    assert [line.get_linestyle() for line in lines] == ["-"] * 6 + ["--"] * 2
    bands = [to_hex(band.get_facecolor()[0], keep_alpha=False) for band in ax.collections]
    assert bands == [*SERIES_COLOURS, *SERIES_COLOURS[:2]], "each band in its line's colour"


def test_save_and_load_round_trip(tmp_path):
    data = synthetic()
    written = data.save(tmp_path / "runs" / "facts")
    assert written == tmp_path / "runs" / "facts.npz"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["facts.json", "facts.npz"]
    loaded = LensDataset.load(tmp_path / "runs" / "facts.json")
    assert loaded.prompts == data.prompts and loaded.layers == data.layers
    assert loaded.answers == data.answers and loaded.named_sets
    assert loaded.token_strings == data.token_strings and loaded.provenance == data.provenance
    for name in data.answers:
        np.testing.assert_array_equal(loaded.answer_probs[name], data.answer_probs[name])
        np.testing.assert_array_equal(loaded.answer_ranks[name], data.answer_ranks[name])
    np.testing.assert_array_equal(loaded.entropy, data.entropy)
    assert loaded.to_pandas().equals(data.to_pandas())
    assert loaded.summary(n_boot=100).equals(data.summary(n_boot=100))


def test_load_refuses_mismatched_or_broken_files(tmp_path):
    a, b = synthetic(seed=1), synthetic(seed=2)
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    (tmp_path / "a.npz").write_bytes((tmp_path / "b.npz").read_bytes())
    with pytest.raises(ValueError, match="sha256 differs"):
        LensDataset.load(tmp_path / "a")
    (tmp_path / "b.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"needs both b\.npz and b\.json"):
        LensDataset.load(tmp_path / "b")
    (tmp_path / "c.json").write_text(json.dumps({"format": "something else"}))
    (tmp_path / "c.npz").write_bytes(b"")
    with pytest.raises(ValueError, match="is not a LensDataset sidecar"):
        LensDataset.load(tmp_path / "c.npz")


def test_save_is_atomic(tmp_path, monkeypatch):
    data = synthetic()
    data.save(tmp_path / "d")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        synthetic(seed=9).save(tmp_path / "d")
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before, "a failed save leaves the old files whole and no temporary files"


def test_batch_order_groups_similar_lengths_and_keeps_ties_in_order():
    order = batch_order([5, 2, 9, 2, 5, 1])
    assert order.tolist() == [5, 1, 3, 0, 4, 2]


# ---------------------------------------------------------------------------------------------
# lens_dataset against the independent reference lens (plain transformers, one prompt at a time)

# Different lengths, given out of length order, so that sorting, batching with padding and
# putting back are all exercised (batch_size=2 makes four batches).
PROMPTS = [
    "The capital of France is",
    "Monday",
    "one two three four five six seven",
    "The Eiffel Tower is in the city of",
    "Alice met Bob. Alice gave",
    "The capital of Italy",
    "Zürich café",
]
ANSWERS = [" Paris", " Tuesday", " eight", " Paris", " Bob a book", " is", " naïve"]


def reference_answer(ref: ReferenceLens, prompt: str, answer: str) -> dict[str, np.ndarray]:
    """Teacher-forced probability of ``answer`` after ``prompt`` at every layer, the rank of its
    first token, and the entropy, KL and top-1 token at the prompt's last position."""
    tok = ref.tokenizer
    prompt_ids = tok(prompt)["input_ids"]
    alone = ref.run(prompt)
    full = ref.run(prompt + answer)
    ids = full["input_ids"].tolist()
    n = len(prompt_ids)
    assert ids[:n] == prompt_ids, "test precondition: the answer's tokens follow the prompt's"
    answer_ids = ids[n:]
    probs = full["probs"]  # [layers, seq, vocab]
    prob = torch.ones(probs.shape[0], dtype=torch.float64)
    for k, token in enumerate(answer_ids):
        prob *= probs[:, n - 1 + k, token].double()
    first = probs[:, n - 1, answer_ids[0]]
    rank = (probs[:, n - 1] > first[:, None]).sum(-1)
    return {
        "prob": prob.numpy(),
        "rank": rank.numpy(),
        # Every metric field the data set keeps, from the plain-hooks reference by its name.
        **{field: alone[field][:, -1].numpy() for field in fields_for(METRIC_FIELDS, False)},
        "top1": alone["predicted_tokens"][:, -1].numpy(),
        "n_answer_tokens": len(answer_ids),
    }


@pytest.fixture
def padded(load_tiny, request):
    """A tiny model padding on the side asked for (restored afterwards: models are shared)."""
    arch, side = request.param
    model = load_tiny(arch)
    before = model.tokenizer.padding_side
    model.tokenizer.padding_side = side
    yield arch, model
    model.tokenizer.padding_side = before


@pytest.mark.parametrize("padded", [("gpt2", "right"), ("llama", "left")], indirect=True)
def test_per_prompt_numbers_equal_the_reference_lens(padded, tiny_model_dirs):
    arch, model = padded
    ref = ReferenceLens(tiny_model_dirs[arch])
    data = lens_dataset(model, PROMPTS, ANSWERS, batch_size=2, progress=False)
    assert data.layers == list(range(model.n_layers))
    assert data.answer_set_names == ["answer"] and not data.named_sets
    multi = 0
    for p, (prompt, answer) in enumerate(zip(PROMPTS, ANSWERS, strict=True)):
        expected = reference_answer(ref, prompt, answer)
        multi += expected["n_answer_tokens"] > 1
        np.testing.assert_allclose(
            data.answer_probs["answer"][:, p],
            expected["prob"],
            rtol=1e-4,
            atol=1e-7,
            err_msg=prompt,
        )
        np.testing.assert_array_equal(data.answer_ranks["answer"][:, p], expected["rank"], prompt)
        np.testing.assert_allclose(data.entropy[:, p], expected["entropy"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            data.kl_to_final[:, p], expected["kl_to_final"], rtol=1e-3, atol=1e-5
        )
        np.testing.assert_allclose(
            data.final_token_probs[:, p], expected["final_token_probs"], rtol=1e-4, atol=1e-6
        )
        np.testing.assert_array_equal(
            data.final_token_ranks[:, p], expected["final_token_ranks"], prompt
        )
        np.testing.assert_array_equal(data.top1_tokens[:, p], expected["top1"])
    assert multi >= 2, "test precondition: some answers take several tokens"
    frame = data.to_pandas()
    row = frame[(frame["prompt_index"] == 3) & (frame["layer"] == data.layers[-1])].iloc[0]
    assert row["prompt"] == PROMPTS[3] and row["answer"] == " Paris"
    assert data.provenance["model_name"] == model.name
    assert len(data.provenance["weights_fingerprint"]) == 64


def test_named_sets_alternatives_and_missing_answers(load_tiny, tiny_model_dirs):
    model = load_tiny("gpt2")
    ref = ReferenceLens(tiny_model_dirs["gpt2"])
    prompts = PROMPTS[:4]
    answers = {
        "place": [" Paris", None, " eight", [" Paris", " Rome"]],
        "next": [" is", " Tuesday", None, " Paris"],
    }
    data = lens_dataset(model, prompts, answers, layers=[0, -1], batch_size=3, progress=False)
    assert data.layers == [0, model.n_layers - 1] and data.named_sets
    assert data.answer_set_names == ["place", "next"]
    rows = [0, model.n_layers - 1]
    for name, values in answers.items():
        for p, forms in enumerate(values):
            if forms is None:
                assert np.isnan(data.answer_probs[name][:, p]).all()
                assert (data.answer_ranks[name][:, p] == -1).all()
                continue
            forms = [forms] if isinstance(forms, str) else forms
            expected = [reference_answer(ref, prompts[p], form) for form in forms]
            prob = sum(e["prob"] for e in expected)[rows]
            rank = np.min([e["rank"] for e in expected], axis=0)[rows]
            np.testing.assert_allclose(data.answer_probs[name][:, p], prob, rtol=1e-4, atol=1e-7)
            np.testing.assert_array_equal(data.answer_ranks[name][:, p], rank)
    frame = data.to_pandas()
    assert set(frame["answer_set"]) == {"place", "next"}
    assert len(frame) == 2 * len(prompts) * 2
    table = data.summary(n_boot=50)
    assert list(table["n_prompts"]) == [3, 3, 3, 3]


def test_a_batch_of_prompts_without_answers_is_run_without_them(load_tiny, tiny_model_dirs):
    # Prompts are batched by length, so the prompts without an answer can make a batch of their
    # own: it is run without answers (a PromptBatch refuses answers that are all None) and its
    # prompts' answer numbers stay missing.
    model = load_tiny("gpt2")
    answers = {"place": [" Paris", None, None, " Paris"], "next": [" is", None, None, None]}
    prompts = [PROMPTS[0], "Monday", "one two", PROMPTS[3]]
    data = lens_dataset(model, prompts, answers, batch_size=2, progress=False)
    lengths = [len(model.tokenizer(p)["input_ids"]) for p in prompts]
    assert sorted(range(4), key=lengths.__getitem__)[:2] == [1, 2], "test precondition"
    for name in answers:
        assert np.isnan(data.answer_probs[name][:, [1, 2]]).all()
        assert (data.answer_ranks[name][:, [1, 2]] == -1).all()
    ref = ReferenceLens(tiny_model_dirs["gpt2"])
    np.testing.assert_allclose(
        data.answer_probs["place"][:, 3],
        reference_answer(ref, prompts[3], " Paris")["prob"],
        rtol=1e-4,
        atol=1e-7,
    )
    assert np.isfinite(data.entropy).all(), "every prompt's own numbers are kept"


def test_batches_group_similar_lengths_and_the_order_is_restored(load_tiny, monkeypatch):
    model = load_tiny("gpt2")
    seen = []
    original = LogitLens.run

    def spy(self, prompts, *args, **kwargs):
        seen.append(list(prompts))
        return original(self, prompts, *args, **kwargs)

    # The data set hands the step each batch's prompts with their token ids (tokenized once).
    monkeypatch.setattr(LogitLens, "run", spy)
    data = lens_dataset(model, PROMPTS, ANSWERS, batch_size=3, progress=False)
    lengths = {p: len(model.tokenizer(p)["input_ids"]) for p in PROMPTS}
    assert [len(batch) for batch in seen] == [3, 3, 1]
    flat = [lengths[p] for batch in seen for p in batch]
    assert flat == sorted(flat), "batches run in order of token length"
    # Each prompt's numbers are those of a run of that prompt alone.
    for p in (0, 2, 6):
        alone = lens_dataset(model, [PROMPTS[p]], [ANSWERS[p]], progress=False)
        np.testing.assert_allclose(
            data.answer_probs["answer"][:, p],
            alone.answer_probs["answer"][:, 0],
            rtol=1e-5,
            atol=1e-8,
        )
    assert data.prompts == PROMPTS


def test_only_per_prompt_numbers_are_kept(load_tiny):
    data = lens_dataset(load_tiny("gpt2"), PROMPTS, ANSWERS, progress=False)
    n, n_layers = len(PROMPTS), data.layers and len(data.layers)
    for name, value in vars(data).items():
        assert not isinstance(value, torch.Tensor), name
        if isinstance(value, np.ndarray):
            assert value.shape == (n_layers, n), name
    for arrays in (data.answer_probs, data.answer_ranks):
        assert all(a.shape == (n_layers, n) for a in arrays.values())


def test_progress_bar_goes_away(load_tiny, capsys):
    lens_dataset(load_tiny("gpt2"), PROMPTS, ANSWERS, batch_size=4, progress=True)
    err = capsys.readouterr().err
    assert "lens_dataset" in err, "a progress bar was shown"
    lens_dataset(load_tiny("gpt2"), PROMPTS, ANSWERS, progress=False)
    assert "lens_dataset" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((PROMPTS, ANSWERS[:-1]), {}, ValueError, r"answers has 6 entries for 7 prompts"),
        ((PROMPTS, " Paris"), {}, TypeError, r"answers must be a list with one answer per"),
        ((PROMPTS, {}), {}, ValueError, r"answers is an empty dict"),
        ((PROMPTS, {"a": ANSWERS[:2]}), {}, ValueError, r"answers\['a'\] has 2 entries"),
        ((PROMPTS, [None] * 7), {}, ValueError, r"answers has no answer for any prompt"),
        ((PROMPTS, {"a": [None] * 7}), {}, ValueError, r"answers has no answer for any prompt"),
        (
            (PROMPTS, [*ANSWERS[:6], 3]),
            {},
            TypeError,
            r"answers\[6\]: expected a non-empty string, a non-empty list",
        ),
        (
            (PROMPTS, [*ANSWERS[:6], [""]]),
            {},
            ValueError,
            r"answers\[6\]\[0\]: expected a non-empty string, got ''",
        ),
        (([], []), {}, ValueError, r"prompts is empty"),
        (
            (["ok", ""], [" a", " b"]),
            {},
            ValueError,
            r"prompts\[1\]: expected a non-empty string, got ''",
        ),
        ((PROMPTS, ANSWERS), {"batch_size": 0}, ValueError, r"batch_size must be an int"),
        ((PROMPTS, ANSWERS), {"progress": "yes"}, TypeError, r"progress must be True or False"),
        ((PROMPTS, ANSWERS), {"layers": "some"}, ValueError, r"layers must be 'all'"),
        ((PROMPTS, ANSWERS), {"layers": [9]}, ValueError, r"layers holds 9, out of range"),
        (
            ([*PROMPTS[:6], "one two " * 200], ANSWERS),
            {},
            ValueError,
            r"prompts\[6\] is \d+ tokens long, more than the model's context of 256",
        ),
    ],
)
def test_bad_input_is_refused_before_any_model_work(
    load_tiny, monkeypatch, args, kwargs, error, match
):
    model = load_tiny("gpt2")

    def ran(*a, **k):
        raise AssertionError("the model ran before the arguments were checked")

    monkeypatch.setattr(LogitLens, "run", ran)
    with pytest.raises(error, match=match):
        lens_dataset(model, *args, **kwargs)


# ---------------------------------------------------------------------------------------------
# The widget's Python side (the browser side: tests/browser/test_dataset_browser.py)


def test_show_opens_a_prompts_heatmap_with_its_answer(load_tiny):
    from murano_widgets import LogitLensWidget

    model = load_tiny("gpt2")
    data = lens_dataset(model, PROMPTS, ANSWERS, progress=False)
    view = data.show()
    chart = view.chart
    meta = chart._meta
    assert meta["can_open"] and meta["prompts"] == PROMPTS and meta["layers"] == data.layers
    summary = data.summary()
    np.testing.assert_allclose(
        meta["sets"][0]["summary"]["answer_prob_mean"], summary["answer_prob_mean"]
    )
    assert np.frombuffer(chart._data["rank_0"], "<i4").tolist() == (
        data.answer_ranks["answer"].T.reshape(-1).tolist()
    )
    chart.layer = data.layers[1]
    chart.open_request = {"prompt": 3, "answer_set": "answer", "n": 1}
    assert isinstance(view.heatmap, LogitLensWidget), chart.status
    assert view.opened == (3, "answer")
    assert view.children == (chart, view.heatmap)
    result = view.heatmap.result
    assert result.prompts == [PROMPTS[3]]
    np.testing.assert_allclose(
        result.answer_probs[:, 0].numpy(), data.answer_probs["answer"][:, 3], rtol=1e-5, atol=1e-8
    )
    assert view.heatmap.layer == data.layers[1], "the heatmap opens at the chosen layer"
    assert chart.status.startswith("Opened prompt 3")


def test_a_loaded_data_set_says_why_it_cannot_open_a_heatmap(load_tiny, tmp_path):
    model = load_tiny("gpt2")
    lens_dataset(model, PROMPTS, ANSWERS, progress=False).save(tmp_path / "d")
    loaded = LensDataset.load(tmp_path / "d")
    view = loaded.show()
    assert not view.chart._meta["can_open"]
    reason = view.chart._meta["cannot_open_reason"]
    assert "without its model" in reason and "show(model=" in reason
    view.chart.open_request = {"prompt": 0, "answer_set": "answer", "n": 1}
    assert view.heatmap is None and view.chart.status.startswith("Cannot open")
    with pytest.raises(RuntimeError, match="without its model"):
        view.open_prompt(0)
    with_model = loaded.show(model=model)
    assert with_model.open_prompt(0).result.prompts == [PROMPTS[0]]
    with pytest.raises(ValueError, match="prompt must be an int from 0 to 6"):
        with_model.open_prompt(7)
    with pytest.raises(ValueError, match="data set holds layers up to 5"):
        synthetic(layers=(0, 5)).show(model=model)


def test_variants_and_a_tuned_lens_reach_the_step_and_the_provenance():
    from murano_widgets import PromptBatch, load_demo_model, load_demo_tuned_lens

    model = load_demo_model()
    lens = load_demo_tuned_lens(model)
    prompts = ["The capital of France is", "Monday, Tuesday,", "The opposite of hot is"]
    answers = ["Paris", " wednesday", " cold"]  # forms the variants count differently
    data = lens_dataset(model, prompts, answers, variants=True, lens=lens, progress=False)
    assert data.provenance["lens_kind"] == "tuned" and data.provenance["variants"] is True
    # The same prompts through the step itself, one at a time (no batching, no sorting).
    for p, prompt in enumerate(prompts):
        step = LogitLens(model, variants=True, lens=lens)
        alone = step({"prompts": PromptBatch([prompt], answers=[answers[p]])})["logit_lens"]
        np.testing.assert_allclose(
            data.answer_probs["answer"][:, p],
            alone.answer_probs[:, 0].numpy(),
            rtol=1e-5,
            atol=1e-7,
        )
    plain = lens_dataset(model, prompts, answers, progress=False)
    assert plain.provenance["lens_kind"] == "logit"
    assert (data.answer_probs["answer"][-1] >= plain.answer_probs["answer"][-1] - 1e-6).all()
    assert data.answer_probs["answer"][-1, 0] > 10 * plain.answer_probs["answer"][-1, 0], (
        "'Paris' without its space is rare; with variants=True ' Paris' is counted too"
    )


def test_every_reduced_heatmap_metric_reaches_a_data_set(tmp_path):
    """A reduced metric of the registry is kept, summarised with an interval, sent to the
    widget, plotted and saved by a data set, with nothing listing it but the registry."""
    from murano_widgets.metrics import DATASET_METRICS, METRICS
    from murano_widgets.widgets.dataset import LensDatasetWidget

    data = synthetic(foils=True)
    reduced = [metric for metric in METRICS.values() if metric.reduced]
    assert data.fields == tuple(metric.field for metric in reduced)
    summary = data.summary(n_boot=50)
    widget = LensDatasetWidget(data, n_boot=50)
    sent = {entry["name"]: entry for entry in widget.chart._meta["metrics"]}
    for metric in reduced:
        entry = DATASET_METRICS[metric.name]
        assert entry.field == f"{metric.field}_mean" and entry.unit == metric.unit
        assert entry.interval == (f"{metric.field}_ci_low", f"{metric.field}_ci_high")
        assert {entry.field, *entry.interval} <= set(summary.columns)
        assert sent[metric.name]["interval"] is not None
        series = widget.chart._meta["sets"][0]["summary"]
        assert len(series[entry.field]) == len(data.layers)
        widget.chart.metric = metric.name  # the chart accepts it
        fig = data.plot(metric=metric.name, n_boot=50)
        low, high = fig.axes[0].get_ylim()
        top = np.nanmax(summary[[entry.field, *entry.interval]].to_numpy(dtype=float))
        assert low <= 0 and high >= top, "the axis holds every interval"
    data.save(tmp_path / "d")
    loaded = LensDataset.load(tmp_path / "d")
    assert loaded.fields == data.fields
    for field in data.fields:
        np.testing.assert_array_equal(getattr(loaded, field), getattr(data, field))


def test_a_file_saved_before_the_fields_were_derived_still_loads(tmp_path):
    # Such a sidecar has no "fields" entry and its npz only entropy and KL.
    data = synthetic()
    arrays = {name: getattr(data, name) for name in ("entropy", "kl_to_final", "top1_tokens")}
    old = LensDataset(
        prompts=data.prompts,
        layers=data.layers,
        answers=data.answers,
        answer_probs=data.answer_probs,
        answer_ranks=data.answer_ranks,
        token_strings=data.token_strings,
        provenance=data.provenance,
        named_sets=data.named_sets,
        **arrays,
    )
    npz = old.save(tmp_path / "old")
    sidecar_path = npz.with_suffix(".json")
    sidecar = json.loads(sidecar_path.read_text())
    del sidecar["fields"]
    sidecar_path.write_text(json.dumps(sidecar))
    loaded = LensDataset.load(npz)
    assert loaded.fields == ("entropy", "kl_to_final")
    np.testing.assert_array_equal(loaded.entropy, data.entropy)
    assert "final_prob" not in {metric.name for metric in loaded.metrics}
    # A sidecar naming a field this version does not know was written by a newer one.
    sidecar["fields"] = ["entropy", "kl_to_final", "surprise"]
    sidecar_path.write_text(json.dumps(sidecar))
    with pytest.raises(ValueError, match=r"holds the fields \['surprise'\].*newer version"):
        LensDataset.load(npz)
