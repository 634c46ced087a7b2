"""Benchmark: ``lens_dataset`` at scale (issue 25), side by side with one ``LogitLens`` call.

Targets, each printed as a ratio:

- **demo model, 100,000 prompts from a generator**: time per prompt at most 1.1x that of one
  ``LogitLens(model, positions="last")`` call over 10,000 of the same prompts (the step alone,
  every prompt in one batch: what a data set would cost without batching); and the process's
  peak memory within 10 % of the same ``lens_dataset`` run over 10,000 prompts.
- **GPT-2-shaped model** (random weights from a config, vocabulary 50,257), 2,000 prompts of
  mixed length (4 to 24 tokens): ``lens_dataset`` at most 1.0x one call's time; and **under a
  parallel load** (a second process keeping both cores busy with matrix products) at most 1.5x
  the one call under the same load.
- **a resumed run loses at most one batch**: a run interrupted inside a batch (Ctrl-C) and
  called again runs, in all, at most one batch more than an uninterrupted one.

Every run is a fresh process (the model loaded and one small warm-up call first, outside the
timing; the peak resident set is reset after that with ``/proc/self/clear_refs``), the runs of
one comparison alternate, and ``uptime``'s load is printed before and after each part: on a
shared machine the ratios mean little under a load nobody chose. Prompts are the toy world's
held-out prompts (``eval_prompts``), varied by a prefix so that a long stream is not one list
repeated; the answers are their expected words. Usage::

    python bench/lens_dataset_scale.py                   # everything (about 20 min when quiet)
    python bench/lens_dataset_scale.py --parts demo resume
    python bench/lens_dataset_scale.py --parts gpt2 --gpt2-prompts 1000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# The process's resident set from /proc (one reader for the data-set benchmarks).
from lens_dataset import _reset_peak, _status  # noqa: E402

PREFIXES = ["", "So, ", "Well, ", "Indeed, it is said that ", "Yes. "]


def demo_pairs(n: int):
    """``n`` (prompt, answer) pairs of the toy world's held-out prompts, varied: a generator."""
    from murano_widgets.demo_model.corpus import eval_prompts

    facts = eval_prompts()
    for i in range(n):
        fact = facts[i % len(facts)]
        yield PREFIXES[(i // len(facts)) % len(PREFIXES)] + fact.prompt, fact.answer


def gpt2_pairs(n: int):
    """``n`` prompts of 4 to 24 words of the GPT-2-shaped model's word-level vocabulary (one
    token a word), with a one-token answer each: a generator, seeded."""
    import random

    rng = random.Random(0)
    for _ in range(n):
        words = rng.randint(4, 24)
        yield (
            " ".join(f"w{rng.randrange(50_000)}" for _ in range(words)),
            f" w{rng.randrange(50_000)}",
        )


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------------------------------------
# One measurement, in a fresh process


def child(kind: str, n: int, model_arg: str, threads: int) -> dict:
    import torch

    from murano_widgets import LogitLens, MuranoModel, lens_dataset, load_demo_model

    torch.set_num_threads(threads)
    model = load_demo_model() if model_arg == "demo" else MuranoModel(model_arg)
    pairs = demo_pairs if model_arg == "demo" else gpt2_pairs
    # Warm-up on a few prompts: first-call allocations and lazy imports, outside the timing.
    lens_dataset(model, pairs(64), progress=False)
    import gc

    gc.collect()
    before = _status("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    out: dict = {"kind": kind, "n": n}
    if kind == "single":
        prompts, answers = zip(*pairs(n), strict=True)
        result = LogitLens(model, positions="last").run(list(prompts), list(answers))
        out["tokens"] = int(result.attention_mask.sum())
        out["padded_tokens"] = int(result.attention_mask.numel())
        del result
    elif kind == "dataset":
        data = lens_dataset(model, pairs(n), progress=False)
        out |= {k: data.provenance[k] for k in ("tokens", "padded_tokens", "n_batches")}
        out["batch_tokens"] = data.provenance["batch_tokens"]
    elif kind == "resume":
        out |= resume(model, pairs, n)
    out["seconds"] = time.perf_counter() - start
    out["per_prompt_ms"] = out["seconds"] / n * 1e3
    out["peak_above_start"] = _status("VmHWM") - before
    out["process_peak"] = _status("VmHWM")
    return out


def resume(model, pairs, n: int) -> dict:
    """Interrupted inside a batch (the 40 % point), then called again: the batches run in all."""
    from murano_widgets import LogitLens, lens_dataset

    original = LogitLens.run
    runs: list[int] = []
    stop_at = [None]

    def counted(self, prompts, *args, **kwargs):
        runs.append(len(prompts))
        if len(runs) == stop_at[0]:
            raise KeyboardInterrupt
        return original(self, prompts, *args, **kwargs)

    LogitLens.run = counted
    with tempfile.TemporaryDirectory() as tmp:
        whole = lens_dataset(model, pairs(n), progress=False)
        total = len(runs)
        runs.clear()
        stop_at[0] = max(2, int(total * 0.4))
        start = time.perf_counter()
        with contextlib.suppress(KeyboardInterrupt):
            lens_dataset(model, pairs(n), path=Path(tmp) / "run", progress=False)
        first = len(runs)
        stop_at[0] = None
        runs.clear()
        again = lens_dataset(model, pairs(n), path=Path(tmp) / "run", progress=False)
        seconds = time.perf_counter() - start
        import numpy as np

        same = all(
            np.array_equal(a, b, equal_nan=True)
            for a, b in [
                (whole.answer_probs["answer"], again.answer_probs["answer"]),
                (whole.entropy, again.entropy),
                (whole.top1_tokens, again.top1_tokens),
            ]
        )
    LogitLens.run = original
    return {
        "batches": total,
        "interrupted_in_batch": first,
        "resumed_batches": len(runs),
        "lost_batches": first + len(runs) - total,
        "equal": same,
        "interrupted_and_resumed_seconds": seconds,
    }


def run_child(kind: str, n: int, model_arg: str, threads: int) -> dict:
    command = [sys.executable, __file__, "--child", kind, str(n), model_arg, str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} {n} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# The parts


def load_process(threads: int) -> subprocess.Popen:
    """A second process keeping ``threads`` cores busy with float32 matrix products."""
    code = (
        "import torch\n"
        f"torch.set_num_threads({threads})\n"
        "a = torch.randn(1024, 1024)\n"
        "while True:\n    a = torch.tanh(a @ a)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def part_demo(args) -> None:
    print(f"\n== demo model: {args.demo_prompts:,} prompts from a generator vs one call on "
          f"{args.single_prompts:,}  ({uptime()})")  # fmt: skip
    runs: dict[str, list[dict]] = {"single": [], "big": [], "small": []}
    for round_ in range(args.rounds):
        order = [("single", args.single_prompts), ("big", args.demo_prompts),
                 ("small", args.single_prompts)]  # fmt: skip
        for name, n in order if round_ % 2 == 0 else order[::-1]:
            kind = "single" if name == "single" else "dataset"
            runs[name].append(run_child(kind, n, "demo", args.threads))
    m = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "kind"}
         for name, rs in runs.items()}  # fmt: skip
    mb = 2**20
    for name, label in (("single", "one LogitLens call"), ("small", "lens_dataset"),
                        ("big", "lens_dataset")):  # fmt: skip
        r = m[name]
        print(f"  {label:<19} {int(r['n']):>7,} prompts: {r['seconds']:7.1f} s, "
              f"{r['per_prompt_ms']:.3f} ms/prompt, padded/real tokens "
              f"{r['padded_tokens'] / r['tokens']:.3f}, process peak {r['process_peak'] / mb:6.0f} MB "
              f"(+{r['peak_above_start'] / mb:.0f} MB over its start)")  # fmt: skip
    print(f"  time per prompt, {args.demo_prompts:,}-prompt data set / one call on "
          f"{args.single_prompts:,}: {m['big']['per_prompt_ms'] / m['single']['per_prompt_ms']:.3f}"
          "  (target <= 1.10)")  # fmt: skip
    print(
        f"  process peak, data set of {args.demo_prompts:,} / of {args.single_prompts:,}: "
        f"{m['big']['process_peak'] / m['small']['process_peak']:.3f}  (target <= 1.10)"
    )
    print(f"  ({uptime()})")


def part_gpt2(args) -> None:
    sys.path.insert(0, str(HERE))
    from logit_lens import build_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2"
        build_model(folder)
        for loaded in (False, True):
            load = load_process(2) if loaded else None
            try:
                time.sleep(2 if loaded else 0)
                title = "under a parallel load (2 busy threads)" if loaded else "quiet"
                print(f"\n== GPT-2-shaped model, {args.gpt2_prompts:,} prompts of 4-24 tokens, "
                      f"{title}  ({uptime()})")  # fmt: skip
                runs: dict[str, list[dict]] = {"single": [], "dataset": []}
                for round_ in range(args.rounds):
                    names = ["single", "dataset"] if round_ % 2 == 0 else ["dataset", "single"]
                    for name in names:
                        runs[name].append(
                            run_child(name, args.gpt2_prompts, str(folder), args.threads)
                        )
                for name, rs in runs.items():
                    r = rs[0] if len(rs) == 1 else {
                        k: statistics.median(x[k] for x in rs) for k in ("seconds", "tokens",
                        "padded_tokens", "process_peak")}  # fmt: skip
                    print(f"  {name:<8} {r['seconds']:7.1f} s (runs: "
                          + ", ".join(f"{x['seconds']:.1f}" for x in rs)
                          + f"), padded/real tokens {r['padded_tokens'] / r['tokens']:.3f}, "
                          f"process peak {r['process_peak'] / 2**30:.2f} GB")  # fmt: skip
                ratio = statistics.median(
                    d["seconds"] / s["seconds"]
                    for d, s in zip(runs["dataset"], runs["single"], strict=True)
                )
                target = 1.5 if loaded else 1.0
                print(f"  lens_dataset / one call: {ratio:.3f}  (target <= {target})")
                print(f"  ({uptime()})")
            finally:
                if load is not None:
                    load.kill()
                    load.wait()


def part_resume(args) -> None:
    print(f"\n== resume: demo model, {args.resume_prompts:,} prompts, interrupted inside a "
          f"batch at 40 %  ({uptime()})")  # fmt: skip
    r = run_child("resume", args.resume_prompts, "demo", args.threads)
    print(f"  batches uninterrupted {r['batches']}; interrupted in batch "
          f"{r['interrupted_in_batch']}; the call again ran {r['resumed_batches']}; lost "
          f"{r['lost_batches']} batch(es) (target <= 1); result equal to the uninterrupted "
          f"run's: {r['equal']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["demo", "gpt2", "resume"])
    parser.add_argument("--demo-prompts", type=int, default=100_000)
    parser.add_argument("--single-prompts", type=int, default=10_000)
    parser.add_argument("--gpt2-prompts", type=int, default=2_000)
    parser.add_argument("--resume-prompts", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, n, model_arg, threads = args.child
        print(json.dumps(child(kind, int(n), model_arg, int(threads))))
        return
    print(f"lens_dataset at scale; torch threads {args.threads}; {uptime()}")
    for part in args.parts:
        {"demo": part_demo, "gpt2": part_gpt2, "resume": part_resume}[part](args)


if __name__ == "__main__":
    main()
