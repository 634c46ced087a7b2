"""The one byte codec of every payload: quantising, little-endian sections and their decoding.

Both payloads (the heatmap's, :mod:`murano_widgets.payload.lens`; the diff's,
:mod:`murano_widgets.payload.diff`) store a value ``v`` in ``[0, top]`` (or ``[-top, top]`` for
a signed type) as ``round(v / top * levels)`` in an integer type, with ``scale = top / levels``
in the section's spec: the front end reads ``raw * scale``. NaN is stored as 0 (a missing cell
says so in a mask section of its own), and values beyond ``top`` as ``top``. A value that is not 0
but lies within half a level of it is stored as one level (of its sign), so that a stored 0 is
an exact 0: a probability of 3e-6 reads back as 1/65535 and is shown as "<0.1%", never "0%".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["U16", "decode_sections", "finite_max", "quantise", "section_bytes", "section_specs"]

U16 = 65535


def quantise(values: Any, top: float, dtype: type) -> np.ndarray:
    """``values`` on ``dtype``'s integer levels over ``[0, top]`` (``[-top, top]`` if signed).

    Returns:
        The raw integers; each reads back as ``raw * top / levels``, within half a level, except
        that a non-zero value within half a level of 0 reads back as one level (of its sign):
        only an exact 0 (or NaN) is stored as 0.
    """
    levels = np.iinfo(dtype).max
    low = -1.0 if np.iinfo(dtype).min < 0 else 0.0
    scaled = np.nan_to_num(np.asarray(values, dtype=np.float64) / top, nan=0.0, posinf=1.0)
    scaled = np.clip(scaled, low, 1.0) * levels
    raw = np.round(scaled)
    # Rounding would make a small non-zero value 0, which reads as an exact 0 ("0%").
    raw = np.where((raw == 0) & (scaled != 0), np.sign(scaled), raw)
    return raw.astype(dtype)


def finite_max(values: torch.Tensor | np.ndarray | None, default: float) -> float:
    """The largest finite value (the ``top`` of a bits section), or ``default`` if none is
    above 0."""
    if values is None:
        return default
    array = np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values)
    finite = array[np.isfinite(array)]
    return float(finite.max()) if finite.size and float(finite.max()) > 0 else default


def section_bytes(arrays: dict[str, np.ndarray]) -> dict[str, bytes]:
    """Arrays as the little-endian bytes the front end reads."""
    return {
        name: np.ascontiguousarray(array)
        .astype(array.dtype.newbyteorder("<"), copy=False)
        .tobytes()
        for name, array in arrays.items()
    }


def section_specs(
    arrays: dict[str, np.ndarray], scales: dict[str, float]
) -> dict[str, dict[str, Any]]:
    """Each section's ``dtype``, ``shape`` and ``scale`` (1 where none is given): the metadata
    the front end decodes the bytes with."""
    return {
        name: {
            "dtype": array.dtype.name,
            "shape": list(array.shape),
            "scale": scales.get(name, 1.0),
        }
        for name, array in arrays.items()
    }


def decode_sections(meta: dict[str, Any], sections: dict[str, bytes]) -> dict[str, np.ndarray]:
    """Decodes sections back to arrays of values (``raw * scale``), as the front end does."""
    out = {}
    for name, data in sections.items():
        info = meta["sections"][name]
        raw = np.frombuffer(data, dtype=np.dtype(info["dtype"]).newbyteorder("<"))
        raw = raw.reshape(info["shape"])
        out[name] = raw if info["scale"] == 1.0 else raw.astype(np.float64) * info["scale"]
    return out
