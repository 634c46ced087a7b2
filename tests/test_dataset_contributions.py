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
import torch
from reference import _blocks_and_norm
from test_dataset import ANSWERS, PROMPTS, loop_bootstrap, synthetic
from transformers import AutoModelForCausalLM, AutoTokenizer

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

    # The one diverging scale of the front end (js/src/colour.js), which the diff and the
    # component view both use.
    source = (Path(__file__).resolve().parents[1] / "js" / "src" / "colour.js").read_text()
    stops = re.search(r"DIVERGING_STOPS = Object\.freeze\(\[([^\]]*)\]\)", source)[1]
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
        "entropy", "final_token_probs", "final_token_ranks", "kl_to_final", "top1", "prob_0",
        "rank_0", "prob_1", "rank_1",
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
        ({"foils": FOILS[:-1]}, ValueError, r"foils has 6 entries for 7"),
        ({"decompose": True, "foils": FOILS[:-1]}, ValueError, r"foils has 6 entries for 7"),
        ({"decompose": True, "foils": " London"}, TypeError, r"foils must be a list.*got str ' London'"),
        ({"decompose": True, "foils": {"a": FOILS}}, TypeError, r"foils must be a list"),
        ({"decompose": True, "foils": [*FOILS[:6], 3]}, TypeError, r"foils\[6\]: expected a non-empty string or None, got 3 \(int\)"),
        ({"decompose": True, "foils": [*FOILS[:6], [" a"]]}, TypeError, r"foils\[6\]: expected a non-empty string or None"),
        ({"decompose": True, "foils": [*FOILS[:6], ""]}, ValueError, r"foils\[6\]: expected .*, got '' \(the empty string\)"),
        ({"decompose": True, "foils": [*FOILS[:6], "\ud800"]}, ValueError, r"foils\[6\]: expected valid Unicode text, got one that holds a lone surrogate"),
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


# ---------------------------------------------------------------------------------------------
# An independent direct logit attribution, in plain transformers, one prompt at a time


class ReferenceAttribution:
    """Each component's direct contribution to logit(answer) (− logit(foil)) at a prompt's last
    position, computed without murano_widgets: forward hooks keep what enters block 0 (the
    embedding, positions included), every attention layer's and MLP's output, and the input of
    every attention output projection (to split it into heads); the final norm, linear once its
    scale is fixed at the full residual, and the unembedding's answer − foil row then read each.
    Written for the two layouts of the tests' tiny models, GPT-2 and Llama."""

    def __init__(self, folder):
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.blocks, self.norm = _blocks_and_norm(self.model)
        self.gpt2 = self.model.config.model_type == "gpt2"
        self.n_heads = self.model.config.num_attention_heads

    def first_token(self, prompt: str, text: str) -> int:
        """The first token of ``text`` as it follows ``prompt``."""
        n = len(self.tokenizer(prompt)["input_ids"])
        ids = self.tokenizer(prompt + text)["input_ids"]
        assert ids[:n] == self.tokenizer(prompt)["input_ids"], "test precondition"
        return ids[n]

    @torch.no_grad()
    def run(self, prompt: str, answer: str, foil: str | None = None, heads: bool = False):
        """``(labels, contributions [C], bias, target)``: ``target`` is the model's own
        logit(answer) − logit(foil) at the last position."""
        seen: dict[str, torch.Tensor] = {}

        def output(name):
            def hook(_module, _inputs, out):
                seen[name] = (out[0] if isinstance(out, tuple) else out)[0, -1]

            return hook

        def given(name):
            def hook(_module, args, kwargs):
                seen[name] = (args[0] if args else kwargs["hidden_states"])[0, -1]

            return hook

        hooks = [
            self.blocks[0].register_forward_pre_hook(given("embed"), with_kwargs=True),
            self.norm.register_forward_pre_hook(given("final"), with_kwargs=True),
        ]
        projections = []
        for layer, block in enumerate(self.blocks):
            attention = block.attn if self.gpt2 else block.self_attn
            projection = attention.c_proj if self.gpt2 else attention.o_proj
            projections.append(projection)
            hooks += [
                attention.register_forward_hook(output(f"L{layer}.attn")),
                block.mlp.register_forward_hook(output(f"L{layer}.mlp")),
                projection.register_forward_pre_hook(given(f"L{layer}.z"), with_kwargs=True),
            ]
        ids = self.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        try:
            logits = self.model(**ids).logits[0, -1]
        finally:
            for hook in hooks:
                hook.remove()
        parts = {"embed": seen["embed"]}
        for layer, projection in enumerate(projections):
            if heads:
                z = seen[f"L{layer}.z"]
                size = z.shape[-1] // self.n_heads
                # Conv1D (GPT-2) is x @ W with W [in, out]; nn.Linear is W x with W [out, in].
                weight = projection.weight if self.gpt2 else projection.weight.T
                for h in range(self.n_heads):
                    cut = slice(h * size, (h + 1) * size)
                    parts[f"L{layer}.H{h}"] = z[cut] @ weight[cut]
                bias = projection.bias
                parts[f"L{layer}.attn_bias"] = (
                    torch.zeros(weight.shape[1]) if bias is None else bias
                )
                heads_sum = sum(parts[f"L{layer}.H{h}"] for h in range(self.n_heads))
                torch.testing.assert_close(
                    heads_sum + parts[f"L{layer}.attn_bias"], seen[f"L{layer}.attn"]
                )
            else:
                parts[f"L{layer}.attn"] = seen[f"L{layer}.attn"]
            parts[f"L{layer}.mlp"] = seen[f"L{layer}.mlp"]
        residual = seen["final"]
        if isinstance(self.norm, torch.nn.LayerNorm):
            scale = torch.sqrt(residual.var(unbiased=False) + self.norm.eps)
            centre = lambda v: v - v.mean()  # noqa: E731
            norm_bias = self.norm.bias
        else:  # RMSNorm
            scale = torch.sqrt(residual.pow(2).mean() + self.norm.variance_epsilon)
            centre = lambda v: v  # noqa: E731
            norm_bias = None
        assert getattr(self.model.lm_head, "bias", None) is None, "written for no unembedding bias"
        unembed = self.model.lm_head.weight
        answer_id = self.first_token(prompt, answer)
        direction = unembed[answer_id].clone()
        target = logits[answer_id]
        if foil is not None:
            foil_id = self.first_token(prompt, foil)
            direction -= unembed[foil_id]
            target = target - logits[foil_id]
        read = lambda v: float((centre(v) / scale * self.norm.weight) @ direction)  # noqa: E731
        bias = 0.0 if norm_bias is None else float(norm_bias @ direction)
        return list(parts), np.array([read(v) for v in parts.values()]), bias, float(target)


# Answers and foils over PROMPTS: a prompt without an answer and two without a foil (no
# contributions there), answers that take several tokens (only the first counts).
CONTRIBUTION_ANSWERS = [" Paris", " Tuesday", None, " Paris", " Bob a book", " is", " naïve"]
CONTRIBUTION_FOILS = [" London", " Monday", " nine", None, " Carol", None, " cold"]


@pytest.fixture(scope="module")
def references(tiny_model_dirs):
    cache = {}

    def get(arch):
        if arch not in cache:
            cache[arch] = ReferenceAttribution(tiny_model_dirs[arch])
        return cache[arch]

    return get


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("heads", [False, True])
def test_the_reference_adds_up_to_the_models_own_logits(references, arch, heads):
    ref = references(arch)
    for prompt, answer, foil in zip(PROMPTS, ANSWERS, CONTRIBUTION_FOILS, strict=True):
        labels, values, bias, target = ref.run(prompt, answer, foil, heads=heads)
        assert labels == labels_of(heads, ref.model.config.num_hidden_layers, ref.n_heads)
        assert values.sum() + bias == pytest.approx(target, abs=1e-4), prompt
        assert np.abs(values).max() > 1e-3, "test precondition: contributions not all ~0"


def expected_contributions(ref, answers, foils, heads, prompts=PROMPTS):
    """``(labels, [C, n], [n])`` from the reference, NaN where a prompt has no answer or (with
    foils) no foil."""
    labels, columns, biases = None, [], []
    for p, prompt in enumerate(prompts):
        answer, foil = answers[p], None if foils is None else foils[p]
        if answer is None or (foils is not None and foil is None):
            columns.append(None)
            biases.append(np.nan)
            continue
        labels, values, bias, _ = ref.run(prompt, answer, foil, heads=heads)
        columns.append(values)
        biases.append(bias)
    width = len(labels)
    matrix = np.stack([np.full(width, np.nan) if c is None else c for c in columns], axis=1)
    return labels, matrix, np.array(biases)


# ---------------------------------------------------------------------------------------------
# lens_dataset(decompose=True) against the reference


@pytest.fixture
def padded_model(load_tiny, request):
    """A tiny model padding on the side asked for (restored afterwards: models are shared)."""
    arch, side = request.param
    model = load_tiny(arch)
    before = model.tokenizer.padding_side
    model.tokenizer.padding_side = side
    yield arch, model
    model.tokenizer.padding_side = before


@pytest.mark.parametrize(
    "padded_model", [("gpt2", "right"), ("llama", "left")], indirect=True, ids=["gpt2", "llama"]
)
@pytest.mark.parametrize("heads", [False, True])
@pytest.mark.parametrize("with_foils", [False, True])
def test_each_prompts_contributions_equal_the_reference(
    padded_model, references, heads, with_foils
):
    arch, model = padded_model
    ref = references(arch)
    foils = CONTRIBUTION_FOILS if with_foils else None
    data = lens_dataset(
        model,
        PROMPTS,
        CONTRIBUTION_ANSWERS,
        foils=foils,
        decompose=True,
        heads=heads,
        batch_size=2,  # four batches of prompts sorted by length, padded
        progress=False,
    )
    labels, values, bias = expected_contributions(ref, CONTRIBUTION_ANSWERS, foils, heads)
    assert data.component_labels == labels
    assert data.contributions.shape == (len(labels), len(PROMPTS))
    assert data.contributions.dtype == np.float32 and data.contribution_bias.dtype == np.float32
    np.testing.assert_allclose(data.contributions, values, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(data.contribution_bias, bias, rtol=1e-4, atol=1e-5)
    # The sum property, against the model's own logits (plain transformers, one prompt at a
    # time, no padding): the parts and the bias add up to logit(answer) - logit(foil).
    totals = data.contributions.astype(np.float64).sum(0) + data.contribution_bias
    for p, prompt in enumerate(PROMPTS):
        answer, foil = CONTRIBUTION_ANSWERS[p], None if foils is None else foils[p]
        if answer is None or (foils is not None and foil is None):
            continue
        target = ref.run(prompt, answer, foil)[3]
        assert totals[p] == pytest.approx(target, abs=1e-4), prompt
    missing = [2] if foils is None else [2, 3, 5]
    assert np.isnan(data.contributions[:, missing]).all()
    assert np.isfinite(np.delete(data.contributions, missing, axis=1)).all()
    assert data.foils == foils
    assert data.provenance["decompose"] is True and data.provenance["heads"] is heads
    table = data.contribution_summary(n_boot=50)
    assert int(table["n_prompts"].iloc[0]) == len(PROMPTS) - len(missing)


def test_lenses_side_by_side_keep_one_copy_of_the_contributions(load_tiny, tmp_path):
    from murano_widgets import TunedLens

    model = load_tiny("gpt2")
    tuned = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(1)
    tuned.weight.normal_(0.0, 0.05, generator=generator)
    tuned.bias.normal_(0.0, 0.05, generator=generator)
    options = {"foils": CONTRIBUTION_FOILS, "decompose": True, "heads": True, "progress": False}
    both = lens_dataset(
        model, PROMPTS, CONTRIBUTION_ANSWERS, lens={"logit": None, "tuned": tuned}, **options
    )
    alone = lens_dataset(model, PROMPTS, CONTRIBUTION_ANSWERS, lens=tuned, batch_size=3, **options)
    # Under the last layer every lens reads the model's own output: one set of numbers.
    np.testing.assert_allclose(both.contributions, alone.contributions, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(both.contribution_bias, alone.contribution_bias, atol=1e-6)
    for name in both.lens_names:
        assert both.lens(name).contributions is both.contributions, "shared, not copied"
        assert both.lens(name).component_labels == both.component_labels
    assert "lens" not in both.contributions_to_pandas().columns
    both.save(tmp_path / "both")
    loaded = LensDataset.load(tmp_path / "both")
    np.testing.assert_array_equal(loaded.contributions, both.contributions)
    np.testing.assert_array_equal(loaded.lens("tuned").contribution_bias, both.contribution_bias)
    assert loaded.foils == CONTRIBUTION_FOILS and loaded.lens_names == ["logit", "tuned"]


@pytest.mark.parametrize("heads", [False, True])
def test_each_prompts_contributions_are_the_steps_on_that_prompt_alone(load_tiny, heads):
    from murano_widgets import PromptBatch

    model = load_tiny("llama")
    data = lens_dataset(
        model,
        PROMPTS,
        CONTRIBUTION_ANSWERS,
        foils=CONTRIBUTION_FOILS,
        decompose=True,
        heads=heads,
        batch_size=3,
        progress=False,
    )
    step = LogitLens(model, decompose=True, heads=heads)  # every position, one prompt at a time
    for p in (0, 1, 4, 6):
        batch = PromptBatch(
            [PROMPTS[p]], answers=[CONTRIBUTION_ANSWERS[p]], foils=[CONTRIBUTION_FOILS[p]]
        )
        alone = step({"prompts": batch})["logit_lens"]
        assert alone.component_labels == data.component_labels
        np.testing.assert_allclose(
            data.contributions[:, p], alone.answer_contributions[:, 0].numpy(), atol=1e-5
        )
        assert data.contribution_bias[p] == pytest.approx(
            float(alone.answer_contribution_bias[0]), abs=1e-5
        )


def test_named_sets_attribute_the_first_sets_first_accepted_answer(load_tiny, references):
    model = load_tiny("gpt2")
    ref = references("gpt2")
    prompts = PROMPTS[:4]
    answers = {
        "place": [[" Paris", " Rome"], None, " eight", " Paris"],
        "next": [" is", " Tuesday", " nine", " Bob"],
    }
    data = lens_dataset(model, prompts, answers, decompose=True, batch_size=3, progress=False)
    for p, prompt in enumerate(prompts):
        forms = answers["place"][p]
        if forms is None:
            assert np.isnan(data.contributions[:, p]).all(), "no answer in the first set"
            continue
        first = forms[0] if isinstance(forms, list) else forms
        _, values, bias, target = ref.run(prompt, first)
        assert data.contribution_bias[p] == pytest.approx(bias, abs=1e-5)
        np.testing.assert_allclose(data.contributions[:, p], values, rtol=1e-4, atol=1e-5)
        assert float(data.contributions[:, p].sum() + data.contribution_bias[p]) == (
            pytest.approx(target, abs=1e-4)
        )
    table = data.contributions_to_pandas()
    assert table.attrs["answer_set"] == "place"
    assert table[table["prompt_index"] == 0]["answer"].iloc[0] == " Paris"
