"""The progress bar of a data-set run, telling the truth about a stream.

tqdm's own rate and time left count every update alike; a resumed run's batches read back from
its folder would make them lie. Here the rates are the prompts and tokens *run* per second of
running (batches read back from shards count as done, not as speed), the time left follows
from them and the prompts still to run, and for a stream of unknown length the bar says that
the total, and so the time left, is unknown. A remote run also shows its job's state
(``received``, ``queued``, ``running``, ...), as nnsight reports it.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Progress"]


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


class Progress:
    """A tqdm bar over prompts with honest rates (see the module's description).

    Args:
        total: The number of prompts, or ``None`` for a stream of unknown length.
        enabled: Show it (``progress=`` of ``lens_dataset``).
        desc: Its label.
    """

    def __init__(self, total: int | None, enabled: bool, desc: str = "lens_dataset") -> None:
        from tqdm.auto import tqdm

        self.total = total
        self.run_prompts = 0
        self.run_tokens = 0
        self.resumed = 0
        self.seconds = 0.0
        self.state: str | None = None
        self.jobs = 0
        self._since: float | None = None
        known = "{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}" if total else "{n_fmt}"
        self.bar = tqdm(
            total=total,
            desc=desc if total else f"{desc} (total unknown)",
            unit="prompt",
            leave=False,
            disable=not enabled,
            bar_format="{desc}: " + known + " prompts [{elapsed}{postfix}]",
        )

    def start(self) -> None:
        """A batch starts running (its time counts towards the rates)."""
        self._since = time.perf_counter()

    def ran(self, prompts: int, tokens: int) -> None:
        """A batch of ``prompts`` prompts and ``tokens`` real tokens has run."""
        if self._since is not None:
            self.seconds += time.perf_counter() - self._since
            self._since = None
        self.run_prompts += prompts
        self.run_tokens += tokens
        self.bar.update(prompts)
        self._show()

    def read_back(self, prompts: int) -> None:
        """A batch was read back from the run's folder (done before; not counted as speed)."""
        self.resumed += prompts
        self.bar.update(prompts)
        self._show()

    def job(self, state: str | None, job_id: str | None = None) -> None:
        """A remote job's state, as NDIF reports it (``received``, ``queued``, ``running``,
        ``completed``, ``error``), and its id; ``None`` once no job is out."""
        if state is None:
            self.state = None
        else:
            short = f" {job_id[:8]}" if job_id else ""
            self.state = f"{short} {state.lower()}".strip()
            if state.upper() == "COMPLETED":
                self.jobs += 1
        self._show()

    def _show(self) -> None:
        parts = []
        if self.seconds > 0 and self.run_prompts:
            rate = self.run_prompts / self.seconds
            parts.append(f"{rate:,.0f} prompts/s, {self.run_tokens / self.seconds:,.0f} tokens/s")
            if self.total is not None:
                left = max(0, self.total - self.bar.n) / rate
                parts.append(f"{_duration(left)} left")
            else:
                parts.append("time left unknown (a stream of unknown length)")
        if self.resumed:
            parts.append(f"{self.resumed:,} read back from the folder")
        if self.state:
            parts.append(f"NDIF job {self.state} ({self.jobs} completed)")
        self.bar.set_postfix_str(", ".join(parts), refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
