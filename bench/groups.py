"""Benchmark: what token groups and the logit difference add to the LogitLens step, side by
side.

On a random model with GPT-2 small's shape (bench/logit_lens.py's), at 8 prompts x 64 tokens,
one process alternates, round by round:

- ``plain``: ``LogitLens(model)``;
- ``groups``: the same with ``groups=`` ten groups of 50 tokens each (each group's summed
  probability at every position of every layer: a gather and a sum per row);
- ``foils``: the same with one answer and one foil per prompt (the logit difference at every
  cell; the answers' own tracking included, so compare it with ``answers``);
- ``answers``: one answer per prompt, no foil.

It prints each one's median, the ratio of medians to ``plain`` and the median of the
per-round ratios (each round's run over that round's ``plain``, the two run back to back: on a
loaded machine the paired ratio is the steadier number). Issue 49's target: ten groups of up to
50 tokens cost at most 1.1x the step without them. Usage::

    python bench/groups.py --rounds 15 [--runs plain,groups] [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logit_lens import VOCAB, build_model, prompts_for, time_alternating


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shape", default="8x64")
    parser.add_argument("--n-groups", type=int, default=10)
    parser.add_argument("--group-size", type=int, default=50)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--runs", default="plain,groups,answers,foils", help="which runs, comma-separated"
    )
    args = parser.parse_args()

    import torch

    from murano_widgets import LogitLens, MuranoModel, PromptBatch, Results, TokenGroup

    with tempfile.TemporaryDirectory() as folder:
        build_model(Path(folder))
        model = MuranoModel(folder, device=args.device, dtype=torch.float32)
        sync = torch.cuda.synchronize if args.device == "cuda" else lambda: None
        prompts = prompts_for(args.shape)
        generator = torch.Generator().manual_seed(0)
        groups = {
            f"g{g}": TokenGroup(
                tuple(torch.randperm(VOCAB - 1, generator=generator)[: args.group_size].tolist())
            )
            for g in range(args.n_groups)
        }
        answers = [f" w{i}" for i in range(len(prompts))]
        foils = [f" w{i + 100}" for i in range(len(prompts))]
        runs = {
            "plain": lambda: LogitLens(model)(Results(prompts=PromptBatch(prompts))),
            "groups": lambda: LogitLens(model, groups=groups)(
                Results(prompts=PromptBatch(prompts))
            ),
            "answers": lambda: LogitLens(model)(
                Results(prompts=PromptBatch(prompts, answers=answers))
            ),
            "foils": lambda: LogitLens(model)(
                Results(prompts=PromptBatch(prompts, answers=answers, foils=foils))
            ),
        }
        chosen = ["plain", *(n for n in args.runs.split(",") if n != "plain")]
        unknown = [name for name in chosen if name not in runs]
        if unknown:
            parser.error(f"--runs: unknown {unknown}; the runs are {list(runs)}")
        times = time_alternating({name: runs[name] for name in chosen}, args.rounds, sync)

    plain = statistics.median(times["plain"])
    print(
        f"shape {args.shape} on {args.device}, {args.rounds} rounds, {args.n_groups} groups of "
        f"{args.group_size} tokens, torch threads {torch.get_num_threads()}"
    )
    for name, values in times.items():
        median = statistics.median(values)
        paired = statistics.median(v / p for v, p in zip(values, times["plain"], strict=True))
        print(
            f"  {name:8s} {median:7.3f} s   ratio of medians {median / plain:5.3f}   "
            f"median paired ratio {paired:5.3f}"
        )


if __name__ == "__main__":
    main()
