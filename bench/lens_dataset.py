"""Benchmark: ``lens_dataset`` on the demo model, its memory over 200 and 2,000 prompts, and its
time against the plain step run on the same batches.

Issue 12's targets:

- **memory**: the peak over 2,000 prompts within 10 % of the peak over 200 (nothing but the
  per-prompt numbers grows with the number of prompts). Each size runs in a fresh process
  (alternating, ``--rounds`` times each), after loading the model and a warm-up call; the peak
  is the peak resident set above the resident set before the call (``/proc/self/clear_refs``
  resets it), and, for the Python and numpy allocations alone, tracemalloc's peak.
- **time**: ``lens_dataset`` no more than 1.1× the plain step over the same batches (the same
  prompts, sorted by token length and cut into ``batch_size`` batches, each run as
  ``LogitLens(model)({"prompts": PromptBatch(batch)})``, no answers, nothing kept). All run
  in one process, alternating, after a warm-up; it prints the medians and the ratio. For
  reference it also times the step on the same batches scoring the answers at every cell
  (``PromptBatch(batch, answers=...)``, what the widget asks for), and the step that
  ``lens_dataset`` runs: the same answers, only each prompt's last position reduced
  (``LogitLens(model, positions="last")``), so that the difference is the data set's own work.

Issue 33's comparison (``--one-call``): ``lens_dataset`` over 3,000 mixed-length demo prompts
with answers (cut from the demo corpus, 4 to 48 words each, the next word as the answer)
against one ``LogitLens(model, positions="last")`` call on the same prompts (target: <= 1.1x
quiet, <= 1.5x under load), in one process per CPU kind (this machine's own, then AVX2
emulated with ``ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2``), the two alternating
round by round after a warm-up, ``uptime`` printed before and after each. ``--fingerprint``
times the weights' fingerprint a data set records against the full sha256 of the weights on
the GPT-2-shaped model (issue 37).

The prompts are the demo model's held-out fact prompts (7 families, 650 prompts of 8 to 16
tokens), drawn with replacement (seeded); the answers are one named
set per family, as notebook 04 uses them. Usage::

    python bench/lens_dataset.py                  # memory 200 vs 2000 (2 rounds), time at 400
    python bench/lens_dataset.py --time-prompts 650 --rounds 3
    python bench/lens_dataset.py --time-only --time-prompts 400 --rounds 2
    python bench/lens_dataset.py --one-call                 # issue 33: both CPU kinds, 3 rounds
    python bench/lens_dataset.py --one-call --cpu-kinds native --threads 2 --rounds 5
    python bench/lens_dataset.py --one-call --one-call-words 12 12   # one length: no padding
    python bench/lens_dataset.py --one-call --load 2                 # under two busy processes
    python bench/lens_dataset.py --fingerprint
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator


def data_set(n: int, seed: int = 0) -> tuple[list[str], dict[str, list[str | None]]]:
    """``n`` held-out fact prompts drawn with replacement (seeded), and one answer set per
    family."""
    import random

    from murano_widgets.demo_model.corpus import FACT_FAMILIES, eval_prompts

    facts = [e for e in eval_prompts() if e.split == "template" and e.family in FACT_FAMILIES]
    rng = random.Random(seed)
    chosen = rng.choices(facts, k=n)
    families = list(dict.fromkeys(e.family for e in facts))
    answers = {f: [e.answer if e.family == f else None for e in chosen] for f in families}
    return [e.prompt for e in chosen], answers


def _reset_peak() -> None:
    # Writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def measure_memory(n: int, batch_size: int) -> dict[str, float]:
    """In this (fresh) process: the peak memory of one ``lens_dataset`` call over ``n`` prompts."""
    import gc
    import tracemalloc

    from murano_widgets import lens_dataset, load_demo_model

    model = load_demo_model()
    prompts, answers = data_set(n)
    # Warm-up on other prompts of the same kind: first-call allocations and lazy imports.
    warm_prompts, warm_answers = data_set(2 * batch_size, seed=1)
    lens_dataset(model, warm_prompts, warm_answers, batch_size=batch_size, progress=False)
    gc.collect()
    before = _status("VmRSS")
    _reset_peak()
    tracemalloc.start()
    start = time.perf_counter()
    data = lens_dataset(model, prompts, answers, batch_size=batch_size, progress=False)
    seconds = time.perf_counter() - start
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    process_peak = _status("VmHWM")
    peak = process_peak - before
    kept = sum(a.nbytes for a in (*data.answer_probs.values(), *data.answer_ranks.values()))
    kept += data.entropy.nbytes + data.kl_to_final.nbytes + data.top1_tokens.nbytes
    return {
        "n": n,
        "rss_peak": peak,
        "process_peak": process_peak,
        "traced_peak": traced_peak,
        "kept": kept,
        "seconds": seconds,
    }


@contextlib.contextmanager
def step_runs_timed(inside: list[float]) -> Iterator[None]:
    """Within it, every ``LogitLens.run`` call adds its seconds to ``inside[0]``: what
    ``lens_dataset`` spends in the step (it calls ``run``; timing ``__call__``, as ``--time``
    once did, counted nothing and put all of its time down as its own work)."""
    from murano_widgets import LogitLens

    original = LogitLens.run

    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            inside[0] += time.perf_counter() - start

    LogitLens.run = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        LogitLens.run = original  # type: ignore[method-assign]


def alternate(
    runs: dict[str, Callable[[], None]], rounds: int, inside: list[float]
) -> tuple[dict[str, list[float]], list[float]]:
    """Each run once a round, in turn (reversed every other round, so neither always goes
    first): their seconds per round, and ``lens_dataset``'s own work per round (its time less
    ``inside[0]``, the time its step's calls added up to)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    own: list[float] = []
    for round_ in range(rounds):
        names = list(runs) if round_ % 2 == 0 else list(runs)[::-1]
        for name in names:
            inside[0] = 0.0
            start = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - start)
            if name == "lens_dataset":
                own.append(times[name][-1] - inside[0])
    return times, own


def measure_time(n: int, batch_size: int, rounds: int) -> None:
    """``lens_dataset`` against the plain step on the same batches, alternating in this process."""
    import torch

    from murano_widgets import LogitLens, PromptBatch, lens_dataset, load_demo_model
    from murano_widgets.dataset.runner import batch_order

    model = load_demo_model()
    prompts, answers = data_set(n)
    lengths = [len(ids) for ids in model.tokenizer(prompts)["input_ids"]]
    order = batch_order(lengths)
    batches = [order[i : i + batch_size] for i in range(0, n, batch_size)]
    step = LogitLens(model)

    # Time spent inside the step's calls during lens_dataset: the rest is lens_dataset's own
    # work (checks, tokenizing for lengths, sorting, keeping the numbers, provenance), measured
    # within the same run and so free of the machine's noise between runs.
    inside = [0.0]

    def dataset() -> None:
        with step_runs_timed(inside):
            lens_dataset(model, prompts, answers, batch_size=batch_size, progress=False)

    def over_batches(step: LogitLens, scored: bool) -> Callable[[], None]:
        def run() -> None:
            for rows in batches:
                batch = PromptBatch(
                    [prompts[i] for i in rows],
                    answers=(
                        {name: [values[i] for i in rows] for name, values in answers.items()}
                        if scored
                        else None
                    ),
                )
                step({"prompts": batch})

        return run

    runs = {
        "lens_dataset": dataset,
        "plain step": over_batches(step, scored=False),
        "step, answers per cell": over_batches(step, scored=True),
        "step, last positions": over_batches(LogitLens(model, positions="last"), scored=True),
    }
    for run in runs.values():  # warm-up
        run()
    times, own = alternate(runs, rounds, inside)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["plain step"]
    ratios = [d / p for d, p in zip(times["lens_dataset"], times["plain step"], strict=True)]
    print(
        f"time: {n} prompts, batch_size {batch_size}, {len(answers)} answer sets, "
        f"{rounds} rounds alternating (torch threads: {torch.get_num_threads()})"
    )
    for name, seconds in medians.items():
        print(f"  {name:<22} {seconds:7.2f} s (median)  {seconds / base:.3f}x the plain step")
    print(
        f"  lens_dataset's own work (outside the step's calls): {statistics.median(own):.3f} s "
        f"= {statistics.median(own) / medians['lens_dataset']:.1%} of its time"
    )
    print(
        f"  lens_dataset / plain step on the same batches: {statistics.median(ratios):.3f} (median of "
        f"the rounds' ratios: {', '.join(f'{r:.3f}' for r in ratios)}; target: <= 1.10)"
    )


#: The CPU kinds ``--one-call`` runs in: the environment each child process starts with.
CPU_KINDS = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def mixed_data_set(
    n: int, seed: int = 0, words_per_prompt: tuple[int, int] = (4, 48)
) -> tuple[list[str], list[str]]:
    """``n`` demo prompts of mixed length (4 to 48 words of the demo corpus by default, seeded),
    each with the word that follows it as its answer."""
    import random

    from murano_widgets.demo_model.corpus import generate_corpus

    words = " ".join(generate_corpus(seed=1, n_documents=4 * n)).split()
    rng = random.Random(seed)
    prompts, answers, at = [], [], 0
    for _ in range(n):
        k = rng.randint(*words_per_prompt)
        if at + k + 1 > len(words):
            at = 0
        prompts.append(" ".join(words[at : at + k]))
        answers.append(" " + words[at + k])
        at += k + 1
    return prompts, answers


def one_call_child(n: int, rounds: int, words_per_prompt: tuple[int, int] = (4, 48)) -> dict:
    """In this process (one CPU kind): ``lens_dataset`` and one ``LogitLens(positions="last")``
    call over the same ``n`` mixed prompts, alternating, after a warm-up of each. The data
    set's own work is timed too: its time outside the step's calls."""
    import torch

    from murano_widgets import LogitLens, lens_dataset, load_demo_model

    model = load_demo_model()
    prompts, answers = mixed_data_set(n, words_per_prompt=words_per_prompt)
    inside = [0.0]
    info: dict = {}

    def dataset() -> None:
        with step_runs_timed(inside):
            data = lens_dataset(model, prompts, answers, progress=False)
        info.update({k: data.provenance[k] for k in ("n_batches", "tokens", "padded_tokens")})

    def one_call() -> None:
        result = LogitLens(model, positions="last").run(prompts, answers)
        info["one_call_padded_tokens"] = int(result.attention_mask.numel())

    runs = {"lens_dataset": dataset, "one call": one_call}
    for run in runs.values():  # warm-up: first-call allocations and lazy imports
        run()
    times, own = alternate(runs, rounds, inside)
    return {
        "times": times,
        "own": own,
        "threads": torch.get_num_threads(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        **info,
    }


# A busy process that ends with its parent (a benchmark killed mid-run leaves no load behind).
BURNER = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass"


def measure_one_call(
    n: int,
    rounds: int,
    threads: int | None,
    kinds: list[str],
    words_per_prompt: tuple[int, int] = (4, 48),
    load: int = 0,
) -> None:
    """Issue 33's ratio, ``lens_dataset`` ÷ one call, per CPU kind (a fresh process each),
    under ``load`` busy processes of this benchmark's own (0: none)."""
    lo, hi = words_per_prompt
    print(f"one call vs lens_dataset: {n:,} demo prompts of {lo} to {hi} words with answers, "
          f"{rounds} rounds alternating, a process per CPU kind, {load} busy processes")  # fmt: skip
    burners = [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(load)]
    try:
        for kind in kinds:
            _one_call_kind(n, rounds, threads, kind, words_per_prompt)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _one_call_kind(
    n: int, rounds: int, threads: int | None, kind: str, words_per_prompt: tuple[int, int]
) -> None:
    """One CPU kind's run of :func:`measure_one_call`, in a fresh process."""
    before = uptime()
    command = [sys.executable, __file__, "--one-call-child", str(n), "--rounds", str(rounds)]
    command += ["--one-call-words", *map(str, words_per_prompt)]
    if threads is not None:
        command += ["--threads", str(threads)]
    env = {**os.environ, **CPU_KINDS[kind]}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the {kind} run failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    ds, one = out["times"]["lens_dataset"], out["times"]["one call"]
    ratios = [d / o for d, o in zip(ds, one, strict=True)]
    print(f"  {kind} (torch capability {out['capability']}, {out['threads']} threads)")
    print(f"    before: {before}")
    print(f"    lens_dataset {statistics.median(ds):7.2f} s (median; rounds "
          f"{', '.join(f'{t:.2f}' for t in ds)}), {out['n_batches']} batches, "
          f"{out['padded_tokens']:,} positions run for {out['tokens']:,} tokens")  # fmt: skip
    print(f"    one call     {statistics.median(one):7.2f} s (median; rounds "
          f"{', '.join(f'{t:.2f}' for t in one)}), {out['one_call_padded_tokens']:,} "
          "positions run")  # fmt: skip
    print(f"    lens_dataset's own work (outside the step's calls): "
          f"{statistics.median(out['own']):.3f} s")  # fmt: skip
    print(f"    lens_dataset / one call: {statistics.median(ratios):.3f} (median of the "
          f"rounds' ratios: {', '.join(f'{r:.3f}' for r in ratios)}; target <= 1.10 quiet, "
          "<= 1.50 under load)")  # fmt: skip
    print(f"    after:  {uptime()}")


def measure_fingerprint(rounds: int) -> None:
    """The weights' fingerprint a data set records (a sample a tensor) against the full sha256
    of every weight, on the GPT-2-shaped model (124 M parameters), alternating."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from murano_widgets.dataset.io import _weights_fingerprint, weights_sha256

    torch.manual_seed(0)
    module = GPT2LMHeadModel(GPT2Config()).eval()
    size = sum(t.numel() * t.element_size() for t in module.state_dict().values())
    print(f"weights' fingerprint, GPT-2 shape ({size / 1e9:.2f} GB of weights); {uptime()}")
    times: dict[str, list[float]] = {"sampled": [], "full sha256": []}
    for round_ in range(rounds):
        pairs = [("sampled", _weights_fingerprint), ("full sha256", weights_sha256)]
        for name, fn in pairs if round_ % 2 == 0 else pairs[::-1]:
            start = time.perf_counter()
            fn(module)
            times[name].append(time.perf_counter() - start)
    for name, values in times.items():
        rate = size / statistics.median(values)
        print(f"  {name:<12} {statistics.median(values):6.3f} s (median of {rounds}), "
              f"{rate / 1e9:6.2f} GB/s: a 14 GB 7B model in {14e9 / rate:5.1f} s")  # fmt: skip
    print(f"  after: {uptime()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=2000)
    parser.add_argument("--time-prompts", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    # One thread by default: on a machine shared with other jobs, torch's worker threads wait on
    # each other (a batch took 10x longer with 2 threads on 2 busy cores), which swamps ratios.
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--time-only", action="store_true", help="skip the memory runs")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--one-call", action="store_true", help="issue 33: lens_dataset vs one call, per CPU kind"
    )
    parser.add_argument("--one-call-prompts", type=int, default=3000)
    parser.add_argument(
        "--one-call-words", type=int, nargs=2, default=[4, 48], metavar=("LO", "HI"),
        help="each prompt's words, drawn uniformly (12 12: one length, no padding to save)",
    )  # fmt: skip
    parser.add_argument("--load", type=int, default=0, help="busy processes during --one-call")
    parser.add_argument("--cpu-kinds", nargs="+", choices=list(CPU_KINDS), default=list(CPU_KINDS))
    parser.add_argument("--one-call-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fingerprint", action="store_true", help="issue 37: weights' fingerprint")
    args = parser.parse_args()
    import torch

    if args.one_call:
        # torch's own thread count unless --threads is given: the measurement.
        threads = args.threads if "--threads" in sys.argv else None
        measure_one_call(
            args.one_call_prompts,
            args.rounds + 1,
            threads,
            args.cpu_kinds,
            tuple(args.one_call_words),
            args.load,
        )
        return
    if args.one_call_child is not None:
        if "--threads" in sys.argv:
            torch.set_num_threads(args.threads)
        words = tuple(args.one_call_words)
        print(json.dumps(one_call_child(args.one_call_child, args.rounds, words)))
        return
    torch.set_num_threads(args.threads)
    if args.fingerprint:
        measure_fingerprint(args.rounds + 1)
        return
    if args.child is not None:
        print(json.dumps(measure_memory(args.child, args.batch_size)))
        return

    if args.time_only:
        measure_time(args.time_prompts, args.batch_size, args.rounds + 1)
        return
    results: dict[int, list[dict[str, float]]] = {args.small: [], args.large: []}
    for round_ in range(args.rounds):
        sizes = [args.small, args.large] if round_ % 2 == 0 else [args.large, args.small]
        for n in sizes:
            command = [sys.executable, __file__, "--child", str(n)]
            command += ["--batch-size", str(args.batch_size), "--threads", str(args.threads)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the {n}-prompt run failed:\n{done.stderr[-3000:]}")
            results[n].append(json.loads(done.stdout.strip().splitlines()[-1]))
    mb = 2**20
    print(f"memory: one lens_dataset call, batch_size {args.batch_size}, fresh process per run")
    summary = {}
    for n, runs in results.items():
        summary[n] = {
            key: statistics.median(r[key] for r in runs)
            for key in ("process_peak", "rss_peak", "traced_peak", "kept", "seconds")
        }
        m = summary[n]
        print(
            f"  {n:>5} prompts: process peak RSS {m['process_peak'] / mb:6.1f} MB; the call's "
            f"peak above its start {m['rss_peak'] / mb:5.1f} MB (runs: "
            + ", ".join(f"{r['rss_peak'] / mb:.1f}" for r in runs)
            + f"), tracemalloc peak {m['traced_peak'] / mb:5.2f} MB, per-prompt arrays kept "
            f"{m['kept'] / mb:5.2f} MB, {m['seconds']:.1f} s"
        )
    small, large = summary[args.small], summary[args.large]
    print(
        f"  {args.large} / {args.small} prompts: process peak RSS "
        f"{large['process_peak'] / small['process_peak']:.3f} (target: <= 1.10); the call's own "
        f"peak grew by {(large['rss_peak'] - small['rss_peak']) / mb:.1f} MB, of which "
        f"{(large['kept'] - small['kept']) / mb:.1f} MB are the per-prompt arrays"
    )
    measure_time(args.time_prompts, args.batch_size, args.rounds + 1)


if __name__ == "__main__":
    main()
