"""Benchmark: the Jacobian lens's readout against the logit lens, and the cost of fitting one.

On randomly initialised models with GPT-2 small's width and vocabulary (d_model 768, vocab
50257, float32; built as ``bench/logit_lens.py`` builds them), each run in a fresh process:

- **readout** (``--readout-layers`` blocks, 4 by default: the J-lens's extra work is per layer,
  so depth does not change the ratio and a shallow model keeps the rounds short on a shared
  machine): ``LogitLens(model, layers="all")`` against ``LogitLens(model, layers="all",
  lens=jlens)`` with a J-lens of random non-identity matrices, alternating the order every
  round. Each process warms up, then times ``--repeats`` runs; the script prints medians, the
  per-round ratios jacobian / logit (wall-clock and the process's own CPU time) and their medians.
  Target: at most 1.15 at 8 × 64 (one ``d_model²`` matmul per layer and token against the
  unembedding's ``d_model · vocab``: 1.5 % of the matmul work on this shape).
- **fit** (``--fit-layers`` blocks, 12 by default: GPT-2's shape): ``JacobianLens.fit`` on
  ``--fit-texts`` texts of ``--fit-tokens`` tokens (defaults 1 × 128, the reference's length)
  with ``dim_batch=8`` and ``skip_first=16``: seconds per text, the forward pass's and the
  backward passes' shares (timed around ``torch.autograd.grad``), the backward/forward ratio
  (all ``ceil(768 / 8) = 96`` passes, and one pass), and the peak resident memory above the
  loaded model.

Usage::

    python bench/jacobian_lens.py                      # readout 8x64 (4 rounds) and the fit
    python bench/jacobian_lens.py --skip-fit --rounds 6
    python bench/jacobian_lens.py --skip-readout --device cuda   # the fit on a GPU
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

from logit_lens import (
    D_MODEL,
    VOCAB,
    _peak_bytes,
    _reset_peak,
    _rss_bytes,
    build_model,
    prompts_for,
    spawn_worker,
)


def _random_jlens(model, seed: int = 0):
    import torch

    from murano_widgets import JacobianLens

    generator = torch.Generator().manual_seed(seed)
    eye = torch.eye(D_MODEL)
    return JacobianLens(
        {
            layer: eye + 0.1 * torch.randn(D_MODEL, D_MODEL, generator=generator) / D_MODEL**0.5
            for layer in range(model.n_layers - 1)
        },
        n_prompts=1,
    )


def readout_worker(kind: str, shape: str, folder: str, repeats: int) -> dict:
    from murano_widgets import LogitLens, MuranoModel, PromptBatch

    model = MuranoModel(folder)
    kwargs = {"lens": _random_jlens(model)} if kind == "jacobian" else {}
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
        "lens_kind": result.lens_kind,
    }


def fit_worker(shape: str, folder: str, device: str) -> dict:
    import torch

    from murano_widgets import JacobianLens, MuranoModel

    model = MuranoModel(folder, device=device)
    texts = prompts_for(shape)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    grads: list[float] = []
    first_grad: list[float] = []
    real_grad = torch.autograd.grad

    def timed_grad(*args, **kwargs):
        sync()
        start = time.perf_counter()
        if not first_grad:
            first_grad.append(start)
        out = real_grad(*args, **kwargs)
        sync()
        grads.append(time.perf_counter() - start)
        return out

    torch.autograd.grad = timed_grad
    try:
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        _reset_peak()
        base = _rss_bytes()
        start = time.perf_counter()
        lens = JacobianLens.fit(model, texts, dim_batch=8, skip_first=16, progress=False)
        sync()
        seconds = time.perf_counter() - start
        peak = _peak_bytes() - base
    finally:
        torch.autograd.grad = real_grad
    backward = sum(grads)
    # The forward pass of the first text: from the start to its first backward pass (the
    # tokenizing before it is tiny next to it: one text of 128 words).
    forward = first_grad[0] - start
    passes = len(grads)
    return {
        "texts": len(texts),
        "seconds_per_text": seconds / len(texts),
        "forward_seconds": forward,
        "backward_seconds_per_text": backward / len(texts),
        "passes_per_text": passes // len(texts),
        "backward_over_forward": backward / len(texts) / forward,
        "one_pass_over_forward": backward / passes / forward,
        "peak_gb": peak / 1e9,
        "cuda_peak_gb": torch.cuda.max_memory_allocated() / 1e9
        if device.startswith("cuda")
        else None,
        "n_prompts": lens.n_prompts,
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="8x64")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--readout-layers", type=int, default=4)
    parser.add_argument("--fit-layers", type=int, default=12)
    parser.add_argument("--fit-texts", type=int, default=1)
    parser.add_argument("--fit-tokens", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-readout", action="store_true")
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--model", type=Path)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker == "fit":
        print(json.dumps(fit_worker(args.shapes, str(args.model), args.device)))
        return
    if args.worker:
        print(json.dumps(readout_worker(args.worker, args.shapes, str(args.model), args.repeats)))
        return

    with open("/proc/loadavg") as f:
        print(f"load average at the start: {f.read().split()[:3]} (1, 5, 15 min)")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_readout:
            folder = Path(tmp) / "readout"
            build_model(folder, n_layers=args.readout_layers)
            readout(folder, args)
        if not args.skip_fit:
            folder = Path(tmp) / "fit"
            build_model(folder, n_layers=args.fit_layers)
            shape = f"{args.fit_texts}x{args.fit_tokens}"
            run = spawn_worker(__file__, "fit", shape, folder, "--device", args.device)
            print(
                f"\nfit: GPT-2-shaped random model ({args.fit_layers} layers, d_model {D_MODEL}, "
                f"vocab {VOCAB}), float32, {args.device}; {shape} texts, dim_batch 8, "
                "skip_first 16"
            )
            print(json.dumps(run, indent=2))
    with open("/proc/loadavg") as f:
        print(f"load average at the end: {f.read().split()[:3]}")


def readout(folder: Path, args) -> None:
    kinds = ["logit", "jacobian"]
    print(
        f"readout: GPT-2-shaped random model ({args.readout_layers} layers, d_model {D_MODEL}, "
        f"vocab {VOCAB}), float32; median of {args.repeats} runs per process, {args.rounds} rounds"
    )
    print(
        f"{'shape':<9} {'round':>5} {'logit s':>8} {'jlens s':>8} {'jlens/logit':>12}"
        f" {'logit cpu s':>12} {'jlens cpu s':>12} {'cpu ratio':>10}"
    )
    for shape in args.shapes.split(","):
        ratios, cpu_ratios, times = [], [], {kind: [] for kind in kinds}
        for round_ in range(args.rounds):
            runs = {}
            for kind in kinds if round_ % 2 == 0 else kinds[::-1]:
                runs[kind] = spawn_worker(
                    __file__, kind, shape, folder, "--repeats", str(args.repeats)
                )
            if any("error" in run for run in runs.values()):
                print(f"{shape:<9} {round_:>5} failed: {runs}")
                continue
            assert runs["jacobian"]["lens_kind"] == "jacobian", runs["jacobian"]
            for kind in kinds:
                times[kind].append(runs[kind]["seconds"])
            ratio = runs["jacobian"]["seconds"] / runs["logit"]["seconds"]
            cpu_ratio = runs["jacobian"]["cpu_seconds"] / runs["logit"]["cpu_seconds"]
            ratios.append(ratio)
            cpu_ratios.append(cpu_ratio)
            print(
                f"{shape:<9} {round_:>5} {runs['logit']['seconds']:8.3f} "
                f"{runs['jacobian']['seconds']:8.3f} {ratio:12.3f} "
                f"{runs['logit']['cpu_seconds']:12.3f} {runs['jacobian']['cpu_seconds']:12.3f} "
                f"{cpu_ratio:10.3f}",
                flush=True,
            )
        if ratios:
            print(
                f"{shape:<9} {'med':>5} {statistics.median(times['logit']):8.3f} "
                f"{statistics.median(times['jacobian']):8.3f} {statistics.median(ratios):12.3f} "
                f"{'':>12} {'':>12} {statistics.median(cpu_ratios):10.3f}"
            )
            print(
                "target: jlens/logit <= 1.15; the matrices' share of the matmul work is "
                f"{D_MODEL / (D_MODEL + VOCAB):.1%}. On a machine shared with other jobs the "
                "wall-clock ratio is noisy: the CPU-time ratio is the steadier reading."
            )


if __name__ == "__main__":
    main()
