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
their medians, of wall-clock time and of the process's CPU time; the script prints each
round's step − floor and step / floor, and the medians over rounds. The machine's load average is printed before and after: on a shared machine,
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
    from murano_widgets.step import assemble

    # Each part is wrapped where the run looks it up: the run's module globals.
    parts = {
        "input planning (tokenizing, padding, positions)": [
            (assemble, "plan_inputs"),
            (assemble, "model_inputs"),
        ],
        "forward pass, keeping block outputs": [(assemble, "trace_states")],
        "reduction (unembedding, top-k, softmax, fields)": [(assemble, "reduce_after_trace")],
        "decoding token strings": [(assemble, "decode_unique"), (assemble, "words")],
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


def floor_parts(tokenizer: Any, hf: Any, prompts: list[str], calls: int) -> dict[str, float]:
    """Median milliseconds of the floor's parts over ``calls`` calls."""
    import torch

    norm, head = hf.model.norm, hf.lm_head
    spent: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(calls):
        start = time.perf_counter()
        ids = tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False)
        tokenized = time.perf_counter()
        with torch.inference_mode():
            states = hf(**ids, output_hidden_states=True).hidden_states[1:]
            forward = time.perf_counter()
            logits = [head(norm(h)) for h in states[:-1]] + [head(states[-1])]
            [each.softmax(-1).max(-1) for each in logits]
        done = time.perf_counter()
        spent["tokenizing (padded tensors)"].append(tokenized - start)
        spent["forward pass with output_hidden_states"].append(forward - tokenized)
        spent["final norm, lm_head, softmax and max of every layer"].append(done - forward)
        spent["whole call"].append(done - start)
    return {part: statistics.median(values) * 1e3 for part, values in spent.items()}


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
    # Per round and kind, the median wall-clock time and the median CPU time of the process
    # (every thread's; steadier than wall-clock time on a loaded machine, since it leaves out
    # the waits for a core, but blind to the waits between threads a trace hands over).
    medians: dict[str, dict[str, list[float]]] = {
        clock: {"floor": [], "step": []} for clock in ("wall", "cpu")
    }
    for round_ in range(args.rounds):
        order = [("floor", floor), ("step", ours)]
        for name, run in order if round_ % 2 == 0 else order[::-1]:
            wall, cpu = [], []
            for _ in range(args.calls):
                start, start_cpu = time.perf_counter(), time.process_time()
                run()
                wall.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            medians["wall"][name].append(statistics.median(wall) * 1e3)
            medians["cpu"][name].append(statistics.median(cpu) * 1e3)
    print(
        f"demo model, {len(prompts)} prompts ({tuple(ids['input_ids'].shape)} padded, "
        f"{int(ids['attention_mask'].sum())} real tokens), {args.rounds} rounds of "
        f"{args.calls} calls each, torch threads: {torch.get_num_threads()}"
    )
    for clock, label in (("wall", "wall-clock"), ("cpu", "CPU time")):
        floors, steps = medians[clock]["floor"], medians[clock]["step"]
        print(f"  {label}:")
        for round_, (f, s) in enumerate(zip(floors, steps, strict=True)):
            print(
                f"    round {round_}: floor {f:7.2f} ms  step {s:7.2f} ms  "
                f"step - floor {s - f:6.2f} ms  step / floor {s / f:.2f}"
            )
        differences = [s - f for f, s in zip(floors, steps, strict=True)]
        ratios = [s / f for f, s in zip(floors, steps, strict=True)]
        print(
            f"    floor (plain transformers) {statistics.median(floors):.2f} ms, step "
            f"{statistics.median(steps):.2f} ms (medians of the rounds' medians)"
        )
        print(
            f"    step - floor: {statistics.median(differences):.2f} ms "
            f"(rounds {min(differences):.2f} to {max(differences):.2f}; target: <= 5 ms); "
            f"step / floor: {statistics.median(ratios):.2f} "
            f"(rounds {min(ratios):.2f} to {max(ratios):.2f})"
        )
    if args.breakdown:
        parts = breakdown(step, prompts, args.calls * 4)
        print("  where a step call's time goes (medians, internals wrapped):")
        for part, ms in parts.items():
            print(f"    {part:66s} {ms:7.3f} ms")
        print("  and the floor's (medians):")
        for part, ms in floor_parts(tokenizer, hf, prompts, args.calls * 4).items():
            print(f"    {part:66s} {ms:7.3f} ms")
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
