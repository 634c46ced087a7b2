"""Benchmark: what tracking targets and answers adds to the LogitLens step, side by side.

On a random model with GPT-2 small's shape (bench/logit_lens.py's), at 8 prompts x 64 tokens,
one process alternates, round by round:

- ``plain``: ``LogitLens(model)``;
- ``targets``: the same with ``targets=`` 100 single-token strings (probability and exact rank
  of each at every position of every layer);
- ``answers``: the same with one single-token answer per prompt (``PromptBatch(answers=)``).

It prints each one's median and its ratio to ``plain`` (the issue's target: 100 targets add
no more than 10 %), and the share of the rank count alone on one layer's logits. Usage::

    python bench/targets.py --rounds 5 [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logit_lens import VOCAB, build_model, prompts_for, time_alternating


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shape", default="8x64")
    parser.add_argument("--n-targets", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import torch

    from murano_widgets import LogitLens, MuranoModel, PromptBatch, Results
    from murano_widgets.step.reductions import Buffers, count_above

    with tempfile.TemporaryDirectory() as folder:
        build_model(Path(folder))
        model = MuranoModel(folder, device=args.device, dtype=torch.float32)
        sync = torch.cuda.synchronize if args.device == "cuda" else lambda: None
        prompts = prompts_for(args.shape)
        targets = [f" w{i}" for i in range(0, VOCAB - 1, (VOCAB - 1) // args.n_targets)]
        targets = targets[: args.n_targets]
        answers = [f" w{i}" for i in range(len(prompts))]
        runs = {
            "plain": lambda: LogitLens(model)(Results(prompts=PromptBatch(prompts))),
            "targets": lambda: LogitLens(model, targets=targets)(
                Results(prompts=PromptBatch(prompts))
            ),
            "answers": lambda: LogitLens(model)(
                Results(prompts=PromptBatch(prompts, answers=answers))
            ),
        }
        times = time_alternating(runs, args.rounds, sync)

        rows = sum(len(p.split()) for p in prompts)
        z = torch.randn(rows, VOCAB, device=args.device) * 3
        thresholds = z[:, torch.randint(0, VOCAB, (args.n_targets,), device=args.device)]
        scratch, buffers = torch.empty_like(z), Buffers()
        hidden = torch.randn(rows, 768, device=args.device)
        weight = torch.randn(VOCAB, 768, device=args.device)
        count_above(z, thresholds, scratch, buffers)
        count_times, mm_times = [], []
        for _ in range(args.rounds):
            sync()
            start = time.perf_counter()
            count_above(z, thresholds, scratch, buffers)
            sync()
            count_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            torch.mm(hidden, weight.t(), out=scratch)
            sync()
            mm_times.append(time.perf_counter() - start)

    plain = statistics.median(times["plain"])
    print(
        f"shape {args.shape} on {args.device}, {args.rounds} rounds, {len(targets)} targets, "
        f"torch threads {torch.get_num_threads()}"
    )
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:8s} {median:7.3f} s   ratio to plain {median / plain:5.3f}")
    count, mm = statistics.median(count_times), statistics.median(mm_times)
    print(
        f"  rank count of {len(targets)} ids on one layer's [{rows}, {VOCAB}] logits: "
        f"{count * 1000:.0f} ms = {count / mm:.2f} x that layer's unembedding matmul"
    )


if __name__ == "__main__":
    main()
