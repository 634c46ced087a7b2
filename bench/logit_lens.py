"""Benchmark: the LogitLens step against the floor and the naive approach, side by side.

On a randomly initialised model with GPT-2 small's shape (12 layers, d_model 768, vocab 50257,
float32) it runs, each in a fresh process (so memory peaks don't mix) and alternating:

- ``step``: ``LogitLens(model, layers="all")`` with top-k, entropy, final-token fields and KL;
- ``floor``: plain transformers, a forward pass keeping the block outputs (hooks), then final
  norm + ``lm_head`` + softmax + max per layer, on every (dense) position;
- ``naive``: the full softmax ``[n_layers, n_inputs, seq, vocab]`` materialised, then reduced
  (what Murano's released step does);
- ``mm``: a ``torch.mm`` calibration of this machine's float32 matmul rate.

It prints medians, time ratios to the floor, each one's peak memory above the loaded model, and
the step's share of the matmul rate. Usage::

    python bench/logit_lens.py                 # 8x64, 16x256 and a ragged 16x(8..256)
    python bench/logit_lens.py --shapes 8x64 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

N_LAYERS, D_MODEL, VOCAB = 12, 768, 50257


def build_model(folder: Path, n_layers: int = N_LAYERS) -> None:
    """A random GPT-2-small-shaped model (``n_layers`` blocks) and a word-level tokenizer of
    exactly VOCAB tokens."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, GPT2Config, PreTrainedTokenizerFast

    vocab = {f"w{i}": i for i in range(VOCAB - 1)} | {"<|endoftext|>": VOCAB - 1}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=n_layers, n_embd=D_MODEL, n_head=12, vocab_size=VOCAB, n_positions=1024
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    fast.save_pretrained(folder)


def prompts_for(shape: str) -> list[str]:
    """Prompts of exact token lengths: ``"8x64"`` or ``"16xragged"`` (8 to 256 tokens)."""
    import random

    n, length = shape.split("x")
    rng = random.Random(0)
    if length == "ragged":
        lengths = [round(8 + (256 - 8) * i / (int(n) - 1)) for i in range(int(n))]
    else:
        lengths = [int(length)] * int(n)
    return [" ".join(f"w{rng.randrange(VOCAB - 1)}" for _ in range(m)) for m in lengths]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> None:
    # Writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def worker(kind: str, shape: str, folder: str) -> dict:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    if kind == "mm":
        a, b = torch.randn(4096, D_MODEL), torch.randn(D_MODEL, VOCAB)
        torch.mm(a, b)
        start = time.perf_counter()
        for _ in range(3):
            torch.mm(a, b)
        seconds = (time.perf_counter() - start) / 3
        return {"gflops": 2 * 4096 * D_MODEL * VOCAB / seconds / 1e9}
    prompts = prompts_for(shape)
    if kind == "step":
        from murano_widgets import LogitLens, MuranoModel, PromptBatch

        model = MuranoModel(folder)
        step = LogitLens(model, layers="all", top_k=5)
        LogitLens(model)({"prompts": PromptBatch(prompts[:1])})  # warm-up, small
        run = lambda: step({"prompts": PromptBatch(prompts)})  # noqa: E731
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.pad_token = tokenizer.eos_token
        blocks, norm, head = model.transformer.h, model.transformer.ln_f, model.lm_head

        def run():
            ids = tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False)
            saved = []
            hooks = [b.register_forward_hook(lambda _m, _i, o: saved.append(o)) for b in blocks]
            with torch.inference_mode():
                model(**ids)
                for hook in hooks:
                    hook.remove()
                if kind == "floor":
                    return [head(norm(h)).softmax(-1).max(-1) for h in saved]
                probs = torch.stack([head(norm(h)).softmax(-1) for h in saved])
                return probs.max(-1), probs.topk(5, dim=-1)

    n_tokens = sum(len(p.split()) for p in prompts)
    _reset_peak()
    base = _rss_bytes()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_gb": (_peak_bytes() - base) / 1e9, "tokens": n_tokens}


def time_alternating(
    runs: dict[str, Callable[[], object]], rounds: int, sync: Callable[[], None] = lambda: None
) -> dict[str, list[float]]:
    """Each run's seconds per round, side by side in this process: after one warm-up call each,
    the runs alternate round by round, in reverse order every other round, so that drift on a
    shared machine hits each alike. ``sync`` waits for an accelerator before a clock is read."""
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            sync()
            start = time.perf_counter()
            runs[name]()
            sync()
            times[name].append(time.perf_counter() - start)
    return times


def spawn(kind: str, shape: str, folder: Path) -> dict:
    return spawn_worker(__file__, kind, shape, folder)


def spawn_worker(script: str, kind: str, shape: str, folder: Path, *extra: str) -> dict:
    """Runs ``script --worker KIND`` in a fresh process (so memory peaks don't mix); its last
    JSON line, or ``{"error": ...}`` with the last line of its error output."""
    command = [sys.executable, script, "--worker", kind, "--shapes", shape, "--model"]
    command += [str(folder), *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1][:160]}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="8x64,16x256,16xragged")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kinds", default="floor,step,naive")
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
        kinds = args.kinds.split(",")
        rates = [spawn("mm", "", folder)["gflops"]]
        table = {}
        for shape in args.shapes.split(","):
            runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
            for round_ in range(args.rounds):
                # Alternate the order so that drift on a shared machine hits each kind alike.
                for kind in kinds if round_ % 2 == 0 else kinds[::-1]:
                    runs[kind].append(spawn(kind, shape, folder))
            rates.append(spawn("mm", "", folder)["gflops"])
            table[shape] = runs
        report(table, statistics.median(rates))


def report(table: dict, gflops: float) -> None:
    print(f"\nfloat32 matmul rate (torch.mm 4096x768 @ 768x50257): {gflops:.0f} GFLOP/s")
    print(
        f"{'shape':<11} {'kind':<6} {'median s':>9} {'x floor':>8} {'peak GB':>8} {'matmul share':>13}"
    )
    dense_floor = None
    for shape, runs in table.items():

        def median(kind: str, key: str, runs: dict = runs):
            values = [r[key] for r in runs.get(kind, []) if key in r]
            return statistics.median(values) if values else None

        floor = median("floor", "seconds")
        if shape.endswith("x256"):
            dense_floor = floor
        for kind, results in runs.items():
            seconds = median(kind, "seconds")
            if seconds is None:
                print(f"{shape:<11} {kind:<6} {'failed: ' + results[0].get('error', '?')}")
                continue
            tokens = results[0]["tokens"]
            work = 2 * N_LAYERS * tokens * D_MODEL * VOCAB / 1e9
            ratio = f"{seconds / floor:.2f}" if floor else "-"
            print(
                f"{shape:<11} {kind:<6} {seconds:9.2f} {ratio:>8} {median(kind, 'peak_gb'):8.2f}"
                f" {100 * work / seconds / gflops:12.0f}%"
            )
        if shape.endswith("ragged") and dense_floor and median("step", "seconds"):
            print(
                f"{'':<11} ragged step / dense 16x256 floor: {median('step', 'seconds') / dense_floor:.2f}"
            )


if __name__ == "__main__":
    main()
