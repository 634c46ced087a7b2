"""Benchmark: compare_lenses (KL in chunks) against the two LogitLens steps it runs, side by side.

On a randomly initialised model with GPT-2 small's shape (12 layers, d_model 768, vocab 50257,
float32), two batches of prompts of equal length (a clean and a corrupted set: every 8th word
changed, positions aligned from the end), each kind in a fresh process (so memory peaks don't
mix), alternating:

- ``steps``: the two ``LogitLens`` steps alone (``a`` and ``b``), what any comparison costs at
  least, without KL;
- ``together``: ``compare_lenses(model, prompts_a, prompts_b=..., align="end")``: the two steps,
  then one trace per side and KL, the two probabilities of the chosen token, per chunk;
- ``full``: the only other way to get KL per cell: both steps with ``store_full_probs=True``,
  then ``compare(a, b)`` on the full distributions.

It prints each one's median time and peak memory above the loaded model, and the ratios of
``together`` to the other two. Usage::

    python bench/compare.py                       # 8x64, 2 rounds (~3 min)
    python bench/compare.py --shapes 8x64,16x128 --rounds 3
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
# The same model, prompts and peak-memory readings as the step's benchmark.
from logit_lens import (
    VOCAB,
    _peak_bytes,
    _reset_peak,
    _rss_bytes,
    build_model,
    prompts_for,
    spawn_worker,
)

KINDS = ("steps", "together", "full")


def corrupted(prompts: list[str]) -> list[str]:
    """Every 8th word replaced by another: the same token count, different tokens."""
    out = []
    for prompt in prompts:
        words = prompt.split()
        for i in range(3, len(words), 8):
            words[i] = f"w{(int(words[i][1:]) + 7) % (VOCAB - 1)}"
        out.append(" ".join(words))
    return out


def worker(kind: str, shape: str, folder: str) -> dict:
    import torch

    from murano_widgets import LogitLens, MuranoModel, PromptBatch, compare, compare_lenses

    model = MuranoModel(folder)
    prompts_a = prompts_for(shape)
    prompts_b = corrupted(prompts_a)
    LogitLens(model)({"prompts": PromptBatch(prompts_a[:1])})  # warm-up, small

    def steps(full: bool):
        return [
            LogitLens(model, store_full_probs=full)({"prompts": PromptBatch(p)})["logit_lens"]
            for p in (prompts_a, prompts_b)
        ]

    if kind == "steps":
        run = lambda: steps(False)  # noqa: E731
    elif kind == "together":
        run = lambda: compare_lenses(model, prompts_a, prompts_b=prompts_b, align="end")  # noqa: E731
    else:
        run = lambda: compare(*steps(True), align="end")  # noqa: E731
    _reset_peak()
    base = _rss_bytes()
    start = time.perf_counter()
    with torch.inference_mode():
        out = run()
    seconds = time.perf_counter() - start
    info = {"seconds": seconds, "peak_gb": (_peak_bytes() - base) / 1e9}
    if kind != "steps":
        info["kl_cells"] = int(torch.isfinite(out.kl_a_to_b).sum())
    return info


def spawn(kind: str, shape: str, folder: Path) -> dict:
    return spawn_worker(__file__, kind, shape, folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="8x64")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.shapes, str(args.model))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model or Path(tmp) / "gpt2-shaped"
        if not (folder / "config.json").exists():
            build_model(folder)
        for shape in args.shapes.split(","):
            runs: dict[str, list[dict]] = {kind: [] for kind in KINDS}
            for round_ in range(args.rounds):
                # Alternate the order so that drift on a shared machine hits each kind alike.
                for kind in KINDS if round_ % 2 == 0 else KINDS[::-1]:
                    runs[kind].append(spawn(kind, shape, folder))
            report(shape, runs)


def report(shape: str, runs: dict[str, list[dict]]) -> None:
    def median(kind: str, key: str) -> float | None:
        values = [r[key] for r in runs[kind] if key in r]
        return statistics.median(values) if values else None

    print(f"\n{shape} (GPT-2-small shape, float32, all 12 layers, a vs b aligned from the end)")
    print(f"{'kind':<9} {'median s':>9} {'peak GB':>8} {'KL cells':>9}")
    for kind in KINDS:
        seconds = median(kind, "seconds")
        if seconds is None:
            print(f"{kind:<9} failed: {runs[kind][0].get('error', '?')}")
            continue
        cells = median(kind, "kl_cells")
        print(
            f"{kind:<9} {seconds:9.2f} {median(kind, 'peak_gb'):8.2f} "
            f"{'-' if cells is None else int(cells):>9}"
        )
    together = (median("together", "peak_gb"), median("together", "seconds"))
    for other in ("steps", "full"):
        peak, seconds = median(other, "peak_gb"), median(other, "seconds")
        if None in (*together, peak, seconds):
            continue
        print(
            f"together / {other}: peak memory {together[0] / peak:.2f}x, "
            f"time {together[1] / seconds:.2f}x"
        )


if __name__ == "__main__":
    main()
