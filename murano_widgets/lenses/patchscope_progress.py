"""The progress of a Patchscope's run: cells read out of all, once the run is a long one.

A Patchscope costs a forward pass (from the patched block up) per cell, so a run of many
prompts and layers can take minutes where the logit lens takes a second. The step tells the
lens how many cells it will ask for (:meth:`PatchscopeLens.start_run`); each batch of patched
passes counts its cells here. The bar is the package's one (:func:`murano_widgets._progress.
progress_bar`: tqdm in a notebook or on a terminal, a line per tenth in a log), and with
``progress=None`` it appears only once the run has taken :data:`LONG_RUN_SECONDS`, so a short
run prints nothing.
"""

from __future__ import annotations

import time
from typing import Any

from murano_widgets._progress import progress_bar

__all__ = ["LONG_RUN_SECONDS", "CellProgress"]

#: How long a run goes (with ``progress=None``) before its bar appears.
LONG_RUN_SECONDS = 2.0


class CellProgress:
    """Counts a run's cells; shows the bar as ``progress`` says (see the module).

    Args:
        total: The cells the run will read.
        progress: ``None``: show once the run has taken :data:`LONG_RUN_SECONDS`; ``True``:
            from the start; ``False``: never.
        desc: The bar's label.
    """

    def __init__(self, total: int, progress: bool | None, desc: str) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.desc = desc
        self.bar: Any = None
        self._start = time.monotonic()
        if progress is True:
            self._show()

    def update(self, cells: int) -> None:
        """``cells`` more read; the bar closes when every cell is (later calls, from outside
        the run, count nothing)."""
        if self.done >= self.total:
            return
        self.done += cells
        if self.bar is None and self.progress is None and self.done < self.total:
            if time.monotonic() - self._start >= LONG_RUN_SECONDS:
                self._show()
        elif self.bar is not None:
            self.bar.update(cells)
        if self.bar is not None and self.done >= self.total:
            self.bar.close()

    def _show(self) -> None:
        self.bar = progress_bar(
            total=self.total, desc=self.desc, unit="cell", initial=self.done, leave=True
        )
