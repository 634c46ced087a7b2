"""Benchmark: the LogitLens step with a tuned lens against the plain logit lens, side by side.

On a randomly initialised model with GPT-2 small's shape (12 layers, d_model 768, vocab 50257,
float32; built as ``bench/logit_lens.py`` builds it) it runs, each in a fresh process and
alternating the order every round:

- ``logit``: ``LogitLens(model, layers="all")``;
- ``tuned``: ``LogitLens(model, layers="all", lens=lens)`` with a tuned lens whose translators
  are random (non-zero, so every ``addmm`` runs).

Each process warms up, then times ``--repeats`` runs and reports their median wall-clock and
CPU time (its own, which other jobs on a shared machine disturb far less). The script prints the
medians, the per-round ratios tuned / logit and the median ratios (target: at most 1.15 at
8 × 64; the translators are ``d_model²`` multiply-adds per token against the unembedding's
``d_model · vocab``, 1.5 % on this shape). Usage::

    python bench/tuned_lens.py                     # 8x64, 4 rounds of 2 runs
    python bench/tuned_lens.py --shapes 8x64,16x256 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logit_lens import D_MODEL, N_LAYERS, VOCAB, build_model, prompts_for, spawn_worker


def worker(kind: str, shape: str, folder: str, repeats: int) -> dict:
    import torch

    from murano_widgets import LogitLens, MuranoModel, PromptBatch
    from murano_widgets.lenses.tuned import TunedLens

    model = MuranoModel(folder)
    kwargs = {}
    if kind == "tuned":
        lens = TunedLens.identity(model)
        generator = torch.Generator().manual_seed(0)
        lens.weight.normal_(0.0, 0.02, generator=generator)
        lens.bias.normal_(0.0, 0.02, generator=generator)
        kwargs["lens"] = lens
    step = LogitLens(model, layers="all", **kwargs)
    prompts = prompts_for(shape)
    step({"prompts": PromptBatch(prompts[:1])})  # warm-up, small
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = step({"prompts": PromptBatch(prompts)})["logit_lens"]
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {
        "seconds": statistics.median(times),
        "cpu_seconds": statistics.median(cpu),
        "lens_kind": getattr(result, "lens_kind", None),
        "tokens": sum(len(p.split()) for p in prompts),
    }


def spawn(kind: str, shape: str, folder: Path, repeats: int) -> dict:
    return spawn_worker(__file__, kind, shape, folder, "--repeats", str(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="8x64")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.shapes, str(args.model), args.repeats)))
        return

    import inspect

    from murano_widgets import LogitLens

    if "lens" not in inspect.signature(LogitLens).parameters:
        sys.exit("LogitLens has no lens= parameter yet: this benchmark needs it")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model or Path(tmp) / "gpt2-shaped"
        if not (folder / "config.json").exists():
            build_model(folder)
        kinds = ["logit", "tuned"]
        print(
            f"GPT-2-shaped random model ({N_LAYERS} layers, d_model {D_MODEL}, vocab {VOCAB}), "
            f"float32; median of {args.repeats} runs per process, {args.rounds} rounds"
        )
        print(
            f"{'shape':<9} {'round':>5} {'logit s':>8} {'tuned s':>8} {'tuned/logit':>12}"
            f" {'logit cpu s':>12} {'tuned cpu s':>12} {'cpu ratio':>10}"
        )
        for shape in args.shapes.split(","):
            ratios, cpu_ratios, times = [], [], {kind: [] for kind in kinds}
            for round_ in range(args.rounds):
                # Alternate the order so that drift on a shared machine hits both alike.
                runs = {}
                for kind in kinds if round_ % 2 == 0 else kinds[::-1]:
                    runs[kind] = spawn(kind, shape, folder, args.repeats)
                if any("error" in run for run in runs.values()):
                    print(f"{shape:<9} {round_:>5} failed: {runs}")
                    continue
                assert runs["tuned"]["lens_kind"] == "tuned", runs["tuned"]
                for kind in kinds:
                    times[kind].append(runs[kind]["seconds"])
                ratio = runs["tuned"]["seconds"] / runs["logit"]["seconds"]
                cpu_ratio = runs["tuned"]["cpu_seconds"] / runs["logit"]["cpu_seconds"]
                ratios.append(ratio)
                cpu_ratios.append(cpu_ratio)
                print(
                    f"{shape:<9} {round_:>5} {runs['logit']['seconds']:8.3f} "
                    f"{runs['tuned']['seconds']:8.3f} {ratio:12.3f} "
                    f"{runs['logit']['cpu_seconds']:12.3f} {runs['tuned']['cpu_seconds']:12.3f} "
                    f"{cpu_ratio:10.3f}"
                )
            if ratios:
                print(
                    f"{shape:<9} {'med':>5} {statistics.median(times['logit']):8.3f} "
                    f"{statistics.median(times['tuned']):8.3f} {statistics.median(ratios):12.3f} "
                    f"{'':>12} {'':>12} {statistics.median(cpu_ratios):10.3f}"
                )
                print(
                    "target: tuned/logit <= 1.15; the translators' share of the matmul work is "
                    f"{D_MODEL / (D_MODEL + VOCAB):.1%}. On a machine shared with other jobs the "
                    "wall-clock ratio is noisy: the CPU-time ratio (this process's own time) is the "
                    "steadier reading."
                )


if __name__ == "__main__":
    main()
