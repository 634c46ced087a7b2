"""The fixture the JS overview test reads: a buffer and its pooled overview, pooled by numpy.

``js/tests/overview_pool.test.mjs`` pools the same buffer with ``poolColumns``
(``js/src/view/overview_pool.js``) and compares. The expectation is numpy's own: a reshape to
``[L, width, n / width]`` and a ``nanmax`` / ``nanmean`` over the last axis where ``width``
divides ``n``, ``np.fmax.reduceat`` / ``np.add.reduceat`` over the buckets' starts where it does
not. ``tests/test_overview_pool_fixture.py`` checks that the committed file is what this writes;
after a change, run ``.venv/bin/python tests/overview_pool_fixture.py``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).resolve().parents[1] / "js" / "tests" / "fixtures" / "overview_pool.json"
L, N = 3, 24
WIDTHS = (24, 12, 8, 6, 4, 1, 5, 7)


def buffer() -> np.ndarray:
    """``[L, N]`` float32 values with missing (NaN) cells, one bucket of width 8 all NaN."""
    rng = np.random.default_rng(51)
    values = rng.random((L, N), dtype=np.float32) * 10
    values[0, 3] = np.nan
    values[1, 9:12] = np.nan  # row 1, positions 9..11: bucket 3 of width 8 is all missing
    values[2, 0] = np.nan
    return values


def pooled(values: np.ndarray, width: int, mode: str) -> np.ndarray:
    """``[L, width]``: the max or mean of each pixel column's positions, NaN left out."""
    n = values.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN bucket pools to NaN
        if n % width == 0:
            blocks = values.reshape(values.shape[0], width, n // width)
            return np.nanmax(blocks, axis=-1) if mode == "max" else np.nanmean(blocks, axis=-1)
        starts = (np.arange(width) * n) // width
        if mode == "max":
            return np.fmax.reduceat(values, starts, axis=1)
        finite = ~np.isnan(values)
        sums = np.add.reduceat(np.where(finite, values, 0), starts, axis=1)
        counts = np.add.reduceat(finite.astype(np.int64), starts, axis=1)
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def listed(a: np.ndarray) -> list:
    """Row-major values as JSON numbers, NaN as null."""
    return [None if np.isnan(v) else float(v) for v in a.astype(np.float64).ravel()]


def render() -> str:
    values = buffer()
    cases = [
        {"width": w, "mode": mode, "expected": listed(pooled(values, w, mode))}
        for w in WIDTHS
        for mode in ("max", "mean")
    ]
    doc = {"L": L, "n": N, "values": listed(values), "cases": cases}
    return json.dumps(doc, indent=1) + "\n"


if __name__ == "__main__":
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(render(), encoding="utf-8")
    print(f"wrote {FIXTURE}")
