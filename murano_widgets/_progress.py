"""The one progress bar of the package: tqdm where someone watches it, lines where a log reads it.

tqdm redraws its line with a carriage return up to ten times a second. On a terminal or in a
notebook (tqdm's widget) that is a moving bar; written to a file, a pipe or a CI log it is a
frame per redraw run together on one line: a 3,000-prompt data set left tens of kilobytes of
``\\r`` frames in a log, and an NDIF job's elapsed time one frame per tick. Where the stream is not
a terminal and no notebook shows a widget, :func:`progress_bar` gives a :class:`LineBar`
instead, which prints a line only when the state changes: the description (``NDIF job 1a2b:
running``), each tenth of the total, and the end.

Every bar of the package (data sets, lens agreement, tuned-lens training, Jacobian-lens
fitting, NDIF job states, the command line's steps) comes from :func:`progress_bar`.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

__all__ = ["LineBar", "progress_bar"]

#: A line per this share of the total on a non-terminal (and one at the end).
LINE_STEP = 0.1


def progress_bar(
    *,
    total: int | None,
    desc: str,
    unit: str = "it",
    enabled: bool = True,
    leave: bool = False,
    initial: int = 0,
    bar_format: str | None = None,
    file: TextIO | None = None,
) -> Any:
    """A progress bar with tqdm's small surface (``update``, ``set_description_str``,
    ``set_postfix_str``, ``refresh``, ``write``, ``close``, ``n``).

    Args:
        total: The number of steps, or ``None`` when unknown.
        desc: Its label.
        unit: What a step is (``"prompt"``, ``"step"``).
        enabled: Show it at all (the calls' ``progress=``).
        leave: Keep tqdm's line once done (a :class:`LineBar` always ends with a line).
        initial: Steps done before (a resumed run).
        bar_format: tqdm's format, on a terminal or in a notebook.
        file: Where it writes; standard error by default.

    Returns:
        ``tqdm.auto.tqdm`` in a notebook or on a terminal, else a :class:`LineBar`.
    """
    stream = sys.stderr if file is None else file
    if enabled and not _in_notebook() and not _is_terminal(stream):
        return LineBar(total=total, desc=desc, unit=unit, initial=initial, file=stream)
    from tqdm.auto import tqdm

    options: dict[str, Any] = {"bar_format": bar_format} if bar_format else {}
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        leave=leave,
        initial=initial,
        disable=not enabled,
        file=stream,
        **options,
    )


class LineBar:
    """A progress report for logs: a line when its state changes, never a redrawn frame.

    A line reads ``lens_dataset: 300/3000 prompts (10%) [00:04, 75 prompts/s, ...]``: the
    description, the count, the share where the total is known, the time since the start and
    the postfix (rates and the like, shown but not a change of state on their own).
    """

    def __init__(
        self,
        *,
        total: int | None,
        desc: str,
        unit: str = "it",
        initial: int = 0,
        file: TextIO | None = None,
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.n = initial
        self.disable = False
        self.postfix = ""
        self._file = sys.stderr if file is None else file
        self._start = time.monotonic()
        self._shown_step = self._step()
        self._closed = False

    def update(self, n: int = 1) -> None:
        """``n`` more steps done; a line when that crosses a tenth of the total."""
        self.n += n
        step = self._step()
        if step != self._shown_step:
            self._shown_step = step
            self._line()

    def set_description_str(self, desc: str, refresh: bool = True) -> None:
        """A new state (``NDIF job 1a2b: running``): a line when it differs from the last."""
        if desc != self.desc:
            self.desc = desc
            self._line()

    set_description = set_description_str

    def set_postfix_str(self, postfix: str = "", refresh: bool = True) -> None:
        """Extra text for the next line (rates): not a change of state by itself."""
        self.postfix = postfix

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())

    def refresh(self) -> None:
        """Nothing: a log gets a line per change of state, not a frame per redraw."""

    def write(self, text: str, file: TextIO | None = None) -> None:
        """A message of its own line (an NDIF log line)."""
        print(text, file=self._file if file is None else file, flush=True)

    def close(self) -> None:
        """The last line, once (the count where it ended)."""
        if not self._closed:
            self._closed = True
            if self.n and not self._ended_on_a_line():
                self._line()

    def __enter__(self) -> LineBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _ended_on_a_line(self) -> bool:
        if self.total:
            return self._shown_step == self._steps_in_total() and self.n == self.total
        return self.n in _marks(self.n)

    def _steps_in_total(self) -> int:
        return round(1 / LINE_STEP)

    def _step(self) -> int:
        if not self.total:
            # A stream of unknown length: a line at 1, 2, 5, 10, 20, 50, ... steps.
            return sum(1 for mark in _marks(self.n) if mark <= self.n)
        return min(self._steps_in_total(), int(self.n / self.total / LINE_STEP + 1e-9))

    def _line(self) -> None:
        count = ""
        if self.n or self.total:  # a state alone (an NDIF job's) has no count to show
            count = f": {self.n}" + (f"/{self.total}" if self.total else "") + f" {self.unit}s"
            count += f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        seconds = round(time.monotonic() - self._start)
        elapsed = f"{seconds // 60:02d}:{seconds % 60:02d}"
        extra = f", {self.postfix}" if self.postfix else ""
        print(f"{self.desc}{count} [{elapsed}{extra}]", file=self._file, flush=True)


def _marks(n: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to ``n``."""
    marks, scale = [], 1
    while scale <= max(n, 1):
        marks += [mark * scale for mark in (1, 2, 5) if mark * scale <= n]
        scale *= 10
    return marks


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _in_notebook() -> bool:
    """Whether a Jupyter kernel runs this (tqdm.auto shows a widget there)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and hasattr(shell, "kernel")
