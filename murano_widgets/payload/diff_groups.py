"""Token groups in the diff: the change ``b - a`` in each group's probability.

A result run with ``groups={...}`` holds ``group_probs`` (``[L, n, seq, n_groups]``). Where both
sides of a comparison hold a group of one name (two prompts, or two lenses, run with the same
groups), the diff shows the change in its probability as one more change metric, named
``delta_group_<j>`` (``j``: the group's index in ``a``), in the codec and the ``meta["metrics"]``
entry of every probability change (:func:`murano_widgets.payload.diff._change_sections`): int16
``raw / 32767`` for the change, uint16 ``raw / 65535`` for each side, ``known_<name>`` where both
sides have a value on an aligned cell. A comparison without groups sends nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from murano_widgets.comparison.compare import LensComparison, _gather
from murano_widgets.metrics import METRICS, change_metric, nice_ceil
from murano_widgets.payload.codec import U16, quantise

__all__ = ["GROUP_CHANGE_PREFIX", "group_change_metrics", "group_sides"]

#: A group's change metric is this and the group's index in ``a``.
GROUP_CHANGE_PREFIX = "delta_group_"
_I16 = np.iinfo(np.int16).max


def group_sides(comparison: LensComparison, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Group ``name``'s probability on both sides, on ``a``'s grid (``b``'s moved to each
    cell's partner), NaN where the cell is not aligned or a side has no value.

    Raises:
        ValueError: If either side has no group of that name.
    """
    a, b = comparison.a, comparison.b
    for side, result in (("a", a), ("b", b)):
        if result.group_probs is None or name not in (result.group_names or []):
            raise ValueError(f"{side} has no token group {name!r}: its change cannot be computed")
    assert a.group_names is not None and b.group_names is not None
    assert a.group_probs is not None and b.group_probs is not None
    nan = float("nan")
    on_a = a.group_probs[..., a.group_names.index(name)].detach().cpu().float()
    on_b = _gather(
        b.group_probs[..., b.group_names.index(name)].detach().cpu().float(),
        comparison.layer_rows,
        comparison.positions,
        nan,
    )
    known = comparison.aligned & torch.isfinite(on_a) & torch.isfinite(on_b)
    return on_a.masked_fill(~known, nan), on_b.masked_fill(~known, nan)


def group_change_metrics(
    comparison: LensComparison,
    cells: Callable[[torch.Tensor], np.ndarray],
    arrays: dict[str, np.ndarray],
    scales: dict[str, float],
) -> list[dict[str, Any]]:
    """The change in each group both sides hold: its sections (added to ``arrays`` and
    ``scales``) and its ``meta["metrics"]`` entry, in ``a``'s group order; [] without."""
    names_b = set(comparison.b.group_names or [])
    entries = []
    for j, group in enumerate(comparison.a.group_names or []):
        if group not in names_b or comparison.b.group_probs is None:
            continue
        name = f"{GROUP_CHANGE_PREFIX}{j}"
        values_a, values_b = (cells(t).astype(np.float64) for t in group_sides(comparison, group))
        delta = values_b - values_a
        known = np.isfinite(delta)
        largest = float(np.abs(delta[known]).max()) if known.any() else 0.0
        names = {"a": f"group_{j}_a", "b": f"group_{j}_b", "known": f"known_{name}"}
        arrays[names["known"]] = known.astype(np.uint8)
        arrays[name] = quantise(delta, 1.0, np.int16)
        scales[name] = 1 / _I16
        for side, values in (("a", values_a), ("b", values_b)):
            arrays[names[side]] = quantise(values, 1.0, np.uint16)
            scales[names[side]] = 1 / U16
        bound = min(1.0, nice_ceil(max(largest, 0.01)))
        metric = change_metric(name, METRICS["group"])
        label = (METRICS["group"].target_label or "").replace("{target}", group)
        available = bool(known.any())
        entries.append(
            {
                **metric.as_json(),
                "label": f"Change in {label[:1].lower()}{label[1:]} (b − a)",
                "short": f"Δ {group}",
                "domain": [-bound, bound],
                "available": available,
                "unavailable_reason": None
                if available
                else "no aligned cell has a value on both sides",
                "change": names,
                "group": group,
            }
        )
    return entries
