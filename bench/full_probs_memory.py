"""Benchmark: peak memory of ``store_full_probs=True`` against the ``all_probs`` it returns.

Target: the step's peak above the loaded model is at most 1.25 × ``all_probs.nbytes`` plus the
usual chunk budget (about three chunks of ``max_chunk_bytes``) and the saved block outputs.
Each case runs in a fresh process (peaks don't mix); it prints the measured peak, the bound and
their ratio, with and without ``store_full_probs`` side by side. Usage::

    python bench/full_probs_memory.py                   # the demo model, 16 x 256 tokens
    python bench/full_probs_memory.py --gpt2-shaped --shape 4x128
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The same peak-memory readings as the step's benchmark.
from logit_lens import _peak_bytes, _reset_peak, _rss_bytes


def worker(folder: str | None, shape: str, keep: bool, chunk_mib: int) -> dict:
    from murano_widgets import LogitLens, MuranoModel, PromptBatch, load_demo_model

    n, length = (int(x) for x in shape.split("x"))
    if folder:
        from logit_lens import prompts_for

        model = MuranoModel(folder)
        prompts = prompts_for(shape)
    else:
        from demo_model import demo_prompts

        model = load_demo_model()
        prompts = demo_prompts(n, words=length)
    step = LogitLens(model, store_full_probs=keep, max_chunk_bytes=chunk_mib * 2**20)
    LogitLens(model)({"prompts": PromptBatch(prompts[:1])})  # warm-up
    _reset_peak()
    base = _rss_bytes()
    lens = step({"prompts": PromptBatch(prompts)})["logit_lens"]
    peak = _peak_bytes() - base
    return {
        "peak": peak,
        "all_probs": 0 if lens.all_probs is None else lens.all_probs.numel() * 4,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="16x256")
    parser.add_argument("--gpt2-shaped", action="store_true")
    parser.add_argument("--chunk-mib", type=int, default=64)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--model")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.model, args.shape, args.keep, args.chunk_mib)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = None
        if args.gpt2_shaped:
            from logit_lens import build_model

            folder = Path(tmp) / "gpt2-shaped"
            build_model(folder)
        results = {}
        for keep in (False, True):
            command = [sys.executable, __file__, "--worker", "--shape", args.shape]
            command += ["--chunk-mib", str(args.chunk_mib)]
            command += ["--keep"] if keep else []
            command += ["--model", str(folder)] if folder else []
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[keep] = json.loads(done.stdout.strip().splitlines()[-1])
    gb = 1e9
    without, kept = results[False], results[True]
    print(f"{'demo model' if folder is None else 'GPT-2-shaped model'}, {args.shape} tokens")
    print(f"  store_full_probs=False: peak {without['peak'] / gb:.3f} GB above the model")
    print(
        f"  store_full_probs=True:  peak {kept['peak'] / gb:.3f} GB; all_probs "
        f"{kept['all_probs'] / gb:.3f} GB; peak / all_probs = {kept['peak'] / kept['all_probs']:.2f}"
    )
    extra = kept["peak"] - without["peak"]
    print(
        f"  what keeping costs (peak with - peak without) / all_probs = "
        f"{extra / kept['all_probs']:.2f}  (target: <= 1.25)"
    )


if __name__ == "__main__":
    main()
