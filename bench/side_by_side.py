"""Benchmark: three lenses side by side in one call, against each lens alone.

Issue 22's target: three lenses in one widget or data set cost at most 1.2 × the slowest lens
alone plus the other lenses' extra work (their translation, unembedding and reductions: one
trace, the block outputs reused).

Two cases, each side by side in one run:

- **widget** (``--case widget``): a randomly initialised model of GPT-2 small's shape (12 layers,
  d_model 768, vocab 50257, float32; as ``bench/logit_lens.py`` builds it), all layers, the
  widget's Python side: ``LogitLensWidget(LogitLens(model, lens=...).run(prompts))`` (the step
  and the payload) with the logit lens, a tuned lens with random translators and a "Jacobian-
  shaped" lens (one random ``d × d`` matrix per layer, ``h ↦ J_l h``: the readout a Jacobian
  lens computes), each alone and the three together (``lens={"logit": None, "tuned": ...,
  "jacobian": ...}``).
- **dataset** (``--case dataset``): the demo model, ``lens_dataset`` over its held-out fact
  prompts (as ``bench/lens_dataset.py`` draws them, one answer set per family, one torch thread)
  with the logit lens, the shipped tuned lens and a random ``d × d`` lens, each alone and
  together.

Each round runs in a fresh process; inside it the four calls run in a rotated order after a
warm-up, each ``--repeats`` times (medians). The forward pass is timed inside every call (the
step's trace is wrapped), so each lens's own work is its call's time minus its trace's. The
target's denominator is ``slowest alone + Σ (other lens alone − its trace)``: what one trace and
three lenses' own work would cost. Wall-clock and CPU time (the process's own, steadier on a
machine shared with other jobs) are both reported. Usage::

    python bench/side_by_side.py                          # both cases, 3 rounds
    python bench/side_by_side.py --case widget --shape 8x64 --rounds 3
    python bench/side_by_side.py --device cuda            # on a GPU (widget case)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

KINDS = ("logit", "tuned", "jacobian", "together")
ALONE = KINDS[:3]


def make_lenses(model, seed: int = 0) -> dict:
    """The three lenses: the logit lens, a tuned lens with random translators, and a random
    ``d × d`` matrix per layer (the shape of a Jacobian lens's readout)."""
    import torch

    from murano_widgets import Lens
    from murano_widgets.lenses.tuned import TunedLens, model_width

    class RandomJacobian(Lens):
        kind = "jacobian"
        title = "Jacobian-shaped lens (random)"

        def __init__(self, n_layers: int, width: int) -> None:
            generator = torch.Generator().manual_seed(seed + 1)
            eye = torch.eye(width)
            noise = torch.randn(n_layers, width, width, generator=generator) / width**0.5
            self.matrices = eye + 0.1 * noise
            self._on: dict = {}

        def translate(self, layer, hidden):
            # Copied to the hidden states' device and dtype once, as TunedLens does.
            key = (hidden.device, hidden.dtype)
            if key not in self._on:
                self._on[key] = self.matrices.to(hidden.device, hidden.dtype).transpose(1, 2)
            return hidden @ self._on[key][layer]

    tuned = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(seed)
    tuned.weight.normal_(0.0, 0.02, generator=generator)
    tuned.bias.normal_(0.0, 0.02, generator=generator)
    jacobian = RandomJacobian(model.n_layers, model_width(model))
    return {"logit": None, "tuned": tuned, "jacobian": jacobian}


def worker(case: str, shape: str, folder: str, repeats: int, order: int, device: str) -> dict:
    import torch

    from murano_widgets import LogitLens, LogitLensWidget, MuranoModel, lens_dataset
    from murano_widgets.step import assemble as step_module

    if case == "widget":
        from logit_lens import prompts_for

        model = MuranoModel(folder, device=device) if device != "cpu" else MuranoModel(folder)
        prompts = prompts_for(shape)
    else:
        from lens_dataset import data_set

        from murano_widgets import load_demo_model

        # One torch thread, as bench/lens_dataset.py: on a shared machine two threads on two
        # busy cores made a batch of the demo model up to ten times slower.
        torch.set_num_threads(1)
        model = load_demo_model()
        prompts, answers = data_set(int(shape))
    lenses = make_lenses(model)
    if case == "dataset":
        from murano_widgets import load_demo_tuned_lens

        lenses["tuned"] = load_demo_tuned_lens(model)

    # The forward pass of every call, timed where the step runs it.
    traced = []
    original = step_module.trace_states

    def timed_trace(config, inputs, *args, **kwargs):
        sync()
        start = time.perf_counter()
        out = original(config, inputs, *args, **kwargs)
        sync()
        traced.append(time.perf_counter() - start)
        return out

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    step_module.trace_states = timed_trace

    def call(kind: str) -> None:
        lens = lenses if kind == "together" else lenses[kind]
        if case == "widget":
            LogitLensWidget(LogitLens(model, lens=lens).run(prompts)).close()
        else:
            lens_dataset(model, prompts, answers, lens=lens, progress=False)
        sync()

    for kind in KINDS:  # warm-up: every lens once, small
        lens = lenses if kind == "together" else lenses[kind]
        LogitLens(model, lens=lens).run(prompts[:1])
    kinds = list(KINDS[order % len(KINDS) :] + KINDS[: order % len(KINDS)])
    times = {kind: [] for kind in KINDS}
    cpu = {kind: [] for kind in KINDS}
    trace = {kind: [] for kind in KINDS}
    for _ in range(repeats):
        for kind in kinds:
            traced.clear()
            start, start_cpu = time.perf_counter(), time.process_time()
            call(kind)
            times[kind].append(time.perf_counter() - start)
            cpu[kind].append(time.process_time() - start_cpu)
            trace[kind].append(sum(traced))
    return {
        "order": kinds,
        **{f"{kind}_s": statistics.median(times[kind]) for kind in KINDS},
        **{f"{kind}_cpu_s": statistics.median(cpu[kind]) for kind in KINDS},
        **{f"{kind}_trace_s": statistics.median(trace[kind]) for kind in KINDS},
    }


def target(run: dict, suffix: str) -> tuple[float, float]:
    """(together, slowest alone + the other lenses' own work): the target's two sides.

    A lens's own work is its call's time minus its trace's; ``suffix`` is ``"_s"`` (wall) or
    ``"_cpu_s"`` (CPU, with the trace's wall time standing for its CPU time: the forward pass
    runs on every core the process has, so its CPU time is higher; then the CPU reading of the
    others' work is, if anything, low, and the ratio high)."""
    alone = {kind: run[f"{kind}{suffix}"] for kind in ALONE}
    slowest = max(alone, key=alone.get)
    extra = sum(alone[k] - run[f"{k}_trace_s"] for k in ALONE if k != slowest)
    return run[f"together{suffix}"], alone[slowest] + extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="widget,dataset")
    parser.add_argument("--shape", default=None, help="widget: 8x64; dataset: 640 (prompts)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", type=Path)
    parser.add_argument("--worker")
    parser.add_argument("--order", type=int, default=0)
    args = parser.parse_args()
    if args.worker:
        result = worker(
            args.worker, args.shape, str(args.model), args.repeats, args.order, args.device
        )
        print(json.dumps(result))
        return

    from logit_lens import D_MODEL, N_LAYERS, VOCAB, build_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model or Path(tmp) / "gpt2-shaped"
        for case in args.case.split(","):
            shape = args.shape or {"widget": "8x64", "dataset": "640"}[case]
            if case == "widget" and not (folder / "config.json").exists():
                build_model(folder)
            what = (
                f"GPT-2-shaped random model ({N_LAYERS} layers, d_model {D_MODEL}, vocab "
                f"{VOCAB}), {shape}, the widget (step and payload), device {args.device}"
                if case == "widget"
                else f"demo model, lens_dataset over {shape} fact prompts"
            )
            print(f"\n{case}: {what}; median of {args.repeats} per process, {args.rounds} rounds")
            header = "  ".join(f"{k:>9}" for k in KINDS)
            print(f"{'round':>5}  {header}  {'target':>9}  {'ratio':>6}  {'cpu ratio':>9}  traces")
            ratios, cpu_ratios = [], []
            for round_ in range(args.rounds):
                command = [
                    sys.executable, __file__, "--worker", case, "--shape", shape,
                    "--model", str(folder), "--repeats", str(args.repeats),
                    "--order", str(round_), "--device", args.device,
                ]  # fmt: skip
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
                if done.returncode != 0 or not lines:
                    print(f"{round_:>5}  failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
                    continue
                run = json.loads(lines[-1])
                together, goal = target(run, "_s")
                cpu_together, cpu_goal = target(run, "_cpu_s")
                ratios.append(together / goal)
                cpu_ratios.append(cpu_together / cpu_goal)
                times = "  ".join(f"{run[f'{k}_s']:9.3f}" for k in KINDS)
                traces = ", ".join(f"{run[f'{k}_trace_s']:.2f}" for k in KINDS)
                print(
                    f"{round_:>5}  {times}  {goal:9.3f}  {ratios[-1]:6.3f}  {cpu_ratios[-1]:9.3f}"
                    f"  {traces}"
                )
            if ratios:
                print(
                    f"median ratio together / (slowest alone + the others' own work): "
                    f"{statistics.median(ratios):.3f} wall, {statistics.median(cpu_ratios):.3f} "
                    "CPU (target <= 1.2)"
                )


if __name__ == "__main__":
    main()
