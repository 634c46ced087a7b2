"""Benchmark: a prompt typed into a live widget, from the request to the new column, in Python.

For the demo model and a randomly initialised model with GPT-2 small's shape (12 layers,
d_model 768, vocab 50257, float32), a widget of 3 prompts gets one more (20 tokens for the
GPT-2 shape), side by side with the step alone on that one prompt (the floor of any live
update: the lens of the new prompt), alternating, in one process:

- ``request``: the front end's ``add_prompt`` message through the widget's handler, until the
  ``done`` reply (the worker thread ran the step on the new prompt, combined it with the
  others, built the payload and set the traits);
- ``python``: ``w.add_prompt(text)``, the same synchronously;
- ``step``: ``run_logit_lens(model, [text])``, the new prompt's lens alone.

The prompt is removed again after each (not timed). What the browser adds (the message's way
to the kernel and back, decoding and drawing) is measured by the front end's own benchmark.
Usage::

    python bench/live.py                # both models, 7 rounds
    python bench/live.py --rounds 3 --models demo
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from logit_lens import VOCAB, build_model


def _words(n: int, seed: int) -> str:
    import random

    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(VOCAB - 1)}" for _ in range(n))


def _request_seconds(widget, text: str, request_id: int) -> float:
    """From the message's arrival to the ``done`` reply."""
    done = threading.Event()
    replies = []

    def send(content):
        replies.append(content)
        if content.get("id") == request_id and content["action"] in ("done", "error"):
            done.set()

    widget.send = send
    start = time.perf_counter()
    widget._handle_custom_msg({"action": "add_prompt", "id": request_id, "text": text}, [])
    assert done.wait(120), "no reply"
    seconds = time.perf_counter() - start
    assert replies[-1]["action"] == "done", replies[-1]
    widget._live.worker.wait_idle(10)
    return seconds


def measure(model, prompts: list[str], new: str, rounds: int) -> dict[str, float]:
    from murano_widgets import show_logit_lens
    from murano_widgets.run import run_logit_lens

    widget = show_logit_lens(model, prompts)
    # Warm-up: the first call of each path pays for lazy imports and allocations.
    widget.add_prompt(new)
    widget.remove_prompt(len(prompts))
    run_logit_lens(model, [new])
    times: dict[str, list[float]] = {"request": [], "python": [], "step": []}
    for round_ in range(rounds):
        start = time.perf_counter()
        run_logit_lens(model, [new])
        times["step"].append(time.perf_counter() - start)
        times["request"].append(_request_seconds(widget, new, round_ + 1))
        widget.remove_prompt(len(prompts))
        start = time.perf_counter()
        widget.add_prompt(new)
        times["python"].append(time.perf_counter() - start)
        widget.remove_prompt(len(prompts))
    return {kind: statistics.median(values) for kind, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--models", nargs="+", default=["demo", "gpt2"], choices=["demo", "gpt2"])
    args = parser.parse_args()
    import torch

    from murano_widgets import MuranoModel, load_demo_model

    print(f"torch threads: {torch.get_num_threads()}; medians of {args.rounds} rounds")
    print(f"{'model':<22} {'path':<8} {'time':>9} {'x step':>7}")
    for name in args.models:
        if name == "demo":
            model = load_demo_model()
            prompts = ["The capital of France is", "Monday, Tuesday,", "The opposite of hot is"]
            new = "The capital of Italy is"
            label = "demo (6 layers)"
        else:
            folder = Path(tempfile.mkdtemp()) / "gpt2-shape"
            build_model(folder)
            model = MuranoModel(folder)
            prompts = [_words(20, seed) for seed in range(3)]
            new = _words(20, 99)
            assert len(model.tokenizer(new).input_ids) == 20
            label = "GPT-2 shape, 20 tokens"
        medians = measure(model, prompts, new, args.rounds)
        for kind in ("request", "python", "step"):
            ratio = medians[kind] / medians["step"]
            print(f"{label:<22} {kind:<8} {medians[kind] * 1000:>7.0f} ms {ratio:>6.2f}x")


if __name__ == "__main__":
    main()
