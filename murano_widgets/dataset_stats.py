"""Array work behind :class:`~murano_widgets.dataset.LensDataset`: bootstrap intervals and reading
saved files back with checks."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._checks import check_int

__all__ = ["bootstrap_means", "check_summary_args", "read_saved"]

# Resamples are drawn in blocks of about this many prompt indices, so that the index and count
# matrices stay a few tens of MB whatever the number of prompts and resamples.
_BLOCK_ELEMENTS = 1 << 22


def check_summary_args(ci: Any, n_boot: Any, seed: Any) -> tuple[float, int, int | None]:
    """Checks ``summary``'s interval settings.

    Raises:
        ValueError: For ``ci`` outside (0, 1), ``n_boot`` below 1, or a negative ``seed``.
        TypeError: For a ``ci`` that is not a number or a ``seed`` that is not an int or None.
    """
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.integer, np.floating)):
        raise TypeError(f"ci must be a number between 0 and 1 (e.g. 0.95), got {ci!r}")
    if not 0 < float(ci) < 1 or math.isnan(float(ci)):
        raise ValueError(f"ci must be between 0 and 1 exclusive (e.g. 0.95), got {ci!r}")
    n_boot = check_int("n_boot", n_boot, 1, None, None)
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
        seed = check_int("seed", seed, 0, None, None)
    return float(ci), n_boot, seed


def bootstrap_means(
    values: np.ndarray, *, ci: float, n_boot: int, seed: int | None
) -> dict[str, np.ndarray]:
    """Means over axis 0 with percentile-bootstrap intervals, ignoring NaN.

    Resample ``b`` is ``rng.integers(0, n, size=n, dtype=np.int32)`` with
    ``rng = np.random.default_rng(seed)``, drawn in order (the same stream as one draw per
    resample: 32-bit draws carry no state between calls beyond the generator's own). A
    resample's mean is the mean of the finite values it picked, computed for every column at
    once as ``counts @ values / counts @ finite`` from each prompt's pick count.

    Args:
        values: ``[n, ...]`` floats, NaN where missing.
        ci: The interval's coverage.
        n_boot: The number of resamples.
        seed: The generator's seed.

    Returns:
        ``mean``, ``low`` and ``high``, each of ``values.shape[1:]``.
    """
    n = values.shape[0]
    flat = values.reshape(n, -1).astype(np.float64)
    finite = np.isfinite(flat)
    filled = np.where(finite, flat, 0.0)
    weight = finite.astype(np.float64)
    with np.errstate(all="ignore"):
        mean = filled.sum(axis=0) / weight.sum(axis=0)
    boots = np.empty((n_boot, flat.shape[1]))
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // max(n, 1))
    for start in range(0, n_boot, block):
        k = min(block, n_boot - start)
        picks = rng.integers(0, n, size=(k, n), dtype=np.int32).astype(np.int64)
        picks += np.arange(k)[:, None] * n
        counts = np.bincount(picks.reshape(-1), minlength=k * n).reshape(k, n).astype(np.float64)
        with np.errstate(all="ignore"):
            boots[start : start + k] = (counts @ filled) / (counts @ weight)
    tail = (1.0 - ci) / 2.0 * 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: NaN, said so
        low, high = np.nanpercentile(boots, [tail, 100.0 - tail], axis=0)
    shape = values.shape[1:]
    return {"mean": mean.reshape(shape), "low": low.reshape(shape), "high": high.reshape(shape)}


def read_saved(
    npz_path: Path,
    json_path: Path,
    fmt: str,
    version: int,
    sha256: Callable[[Path], str],
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads a saved data set's sidecar and arrays, checking that they are whole and agree.

    Raises:
        FileNotFoundError: If either file is missing.
        ValueError: If the files are not this format, do not belong together, or disagree.
    """
    for path in (npz_path, json_path):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} does not exist: LensDataset.load needs both {npz_path.name} and "
                f"{json_path.name} (written by LensDataset.save)"
            )
    try:
        sidecar = json.loads(json_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{json_path} is not a LensDataset sidecar (not JSON: {error})") from None
    if not isinstance(sidecar, dict) or sidecar.get("format") != fmt:
        raise ValueError(f"{json_path} is not a LensDataset sidecar (no format {fmt!r})")
    if sidecar.get("format_version") != version:
        raise ValueError(
            f"{json_path} has format version {sidecar.get('format_version')!r}; this "
            f"murano_widgets reads version {version}"
        )
    if sha256(npz_path) != sidecar.get("npz_sha256"):
        raise ValueError(
            f"{npz_path} is not the file {json_path.name} was saved with (its sha256 differs): "
            "the pair was changed or mixed up; save the data set again"
        )
    with np.load(npz_path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    for key in ("prompts", "layers", "answer_sets", "answers", "named_sets", "token_strings"):
        if key not in sidecar:
            raise ValueError(f"{json_path} lacks {key!r}")
    shape = (len(sidecar["prompts"]), len(sidecar["layers"]))
    expected = {"entropy": "f", "kl_to_final": "f", "top1": "i"}
    for i, name in enumerate(sidecar["answer_sets"]):
        expected |= {f"prob_{i}": "f", f"rank_{i}": "i"}
        answers = sidecar["answers"].get(name)
        if not isinstance(answers, list) or len(answers) != shape[0]:
            raise ValueError(f"{json_path}: answer set {name!r} does not have {shape[0]} entries")
    for name, kind in expected.items():
        array = arrays.get(name)
        if array is None:
            raise ValueError(f"{npz_path} lacks the array {name!r}")
        if array.shape != shape or array.dtype.kind != kind:
            raise ValueError(
                f"{npz_path}: {name} has shape {array.shape} and dtype {array.dtype}, expected "
                f"{shape} of kind {kind!r} (prompts x layers)"
            )
    return sidecar, arrays
