"""lens_dataset(decompose=True): the direct logit attribution over a data set.

Checked against an independent computation in plain transformers (forward hooks on the
embedding, every attention layer (and head) and every MLP, then the final norm linearised at the
prompt's last position and the unembedding's answer − foil direction), itself checked against
the model's own logits (the parts and the bias add up to logit(answer) − logit(foil)); the
summary's intervals against a direct bootstrap loop; the figure against the summary; the files;
and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_dataset import ANSWERS, PROMPTS, loop_bootstrap, synthetic

from murano_widgets import LensDataset, LogitLens, lens_dataset
from murano_widgets.dataset.stats import component_parts

# ---------------------------------------------------------------------------------------------
# Synthetic data sets with contributions (for the parts that do not need a model)

N_LAYERS, N_HEADS = 3, 4


def labels_of(heads: bool, n_layers: int = N_LAYERS, n_heads: int = N_HEADS) -> list[str]:
    """The step's component labels, written out from the contract."""
    labels = ["embed"]
    for layer in range(n_layers):
        if heads:
            labels += [f"L{layer}.H{h}" for h in range(n_heads)] + [f"L{layer}.attn_bias"]
        else:
            labels.append(f"L{layer}.attn")
        labels.append(f"L{layer}.mlp")
    return labels


def with_contributions(n=40, heads=False, foils=False, named=True, seed=3) -> LensDataset:
    """``synthetic()`` plus random contributions: NaN for prompts without an answer in the
    first set (and, with foils, for those given no foil); with heads, layer 1 has no
    attention-output bias (exactly 0 for every prompt)."""
    base = synthetic(n=n, named=named)
    labels = labels_of(heads)
    rng = np.random.default_rng(seed)
    # Offsets of both signs, so that some means are clearly positive and some negative.
    offsets = rng.normal(scale=2.0, size=(len(labels), 1))
    values = (rng.normal(size=(len(labels), n)) + offsets).astype(np.float32)
    bias = rng.normal(size=n).astype(np.float32)
    if heads:
        values[labels.index("L1.attn_bias")] = 0.0
    first = next(iter(base.answers))
    has = np.array([forms is not None for forms in base.answers[first]])
    foil_list = None
    if foils:
        foil_list = [None if i % 5 == 2 else f" f{i}" for i in range(n)]
        has &= np.array([foil is not None for foil in foil_list])
    values[:, ~has], bias[~has] = np.nan, np.nan
    return LensDataset(
        prompts=base.prompts,
        layers=base.layers,
        answers=base.answers,
        answer_probs=base.answer_probs,
        answer_ranks=base.answer_ranks,
        entropy=base.entropy,
        kl_to_final=base.kl_to_final,
        top1_tokens=base.top1_tokens,
        token_strings=base.token_strings,
        provenance=base.provenance,
        named_sets=base.named_sets,
        component_labels=labels,
        contributions=values,
        contribution_bias=bias,
        foils=foil_list,
    )


@pytest.mark.parametrize(
    ("label", "parts"),
    [
        ("embed", (None, "embed", None)),
        ("L0.attn", (0, "attn", None)),
        ("L11.mlp", (11, "mlp", None)),
        ("L3.H12", (3, "head", 12)),
        ("L3.attn_bias", (3, "attn_bias", None)),
        ("L2.something_new", (2, "something_new", None)),
        ("unembed", (None, "unembed", None)),
    ],
)
def test_component_labels_are_read_as_layer_kind_head(label, parts):
    assert component_parts(label) == parts


@pytest.mark.parametrize("foils", [False, True])
def test_contribution_summary_matches_a_direct_bootstrap_loop(foils):
    data = with_contributions(foils=foils)
    table = data.contribution_summary(ci=0.9, n_boot=300, seed=7)
    has = np.isfinite(data.contribution_bias)
    assert has.sum() < data.n_prompts, "test precondition: some prompts have no value"
    values = np.concatenate([data.contributions.T, data.contribution_bias[:, None]], axis=1)
    mean, low, high = loop_bootstrap(values[has].astype(np.float64), 0.9, 300, 7)
    assert table["component"].tolist() == [*data.component_labels, "bias"]
    np.testing.assert_allclose(table["contribution_mean"], mean, rtol=1e-6)
    np.testing.assert_allclose(table["contribution_ci_low"], low, rtol=1e-6)
    np.testing.assert_allclose(table["contribution_ci_high"], high, rtol=1e-6)
    assert (table["n_prompts"] == has.sum()).all()
    # The means add up to the mean logit (difference) of the counted prompts.
    total = data.contributions[:, has].astype(np.float64).sum(0) + data.contribution_bias[has]
    assert table["contribution_mean"].sum() == pytest.approx(total.mean(), rel=1e-6)
    row = table[table["component"] == "L2.mlp"].iloc[0]
    assert (row["layer"], row["kind"]) == (2, "mlp") and row["head"] is pd_na()
    row = table[table["component"] == "bias"].iloc[0]
    assert row["kind"] == "bias" and row["layer"] is pd_na()
    assert table.attrs["target"] == ("logit(answer) - logit(foil)" if foils else "logit(answer)")
    assert table.attrs["answer_set"] == "capital" and table.attrs["n_boot"] == 300
    assert table.attrs["provenance"] == data.provenance
    again = data.contribution_summary(ci=0.9, n_boot=300, seed=7)
    assert again.equals(table), "seeded"


def pd_na():
    import pandas as pd

    return pd.NA


def test_contributions_to_pandas_is_tidy_and_each_prompt_sums_to_its_logit_difference():
    data = with_contributions(heads=True, foils=True)
    frame = data.contributions_to_pandas()
    n_parts = len(data.component_labels) + 1
    assert len(frame) == data.n_prompts * n_parts
    assert list(frame.columns) == [
        "prompt_index", "prompt", "answer", "foil", "component", "layer", "kind", "head",
        "contribution",
    ]  # fmt: skip
    for p, label in [(0, "embed"), (1, "L2.H3"), (4, "L0.attn_bias"), (39, "L1.mlp")]:
        row = frame[(frame["prompt_index"] == p) & (frame["component"] == label)]
        assert len(row) == 1
        row = row.iloc[0]
        layer, kind, head = component_parts(label)
        assert row["kind"] == kind
        assert (row["layer"] is pd_na()) if layer is None else row["layer"] == layer
        assert (row["head"] is pd_na()) if head is None else row["head"] == head
        assert row["prompt"] == data.prompts[p] and row["foil"] == data.foils[p]
        expected = data.contributions[data.component_labels.index(label), p]
        assert (
            np.isnan(row["contribution"])
            if np.isnan(expected)
            else (row["contribution"] == pytest.approx(float(expected)))
        )
    bias = frame[frame["kind"] == "bias"]
    np.testing.assert_allclose(bias["contribution"], data.contribution_bias, rtol=1e-6)
    sums = frame.groupby("prompt_index")["contribution"].sum(min_count=1)
    has = np.isfinite(data.contribution_bias)
    expected = data.contributions.astype(np.float64).sum(0) + data.contribution_bias
    np.testing.assert_allclose(sums[has], expected[has], rtol=1e-5)
    assert frame[frame["prompt_index"] == 2]["contribution"].isna().all(), "no foil: no values"
    assert frame.attrs["target"] == "logit(answer) - logit(foil)"
    plain = with_contributions(foils=False).contributions_to_pandas()
    assert "foil" not in plain.columns


def test_a_data_set_without_contributions_says_how_to_get_them():
    data = synthetic()
    assert data.component_labels is None and data.contributions is None
    for call in (
        data.contribution_summary,
        data.contributions_to_pandas,
        data.plot_contributions,
    ):
        with pytest.raises(ValueError, match=r"lens_dataset\(\.\.\., decompose=True\)"):
            call()


def test_contributions_must_agree_with_the_prompts():
    data = with_contributions(n=10)
    fields = {
        "prompts": data.prompts,
        "layers": data.layers,
        "answers": data.answers,
        "answer_probs": data.answer_probs,
        "answer_ranks": data.answer_ranks,
        "entropy": data.entropy,
        "kl_to_final": data.kl_to_final,
        "top1_tokens": data.top1_tokens,
        "token_strings": data.token_strings,
        "provenance": data.provenance,
        "named_sets": True,
    }
    with pytest.raises(ValueError, match="together, or none of them"):
        LensDataset(**fields, component_labels=data.component_labels)
    with pytest.raises(ValueError, match=r"expected \(7, 10\) \(components x prompts\)"):
        LensDataset(
            **fields,
            component_labels=data.component_labels,
            contributions=data.contributions[:, :9],
            contribution_bias=data.contribution_bias,
        )
    with pytest.raises(ValueError, match="foils only with contributions"):
        LensDataset(**fields, foils=[" x"] * 10)


# ---------------------------------------------------------------------------------------------
# The figure


def _whiskers(ax):
    """``(low, high)`` of each whisker of the axes' one errorbar, in bar order."""
    (container,) = ax.containers[1:]  # [0] is the bars
    segments = container.lines[2][0].get_segments()
    return np.array([[s[0][1], s[1][1]] for s in segments])


@pytest.mark.parametrize("foils", [False, True])
def test_plot_contributions_draws_the_summary_in_model_order(foils, tmp_path):
    import matplotlib
    from matplotlib.colors import to_hex

    from murano_widgets.dataset.plot import KIND_COLOURS

    matplotlib.use("Agg")
    data = with_contributions(foils=foils)
    table = data.contribution_summary(n_boot=200)
    components = table[table["kind"] != "bias"]
    fig = data.plot_contributions(n_boot=200)
    (ax,) = fig.axes
    bars = ax.containers[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == data.component_labels
    np.testing.assert_allclose(
        [bar.get_height() for bar in bars], components["contribution_mean"], rtol=1e-6
    )
    assert min(b.get_height() for b in bars) < 0 < max(b.get_height() for b in bars), "signed"
    whiskers = _whiskers(ax)
    np.testing.assert_allclose(whiskers[:, 0], components["contribution_ci_low"], rtol=1e-6)
    np.testing.assert_allclose(whiskers[:, 1], components["contribution_ci_high"], rtol=1e-6)
    assert [to_hex(bar.get_facecolor(), keep_alpha=False) for bar in bars] == [
        KIND_COLOURS[kind] for kind in components["kind"]
    ]
    title = ax.get_title()
    assert ("answer − foil" in title) is foils
    assert f"{int(table['n_prompts'].iloc[0])} prompts" in title
    fig.savefig(tmp_path / "f.svg")
    assert "<image" not in (tmp_path / "f.svg").read_text(), "nothing rasterized"


def test_plot_contributions_with_heads_draws_a_layer_by_head_grid_and_the_other_bars():
    import matplotlib
    from matplotlib.colors import to_hex

    from murano_widgets.dataset.plot import DIVERGING

    matplotlib.use("Agg")
    data = with_contributions(heads=True, foils=True)
    table = data.contribution_summary(n_boot=200)
    fig = data.plot_contributions(n_boot=200)
    grid_ax, bar_ax = fig.axes[:2]
    (image,) = grid_ax.images
    heads = table[table["kind"] == "head"]
    expected = np.full((N_LAYERS, N_HEADS), np.nan)
    expected[heads["layer"].astype(int), heads["head"].astype(int)] = heads["contribution_mean"]
    np.testing.assert_allclose(image.get_array().filled(np.nan), expected, rtol=1e-6)
    low, high = image.norm.vmin, image.norm.vmax
    assert low == -high and high == pytest.approx(np.abs(expected).max()), "centred at 0"
    assert to_hex(image.cmap(image.norm(0.0))) == DIVERGING[len(DIVERGING) // 2]
    cells = [t for t in grid_ax.texts]
    assert len(cells) == N_LAYERS * N_HEADS, "a small grid writes each cell's mean"
    assert float(cells[0].get_text()) == pytest.approx(expected[0, 0], rel=0.05)
    # The bars: everything but the heads, in model order, without the bias layer 1 lacks.
    others = table[~table["kind"].isin(["head", "bias"]) & (table["component"] != "L1.attn_bias")]
    assert [t.get_text() for t in bar_ax.get_xticklabels()] == others["component"].tolist()
    np.testing.assert_allclose(
        [bar.get_height() for bar in bar_ax.containers[0]], others["contribution_mean"]
    )
    np.testing.assert_allclose(_whiskers(bar_ax)[:, 1], others["contribution_ci_high"])
    assert "answer − foil" in grid_ax.get_title()
    assert to_hex(grid_ax.images[0].cmap.get_bad(), keep_alpha=False) == "#d0d0d0"
    import matplotlib.pyplot as plt

    _, axes = plt.subplots(2, 1)
    assert data.plot_contributions(n_boot=20, ax=axes) is axes[0].figure
    with pytest.raises(TypeError, match="ax must be two matplotlib Axes"):
        data.plot_contributions(n_boot=20, ax=axes[0])


def test_the_diverging_scale_is_the_widgets():
    from murano_widgets.dataset.plot import DIVERGING

    source = (Path(__file__).resolve().parents[1] / "js" / "src" / "diff" / "colour.js").read_text()
    stops = re.search(r"DIVERGING = Object\.freeze\(\[([^\]]*)\]\)", source)[1]
    assert list(DIVERGING) == re.findall(r'"(#[0-9a-fA-F]{6})"', stops)


# ---------------------------------------------------------------------------------------------
# Files


@pytest.mark.parametrize(("heads", "foils"), [(False, False), (True, True)])
def test_save_and_load_round_trip_with_contributions(tmp_path, heads, foils):
    data = with_contributions(heads=heads, foils=foils)
    data.save(tmp_path / "d")
    sidecar = json.loads((tmp_path / "d.json").read_text())
    assert sidecar["contributions"]["component_labels"] == data.component_labels
    loaded = LensDataset.load(tmp_path / "d")
    assert loaded.component_labels == data.component_labels and loaded.foils == data.foils
    np.testing.assert_array_equal(loaded.contributions, data.contributions)
    np.testing.assert_array_equal(loaded.contribution_bias, data.contribution_bias)
    assert loaded.contributions.dtype == np.float32
    assert loaded.contribution_summary(n_boot=100).equals(data.contribution_summary(n_boot=100))
    assert loaded.contributions_to_pandas().equals(data.contributions_to_pandas())
    assert loaded.summary(n_boot=100).equals(data.summary(n_boot=100))


def test_a_file_without_contributions_is_written_as_before_and_loads(tmp_path):
    synthetic().save(tmp_path / "plain")
    sidecar = json.loads((tmp_path / "plain.json").read_text())
    assert "contributions" not in sidecar
    assert set(np.load(tmp_path / "plain.npz")) == {
        "entropy", "kl_to_final", "top1", "prob_0", "rank_0", "prob_1", "rank_1",
    }  # fmt: skip
    loaded = LensDataset.load(tmp_path / "plain")
    assert loaded.component_labels is None and loaded.contributions is None


def test_load_refuses_contributions_that_disagree_with_their_labels(tmp_path):
    with_contributions(n=10).save(tmp_path / "d")
    path = tmp_path / "d.json"
    sidecar = json.loads(path.read_text())
    sidecar["contributions"]["component_labels"].pop()
    path.write_text(json.dumps(sidecar))
    with pytest.raises(ValueError, match=r"contributions has shape \(10, 7\).*\(10, 6\)"):
        LensDataset.load(tmp_path / "d")
    sidecar["contributions"] = {"component_labels": "embed", "foils": None}
    path.write_text(json.dumps(sidecar))
    with pytest.raises(ValueError, match="'contributions' must be an object with"):
        LensDataset.load(tmp_path / "d")


def test_a_failed_save_keeps_the_old_pair_with_its_contributions(tmp_path, monkeypatch):
    with_contributions(heads=True).save(tmp_path / "d")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        with_contributions(seed=9).save(tmp_path / "d")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    monkeypatch.undo()
    assert LensDataset.load(tmp_path / "d").component_labels == labels_of(True)


# ---------------------------------------------------------------------------------------------
# Bad input (before any model work)

FOILS = [" London", None, " nine", " Rome", " Carol", None, " naive"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"decompose": "yes"}, TypeError, r"decompose must be True or False"),
        ({"decompose": True, "heads": 1}, TypeError, r"heads must be True or False"),
        ({"heads": True}, ValueError, r"heads=True .* needs decompose=True"),
        ({"foils": FOILS}, ValueError, r"foils only change the contributions.*decompose=True"),
        ({"decompose": True, "foils": FOILS[:-1]}, ValueError, r"foils has 6 entries for 7"),
        ({"decompose": True, "foils": " London"}, TypeError, r"foils must be a list.*\[' London'\]"),
        ({"decompose": True, "foils": {"a": FOILS}}, TypeError, r"foils must be a list"),
        ({"decompose": True, "foils": [*FOILS[:6], 3]}, TypeError, r"foils\[6\] must be a string or None"),
        ({"decompose": True, "foils": [*FOILS[:6], [" a"]]}, TypeError, r"foils\[6\] must be"),
        ({"decompose": True, "foils": [*FOILS[:6], ""]}, ValueError, r"foils\[6\] is the empty string"),
        ({"decompose": True, "foils": [*FOILS[:6], "\ud800"]}, ValueError, r"foils\[6\] holds a lone surrogate"),
        ({"decompose": True, "foils": [None] * 7}, ValueError, r"foils has no foil for any prompt"),
    ],
)  # fmt: skip
def test_bad_contribution_arguments_are_refused_before_any_model_work(
    load_tiny, monkeypatch, kwargs, error, match
):
    model = load_tiny("gpt2")

    def ran(*a, **k):
        raise AssertionError("the model ran before the arguments were checked")

    monkeypatch.setattr(LogitLens, "run", ran)
    monkeypatch.setattr(LogitLens, "__init__", ran)
    with pytest.raises(error, match=match):
        lens_dataset(model, PROMPTS, ANSWERS, progress=False, **kwargs)
