"""Argument checks shared by the entry points, the step, the widget and the plot.

Each raises before any expensive work, naming the argument, what was given and what is allowed.
numpy integers, floats and booleans are accepted wherever Python's are.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "TextError",
    "check_axes",
    "check_bool",
    "check_choice",
    "check_float",
    "check_index",
    "check_int",
    "check_model",
    "check_path",
    "check_str",
    "check_text",
    "is_nnsight_model",
]

MODEL_ALLOWED = "a loaded model such as MuranoModel(...) or load_demo_model()"
"""What every entry point allows as a model, in the words of :func:`check_model`'s message."""


def check_model(model: Any, argument: str = "model") -> Any:
    """Checks that ``model`` is a loaded model backend, the same way at every entry point.

    Call it first thing, before any other argument check or model work. The message names
    ``argument``, what was given (its type and a short repr) and what is allowed, with a hint
    for the usual mistakes: a hub id or a folder (load it with ``MuranoModel``), a Hugging Face
    or torch model object, an nnsight model (wrap it with ``MuranoModel(lm,
    backend="nnsight")``), or a model on the ``meta`` device (it has no weights to run).

    Args:
        model: What was given.
        argument: The argument's name in the caller's signature (``"model_a"``, ...).

    Returns:
        ``model`` itself.

    Raises:
        TypeError: If ``model`` lacks a member of
            :class:`~murano_widgets.backends.contract.ModelBackend`.
        ValueError: If its ``device`` is the ``meta`` device.
    """
    # Here, not at the top: it imports torch, which the plain checks do not need.
    from murano_widgets.backends.contract import ModelBackend

    if isinstance(model, ModelBackend):
        device = getattr(model, "device", None)
        if getattr(device, "type", device) == "meta":
            raise ValueError(
                f"{argument} must be {MODEL_ALLOWED}; got {_given(model)} whose device is "
                "'meta': a model on the meta device has no weights to run; load it on 'cpu' "
                "or 'cuda', e.g. MuranoModel(..., device='cpu')"
            )
        return model
    raise TypeError(f"{argument} must be {MODEL_ALLOWED}; got {_given(model)}{_model_hint(model)}")


def _given(model: Any) -> str:
    """The type of what was given, and a short repr (not a torch module's: it is many lines)."""
    if is_nnsight_model(model) or _is_torch_module(model):
        return type(model).__name__
    return f"{type(model).__name__} {_short_repr(model)}"


def _model_hint(model: Any) -> str:
    """What to do instead, for the usual things passed where a model goes."""
    if isinstance(model, (str, os.PathLike)):
        where = os.fspath(model)
        where = where if isinstance(where, str) else os.fsdecode(where)
        return f": to load that model, write MuranoModel({where!r})"
    if is_nnsight_model(model):
        return (
            ": an nnsight model is not a model backend yet; wrap it: "
            'MuranoModel(lm, backend="nnsight")'
        )
    if _is_torch_module(model):
        if not any(cls.__name__ == "PreTrainedModel" for cls in type(model).__mro__):
            return (
                ": a torch module is not a model backend; MuranoModel loads Hugging Face "
                "causal language models, from a hub id or a folder"
            )
        return (
            ": a Hugging Face model object is not a model backend; save it with "
            "model.save_pretrained(folder) and tokenizer.save_pretrained(folder), then load "
            "MuranoModel(folder), or wrap it in nnsight, lm = nnsight.LanguageModel(model, "
            'tokenizer=tokenizer), and pass MuranoModel(lm, backend="nnsight")'
        )
    if model is None:
        return ": load one first, e.g. model = load_demo_model()"
    # Here, not at the top, as in check_model: the contract imports torch.
    from murano_widgets.backends.contract import PROPERTIES

    missing = [
        name
        for name in (*PROPERTIES, "trace", "layer", "project_on_vocab", "unembed")
        if not _has(model, name)
    ]
    return f", which lacks {', '.join(missing)}" if missing else ""


def is_nnsight_model(value: Any) -> bool:
    """Whether ``value`` is an nnsight model wrapper (``LanguageModel``, nnterp's
    ``StandardizedTransformer``, ...): a tracer around a torch module, told by what it has
    because nnsight's class tree differs between versions."""
    import torch

    return isinstance(_get(value, "_module"), torch.nn.Module) and callable(_get(value, "trace"))


def _is_torch_module(value: Any) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)


def _get(value: Any, name: str) -> Any:
    try:
        return getattr(value, name, None)
    except Exception:  # an odd __getattr__ (an nnsight envoy's) may raise anything
        return None


def _has(value: Any, name: str) -> bool:
    try:
        return hasattr(value, name)
    except Exception:
        return False


def _short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters (with "…" when cut)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def check_layer(
    value: Any, layers: list[int], type_error: type = TypeError, value_error: type = ValueError
) -> int:
    """``value`` as a model layer that is one of a result's rows (``layers``, ascending).

    Raises:
        type_error: For a non-integer.
        value_error: For a layer the result does not have, naming the ones it has. A widget's
            trait validation passes its trait error type for both.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise type_error(f"layer must be an int, got {type(value).__name__} {value!r}")
    if int(value) not in layers:
        contiguous = layers == list(range(layers[0], layers[-1] + 1))
        allowed = (
            f"from {layers[0]} to {layers[-1]} (the result's layers)"
            if contiguous
            else f"one of the result's layers {layers}"
        )
        raise value_error(f"layer must be {allowed}; got {value}")
    return int(value)


def check_float(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite ``float`` in the range given; ints and numpy numbers are accepted.

    Args:
        name: The argument's name, for the message.
        value: What was given.
        low, high: The bounds (``None``: unbounded).
        low_open, high_open: Whether the bound itself is excluded.

    Raises:
        ValueError: For a bool, a string, ``None`` or anything that is not a real number, a NaN
            or an infinity, or a number out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(
            f"{name} must be a number, got {type(value).__name__} {_short_repr(value)}"
        )
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range (10**400)
        number = math.inf if value > 0 else -math.inf
    too_low = low is not None and (number <= low if low_open else number < low)
    too_high = high is not None and (number >= high if high_open else number > high)
    if not math.isfinite(number) or too_low or too_high:
        if low is not None and high is not None:
            allowed = f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        elif low is not None:
            allowed = f"{'above' if low_open else 'at least'} {low}"
        elif high is not None:
            allowed = f"{'below' if high_open else 'at most'} {high}"
        else:
            allowed = "finite"
        raise ValueError(f"{name} must be a number {allowed}, got {value!r}")
    return number


def check_str(name: str, value: Any, *, optional: bool = False, empty: bool = False) -> str | None:
    """``value`` as a string that can be written out (encoded as UTF-8).

    Args:
        name: The argument's name, for the message.
        value: What was given.
        optional: Whether ``None`` is allowed (and returned as is).
        empty: Whether the empty (or all-white-space) string is allowed.

    Raises:
        TypeError: For anything that is not a string (a list of strings included).
        ValueError: For an empty string (unless allowed), or one holding a lone surrogate.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        allowed = "a string or None" if optional else "a string"
        raise TypeError(
            f"{name} must be {allowed}, got {type(value).__name__} {_short_repr(value)}"
        )
    if not empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{name} holds a lone surrogate U+{ord(value[error.start]):04X} at character "
            f"{error.start} ({value[max(0, error.start - 10) : error.start + 10]!r}), which "
            "cannot be written as UTF-8: text must be valid Unicode"
        ) from None
    return value


class TextError(TypeError, ValueError):
    """A text a user gave (a prompt, an answer, a foil, a target, a chat message, a system
    prompt) that the package cannot use: the one error of :func:`check_text`. It is a
    ``TypeError`` and a ``ValueError`` both, so code that caught either still does."""


def check_text(
    value: Any,
    where: str,
    *,
    blank: bool = False,
    optional: bool = False,
    role: str = "",
) -> str | None:
    """The one check of every text a user gives; its error names the argument and the index.

    A text is a ``str`` (not bytes, a number or a list), not empty, not only white space
    (unless ``blank``: a target or an answer may be a lone space token), and valid Unicode (no
    lone surrogate: no tokenizer can encode one).

    Args:
        value: What was given.
        where: The argument and its index as the user wrote them: ``"answers[2][1]"``.
        blank: Whether white space alone is a text (not the empty string).
        optional: Whether ``None`` is allowed (returned as is).
        role: What the text is, for the message (``"a prompt needs a visible character"``).

    Raises:
        TextError: ``"answers[2][1]: expected a non-empty string, got 3 (int)"``.
    """
    if value is None and optional:
        return None
    expected = "a non-empty string" + (" or None" if optional else "")
    if not isinstance(value, str):
        raise TextError(f"{where}: expected {expected}, got {_short_repr(value)} ({_kind(value)})")
    if value == "" or (not blank and not value.strip()):
        what = "the empty string" if value == "" else "only white space"
        need = f": {role}" if role else ""
        raise TextError(f"{where}: expected {expected}, got {value!r} ({what}){need}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise TextError(
            f"{where}: expected valid Unicode text, got one that holds a lone surrogate "
            f"U+{ord(value[error.start]):04X} at character {error.start} "
            f"({value[max(0, error.start - 10) : error.start + 10]!r}), which no tokenizer "
            "can encode"
        ) from None
    return value


def _kind(value: Any) -> str:
    """The type of ``value`` for a message, with a hint for the usual slips."""
    name = type(value).__name__
    if isinstance(value, dict):
        return f"{name}; rows of a data set: pass one column, e.g. ds['prompt']"
    return name


def check_choice(name: str, value: Any, allowed: Any, error: type = ValueError) -> str:
    """``value`` as one of the strings in ``allowed`` (a metric name, a mode).

    A list, an array or any other unhashable value is an error like any wrong name, not a raw
    ``TypeError`` from the lookup.

    Raises:
        error: Naming ``name``, what was given and the allowed values.
    """
    if not isinstance(value, str) or value not in allowed:
        given = _short_repr(value)
        if not isinstance(value, str):
            given = f"{type(value).__name__} {given}"
        raise error(f"{name} must be one of {', '.join(map(str, allowed))}; got {given}")
    return value


def check_axes(value: Any, name: str = "ax") -> Axes | None:
    """``value`` as matplotlib ``Axes`` to draw into, or ``None`` for a new figure.

    Raises:
        TypeError: For anything else.
    """
    if value is None:
        return None
    from matplotlib.axes import Axes

    if not isinstance(value, Axes):
        raise TypeError(
            f"{name} must be matplotlib Axes (e.g. fig, ax = plt.subplots()) or None; "
            f"got {type(value).__name__} {_short_repr(value)}"
        )
    return value


def check_path(name: str, value: Any) -> Any:
    """``value`` as a file or folder name: a non-empty ``str`` or ``os.PathLike`` without NUL.

    Raises:
        TypeError: For anything else (``None``, a number, bytes).
        ValueError: For an empty name, or one holding a NUL character (no file system
            accepts it; ``open`` would raise a bare ``ValueError`` without naming the argument).
    """
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"{name} must be a file or folder name (a str or a pathlib.Path); got "
            f"{type(value).__name__} {_short_repr(value)}"
        )
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text or "\x00" in text:
        raise ValueError(
            f"{name} must be a non-empty file or folder name without NUL characters; "
            f"got {_short_repr(value)}"
        )
    return value
