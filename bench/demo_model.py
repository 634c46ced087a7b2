"""Benchmark: the step on the shipped demo model against a naive full softmax per layer.

The demo model is what every student runs first: 6 layers, d_model 128, a vocabulary of 1,536.
There the unembedding is cheap and per-row Python work would dominate, so this case checks that
the step (top-k, entropy, final-token fields, KL) is no slower than the naive lens (plain
transformers, block outputs by hooks, then final norm + lm_head + softmax + max per layer, on
every dense position). Both run in this one process, alternating, after a warm-up; it prints
each one's median and the ratio. Usage::

    python bench/demo_model.py                      # 64 prompts of about 50 tokens, 15 rounds
    python bench/demo_model.py --prompts 64 --rounds 9
    python bench/demo_model.py --threads 1          # torch threads (default: torch's choice)

It prints the machine's load average before and after, and each round's ratio: on a shared
machine the ratio swings with the load (two busy cores and two torch threads make every small
parallel op wait for a core), so rerun when the load is low.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def demo_prompts(n: int, words: int = 50) -> list[str]:
    """``n`` prompts of about ``words`` tokens, cut from the demo corpus."""
    from murano_widgets.demo_model.corpus import generate_corpus

    text = " ".join(generate_corpus(seed=1, n_documents=40 * n)).split()
    return [" ".join(text[i * words : (i + 1) * words]) for i in range(n)]


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from murano_widgets import LogitLens, PromptBatch, load_demo_model
    from murano_widgets.demo_model import DEMO_MODEL_PATH

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print("before: load average {:.2f} / {:.2f} / {:.2f} (1 / 5 / 15 min)".format(*os.getloadavg()))
    prompts = demo_prompts(args.prompts)

    step = LogitLens(load_demo_model(), top_k=5)
    hf = AutoModelForCausalLM.from_pretrained(DEMO_MODEL_PATH, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEMO_MODEL_PATH)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    blocks, norm, head = hf.model.layers, hf.model.norm, hf.lm_head

    def naive():
        ids = tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False)
        saved = []
        hooks = [
            b.register_forward_hook(
                lambda _m, _i, o: saved.append(o[0] if isinstance(o, tuple) else o)
            )
            for b in blocks
        ]
        with torch.inference_mode():
            hf(**ids)
            for hook in hooks:
                hook.remove()
            return [head(norm(h)).softmax(-1).max(-1) for h in saved]

    def ours():
        return step({"prompts": PromptBatch(prompts)})

    n_tokens = int(tokenizer(prompts, padding=True, return_tensors="pt")["attention_mask"].sum())
    for run in (naive, ours):  # warm-up: first-call allocations and lazy imports
        run()
    times: dict[str, list[float]] = {"naive": [], "step": []}
    for round_ in range(args.rounds):
        order = [("naive", naive), ("step", ours)]
        for name, run in order if round_ % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    naive_s, step_s = (statistics.median(times[k]) for k in ("naive", "step"))
    print(
        f"demo model, {len(prompts)} prompts, {n_tokens} real tokens, {args.rounds} rounds "
        f"(torch threads: {torch.get_num_threads()})"
    )
    ratios = [s / n for n, s in zip(times["naive"], times["step"], strict=True)]
    print("  rounds, step / naive: " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"  naive (norm + lm_head + softmax + max per layer): {naive_s:.3f} s (median)")
    print(f"  step  (top-k, entropy, final prob/rank, KL):      {step_s:.3f} s (median)")
    print(f"  step / naive: {step_s / naive_s:.2f}  (target: <= 1.00)")
    print("after: load average {:.2f} / {:.2f} / {:.2f} (1 / 5 / 15 min)".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
