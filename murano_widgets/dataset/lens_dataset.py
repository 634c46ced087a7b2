"""``LensDataset``: the lens over a data set of prompts, reduced to per-prompt, per-layer numbers
(made by :func:`~murano_widgets.lens_dataset`, in :mod:`murano_widgets.dataset.runner`).

For every prompt and layer it holds the answer's probability and rank (per answer set), the
top-1 token and every reduced heatmap metric's field (entropy, the final prediction's
probability and rank, the KL to it) at the prompt's last real position: one table of arrays per
lens, declared in :mod:`murano_widgets.dataset.table`. Memory therefore grows with ``n_prompts · n_layers`` and nothing else. It turns them
into a tidy frame, per-layer summaries with bootstrap intervals, a figure, a widget, and files
that remake the figure without the model; :meth:`LensDataset.load` reads a saved file or a run's
finished folder. The run's records are collected and assembled here (``Collector``,
``_assemble``), so that a run and a folder's load make a data set the same way.

With several lenses side by side (``lens={"logit": None, "tuned": tuned}``) each batch runs one
trace for all of them, and the data set's table holds each lens's arrays by name over the same
prompts and answers (:meth:`LensDataset.lens` gives one as a data set of its own): its tables
gain a ``lens`` column, its figure a line per lens and answer set.

With ``decompose=True`` it also keeps, per prompt, the **direct logit attribution** of the
answer at the prompt's last position under the model's own readout (the last layer): each
component's (the embedding, every attention layer or head, every MLP) direct contribution to the
answer's logit, or to logit(answer) − logit(foil) with ``foils``. That is ``C`` floats a prompt
(``C = 1 + 2 · n_layers``, or ``1 + n_layers · (n_heads + 2)`` with ``heads=True``), whatever
the prompt's length; :meth:`LensDataset.contribution_summary`,
:meth:`LensDataset.contributions_to_pandas` and :meth:`LensDataset.plot_contributions` read it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets._checks import check_model, check_path
from murano_widgets.dataset.collect import Collector
from murano_widgets.dataset.frames import (
    component_columns,
    contributions_frame,
    text_columns,
    tidy_frame,
)
from murano_widgets.dataset.io import paths, read_saved, write_saved
from murano_widgets.dataset.shards import (
    is_run_folder,
    read_folder,
    record_of,
)
from murano_widgets.dataset.stats import (
    check_summary_args,
    commitment_layers,
    contribution_stats,
    set_summary,
    summary_columns,
)
from murano_widgets.dataset.table import (
    GROUPS,
    LEGACY_FIELDS,
    METRIC_FIELDS,
    SET_ARRAYS,
    TOKENS,
    check_fields,
    from_disk,
    on_disk,
)
from murano_widgets.metrics import METRICS, Metric, held_metrics

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from murano_widgets.backends.base import ModelBackend
    from murano_widgets.widgets.dataset import LensDatasetWidget

__all__ = ["LensDataset"]

FORMAT = "murano_widgets.LensDataset"
FORMAT_VERSION = 1
#: Files of several lenses side by side (``"lenses"`` in the sidecar, each lens's arrays as
#: ``l{k}_<name>``); one lens is still written as version 1, which every reader reads.
LENSES_FORMAT_VERSION = 2


def _assemble(
    collector: Collector,
    layers: list[int],
    provenance: dict[str, Any],
    named: bool,
    model: Any,
    lens: Any,
    named_lenses: bool,
) -> LensDataset:
    """The data set of a run (or of a run's folder, read back)."""
    lenses, kept = collector.arrays()
    common: dict[str, Any] = {
        "prompts": collector.prompts,
        "layers": list(layers),
        "answers": collector.answers,
        "token_strings": collector.token_strings,
        "named_sets": named,
        "model": model,
        "provenance": provenance,
        "lens": lens,
    }
    if kept is not None:
        common |= {"component_labels": collector.labels, **kept, "foils": collector.foils}
    if not named_lenses:
        (one,) = lenses
        return LensDataset(**common, **one)
    return LensDataset(**common, lenses=dict(zip(collector.lens_names, lenses, strict=True)))


def lens_provenance(provenance: dict[str, Any], name: str) -> dict[str, Any]:
    """One lens's provenance among lenses side by side: the data set's, with that lens's name,
    kind, title and provenance in place of the list of lenses."""
    entry = next(lens for lens in provenance["lenses"] if lens["name"] == name)
    own = {key: value for key, value in provenance.items() if key != "lenses"}
    return {
        **own,
        "lens_name": name,
        "lens_kind": entry["kind"],
        "lens_title": entry["title"],
        "lens_provenance": entry["provenance"],
    }


#: The key of a data set of one lens's only entry in its table.
_ONE = ""


class LensDataset:
    """Per-prompt, per-layer numbers of the lens over a data set (made by :func:`lens_dataset`).

    The numbers are one table: each lens's arrays by name (:mod:`murano_widgets.dataset.table`
    declares them), ``[n_layers, n_prompts]``, the result's axis order: rows in :attr:`layers`
    order, columns in the order the prompts were given. Missing values are NaN
    (probabilities, entropy, KL) or -1 (ranks, tokens): a prompt without an answer in a set, or
    a cell whose logits were not finite.

    Each array is an attribute of a data set of one lens (``dataset.entropy``). Several lenses
    side by side (``lens_dataset(..., lens={"logit": None, "tuned": tuned})``): :attr:`lens_names`
    lists them and :meth:`lens` gives each as a data set of its own (``dataset.lens("tuned")
    .entropy``); the tables, the figure, the widget and the files hold every lens, each row
    with its ``lens``.

    Attributes:
        prompts: The prompts.
        layers: The model layer of each row.
        answers: ``{set name: [accepted strings or None per prompt]}``.
        answer_probs: ``{set name: [n_layers, n_prompts]}`` the answer's probability at the
            prompt's last real position (multi-token answers teacher-forced).
        answer_ranks: ``{set name: [n_layers, n_prompts]}`` the rank of the answer's first
            token there, **0 = the top-1 token**.
        top1_tokens: ``[n_layers, n_prompts]`` the top-1 token id there.
        entropy, final_token_probs, final_token_ranks, kl_to_final: ``[n_layers, n_prompts]``
            each reduced heatmap metric's field at the last real position (entropy and KL in
            bits; the model's own prediction's probability and rank): every field of
            :attr:`fields`, named as the result names it.
        fields: The metric fields held (every reduced metric of
            :data:`murano_widgets.metrics.METRICS`; a file saved before some were kept holds
            fewer).
        token_strings: The decoded text of each id in ``top1_tokens``.
        provenance: Where the numbers came from (see :func:`model_provenance`).
        named_sets: Whether ``answers`` was given as a dict of named sets.
        component_labels: With ``decompose=True``: the components in model order,
            ``"embed"``, ``"L0.attn"``, ``"L0.mlp"``, ... (with ``heads=True``: ``"L0.H0"``,
            ..., ``"L0.attn_bias"``, ``"L0.mlp"``, ...); else ``None``.
        contributions: ``[C, n_prompts]`` float32, each component's direct contribution to the
            answer's logit (of the first answer set), or to logit(answer) − logit(foil), at the
            prompt's last real position under the model's own readout (the last layer); NaN for
            a prompt without an answer (or without a foil where others have one). ``None``
            without ``decompose=True``.
        contribution_bias: ``[n_prompts]`` float32, the rest of that logit (difference) that no
            component wrote (the final norm's and the unembedding's biases): per prompt,
            ``contributions.sum(0) + contribution_bias`` is the logit (difference) itself.
        foils: The foils given (one string or ``None`` per prompt), or ``None``.
        group_probs: ``{group name: [n_layers, n_prompts]}`` each token group's summed
            probability at the prompt's last real position (``lens_dataset(...,
            groups=...)``); :attr:`group_names` lists them (empty without groups).

    Args:
        lenses: Several lenses side by side: ``{lens name: {array name: array}}``, each with
            the arrays below; else one lens's arrays as keywords (``answer_probs=...,
            answer_ranks=..., top1_tokens=..., entropy=..., ...``).

    With lenses side by side the contributions are kept once, on the data set and shared by
    every lens's (:meth:`lens`): they are read under the last layer, where every lens reads
    the model's own output, so they are the same for all lenses; their tables have no ``lens``
    column.
    """

    def __init__(
        self,
        *,
        prompts: list[str],
        layers: list[int],
        answers: dict[str, list[list[str] | None]],
        token_strings: dict[int, str],
        provenance: dict[str, Any],
        named_sets: bool,
        model: Any = None,
        lens: Any = None,
        lenses: Mapping[str, Mapping[str, Any]] | None = None,
        component_labels: list[str] | None = None,
        contributions: np.ndarray | None = None,
        contribution_bias: np.ndarray | None = None,
        foils: list[str | None] | None = None,
        **arrays: Any,
    ) -> None:
        self.prompts = prompts
        self.layers = layers
        self.answers = answers
        if lenses is not None and arrays:
            raise ValueError("LensDataset takes one lens's arrays or lenses=..., not both")
        if lenses is not None and not lenses:
            raise ValueError("LensDataset takes lenses=... with at least one lens")
        self._named = lenses is not None
        table = dict(lenses) if lenses is not None else {_ONE: arrays}
        self._table: dict[str, dict[str, Any]] = {
            name: _checked_arrays(dict(values), name, list(answers), (len(layers), len(prompts)))
            for name, values in table.items()
        }
        held = {name: _fields_of(values) for name, values in self._table.items()}
        self.fields: tuple[str, ...] = next(iter(held.values()))
        if any(fields != self.fields for fields in held.values()):
            raise ValueError(f"the lenses hold different fields: {held}")
        self.token_strings = token_strings
        self.provenance = provenance
        self.named_sets = named_sets
        given = {
            "component_labels": component_labels,
            "contributions": contributions,
            "contribution_bias": contribution_bias,
        }
        _check_contributions(given, foils, len(prompts))
        self.component_labels = None if component_labels is None else list(component_labels)
        self.contributions = contributions
        self.contribution_bias = contribution_bias
        self.foils = foils
        # The model stays only to open a prompt's heatmap from the widget; it is never saved.
        self._model = model
        self._lens = lens
        self._source: Path | None = None

    def arrays(self, lens: str | None = None) -> dict[str, Any]:
        """One lens's arrays by name (see the class's attributes): ``lens`` names it among
        several side by side, and is left out for a data set of one lens.

        Raises:
            ValueError: For a missing or unknown lens, or a lens named in a data set of one.
        """
        if not self._named:
            if lens is not None:
                raise ValueError(f"this data set holds one lens; got lens={lens!r}")
            return self._table[_ONE]
        if lens is None:
            raise ValueError(
                f"this data set holds the lenses {list(self._table)}: name one, e.g. "
                f"arrays(lens={next(iter(self._table))!r})"
            )
        if lens not in self._table:
            raise ValueError(f"lens must be one of {list(self._table)}; got {lens!r}")
        return self._table[lens]

    def _array(self, name: str) -> Any:
        """The array ``name`` of a data set of one lens (what its attribute reads)."""
        if self._named:
            raise AttributeError(
                f"this data set holds the lenses {list(self._table)}: read one lens's {name} as "
                f"dataset.lens({next(iter(self._table))!r}).{name}"
            )
        values = self._table[_ONE]
        if name not in values:
            raise AttributeError(
                f"this data set has no {name}: it holds {list(self.fields)} (it was saved by a "
                "version that kept fewer fields)"
            )
        return values[name]

    @property
    def lens_names(self) -> list[str] | None:
        """The lenses side by side, in the order given; ``None`` for a data set of one lens."""
        return list(self._table) if self._named else None

    def lens(self, name: str) -> LensDataset:
        """One lens of several side by side, as a data set of its own (its arrays, tables,
        figure and widget).

        Raises:
            KeyError: For a name that is not one of the lenses.
            ValueError: For a data set of one lens.
        """
        if not self._named:
            raise ValueError(
                "this data set holds one lens; lenses side by side come from "
                "lens_dataset(..., lens={'logit': None, 'tuned': tuned})"
            )
        if name not in self._table:
            raise KeyError(
                f"no lens named {name!r} in this data set; the lenses are {list(self._table)}"
            )
        provenance = self.provenance
        if "lenses" in provenance:
            provenance = lens_provenance(provenance, name)
        part = LensDataset(
            prompts=self.prompts,
            layers=self.layers,
            answers=self.answers,
            token_strings=self.token_strings,
            provenance=provenance,
            named_sets=self.named_sets,
            model=self._model,
            lens=None if self._lens is None else self._lens[name],
            component_labels=self.component_labels,
            contributions=self.contributions,
            contribution_bias=self.contribution_bias,
            foils=self.foils,
            **self._table[name],
        )
        part._source = self._source
        return part

    def _lens_tables(self) -> list[tuple[str | None, dict[str, Any]]]:
        """``(lens name, its arrays)`` for each lens (``(None, arrays)`` for one lens)."""
        if not self._named:
            return [(None, self._table[_ONE])]
        return list(self._table.items())

    @property
    def answer_probs(self) -> dict[str, np.ndarray]:
        """``{set name: [n_layers, n_prompts]}`` the answer's probability (one lens's)."""
        return self._array("answer_probs")

    @property
    def answer_ranks(self) -> dict[str, np.ndarray]:
        """``{set name: [n_layers, n_prompts]}`` the answer's first token's rank, 0 = top-1."""
        return self._array("answer_ranks")

    @property
    def group_names(self) -> list[str]:
        """The token groups' names, in the order given (empty without groups)."""
        return list(next(iter(self._table.values())).get(GROUPS) or ())

    @property
    def group_probs(self) -> dict[str, np.ndarray]:
        """``{group name: [n_layers, n_prompts]}`` each token group's probability (one lens's).

        Raises:
            AttributeError: For a data set made without groups.
        """
        if not self.group_names:
            raise AttributeError(
                "this data set has no token groups: make it with lens_dataset(..., groups=...)"
            )
        return self._array(GROUPS)

    @property
    def top1_tokens(self) -> np.ndarray:
        """``[n_layers, n_prompts]`` the top-1 token id at each prompt's last real position."""
        return self._array(TOKENS)

    @property
    def metrics(self) -> list[Metric]:
        """The metrics of :data:`~murano_widgets.metrics.DATASET_METRICS` this data set
        summarises (:meth:`summary`'s columns): all of them, less those of metric fields that a
        data set saved by an older version did not keep."""
        return held_metrics(summary_columns(self.fields))

    @property
    def n_prompts(self) -> int:
        """The number of prompts."""
        return len(self.prompts)

    @property
    def answer_set_names(self) -> list[str]:
        """The answer sets, in the order given."""
        return list(self.answers)

    def answer_labels(self, name: str) -> list[str | None]:
        """Each prompt's answer in set ``name`` as shown: its first accepted form, or ``None``."""
        return [None if forms is None else forms[0] for forms in self.answers[name]]

    def __repr__(self) -> str:
        sets = ", ".join(self.answers)
        lenses = f", lenses {self.lens_names}" if self._named else ""
        parts = f", groups {self.group_names}" if self.group_names else ""
        if self.component_labels is not None:
            parts += f", contributions of {len(self.component_labels)} components"
            parts += " (answer - foil)" if self.foils is not None else ""
        return (
            f"LensDataset({self.n_prompts} prompts, layers {self.layers[0]}..{self.layers[-1]}, "
            f"answer sets [{sets}]{lenses}{parts}, model {self.provenance.get('model_name')!r})"
        )

    def commitment_layers(
        self, answer_set: str | None = None, lens: str | None = None
    ) -> np.ndarray:
        """Each prompt's **commitment layer**: the first layer from which its answer stays the
        top-1 token at every layer through the last one (of the data set's layers: the model's
        last when ``layers="all"``).

        A prompt that commits at layer 3 of 6 has the answer as its top-1 at layers 3, 4 and 5,
        and not at layer 2; one whose answer is the top-1 at layer 1, loses it at layer 2 and
        regains it at 3 also commits at 3. Where it is the top-1 nowhere from some layer on
        through the last (the model's own prediction is something else), or the prompt has no
        answer in the set, the value is -1: "never" (``to_pandas`` shows it as missing; the
        ``answer`` column says which prompts have no answer). Its distribution, per layer, is
        ``summary()``'s ``committed`` column: the share of prompts committed at or before the
        layer, with a bootstrap interval.

        Args:
            answer_set: The answer set (default the first).
            lens: With several lenses side by side: which one (required).

        Returns:
            ``[n_prompts]`` model layers (int64), -1 where the answer never commits.

        Raises:
            ValueError: For an unknown answer set, or a missing or unknown lens.
        """
        if self._named and lens is None:
            raise ValueError(
                f"this data set holds the lenses {self.lens_names}: name one, e.g. "
                f"commitment_layers(lens={next(iter(self._table))!r})"
            )
        ranks = self.arrays(lens)["answer_ranks"]
        name = next(iter(self.answers)) if answer_set is None else answer_set
        if name not in self.answers:
            raise ValueError(f"answer_set must be one of {list(self.answers)}; got {answer_set!r}")
        return commitment_layers(ranks[name].T, self.layers)

    # -- tables --------------------------------------------------------------------------------

    def to_pandas(self) -> pd.DataFrame:
        """One row per prompt and layer (and answer set, and lens): a tidy frame.

        Columns: ``prompt_index``, ``prompt``, ``answer`` (its first accepted form), then
        ``answer_set`` when the answers were named sets, ``lens`` with several lenses side by
        side, ``layer``, ``answer_prob``, ``answer_rank`` (0 = top-1; a nullable integer,
        missing where there is no answer), ``answer_is_top1`` (nullable boolean), ``entropy``
        and ``kl_to_final`` (bits, at the prompt's last real position; every metric field),
        ``group_<name>`` for each token group (its probability there), ``top1_token`` (the
        layer's top-1 token there) and ``commitment_layer`` (the prompt's, on each of its
        rows: see :meth:`commitment_layers`; missing where the answer never commits or there
        is none). ``df.attrs["provenance"]`` holds :attr:`provenance`.

        ``prompt`` and ``answer`` are categorical: each distinct string is held once and each
        row holds an integer code, so that a frame of a million prompts by a dozen layers is a
        few hundred MB and seconds to make, rather than a string per row (they compare, filter
        and group as strings do; ``.astype(str)`` gives plain strings). No pyarrow is needed.
        """
        import pandas as pd

        shared = text_columns(self)
        frames = []
        for name, arrays in self._lens_tables():
            frame = tidy_frame(self, arrays, shared)
            if name is not None:
                frame.insert(frame.columns.get_loc("layer"), "lens", name)
            frames.append(frame)
        table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        table.attrs["provenance"] = json.loads(json.dumps(self.provenance))
        return table

    def summary(self, ci: float = 0.95, n_boot: int = 1000, seed: int | None = 0) -> pd.DataFrame:
        """One row per layer (and answer set): means with percentile-bootstrap intervals.

        Each answer set is summarised over its prompts that have an answer. The intervals
        resample prompts (all layers together, so a layer's interval and its neighbour's come
        from the same resamples): ``n_boot`` resamples of ``n`` prompts drawn with
        ``numpy.random.default_rng(seed).integers(0, n, size=n, dtype=np.int32)``, one after
        another, and the ``(1 - ci) / 2`` and ``(1 + ci) / 2`` percentiles of the resampled means.

        Args:
            ci: The interval's coverage, between 0 and 1.
            n_boot: How many bootstrap resamples.
            seed: The seed of the resampling (``None``: fresh randomness).

        Returns:
            A frame with ``answer_set`` (when named), ``lens`` (lenses side by side: every
            lens's intervals come from the same resamples of prompts), ``layer``, ``n_prompts``,
            ``answer_prob_mean``, ``answer_prob_ci_low``, ``answer_prob_ci_high``,
            ``top1_accuracy``, ``top1_accuracy_ci_low``, ``top1_accuracy_ci_high``,
            ``answer_rank_median``; for each metric field of :attr:`fields` (every reduced
            heatmap metric: ``entropy``, ``final_token_probs``, ``final_token_ranks``,
            ``kl_to_final``), ``<field>_mean``, ``<field>_ci_low`` and ``<field>_ci_high``
            (over the set's prompts, at their last position; a rank of -1 counts as no value);
            with token groups, ``group_<name>_mean``, ``_ci_low`` and ``_ci_high`` for each
            group (over the set's prompts, from the same resamples);
            and ``committed``, ``committed_ci_low``, ``committed_ci_high`` (the share of
            prompts whose answer is committed at or before the layer: the top-1 there and at
            every later layer, the distribution of :meth:`commitment_layers`); ``attrs``
            holds the provenance and the interval settings. :data:`~murano_widgets.metrics
            .DATASET_METRICS` names and labels these columns.
        """
        import pandas as pd

        ci, n_boot, seed = check_summary_args(ci, n_boot, seed)
        frames = []
        # Every lens's intervals come from the same resamples: the same seed and prompts.
        for lens_name, arrays in self._lens_tables():
            for name in self.answers:
                has = np.array([forms is not None for forms in self.answers[name]])
                # The bootstrap resamples prompts along the first axis.
                stats = set_summary(
                    arrays["answer_probs"][name][:, has].T,
                    arrays["answer_ranks"][name][:, has].T,
                    {
                        **{field: arrays[field][:, has].T for field in self.fields},
                        **_group_columns(arrays, has),
                    },
                    ci,
                    n_boot,
                    seed,
                )
                frame = pd.DataFrame({"layer": self.layers, "n_prompts": int(has.sum()), **stats})
                if lens_name is not None:
                    frame.insert(0, "lens", lens_name)
                if self.named_sets:
                    frame.insert(0, "answer_set", name)
                frames.append(frame)
        table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        table.attrs["provenance"] = json.loads(json.dumps(self.provenance))
        table.attrs.update(ci=ci, n_boot=n_boot, seed=seed)
        return table

    # -- direct logit attribution ----------------------------------------------------------------

    @property
    def contribution_target(self) -> str:
        """What the contributions add up to: ``"logit(answer) - logit(foil)"`` with foils,
        else ``"logit(answer)"``.

        Raises:
            ValueError: For a data set made without ``decompose=True``.
        """
        self._require_contributions()
        return "logit(answer) - logit(foil)" if self.foils is not None else "logit(answer)"

    def _require_contributions(self) -> None:
        if self.component_labels is None:
            raise ValueError(
                "this data set has no contributions: make it with "
                "lens_dataset(..., decompose=True) (and heads=True for attention heads)"
            )

    def contribution_summary(
        self, ci: float = 0.95, n_boot: int = 1000, seed: int | None = 0
    ) -> pd.DataFrame:
        """One row per component, in model order, then one for the bias: the mean direct
        contribution over prompts with a percentile-bootstrap interval.

        The prompts counted are those with a value (an answer, and a foil where foils were
        given). The intervals resample prompts, every component (and the bias) together, with
        the same draws as :meth:`summary` (``numpy.random.default_rng(seed)``, see
        :func:`~murano_widgets.dataset.stats.bootstrap_means`). The means add up: over the rows,
        ``contribution_mean`` sums to the mean logit (difference) of the counted prompts.

        Args:
            ci: The interval's coverage, between 0 and 1.
            n_boot: How many bootstrap resamples.
            seed: The seed of the resampling (``None``: fresh randomness).

        Returns:
            A frame with ``component`` (the label, or ``"bias"``), ``layer`` and ``head``
            (nullable integers: missing for ``embed``, the bias, and all but heads),
            ``kind`` (``"embed"``, ``"attn"``, ``"head"``, ``"attn_bias"``, ``"mlp"`` or
            ``"bias"``), ``n_prompts``, ``contribution_mean``, ``contribution_ci_low`` and
            ``contribution_ci_high``; ``attrs`` holds the provenance, the interval settings,
            ``target`` (:attr:`contribution_target`) and ``answer_set`` (the set whose answers
            the contributions are to: the first).

        Raises:
            ValueError: For a data set made without ``decompose=True``, or bad settings.
        """
        import pandas as pd

        self._require_contributions()
        ci, n_boot, seed = check_summary_args(ci, n_boot, seed)
        stats = contribution_stats(self.contributions.T, self.contribution_bias, ci, n_boot, seed)
        table = pd.DataFrame(
            {
                **component_columns(self.component_labels),
                "n_prompts": stats["n_prompts"],
                "contribution_mean": stats["mean"],
                "contribution_ci_low": stats["low"],
                "contribution_ci_high": stats["high"],
            }
        )
        table.attrs["provenance"] = json.loads(json.dumps(self.provenance))
        table.attrs.update(
            ci=ci,
            n_boot=n_boot,
            seed=seed,
            target=self.contribution_target,
            answer_set=next(iter(self.answers)),
        )
        return table

    def contributions_to_pandas(self) -> pd.DataFrame:
        """The contributions as a tidy frame: one row per prompt and component, then one
        ``bias`` row per prompt, so that each prompt's ``contribution`` values sum to its logit
        (difference).

        A table of its own rather than more columns of :meth:`to_pandas`: its rows are prompts
        by components, not prompts by layers. With lenses side by side there is one copy (no
        ``lens`` column): the contributions are read under the model's own output, the same
        for every lens.

        Columns: ``prompt_index``, ``prompt``, ``answer`` (the first accepted form of the first
        answer set's answer: the one the contributions are to), ``foil`` (with foils),
        ``component``, ``layer``, ``kind``, ``head`` (as in :meth:`contribution_summary`) and
        ``contribution`` (NaN for a prompt without an answer, or without a foil where others
        have one). ``attrs`` holds the provenance, ``target`` and ``answer_set``.

        Raises:
            ValueError: For a data set made without ``decompose=True``.
        """
        self._require_contributions()
        return contributions_frame(self)

    def plot_contributions(self, **options: Any) -> Figure:
        """The direct logit attribution figure: the mean contribution of each component in
        model order, signed, with bootstrap interval whiskers; with heads, a layer × head grid
        of the heads' means beside bars for the rest.

        See :func:`murano_widgets.dataset.plot.plot_contributions` for the options (``ci``,
        ``n_boot``, ``seed``, ``ax``, ``title``).
        """
        from murano_widgets.dataset.plot import plot_contributions

        return plot_contributions(self, **options)

    # -- views ---------------------------------------------------------------------------------

    def plot(self, **options: Any) -> Figure:
        """The figure: mean per layer with shaded intervals, one line per answer set (and lens).

        See :func:`murano_widgets.dataset.plot.plot_dataset` for the options (``metric``:
        ``"answer_prob"``, ``"top1_accuracy"`` or ``"committed"``; ``ci``, ``n_boot``, ``seed``,
        ``ax``). With token groups, ``metric="groups"`` draws them, one curve per group, as
        :func:`~murano_widgets.plot_groups` does (its options: ``groups``, ``entropy``, ...).
        """
        from murano_widgets.dataset.plot import plot_dataset

        if options.get("metric") == "groups":
            from murano_widgets.dataset.groups import plot_groups

            return plot_groups(self, **{k: v for k, v in options.items() if k != "metric"}).figure

        return plot_dataset(self, **options)

    def show(self, model: ModelBackend | None = None, *, lens: Any = None) -> LensDatasetWidget:
        """The interactive view: curves per layer, the prompts behind a layer, their heatmaps.

        Hovering a layer shows its values; choosing a layer lists the prompts ordered by the
        answer's rank there; choosing a prompt opens its heatmap below (the lens is run again
        on that prompt, so it needs the model: the one the data set was made with, or
        ``model`` here, e.g. after :meth:`load`).

        Args:
            model: The model to open heatmaps with (default: the one the data set was made with).
            lens: The translator to open them with (default: the one the data set was made with);
                with lenses side by side, a dict of the same names (``{"logit": None, ...}``).

        Raises:
            TypeError, ValueError: If ``model`` is given but is not a loaded model (see
                :func:`~murano_widgets._checks.check_model`) or lacks the data set's layers, or
                ``lens`` is given but is not a lens that fits the model.
        """
        from murano_widgets.widgets.dataset import LensDatasetWidget

        if model is not None:
            check_model(model)
        return LensDatasetWidget(self, model=model, lens=lens)

    # -- files ---------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> Path:
        """Writes the data set as ``<path>.npz`` (the arrays) and ``<path>.json`` (the rest).

        Why npz and JSON rather than Parquet: the data are dense matrices, which npz stores as
        they are (one row per prompt on disk, so that the file reads prompt by prompt; the
        arrays in memory are ``[n_layers, n_prompts]``, the result's axis order) and numpy reads back with no extra dependency
        (Parquet would need pyarrow, a large wheel) and with ``allow_pickle=False``, so a file
        from elsewhere cannot run code; the prompts, answers and provenance go in a JSON file a
        person can read. The JSON records the npz's sha256, so a mismatched pair is refused.
        The contributions (``decompose=True``), when there are any, are two more arrays of the
        same npz (``contributions``, one row per prompt, and ``contribution_bias``) and a
        ``contributions`` entry of the JSON (the component labels and the foils); a data set
        without them is written exactly as before, and a reader that does not know them reads
        the rest.
        The two files are replaced together: a save that fails or is interrupted at any point
        leaves the previous pair, whole, and no temporary file.

        Args:
            path: The file name with or without ``.npz``/``.json``.

        Returns:
            The path of the ``.npz`` file.
        """
        npz_path, json_path = paths(path)
        arrays: dict[str, np.ndarray] = {}
        sets = list(self.answers)
        for k, (name, values) in enumerate(self._lens_tables()):
            # One row per prompt on disk: [n_prompts, n_layers].
            arrays |= on_disk(values, "" if name is None else f"l{k}_", sets, np.transpose)
        if self.component_labels is not None:
            # One copy whatever the lenses (they are the same for every lens); one row per
            # prompt, as the other arrays.
            arrays["contributions"] = self.contributions.T
            arrays["contribution_bias"] = self.contribution_bias
        fields = {
            "prompts": self.prompts,
            "layers": self.layers,
            "answer_sets": list(self.answers),
            "answers": self.answers,
            "named_sets": self.named_sets,
            "token_strings": {str(k): v for k, v in self.token_strings.items()},
            "provenance": self.provenance,
            # The metric fields held (files without this entry hold LEGACY_FIELDS).
            "fields": list(self.fields),
        }
        if self.group_names:  # absent without groups: such files are written as before
            fields["groups"] = self.group_names
        if self.component_labels is not None:
            fields["contributions"] = {
                "component_labels": self.component_labels,
                "foils": self.foils,
            }
        version = FORMAT_VERSION
        if self._named:
            version = LENSES_FORMAT_VERSION
            fields["lenses"] = [
                {"name": name, "provenance": self.lens(name).provenance} for name in self._table
            ]
        header = {"format": FORMAT, "format_version": version}
        write_saved(npz_path, json_path, header, arrays, fields)
        return npz_path

    @classmethod
    def load(cls, path: str | os.PathLike) -> LensDataset:
        """Reads a data set written by :meth:`save`, or the folder of a finished
        ``lens_dataset(..., path=folder)`` run (no model needed; ``show(model=...)`` later).

        Raises:
            FileNotFoundError: If either file is missing.
            ValueError: If the files are not a data set of this format, do not belong together
                (the npz's hash differs from the one recorded) or their shapes disagree; for a
                folder, if its run is not finished or a shard is missing or damaged (naming it).
        """
        check_path("path", path)
        if is_run_folder(Path(os.fspath(path))):
            dataset = _load_folder(Path(os.fspath(path)))
            dataset._source = Path(os.fspath(path))
            return dataset
        npz_path, json_path = paths(path)
        sidecar, arrays = read_saved(
            npz_path, json_path, FORMAT, (FORMAT_VERSION, LENSES_FORMAT_VERSION)
        )
        names = sidecar["answer_sets"]
        common = {
            "prompts": sidecar["prompts"],
            "layers": sidecar["layers"],
            "answers": {name: sidecar["answers"][name] for name in names},
            "token_strings": {int(k): v for k, v in sidecar["token_strings"].items()},
            "named_sets": sidecar["named_sets"],
        }
        kept = sidecar.get("contributions")
        if kept is not None:
            common |= {
                "component_labels": kept["component_labels"],
                "contributions": np.ascontiguousarray(arrays["contributions"].T),
                "contribution_bias": arrays["contribution_bias"],
                "foils": kept["foils"],
            }

        held = check_fields(sidecar.get("fields", LEGACY_FIELDS), str(json_path))
        lenses = sidecar.get("lenses")
        prefixes = [""] if lenses is None else [f"l{k}_" for k in range(len(lenses))]
        table = [
            from_disk(
                lambda name, _: arrays[name],
                prefix,
                held,
                names,
                _layers_first,
                sidecar.get("groups") or [],
            )
            for prefix in prefixes
        ]
        if lenses is None:
            dataset = cls(**common, **table[0], provenance=sidecar["provenance"])
        else:
            dataset = cls(
                **common,
                provenance=sidecar["provenance"],
                lenses={entry["name"]: part for entry, part in zip(lenses, table, strict=True)},
            )
        dataset._source = npz_path
        return dataset


def _load_folder(folder: Path) -> LensDataset:
    """A finished run's folder as a data set: each shard's text and numbers at its prompts'
    indices."""
    run, shards = read_folder(folder)
    provenance = run["provenance"]
    fingerprint = run["fingerprint"]
    sets = list(fingerprint["answer_sets"])
    n = int(run["finished"]["n_prompts"])
    lens_entries = provenance.get("lenses")
    lens_names = [e["name"] for e in lens_entries] if lens_entries else ["lens"]
    labels = None
    if fingerprint.get("decompose"):
        labels = next((shard["meta"]["component_labels"] for _, shard in shards), None)
    # A run written before the metric fields were derived from the registry keeps the old two.
    fields = check_fields(fingerprint.get("fields", LEGACY_FIELDS), str(folder / "run.json"))
    collector = Collector(
        lens_names,
        sets,
        labels,
        bool(fingerprint.get("foils")),
        bool(fingerprint["named_sets"]),
        fields,
        (fingerprint.get("groups") or {}).get("names"),
    )
    collector.prompts = [None] * n  # type: ignore[list-item]
    collector.answers = {name: [None] * n for name in sets}
    if collector.foils is not None:
        collector.foils = [None] * n
    seen = np.zeros(n, dtype=bool)
    for path, shard in shards:
        record = record_of(shard, lens_names, sets, path, fields, collector.groups)
        index = record["index"]
        if len(index) and (index.min() < 0 or index.max() >= n or seen[index].any()):
            raise ValueError(
                f"{path} holds prompt indices outside the run's {n} prompts or already read: "
                "the folder is damaged"
            )
        seen[index] = True
        meta = shard["meta"]
        for k, i in enumerate(index.tolist()):
            collector.prompts[i] = meta["prompts"][k]
            for name in sets:
                entry = meta["answers"][name][k]
                collector.answers[name][i] = entry
            if collector.foils is not None:
                collector.foils[i] = meta["foils"][k]
        collector.add(record)
    if not seen.all():
        raise ValueError(
            f"the folder {str(folder)!r} has no numbers for prompts[{int(np.argmin(seen))}]: "
            "a shard is missing"
        )
    named_lenses = lens_entries is not None
    layers = list(provenance["layers"])
    return _assemble(
        collector,
        layers,
        provenance,
        bool(fingerprint["named_sets"]),
        None,
        None,
        named_lenses,
    )


# ---------------------------------------------------------------------------------------------
# Checks, batching and provenance


def _metric_attribute(field: str) -> property:
    """The attribute of a data set of one lens that reads the metric field ``field``."""
    metric = next(m for m in METRICS.values() if m.field == field)
    return property(
        lambda self: self._array(field),
        doc=f"``[n_layers, n_prompts]`` {metric.label} at each prompt's last real position.",
    )


# Every metric field is an attribute (dataset.entropy, dataset.kl_to_final, ...), from the list.
for _field in METRIC_FIELDS:
    setattr(LensDataset, _field, _metric_attribute(_field))


def _group_columns(arrays: dict[str, Any], has: np.ndarray) -> dict[str, np.ndarray]:
    """``{"group_<name>": [n_prompts, n_layers]}`` each token group's probability over the
    prompts ``has`` picks, as :func:`~murano_widgets.dataset.stats.set_summary` summarises a
    metric field (empty without groups)."""
    return {
        f"group_{name}": values[:, has].T for name, values in (arrays.get(GROUPS) or {}).items()
    }


def _fields_of(arrays: dict[str, Any]) -> tuple[str, ...]:
    """The metric fields a lens's arrays hold, in the registry's order."""
    return tuple(field for field in METRIC_FIELDS if field in arrays)


def _checked_arrays(
    arrays: dict[str, Any], lens: str, sets: list[str], shape: tuple[int, int]
) -> dict[str, Any]:
    """One lens's arrays, checked: the answer sets' and ``top1_tokens`` present, every array
    ``[n_layers, n_prompts]``, no name that is not a data set's array.

    Raises:
        TypeError: For an unknown array name.
        ValueError: For a missing array, another set of answer sets, or a wrong shape.
    """
    where = f" of lens {lens!r}" if lens else ""
    known = {*METRIC_FIELDS, TOKENS, *SET_ARRAYS, GROUPS}
    unknown = [name for name in arrays if name not in known]
    if unknown:
        raise TypeError(
            f"LensDataset got unknown arrays{where} {unknown}; its arrays are {sorted(known)}"
        )
    missing = [name for name in (*SET_ARRAYS, TOKENS) if arrays.get(name) is None]
    if missing:
        raise ValueError(f"LensDataset needs {', '.join(missing)}{where} (or lenses=...)")
    checked: dict[str, Any] = {}
    for name, values in arrays.items():
        if values is None:  # a field left out
            continue
        per_set = values if name in (*SET_ARRAYS, GROUPS) else {None: values}
        if name in SET_ARRAYS and list(values) != sets:
            raise ValueError(f"{name}{where} has the sets {list(values)}; the answers have {sets}")
        for key, array in per_set.items():
            if np.shape(array) != shape:
                label = name if key is None else f"{name}[{key!r}]"
                raise ValueError(
                    f"{label}{where} has shape {np.shape(array)}; expected {shape} "
                    "(layers x prompts)"
                )
        checked[name] = values
    return checked


def _check_contributions(given: dict[str, Any], foils: Any, n_prompts: int) -> None:
    """The contributions a :class:`LensDataset` is given agree with each other and the prompts."""
    if all(value is None for value in given.values()):
        if foils is not None:
            raise ValueError("LensDataset takes foils only with contributions")
        return
    if any(value is None for value in given.values()):
        raise ValueError(
            "LensDataset takes component_labels, contributions and contribution_bias together, "
            "or none of them"
        )
    expected = (len(given["component_labels"]), n_prompts)
    values, bias = given["contributions"], given["contribution_bias"]
    if values.shape != expected or bias.shape != expected[1:]:
        raise ValueError(
            f"contributions has shape {values.shape} and contribution_bias {bias.shape}; "
            f"expected {expected} (components x prompts) and {expected[1:]}"
        )
    if foils is not None and len(foils) != n_prompts:
        raise ValueError(f"foils has {len(foils)} entries for {n_prompts} prompts")


def _layers_first(on_disk: np.ndarray) -> np.ndarray:
    """A saved ``[n_prompts, n_layers]`` array as the in-memory ``[n_layers, n_prompts]``."""
    return np.ascontiguousarray(on_disk.T)
