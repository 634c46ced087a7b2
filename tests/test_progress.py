"""Progress in a log: a line per change of state, never tqdm's carriage-return frames.

A CI log, a pipe or a file is not a terminal: there every bar of the package (data sets, NDIF
job states, fitting) prints whole lines, a few per run, where tqdm drew a frame per redraw.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from murano_widgets._progress import LineBar, progress_bar
from murano_widgets.backends.nnsight import _JobStatus


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line]


def test_a_known_total_prints_a_line_per_tenth():
    out = io.StringIO()
    bar = progress_bar(total=3000, desc="lens_dataset", unit="prompt", file=out)
    assert isinstance(bar, LineBar)
    for _ in range(3000):
        bar.update(1)
    bar.close()
    shown = lines(out.getvalue())
    assert "\r" not in out.getvalue()
    assert len(shown) == 10, shown
    assert shown[0].startswith("lens_dataset: 300/3000 prompts (10%) [")
    assert shown[-1].startswith("lens_dataset: 3000/3000 prompts (100%) [")


def test_an_unknown_total_prints_at_1_2_5_10_and_once_at_the_end():
    out = io.StringIO()
    bar = progress_bar(total=None, desc="stream", unit="prompt", file=out)
    for _ in range(150):
        bar.update(1)
    bar.set_postfix_str("7 prompts/s")  # shown with the next line, not a line of its own
    bar.close()
    counts = [line.split(": ")[1].split()[0] for line in lines(out.getvalue())]
    assert counts == ["1", "2", "5", "10", "20", "50", "100", "150"]
    assert lines(out.getvalue())[-1].endswith(", 7 prompts/s]")


def test_a_state_change_is_a_line_and_the_same_state_is_not():
    out = io.StringIO()
    bar = progress_bar(total=None, desc="NDIF job", file=out)
    for state in ("received", "queued", "queued", "running", "running", "completed"):
        bar.set_description_str(f"NDIF job 1a2b: {state}")
        bar.refresh()
    bar.close()
    assert lines(out.getvalue()) == [
        f"NDIF job 1a2b: {state} [00:00]"
        for state in ("received", "queued", "running", "completed")
    ]


def test_a_terminal_gets_tqdm_and_disabled_prints_nothing():
    from tqdm import tqdm

    bar = progress_bar(total=10, desc="x", file=Terminal())
    assert isinstance(bar, tqdm) and not bar.disable
    bar.close()
    out = io.StringIO()
    quiet = progress_bar(total=10, desc="x", enabled=False, file=out)
    quiet.update(10)
    quiet.close()
    assert out.getvalue() == ""


def test_ndif_job_states_are_one_line_each_in_a_log(capsys):
    """nnsight's status callbacks (0.8's response objects, 0.7's positional call and its
    refreshes between messages) reach a log as one line per state."""

    class Status:
        def __init__(self, name):
            self.name = name

    class Response:
        def __init__(self, name):
            self.status, self.description, self.id = Status(name), "", "job-1"

    status = _JobStatus()
    for name in ("RECEIVED", "QUEUED", "RUNNING"):
        status.update(Response(name))
        for _ in range(50):
            status.refresh()  # what nnsight calls while it waits
    status.update("job-1", "COMPLETED", "")
    status.close()
    err = capsys.readouterr().err
    assert "\r" not in err
    assert [line.split(" [")[0] for line in lines(err)] == [
        f"NDIF job job-1: {word}" for word in ("received", "queued", "running", "completed")
    ]


@pytest.mark.slow
def test_a_data_set_run_writes_few_whole_lines_to_a_pipe(tmp_path):
    """The data set's bar in a child process whose standard error is a pipe (as in CI)."""
    script = tmp_path / "run.py"
    script.write_text(
        "from murano_widgets import lens_dataset, load_demo_model\n"
        "model = load_demo_model()\n"
        "prompts = [f'The capital of France is {i}' for i in range(200)]\n"
        "lens_dataset(model, prompts, [' Paris'] * 200, batch_size=8, progress=True)\n"
    )
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    )
    bar = [line for line in lines(run.stderr) if line.startswith("lens_dataset")]
    assert "\r" not in run.stderr
    assert 1 <= len(bar) <= 11, bar  # a line per tenth (the batches decide which tenths)
    assert bar[-1].startswith("lens_dataset: 200/200 prompts (100%)"), bar[-1]
    assert "prompts/s" in bar[-1]
