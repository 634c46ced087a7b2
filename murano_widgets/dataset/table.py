"""A data set's numbers: one table of arrays per lens, whose columns are declared once.

A data set keeps, for every lens, prompt and row (layer), what a step's result holds at the
prompt's last real position. The arrays are ``[n_layers, n_prompts]`` (the result's axis order)
and come in three kinds:

- **metric fields**: every per-cell field the step's reductions compute, that is every heatmap
  metric with ``reduced=True`` in :data:`murano_widgets.metrics.METRICS` (entropy, the final
  prediction's probability and rank, KL to it). They are read from the registry
  (:data:`METRIC_FIELDS`), so a new reduced metric is kept, sharded, saved, loaded, summarised,
  charted and plotted by a data set with no code here: :class:`LensDataset` and its files
  walk this list.
- ``top1_tokens``: the row's top-1 token id (the result's ``predicted_tokens``).
- per answer set: ``answer_probs`` (teacher-forced) and ``answer_ranks`` (of its first token,
  0 = top-1), each a ``{set name: array}``.
- with token groups (``lens_dataset(..., groups=...)``): ``group_probs``, ``{group name:
  array}`` each group's summed probability (on disk ``group_{i}`` for group ``i``).

A cell without a value holds NaN (floats) or -1 (ids and ranks), the step's fill
(:func:`murano_widgets.metrics.missing_value`).

On disk (a run's shards, one lens's arrays prefixed ``l{k}_``; a saved npz, one row per prompt)
an array keeps its name, except the two older names every version has written: ``top1`` for
``top1_tokens`` and ``prob_{i}``/``rank_{i}`` for answer set ``i``. Files written before the
metric fields were derived hold only :data:`LEGACY_FIELDS`; a data set holds the metric fields
its source has (:attr:`LensDataset.fields`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from murano_widgets.metrics import METRICS, SECTIONS

__all__ = [
    "GROUPS",
    "LEGACY_FIELDS",
    "METRIC_FIELDS",
    "SET_ARRAYS",
    "TOKENS",
    "check_fields",
    "empty_arrays",
    "fields_for",
    "from_disk",
    "keep_last",
    "on_disk",
    "place",
]

#: The metric fields a data set keeps: every reduced heatmap metric's result field.
METRIC_FIELDS: tuple[str, ...] = tuple(m.field for m in METRICS.values() if m.reduced)


def fields_for(fields: tuple[str, ...], foils: bool) -> tuple[str, ...]:
    """The metric fields of ``fields`` a run keeps: those of metrics that need what the run was
    not given (``logit_diff`` without foils) left out, so that a run without foils keeps (and
    fingerprints, and saves) what it kept before the logit difference was added."""
    needs = {m.field: m.needs for m in METRICS.values() if m.reduced}
    return tuple(f for f in fields if not needs.get(f) or (foils and needs[f] == "foils"))


#: The metric fields of files written before they were derived from the registry.
LEGACY_FIELDS: tuple[str, ...] = ("entropy", "kl_to_final")
#: The row's top-1 token id.
TOKENS = "top1_tokens"
#: The arrays kept per answer set, with their names on disk (``{name}_{i}`` for set ``i``).
SET_ARRAYS: dict[str, str] = {"answer_probs": "prob", "answer_ranks": "rank"}
#: The token groups' probabilities, ``{group name: array}`` (``group_{i}`` on disk); only in a
#: data set made with groups.
GROUPS = "group_probs"


def is_integer(field: str) -> bool:
    """Whether ``field``'s values are integers (ids, ranks: -1 for none) rather than floats."""
    return field == TOKENS or field == "answer_ranks" or SECTIONS[field].kind in ("token", "rank")


def dtype_of(field: str) -> type:
    """The array's dtype: int32 for ids and ranks, float32 for the rest."""
    return np.int32 if is_integer(field) else np.float32


def fill_of(field: str) -> float:
    """What a cell without a value holds: -1 for ids and ranks, NaN for the rest."""
    return -1 if is_integer(field) else float("nan")


def check_fields(fields: Iterable[Any], where: str) -> tuple[str, ...]:
    """``fields`` as a tuple of known metric fields, in the registry's order.

    Raises:
        ValueError: For a name that is not a reduced metric's field, naming ``where``.
    """
    fields = tuple(fields)
    unknown = [field for field in fields if field not in METRIC_FIELDS]
    if unknown:
        raise ValueError(
            f"{where} holds the fields {unknown}, which this murano_widgets does not know "
            f"(it knows {list(METRIC_FIELDS)}): it was written by a newer version"
        )
    return tuple(field for field in METRIC_FIELDS if field in fields)


def keep_last(
    result: Any,
    last: Any,
    sets: list[str],
    fields: tuple[str, ...] = METRIC_FIELDS,
    groups: list[str] | None = None,
) -> dict[str, Any]:
    """What a data set keeps of one lens's result: each prompt's numbers at its last real
    position ``last`` (``[batch]`` sequence indices), ``[n_layers, batch]`` in batch order.

    Args:
        result: One lens's :class:`~murano_widgets.LogitLensResult` on a batch.
        last: Each prompt's last real position.
        sets: The answer sets (a set the result has no scores for holds no values).
        fields: The metric fields to keep.
        groups: The token groups' names, when the run has groups.
    """
    import torch

    cols = torch.arange(len(last))
    ids = result.predicted_tokens[:, cols, last]
    shape = (ids.shape[0], len(last))
    arrays: dict[str, Any] = {
        # A batch whose prompts have no foil runs without them: no logit difference (NaN).
        field: np.full(shape, fill_of(field), dtype_of(field))
        if getattr(result, field) is None
        else getattr(result, field)[:, cols, last].numpy().astype(dtype_of(field), copy=False)
        for field in fields
    }
    arrays[TOKENS] = ids.numpy().astype(np.int32)
    scored = result.answer_sets or {}
    for name, attribute in (("answer_probs", "probs"), ("answer_ranks", "ranks")):
        arrays[name] = {
            s: getattr(scored[s], attribute).numpy().astype(dtype_of(name), copy=False)
            if s in scored
            else np.full(shape, fill_of(name), dtype_of(name))
            for s in sets
        }
    if groups:
        arrays[GROUPS] = keep_groups(result, cols, last, groups)
    return arrays


def keep_groups(result: Any, cols: Any, last: Any, groups: list[str]) -> dict[str, np.ndarray]:
    """``{group name: [n_layers, batch]}`` each group's probability at the prompts' ``last``
    positions (the result's ``group_probs`` is ``[n_layers, batch, seq, n_groups]``)."""
    if result.group_probs is None or list(result.group_names) != list(groups):
        raise RuntimeError(
            f"the step was asked for the groups {groups} but its result has "
            f"{getattr(result, 'group_names', None)}"
        )
    kept = result.group_probs[:, cols, last].numpy().astype(np.float32, copy=False)
    return {name: np.ascontiguousarray(kept[..., g]) for g, name in enumerate(groups)}


def empty_arrays(
    fields: tuple[str, ...], sets: list[str], n_layers: int, n: int, groups: list[str] = ()
) -> dict:
    """One lens's arrays for ``n`` prompts, to be filled by :func:`place`."""
    arrays: dict[str, Any] = {
        field: np.empty((n_layers, n), dtype_of(field)) for field in (*fields, TOKENS)
    }
    for name in SET_ARRAYS:
        arrays[name] = {s: np.empty((n_layers, n), dtype_of(name)) for s in sets}
    if groups:
        arrays[GROUPS] = {g: np.empty((n_layers, n), np.float32) for g in groups}
    return arrays


def place(out: dict[str, Any], got: dict[str, Any], index: np.ndarray) -> None:
    """Copies a batch's arrays ``got`` into ``out`` at its prompts' columns ``index``."""
    for name, values in out.items():
        if isinstance(values, dict):
            for s, array in values.items():
                array[:, index] = got[name][s]
        else:
            values[:, index] = got[name]


def on_disk(
    arrays: dict[str, Any], prefix: str, sets: list[str], orient: Callable = lambda a: a
) -> dict[str, np.ndarray]:
    """One lens's arrays under their names on disk, each through ``orient`` (a saved npz
    transposes them to one row per prompt; a shard keeps them as they are)."""
    flat: dict[str, np.ndarray] = {}
    for name, values in arrays.items():
        if name in SET_ARRAYS:
            for i, s in enumerate(sets):
                flat[f"{prefix}{SET_ARRAYS[name]}_{i}"] = orient(values[s])
        elif name == GROUPS:
            for i, group in enumerate(values.values()):
                flat[f"{prefix}group_{i}"] = orient(group)
        else:
            flat[f"{prefix}{'top1' if name == TOKENS else name}"] = orient(values)
    return flat


def disk_kinds(
    prefix: str, fields: tuple[str, ...], n_sets: int, n_groups: int = 0
) -> dict[str, str]:
    """The name on disk of each array of one lens, with its dtype kind (``"f"`` or ``"i"``)."""
    kinds = {f"{prefix}{field}": "i" if is_integer(field) else "f" for field in fields}
    kinds[f"{prefix}top1"] = "i"
    for name, short in SET_ARRAYS.items():
        for i in range(n_sets):
            kinds[f"{prefix}{short}_{i}"] = "i" if is_integer(name) else "f"
    for i in range(n_groups):
        kinds[f"{prefix}group_{i}"] = "f"
    return kinds


def from_disk(
    take: Callable[[str, str], np.ndarray],
    prefix: str,
    fields: tuple[str, ...],
    sets: list[str],
    orient: Callable = lambda a: a,
    groups: list[str] = (),
) -> dict[str, Any]:
    """One lens's arrays read back: ``take(name on disk, dtype kind)`` gives each (checked by
    the caller), ``orient`` turns it back into ``[n_layers, n_prompts]``; ``groups`` names the
    token groups a data set made with groups holds."""
    arrays: dict[str, Any] = {
        field: orient(take(f"{prefix}{field}", "i" if is_integer(field) else "f"))
        for field in fields
    }
    arrays[TOKENS] = orient(take(f"{prefix}top1", "i"))
    for name, short in SET_ARRAYS.items():
        kind = "i" if is_integer(name) else "f"
        arrays[name] = {s: orient(take(f"{prefix}{short}_{i}", kind)) for i, s in enumerate(sets)}
    if groups:
        arrays[GROUPS] = {g: orient(take(f"{prefix}group_{i}", "f")) for i, g in enumerate(groups)}
    return arrays
