"""``lens_agreement``: is it the model or the lens? How far lenses side by side agree, layer by
layer, with intervals over prompts.

Every lens reads the same block outputs (one trace a batch: ``LogitLens(model, lens={...},
kl_between_lenses=True)``). Per layer and prompt it keeps, for every two lenses and for each lens
and the model's own output, how often their top-1 tokens agree and the KL between their
distributions (both ways, bits, :func:`~murano_widgets.step.reductions.kl_bits`), averaged over
the prompt's positions; :class:`LensAgreement` turns those per-prompt numbers into a table and a
figure with percentile-bootstrap intervals over prompts
(:func:`~murano_widgets.dataset.stats.bootstrap_means`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from murano_widgets._checks import check_bool, check_int, check_model
from murano_widgets._progress import progress_bar
from murano_widgets.dataset.io import model_provenance
from murano_widgets.dataset.plot import SERIES_COLOURS, model_short_name
from murano_widgets.dataset.runner import batch_order, token_lengths
from murano_widgets.dataset.stats import bootstrap_means, check_summary_args
from murano_widgets.lenses import FINAL, lens_label, named_lenses
from murano_widgets.step.logit_lens import LogitLens
from murano_widgets.types import PromptBatch, validate_prompts

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from murano_widgets.backends.base import ModelBackend

__all__ = ["LensAgreement", "lens_agreement"]

#: The per-prompt quantities of each pair, and what the table calls them.
QUANTITIES = ("top1_agreement", "kl_a_to_b", "kl_b_to_a")


def lens_agreement(
    model: ModelBackend,
    prompts: Sequence[str],
    lenses: Any,
    *,
    layers: Sequence[int] | str = "all",
    positions: str = "all",
    batch_size: int = 32,
    progress: bool = True,
) -> LensAgreement:
    """How far lenses agree with each other and with the model's own output, layer by layer.

    This answers "is it the model or the lens?". A lens shows what a layer "predicts"; lenses
    that read the same block outputs differently (the logit lens, a tuned lens, a Jacobian lens)
    may tell different stories about early layers. Where they agree, the story is the model's;
    where they part, it is (at least partly) the lens's. The last layer is read alike by every
    lens (it is the model's output), so there the agreement is 1 and the KL 0 by construction.

    Every lens reads the same block outputs: one trace per batch for all of them.

    Args:
        model: The model, e.g. ``load_demo_model()``.
        prompts: The prompts (any number).
        lenses: Named lenses, ``{"logit": None, "tuned": tuned, "jacobian": jlens}`` (at least
            one; names as for ``LogitLens(lens={...})``).
        layers: ``"all"`` or a list of layer indices.
        positions: ``"all"``: every real position of each prompt, averaged within the prompt
            (each prompt weighs the same); ``"last"``: each prompt's last position only (where
            the next token, the answer of a fact, is predicted; cheaper).
        batch_size: Prompts per trace (sorted by length, so batches pad little).
        progress: Show a progress bar.

    Returns:
        A :class:`LensAgreement`: ``.to_pandas()``, ``.table()``, ``.plot()``.

    Raises:
        TypeError, ValueError: For bad arguments, naming them (before any model work).
    """
    check_model(model)
    prompts = validate_prompts(prompts)
    named = named_lenses(lenses, model, "lenses")
    if named is None:
        raise TypeError(
            "lenses must be a dict of named lenses, e.g. {'logit': None, 'tuned': tuned}; got "
            f"{type(lenses).__name__}"
        )
    if not isinstance(positions, str) or positions not in ("all", "last"):
        raise ValueError(f"positions must be 'all' or 'last', got {positions!r}")
    batch_size = check_int("batch_size", batch_size, 1, None, None)
    progress = check_bool("progress", progress)
    step = LogitLens(
        model, layers, lens=named, top_k=1, positions=positions, kl_between_lenses=True
    )
    names = list(named)
    pairs = agreement_pairs(names)
    n, n_layers = len(prompts), len(step.layers)
    # [n_layers, n_prompts] per pair and quantity, the result's axis order.
    values = {(pair, what): np.full((n_layers, n), np.nan) for pair in pairs for what in QUANTITIES}
    order = batch_order(token_lengths(model, prompts))

    bar = progress_bar(total=n, desc="lens_agreement", unit="prompt", enabled=progress)
    try:
        for start in range(0, n, batch_size):
            rows = order[start : start + batch_size]
            results = step({"prompts": PromptBatch([prompts[i] for i in rows])})["logit_lens"]
            for (pair, what), per_prompt in prompt_means(results, pairs).items():
                values[(pair, what)][:, rows] = per_prompt
            del results
            bar.update(len(rows))
    finally:
        bar.close()
    provenance = model_provenance(model, step, named)
    provenance.update(n_prompts=n, batch_size=batch_size, positions=positions)
    return LensAgreement(
        prompts=prompts,
        layers=list(step.layers),
        lens_names=names,
        pairs=pairs,
        values=values,
        positions=positions,
        provenance=provenance,
    )


def agreement_pairs(names: list[str]) -> list[tuple[str, str]]:
    """Every two lenses in the order given (``a`` before ``b``), then each lens and the model's
    own output (``b`` = :data:`~murano_widgets.lenses.FINAL`)."""
    lens_pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return lens_pairs + [(name, FINAL) for name in names]


def prompt_means(
    results: Any, pairs: list[tuple[str, str]]
) -> dict[tuple[tuple[str, str], str], np.ndarray]:
    """Per pair, each quantity per layer and prompt (``[n_layers, n_inputs]``): the mean over
    the prompt's reduced cells of top-1 agreement (1 where the two top-1 tokens are the same),
    KL(a ‖ b) and KL(b ‖ a), from one batch's :class:`~murano_widgets.LensResults` (with
    ``kl_between``). NaN where the prompt has no cell with a value.
    """
    first = results.first
    final = first.final_tokens.unsqueeze(0)  # [1, n_inputs, seq]

    def top1(name: str) -> torch.Tensor:
        return final if name == FINAL else results[name].predicted_tokens

    out: dict[tuple[tuple[str, str], str], np.ndarray] = {}
    for pair in pairs:
        a, b = top1(pair[0]), top1(pair[1])
        kl_ab = results.kl_between[pair]
        kl_ba = results.kl_between[(pair[1], pair[0])]
        # A cell counts where both top-1 tokens and both KLs have a value (padding and cells
        # the step did not reduce have none).
        valid = (a >= 0) & (b >= 0) & torch.isfinite(kl_ab) & torch.isfinite(kl_ba)
        for what, cells in (
            ("top1_agreement", (a == b).double()),
            ("kl_a_to_b", kl_ab.double()),
            ("kl_b_to_a", kl_ba.double()),
        ):
            total = torch.where(valid, cells, 0.0).sum(dim=-1)
            count = valid.sum(dim=-1)
            out[(pair, what)] = torch.where(
                count > 0, total / count.clamp_min(1), torch.nan
            ).numpy()
    return out


class LensAgreement:
    """How far lenses agree with each other and with the model's own output, per layer: made
    by :func:`lens_agreement`.

    **How to read it.** Each row is a layer and a pair ``(a, b)``: two lenses, or a lens and
    ``"final"`` (the model's own output, the last layer's distribution).

    - ``top1_agreement``: the share of prompts' positions where ``a`` and ``b`` name the same
      top-1 token (a prompt's positions are averaged first, so each prompt weighs the same).
      Two lenses near 1 at a layer tell the same story there: what they show is the model's.
      Near 0 they part: the layer's "prediction" depends on the lens, and neither reading should
      be taken for the model's. Against ``"final"``, it says how early each lens reads the
      model's eventual prediction (a tuned lens is trained towards the final distribution, so
      part of its lead there is by construction).
    - ``kl_a_to_b`` and ``kl_b_to_a``: KL(a ‖ b) and KL(b ‖ a) in bits, the package's one KL.
      0 is the same distribution; each extra bit means the second distribution gives the first
      one's likely tokens half the probability again. KL(final ‖ lens) is the lens's
      ``kl_to_final``.
    - At the last layer every lens reads the block output as it is: agreement 1, KL 0.
    - ``*_ci_low`` / ``*_ci_high``: a percentile-bootstrap interval over prompts (every pair,
      layer and quantity from the same resamples, so their intervals can be compared).

    Attributes:
        prompts: The prompts.
        layers: The model layer of each row.
        lens_names: The lenses, in the order given.
        pairs: The pairs, ``(a, b)``: every two lenses, then each lens and ``"final"``.
        values: ``{(pair, quantity): [n_layers, n_prompts]}`` the per-prompt means behind the
            table (quantity: ``"top1_agreement"``, ``"kl_a_to_b"``, ``"kl_b_to_a"``); NaN where
            a prompt has no value.
        positions: ``"all"`` or ``"last"``: which positions were averaged.
        provenance: Where the numbers came from (model, weights, lenses, packages, date).
    """

    def __init__(
        self,
        *,
        prompts: list[str],
        layers: list[int],
        lens_names: list[str],
        pairs: list[tuple[str, str]],
        values: dict[tuple[tuple[str, str], str], np.ndarray],
        positions: str,
        provenance: dict[str, Any],
    ) -> None:
        self.prompts = prompts
        self.layers = layers
        self.lens_names = lens_names
        self.pairs = pairs
        self.values = values
        self.positions = positions
        self.provenance = provenance

    @property
    def n_prompts(self) -> int:
        return len(self.prompts)

    def __repr__(self) -> str:
        return (
            f"LensAgreement({self.lens_names}, {self.n_prompts} prompts, layers "
            f"{self.layers[0]}..{self.layers[-1]}, positions={self.positions!r})"
        )

    def to_pandas(self, ci: float = 0.95, n_boot: int = 1000, seed: int | None = 0) -> pd.DataFrame:
        """One row per pair and layer: a tidy frame (see the class's "how to read it").

        Columns: ``a``, ``b`` (a lens's name, or ``"final"``), ``layer``, ``n_prompts`` (those
        with a value), and for each of ``top1_agreement``, ``kl_a_to_b``, ``kl_b_to_a`` its
        mean over prompts and ``_ci_low`` / ``_ci_high``. ``attrs`` holds the provenance and the
        interval settings.

        Args:
            ci, n_boot, seed: The bootstrap intervals, as for
                :meth:`~murano_widgets.LensDataset.summary`.
        """
        import pandas as pd

        ci, n_boot, seed = check_summary_args(ci, n_boot, seed)
        # [n_prompts, n_pairs, n_layers, 3]: prompts first, as the bootstrap resamples them.
        stacked = np.stack(
            [
                np.stack([self.values[(pair, what)].T for what in QUANTITIES], axis=-1)
                for pair in self.pairs
            ],
            axis=1,
        )
        stats = bootstrap_means(stacked, ci=ci, n_boot=n_boot, seed=seed)
        counted = np.isfinite(stacked[..., 0]).sum(axis=0)  # [n_pairs, n_layers]
        rows = []
        for k, (a, b) in enumerate(self.pairs):
            for j, layer in enumerate(self.layers):
                row: dict[str, Any] = {
                    "a": a,
                    "b": b,
                    "layer": layer,
                    "n_prompts": int(counted[k, j]),
                }
                for q, what in enumerate(QUANTITIES):
                    row[what] = stats["mean"][k, j, q]
                    row[f"{what}_ci_low"] = stats["low"][k, j, q]
                    row[f"{what}_ci_high"] = stats["high"][k, j, q]
                rows.append(row)
        table = pd.DataFrame(rows)
        table.attrs["provenance"] = json.loads(json.dumps(self.provenance))
        table.attrs.update(ci=ci, n_boot=n_boot, seed=seed, positions=self.positions)
        return table

    def table(self, ci: float = 0.95, n_boot: int = 1000, seed: int | None = 0) -> pd.DataFrame:
        """The same numbers to read: one row per layer, and per pair a column of top-1
        agreement and one of KL each way, each cell ``"82% [78%, 86%]"`` or
        ``"0.41 [0.35, 0.48] bits"``.
        """
        import pandas as pd

        frame = self.to_pandas(ci=ci, n_boot=n_boot, seed=seed)
        columns: dict[str, list[str]] = {}
        for a, b in self.pairs:
            rows = frame[(frame["a"] == a) & (frame["b"] == b)]
            triples = {
                what: zip(rows[what], rows[f"{what}_ci_low"], rows[f"{what}_ci_high"], strict=True)
                for what in QUANTITIES
            }
            columns[f"top-1 agree {a} · {b}"] = [_percent(*t) for t in triples["top1_agreement"]]
            columns[f"KL({a} ‖ {b})"] = [_bits(*t) for t in triples["kl_a_to_b"]]
            columns[f"KL({b} ‖ {a})"] = [_bits(*t) for t in triples["kl_b_to_a"]]
        table = pd.DataFrame(columns, index=pd.Index(self.layers, name="layer"))
        table.attrs.update(frame.attrs)
        return table

    def plot(
        self,
        *,
        ci: float = 0.95,
        n_boot: int = 1000,
        seed: int | None = 0,
        title: str | None = None,
    ) -> Figure:
        """The figure: two panels over the layers, each pair a line with its interval shaded.

        Left, top-1 agreement (0 to 1). Right, KL in bits: KL(a ‖ b) for two lenses and
        KL(final ‖ lens) (the lens's ``kl_to_final``) against the model's output. Pairs of two
        lenses are solid, a lens against the final output dashed; each pair has a colour of the
        series palette. All vector paths (``savefig("f.pdf")`` scales).
        """
        import matplotlib.pyplot as plt

        frame = self.to_pandas(ci=ci, n_boot=n_boot, seed=seed)
        fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2), layout="constrained")
        titles = {e["name"]: e["title"] for e in self.provenance.get("lenses", [])}

        def label(name: str) -> str:
            return "final output" if name == FINAL else lens_label(name, titles.get(name, name))

        for k, (a, b) in enumerate(self.pairs):
            rows = frame[(frame["a"] == a) & (frame["b"] == b)]
            colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
            style = "--" if b == FINAL else "-"
            kl = "kl_b_to_a" if b == FINAL else "kl_a_to_b"
            kl_label = (
                f"KL({label(b)} ‖ {label(a)})" if b == FINAL else f"KL({label(a)} ‖ {label(b)})"
            )
            for ax, what, text in (
                (left, "top1_agreement", f"{label(a)} · {label(b)}"),
                (right, kl, kl_label),
            ):
                ax.plot(
                    rows["layer"], rows[what], color=colour, linestyle=style, marker="o",
                    markersize=3, label=text,
                )  # fmt: skip
                ax.fill_between(
                    rows["layer"], rows[f"{what}_ci_low"], rows[f"{what}_ci_high"],
                    color=colour, alpha=0.18, linewidth=0,
                )  # fmt: skip
        left.set_ylim(-0.02, 1.02)
        left.set_ylabel(
            "top-1 agreement (share of positions, mean over prompts)"
            if self.positions == "all"
            else "top-1 agreement (share of prompts)"
        )
        right.set_ylabel("KL (bits)")
        right.set_ylim(bottom=0)
        for ax in (left, right):
            ax.set_xlabel("layer")
            ax.set_xticks(self.layers if len(self.layers) <= 16 else ax.get_xticks())
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small", title=f"{round(ci * 100)}% bootstrap interval")
        model = self.provenance.get("model_name") or "model"
        where = "all positions" if self.positions == "all" else "last positions"
        fig.suptitle(
            title
            if title is not None
            else f"{model_short_name(model)}: do the lenses agree? {self.n_prompts} prompts, {where}"
        )
        return fig


def _percent(mean: float, low: float, high: float) -> str:
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.0%} [{low:.0%}, {high:.0%}]"


def _bits(mean: float, low: float, high: float) -> str:
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.2f} [{low:.2f}, {high:.2f}] bits"
