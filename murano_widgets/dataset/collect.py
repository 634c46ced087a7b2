"""A run's per-prompt numbers, collected batch by batch (from the step, or read back from a
run's shards) and placed at their prompts' columns once, at the end: what a run and a folder's
load share before :func:`~murano_widgets.dataset.lens_dataset._assemble` makes the data set."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets.dataset.table import METRIC_FIELDS, TOKENS, empty_arrays, place

if TYPE_CHECKING:
    from murano_widgets.dataset.stream import Window

__all__ = ["Collector"]


class Collector:
    """The per-prompt numbers of a run, batch by batch, then as one data set.

    The text (prompts, answers, foils) is kept in stream order as windows arrive (the very
    objects the stream gave); each batch's arrays are kept as they come, and placed at their
    prompts' indices only at the end, each batch's arrays freed as soon as they are copied, so
    that assembling them costs one set of arrays, not two.
    """

    def __init__(
        self,
        lens_names: list[str],
        sets: list[str],
        labels: list[str] | None,
        has_foils: bool,
        named: bool = False,
        fields: tuple[str, ...] = METRIC_FIELDS,
        groups: list[str] | None = None,
    ) -> None:
        self.lens_names = lens_names
        #: The token groups' names (empty without groups).
        self.groups: list[str] = list(groups or ())
        self.named = named
        self.sets = sets
        self.labels = labels
        self.has_foils = has_foils
        self.fields = fields
        self.prompts: list[str] = []
        self.answers: dict[str, list[Any]] = {name: [] for name in sets}
        self.foils: list[str | None] | None = [] if has_foils else None
        self.records: list[dict[str, Any]] = []
        self.token_strings: dict[int, str] = {}
        self.tokens = self.padded = self.n_batches = 0
        self.any_answer = self.any_foil = False
        self.n_layers: int | None = None

    @property
    def n_prompts(self) -> int:
        return len(self.prompts)

    def add_window(self, window: Window) -> None:
        """A window's text, in stream order."""
        for item in window.items:
            self.prompts.append(item.prompt)
            for s, name in enumerate(self.sets):
                self.answers[name].append(item.answers[s])
                self.any_answer = self.any_answer or item.answers[s] is not None
            if self.foils is not None:
                self.foils.append(item.foil)
                self.any_foil = self.any_foil or item.foil is not None

    def add(self, record: dict[str, Any], expected: np.ndarray | None = None) -> None:
        """One batch's numbers (from the step, or read back from a shard), checked against the
        prompts ``expected`` at its place."""
        if expected is not None and not np.array_equal(record["index"], expected):
            raise ValueError(
                f"a shard holds other prompts than its batch (prompts {expected.min()}.."
                f"{expected.max()}): the inputs or the batching changed; use another folder"
            )
        n_layers = record["lenses"][0][TOKENS].shape[0]
        if self.n_layers is None:
            self.n_layers = n_layers
        elif n_layers != self.n_layers:
            raise ValueError("a shard holds another number of layers than the run's")
        if record["component_labels"] is not None and record["component_labels"] != self.labels:
            raise ValueError("a shard holds other components than the run's")
        self.token_strings.update(record["token_strings"])
        self.tokens += record["tokens"]
        self.padded += record["padded"]
        self.n_batches += 1
        self.records.append(
            {
                "index": record["index"],
                "lenses": record["lenses"],
                "contributions": record["contributions"],
                "contribution_bias": record["contribution_bias"],
            }
        )

    def arrays(self) -> tuple[list[dict[str, Any]], dict[str, np.ndarray] | None]:
        """Every lens's arrays ``[n_layers, n_prompts]`` (and the contributions), the batches'
        freed as they are copied."""
        n, n_layers = self.n_prompts, self.n_layers or 0
        lenses = [
            empty_arrays(self.fields, self.sets, n_layers, n, self.groups) for _ in self.lens_names
        ]
        kept = None
        if self.labels is not None:
            kept = {
                "contributions": np.full((len(self.labels), n), np.nan, np.float32),
                "contribution_bias": np.full(n, np.nan, np.float32),
            }
        covered = np.zeros(n, dtype=bool)
        records, self.records = self.records, []
        records.reverse()
        while records:
            record = records.pop()
            index = record["index"]
            covered[index] = True
            for out, got in zip(lenses, record["lenses"], strict=True):
                place(out, got, index)
            if kept is not None and record["contributions"] is not None:
                kept["contributions"][:, index] = record["contributions"]
                kept["contribution_bias"][index] = record["contribution_bias"]
            del record
        if not covered.all():
            raise RuntimeError(f"prompts[{int(np.argmin(covered))}] got no numbers")
        return lenses, kept
