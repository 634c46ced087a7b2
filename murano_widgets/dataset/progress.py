"""The progress bar of a data-set run, telling the truth about a stream.

tqdm's own rate and time left count every update alike; a resumed run's batches read back from
its folder would make them lie. Here the rates are the prompts and tokens *run* per second of
running (batches read back from shards count as done, not as speed), the time left follows
from them and the prompts still to run, and for a stream of unknown length the bar says that
the total, and so the time left, is unknown. A remote run also shows its jobs' states
(``received``, ``queued``, ``running``, ...), as nnsight reports them, counted by state when
several are in flight. With batches running at once, the time running is the time during which
any batch ran (not the sum of theirs), so the rates stay true.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from murano_widgets._progress import progress_bar

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
        self.total = total
        self.run_prompts = 0
        self.run_tokens = 0
        self.resumed = 0
        self.seconds = 0.0
        self.state: str | None = None
        self.jobs = 0
        self._states: dict[str, str] = {}
        self._done: set[str] = set()
        self._running = 0
        self._since: float | None = None
        # Remote jobs report their states from the threads that wait for them.
        self._lock = threading.RLock()
        known = "{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}" if total else "{n_fmt}"
        self.desc = desc if total else f"{desc} (total unknown)"
        # A log (not a terminal, no notebook) gets a line per tenth and per job state.
        self.bar = progress_bar(
            total=total,
            desc=self.desc,
            unit="prompt",
            enabled=enabled,
            bar_format="{desc}: " + known + " prompts [{elapsed}{postfix}]",
        )

    def start(self) -> None:
        """A batch starts running (its time counts towards the rates)."""
        with self._lock:
            if self._running == 0:
                self._since = time.perf_counter()
            self._running += 1

    def ran(self, prompts: int, tokens: int) -> None:
        """A batch of ``prompts`` prompts and ``tokens`` real tokens has run."""
        with self._lock:
            self._running = max(0, self._running - 1)
            now = time.perf_counter()
            if self._since is not None:
                self.seconds += now - self._since
                self._since = now if self._running else None
            self.run_prompts += prompts
            self.run_tokens += tokens
            self._show(advance=prompts)

    def read_back(self, prompts: int) -> None:
        """A batch was read back from the run's folder (done before; not counted as speed)."""
        with self._lock:
            self.resumed += prompts
            self._show(advance=prompts)

    def job(self, state: str | None, job_id: str | None = None) -> None:
        """A remote job's state, as NDIF reports it (``received``, ``queued``, ``running``,
        ``completed``, ``error``), and its id; ``None`` once no job is out."""
        with self._lock:
            if state is None:
                self._states.clear()
            else:
                key = job_id or ""
                if state.upper() == "COMPLETED":
                    # nnsight may report a job's completion more than once: count it once.
                    self._states.pop(key, None)
                    if key not in self._done:
                        self.jobs += 1
                        self._done.add(key)
                else:
                    self._states[key] = state.lower()
            self.state = _job_states(self._states)
            self._show()

    def _show(self, advance: int = 0) -> None:
        """Sets the state and the rates, then moves the bar ``advance`` prompts on (so the line
        a log gets for that step shows the rates that step made)."""
        done = self.bar.n + advance
        parts = []
        if self.seconds > 0 and self.run_prompts:
            rate = self.run_prompts / self.seconds
            parts.append(f"{rate:,.0f} prompts/s, {self.run_tokens / self.seconds:,.0f} tokens/s")
            if self.total is not None:
                left = max(0, self.total - done) / rate
                parts.append(f"{_duration(left)} left")
            else:
                parts.append("time left unknown (a stream of unknown length)")
        if self.resumed:
            parts.append(f"{self.resumed:,} read back from the folder")
        # The jobs' states are the bar's state (a log prints a line when they change); the
        # rates are its postfix.
        jobs = (
            f" · NDIF {self.state or 'jobs'} ({self.jobs} completed)"
            if self.state or self.jobs
            else ""
        )
        self.bar.set_description_str(self.desc + jobs, refresh=False)
        self.bar.set_postfix_str(", ".join(parts), refresh=False)
        if advance:
            self.bar.update(advance)  # redraws a terminal's bar
        else:
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _job_states(states: dict[str, str]) -> str | None:
    """The jobs out, for the bar: one as ``job 1a2b3c4d running``, several counted by state
    (``jobs: 1 running, 1 queued``)."""
    if not states:
        return None
    if len(states) == 1:
        ((job_id, state),) = states.items()
        return f"job {job_id[:8]} {state}" if job_id else f"job {state}"
    counts: dict[str, int] = {}
    for state in states.values():
        counts[state] = counts.get(state, 0) + 1
    return "jobs: " + ", ".join(f"{n} {state}" for state, n in counts.items())
