"""Benchmark: the Patchscope lens's batched readout against one forward pass per cell.

On the demo model (``load_demo_model()``: 6 layers, d_model 128, vocab 1536, float32), the
block outputs of ``--prompts`` prompts of ``--positions`` tokens each (windows of the demo
corpus) at every layer but the last (whose readout is the model's own output and costs no
pass), read by the identity Patchscope two ways, alternating the order every round:

- **batched**: :meth:`PatchscopeLens.logits` per layer on all of a layer's cells: the target
  prompt repeated once per cell, each row patched through a forward hook, as many rows per
  forward pass as the step's memory budget allows (``max_chunk_bytes``, 256 MiB), the pass
  stopped at the last block and the placeholder's state unembedded;
- **naive**: one plain forward pass of the target prompt per cell (batch 1), a forward hook
  replacing the patched block's output at the placeholder, the model's own logits there.

Prints the time per cell of each, wall-clock and the process's own CPU time (medians over the
rounds), and the ratios batched / naive (target: at most 0.3), with the machine's load
(``os.getloadavg``): on a shared machine the CPU time is the steadier measure.

Usage::

    python bench/patchscope.py                    # 8 prompts x 32 positions, 3 rounds
    python bench/patchscope.py --prompts 16 --positions 64 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from murano_widgets import PatchscopeLens, load_demo_model
from murano_widgets.demo_model import corpus
from murano_widgets.step.logit_lens import DEFAULT_MAX_CHUNK_BYTES


def source_states(model, n_prompts: int, n_positions: int) -> dict[int, torch.Tensor]:
    """``{layer: [n_prompts * n_positions, d_model]}``: block outputs of windows of the demo
    corpus, every layer but the last."""
    text = " ".join(corpus.generate_corpus(seed=1, n_documents=10 * n_prompts))
    ids = model.tokenizer(text)["input_ids"][: n_prompts * n_positions]
    if len(ids) < n_prompts * n_positions:
        raise ValueError(f"the corpus sample has {len(ids)} tokens; ask for fewer positions")
    batch = torch.tensor(ids).view(n_prompts, n_positions)
    layers = list(range(model.n_layers - 1))
    with torch.inference_mode():
        outputs = model.block_outputs({"input_ids": batch}, layers, use_cache=False)
    return {layer: outputs[layer].reshape(-1, outputs[layer].shape[-1]) for layer in layers}


def batched(model, lens: PatchscopeLens, states: dict[int, torch.Tensor]) -> torch.Tensor:
    with torch.inference_mode():
        return torch.stack(
            [
                lens.logits(model, layer, hidden, model.n_layers, max_bytes=DEFAULT_MAX_CHUNK_BYTES)
                for layer, hidden in states.items()
            ]
        )


def naive(model, lens: PatchscopeLens, states: dict[int, torch.Tensor]) -> torch.Tensor:
    """One plain forward pass of the target prompt per cell, with a hook."""
    ids, position = lens.target_tokens(model.tokenizer)
    target = torch.tensor([ids])
    hf_model, blocks = model._hf_model, model._blocks
    out = []
    with torch.inference_mode():
        for layer, hidden in states.items():
            rows = []
            for state in hidden:

                def swap(_module, _args, output, state=state):
                    output = output[0] if isinstance(output, tuple) else output
                    output = output.clone()
                    output[0, position] = state
                    return output

                handle = blocks[layer].register_forward_hook(swap)
                try:
                    rows.append(hf_model(input_ids=target, use_cache=False).logits[0, position])
                finally:
                    handle.remove()
            out.append(torch.stack(rows))
    return torch.stack(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--positions", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1 by default: on a shared 2-core machine, OpenMP threads that "
        "wait for a busy core make each small op of a batch-1 pass cost tens of milliseconds)",
    )
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    model = load_demo_model()
    lens = PatchscopeLens()
    states = source_states(model, args.prompts, args.positions)
    cells = sum(len(hidden) for hidden in states.values())
    print(
        f"demo model, {args.prompts} prompts x {args.positions} positions x {len(states)} "
        f"layers = {cells} cells; target prompt {len(lens.target_tokens(model.tokenizer)[0])} "
        f"tokens; torch threads {torch.get_num_threads()}"
    )
    # Warm-up, and the two paths agree (the same distributions up to rounding).
    small = {layer: hidden[:4] for layer, hidden in states.items()}
    got, expected = batched(model, lens, small), naive(model, lens, small)
    torch.testing.assert_close(got.softmax(-1), expected.softmax(-1), atol=1e-5, rtol=1e-5)
    times: dict[str, list[tuple[float, float]]] = {"batched": [], "naive": []}
    ratios = []
    for round_ in range(args.rounds):
        order = ["batched", "naive"] if round_ % 2 == 0 else ["naive", "batched"]
        this = {}
        for kind in order:
            wall, cpu = time.perf_counter(), time.process_time()
            (batched if kind == "batched" else naive)(model, lens, states)
            this[kind] = (time.perf_counter() - wall) / cells, (time.process_time() - cpu) / cells
            times[kind].append(this[kind])
        ratios.append(tuple(b / n for b, n in zip(this["batched"], this["naive"], strict=True)))
        print(
            f"round {round_ + 1}: per cell, wall-clock (CPU): batched "
            f"{this['batched'][0] * 1e3:.3f} ({this['batched'][1] * 1e3:.3f}) ms, naive "
            f"{this['naive'][0] * 1e3:.3f} ({this['naive'][1] * 1e3:.3f}) ms; ratio "
            f"{ratios[-1][0]:.3f} ({ratios[-1][1]:.3f}); load average {os.getloadavg()[0]:.1f}"
        )

    def median(values: list[tuple[float, float]], at: int) -> float:
        return statistics.median(value[at] for value in values)

    print(
        f"median per cell, wall-clock (CPU): batched {median(times['batched'], 0) * 1e3:.3f} "
        f"({median(times['batched'], 1) * 1e3:.3f}) ms, naive {median(times['naive'], 0) * 1e3:.3f}"
        f" ({median(times['naive'], 1) * 1e3:.3f}) ms; ratio batched / naive "
        f"{median(ratios, 0):.3f} ({median(ratios, 1):.3f}) (target <= 0.3)"
    )


if __name__ == "__main__":
    main()
