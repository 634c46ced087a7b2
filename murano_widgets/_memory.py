"""The process's memory: handing freed heap back to the operating system, and the preflight
that refuses a request too large for the free memory (or the user's budget) before any work.
The one place that does either."""

from __future__ import annotations

import ctypes
import importlib
import os
import re
from dataclasses import dataclass
from typing import Any


def return_freed_memory() -> None:
    """Hands the process's freed heap memory back to the operating system.

    glibc keeps freed memory for reuse, and the package's large buffers do not fit in the holes
    it leaves: without this, the forward pass's freed activations and the reduction's chunk
    buffers add up (0.5 GB of retained heap at 16 x 256 on GPT-2's shape), and a data set's
    peak creeps up batch after batch. The callers say when it is worth its cost: the next
    allocation faults the pages in again. Where there is no glibc there is nothing to do.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):
        return
    trim(0)


# -- the memory preflight ------------------------------------------------------------------------
#
# Options whose memory grows with the vocabulary, the positions or the data are checked here
# before the model runs: a request beyond the free memory (or the user's budget) is refused with
# the estimate, the option that causes it and what to do instead, instead of failing after the
# forward pass with the allocator's message, or of the kernel being OOM-killed.

_ENV_BUDGET = "MURANO_MEMORY_BUDGET"
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20}
_UNITS |= {"mib": 2**20, "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40}
_UNITS |= {"tib": 2**40}
_budget: int | None = None


class MemoryBudgetError(MemoryError):
    """A request the memory preflight refused before any work: its estimate is above the free
    memory or the budget set with :func:`set_memory_budget`."""


@dataclass(frozen=True)
class Need:
    """One part of a request's peak memory.

    Attributes:
        option: The option (or input) that causes it, as the user wrote it, e.g.
            ``"store_full_probs=True"``.
        nbytes: The estimate, in bytes.
        detail: How it is counted, e.g. ``"3 layers x 4 prompts x 19 positions x vocab 320 x 4
            bytes"``.
        instead: What to do instead, when this part is the reason for a refusal.
        device: Where it is allocated: ``"cpu"`` or a torch device string such as ``"cuda:0"``.
    """

    option: str
    nbytes: int
    detail: str = ""
    instead: str = ""
    device: str = "cpu"


def parse_bytes(value: Any, argument: str = "budget") -> int:
    """``value`` as a number of bytes: an int, or a string such as ``"8 GiB"`` or ``"512MB"``.

    Raises:
        ValueError: If it is not a non-negative whole number of bytes or such a string.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(
            f"{argument} must be a number of bytes or a string such as '8 GiB', got "
            f"{type(value).__name__} {value!r:.60}"
        )
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{argument} must be at least 0 bytes, got {value}")
        return value
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", value)
    if match is None or match.group(2).lower() not in _UNITS:
        raise ValueError(
            f"{argument} must be a number of bytes or a string such as '8 GiB' or '512MB', "
            f"got {value!r:.60}"
        )
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def set_memory_budget(budget: int | str | None) -> None:
    """Sets the most memory one request of the package may plan to use (``None``: no budget).

    Every option whose memory grows with the vocabulary, the positions or the data
    (``store_full_probs``, the full distributions a comparison keeps, a data set's arrays, a
    widget's payload, an export) is estimated before any work; a request above the free
    memory, or above this budget, raises :class:`MemoryBudgetError`. The environment variable
    ``MURANO_MEMORY_BUDGET`` sets it too (this call wins).

    Args:
        budget: Bytes (an int) or a string such as ``"8 GiB"``; ``None`` removes it.

    Raises:
        ValueError: If ``budget`` is not a size.
    """
    global _budget
    _budget = None if budget is None else parse_bytes(budget, "budget")


def memory_budget() -> int | None:
    """The budget of :func:`set_memory_budget`, else ``MURANO_MEMORY_BUDGET``'s, else ``None``."""
    if _budget is not None:
        return _budget
    text = os.environ.get(_ENV_BUDGET, "").strip()
    return parse_bytes(text, _ENV_BUDGET) if text else None


def free_memory(device: str = "cpu") -> tuple[int, str] | None:
    """The memory a new allocation on ``device`` can have now, and where that number is from.

    On the CPU: the smaller of the kernel's ``MemAvailable`` (psutil's ``available``, which
    reads it) and what the process's cgroup still allows; on a CUDA device,
    ``torch.cuda.mem_get_info`` plus what torch's caching allocator holds unused. ``None``
    where it cannot be known (then nothing is refused for want of memory, only above a budget).
    """
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return None
        free, _ = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + cached), f"free on {device} (torch.cuda.mem_get_info)"
    if device != "cpu":
        return None  # mps, xpu, ...: no portable query
    found: list[tuple[int, str]] = []
    try:
        # psutil (optional: where it is installed) also knows macOS's and Windows's memory.
        psutil = importlib.import_module("psutil")
        found.append((int(psutil.virtual_memory().available), "available (psutil)"))
    except ImportError:
        try:
            with open("/proc/meminfo") as meminfo:
                for line in meminfo:
                    if line.startswith("MemAvailable:"):
                        found.append((int(line.split()[1]) * 1024, "MemAvailable (/proc/meminfo)"))
        except OSError:
            pass
    try:
        with (
            open("/sys/fs/cgroup/memory.max") as limit,
            open("/sys/fs/cgroup/memory.current") as current,
        ):
            ceiling = limit.read().strip()
            if ceiling != "max":
                left = int(ceiling) - int(current.read().strip())
                found.append((max(left, 0), "left under the cgroup's memory.max"))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def format_bytes(nbytes: float) -> str:
    """``nbytes`` for people: ``"1.5 GiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(nbytes) < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def preflight(what: str, needs: list[Need]) -> None:
    """Refuses a request whose estimated peak is above the free memory or the budget.

    Each device is checked on its own (the CPU's parts against the CPU's free memory, a GPU's
    against that GPU's); the budget bounds each device's total as well.

    Args:
        what: The request, as the user made it, e.g. ``"LogitLens(...) on 64 prompts"``.
        needs: Its parts that grow with the vocabulary, the positions or the data.

    Raises:
        MemoryBudgetError: Before any work, naming the estimate, the option behind the largest
            part of it and what to do instead.
    """
    budget = memory_budget()
    for device in dict.fromkeys(need.device for need in needs):
        parts = [need for need in needs if need.device == device and need.nbytes > 0]
        total = sum(need.nbytes for need in parts)
        if not parts:
            continue
        limits = []
        if budget is not None:
            limits.append((budget, "the memory budget (murano_widgets.set_memory_budget)"))
        free = free_memory(device)
        if free is not None:
            limits.append(free)
        if not limits:
            continue
        limit, source = min(limits)
        if total <= limit:
            continue
        worst = max(parts, key=lambda need: need.nbytes)
        counted = f" ({worst.detail})" if worst.detail else ""
        others = "" if len(parts) == 1 else f" of the {format_bytes(total)} in all"
        raise MemoryBudgetError(
            f"{what} would need about {format_bytes(total)} on {device}, more than the "
            f"{format_bytes(limit)} {source}: {worst.option} alone takes "
            f"{format_bytes(worst.nbytes)}{others}{counted}. "
            f"{worst.instead or 'Give it less input.'} Nothing was run."
        )
