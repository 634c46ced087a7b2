"""Benchmark: the fixed cost of one step call on a small batch, against plain transformers.

Data sets of short prompts pay the step's fixed cost once per batch, and on the shipped demo
model (6 layers, d_model 128, vocabulary 1,536) a batch of 4 prompts of about 10 words takes a
few milliseconds of model work: there, what the step does around the model shows. Both run in
this one process, interleaved, after a warm-up:

- **step**: ``LogitLens(load_demo_model(), top_k=5)({"prompts": PromptBatch(prompts)})``, with
  top-k, entropy, the final-token fields and KL, the decoded words and the result;
- **floor**: plain transformers on the same prompts: the tokenizer (padded, tensors), the Hugging
  Face model's forward pass with ``output_hidden_states=True``, then the final norm, ``lm_head``,
  softmax and max of every layer (``hidden_states[-1]`` is already normed: ``lm_head`` alone).

Each round times ``--calls`` calls of each (the order alternating between rounds) and keeps
their medians; the script prints each round's step − floor and step / floor, and the medians
over rounds. The machine's load average is printed before and after: on a shared machine,
rerun when it is quiet. ``--breakdown`` then times the step's parts (wrapping its internals),
and ``--threads`` sets torch's threads (default: torch's own choice). Usage::

    python bench/fixed_cost.py                          # 4 prompts x ~10 words, 9 rounds
    python bench/fixed_cost.py --breakdown --threads 1
    python bench/fixed_cost.py --prompts 64 --words 50 --calls 3 --rounds 5
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min), {os.cpu_count()} CPUs"


def breakdown(step: Any, prompts: list[str], calls: int) -> dict[str, float]:
    """Median milliseconds of the step's parts over ``calls`` calls (its internals wrapped)."""
    from murano_widgets import PromptBatch
    from murano_widgets.step import logit_lens as module

    parts = {
        "input planning (tokenizing, padding, positions)": [
            (module, "plan_inputs"),
            (module, "_model_inputs"),
        ],
        "forward pass, keeping block outputs": [(module.LogitLens, "_trace_states")],
        "reduction (unembedding, top-k, softmax, fields)": [
            (module.LogitLens, "_reduce_after_trace")
        ],
        "decoding token strings": [(module, "_decode_unique"), (module, "_words")],
    }
    spent: dict[str, float] = collections.defaultdict(float)
    originals = []
    for part, places in parts.items():
        for owner, name in places:
            original = getattr(owner, name)
            originals.append((owner, name, original))

            def timed(*args: Any, _original: Any = original, _part: str = part, **kwargs: Any):
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    spent[_part] += time.perf_counter() - start

            setattr(owner, name, functools.wraps(original)(timed))
    per_call: dict[str, list[float]] = collections.defaultdict(list)
    try:
        batch = PromptBatch(prompts)
        for _ in range(calls):
            spent.clear()
            start = time.perf_counter()
            step({"prompts": batch})
            total = time.perf_counter() - start
            for part in parts:
                per_call[part].append(spent[part])
            per_call["the rest (checks, scattering into padded tensors, the result)"].append(
                total - sum(spent[part] for part in parts)
            )
            per_call["whole call"].append(total)
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    return {part: statistics.median(values) * 1e3 for part, values in per_call.items()}


def main() -> None:
    import torch
    from demo_model import demo_prompts
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from murano_widgets import LogitLens, PromptBatch, load_demo_model
    from murano_widgets.demo_model import DEMO_MODEL_PATH

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--words", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=50, help="calls of each per round")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"before: {load()}")
    prompts = demo_prompts(args.prompts, args.words)

    step = LogitLens(load_demo_model(), top_k=5)
    hf = AutoModelForCausalLM.from_pretrained(DEMO_MODEL_PATH, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEMO_MODEL_PATH)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    norm, head = hf.model.norm, hf.lm_head
    batch = PromptBatch(prompts)

    def floor() -> Any:
        ids = tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False)
        with torch.inference_mode():
            states = hf(**ids, output_hidden_states=True).hidden_states[1:]
            logits = [head(norm(h)) for h in states[:-1]] + [head(states[-1])]
            return [each.softmax(-1).max(-1) for each in logits]

    def ours() -> Any:
        return step({"prompts": batch})

    ids = tokenizer(prompts, padding=True, return_tensors="pt")
    for run in (floor, ours) * 10:  # warm-up: first-call allocations and lazy imports
        run()
    medians: dict[str, list[float]] = {"floor": [], "step": []}
    for round_ in range(args.rounds):
        order = [("floor", floor), ("step", ours)]
        for name, run in order if round_ % 2 == 0 else order[::-1]:
            times = []
            for _ in range(args.calls):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            medians[name].append(statistics.median(times) * 1e3)
    print(
        f"demo model, {len(prompts)} prompts ({tuple(ids['input_ids'].shape)} padded, "
        f"{int(ids['attention_mask'].sum())} real tokens), {args.rounds} rounds of "
        f"{args.calls} calls each, torch threads: {torch.get_num_threads()}"
    )
    for round_, (f, s) in enumerate(zip(medians["floor"], medians["step"], strict=True)):
        print(
            f"  round {round_}: floor {f:7.2f} ms  step {s:7.2f} ms  "
            f"step - floor {s - f:6.2f} ms  step / floor {s / f:.2f}"
        )
    floor_ms, step_ms = (statistics.median(medians[k]) for k in ("floor", "step"))
    differences = [s - f for f, s in zip(medians["floor"], medians["step"], strict=True)]
    ratios = [s / f for f, s in zip(medians["floor"], medians["step"], strict=True)]
    print(f"  floor (plain transformers): {floor_ms:.2f} ms (median of the rounds' medians)")
    print(f"  step:                       {step_ms:.2f} ms")
    print(
        f"  step - floor: {statistics.median(differences):.2f} ms "
        f"(rounds {min(differences):.2f} to {max(differences):.2f}; target: <= 5 ms)"
    )
    print(
        f"  step / floor: {statistics.median(ratios):.2f} "
        f"(rounds {min(ratios):.2f} to {max(ratios):.2f})"
    )
    if args.breakdown:
        parts = breakdown(step, prompts, args.calls * 4)
        print("  where a step call's time goes (medians, internals wrapped):")
        for part, ms in parts.items():
            print(f"    {part:66s} {ms:7.3f} ms")
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
