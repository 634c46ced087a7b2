"""Argument checks shared by the step, the widget and the plot.

Each raises before any expensive work, naming the argument, what was given and what is allowed.
numpy integers and booleans are accepted wherever Python's are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_bool", "check_index", "check_int"]


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a ``bool``; ``True``/``False`` or numpy's booleans only.

    Raises:
        TypeError: For anything else (``1``, ``"yes"``, ``None``).
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def check_int(
    name: str, value: Any, low: int | None, high: int | None, high_means: str | None
) -> int:
    """``value`` as an ``int`` in ``[low, high]`` (either bound may be ``None``).

    Raises:
        ValueError: For a bool, a float or anything that is not an integer, or an integer out
            of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            allowed = f"at least {low}"
        else:
            allowed = f"from {low} to {high}" + (f" ({high_means})" if high_means else "")
        raise ValueError(f"{name} must be an int {allowed}, got {value}")
    return value


def check_index(name: str, value: Any, size: int, what: str, error: type = ValueError) -> int:
    """``value`` as an index into ``size`` things (``what``, e.g. "prompts").

    Raises:
        error: For a non-integer, or an index out of ``range(size)``; ``error`` lets the widget
            raise its trait error type.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise error(
            f"{name} must be an int from 0 to {size - 1} (the result has {size} {what}); "
            f"got {value}"
        )
    return int(value)
