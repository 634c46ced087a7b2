"""Benchmark: direct logit attribution (``decompose=True``, ``heads=True``) and the sublayer rows
(``sites=("resid_mid", "resid_post")``) against the plain step, side by side.

Issue 23's targets, on a randomly initialised model with GPT-2 small's shape (12 layers, d_model
768, 12 heads, vocab 50257, float32; built as ``bench/logit_lens.py`` builds it), 8 prompts × 64
tokens, all layers:

- ``decompose=True`` adds at most 15 % to the step, ``heads=True`` at most 30 %, and the peak
  memory stays bounded as today's (the ratio of the peaks above the loaded model is reported);
- the sublayer rows cost what their unembeddings cost (about 2× with both sites), no more: the
  expected time is ``trace + 2 × (plain − trace)`` (the trace timed inside the plain call: the
  rest is the rows' unembedding and reductions, which the mid rows double; the trace itself
  reads 12 more small tensors).

Kinds:

- ``plain``: ``LogitLens(model, layers="all", top_k=5)``;
- ``decompose``: the same with ``decompose=True``;
- ``heads``: with ``decompose=True, heads=True``;
- ``sites``: with ``sites=("resid_mid", "resid_post")`` (no decomposition);
- ``user``: the best a user could do instead of ``decompose=True``: the plain step for the
  top-1 tokens, then a second forward pass of the Hugging Face model with plain hooks (the
  embedding, each attention's and MLP's output, each block's output) and a hand-written,
  vectorised direct logit attribution of the same cells (every row, every position, the
  top-1 token, through the final LayerNorm linearised at the cell);
- ``user_heads``: the same with heads (each head's output vectors computed once per block from
  the input of ``c_proj``, then one product per row).

Time: one process per round loads the model, warms every kind up on one prompt, then runs every
kind ``--repeats`` times in a rotated order (the next round starts at the next kind), so that the
calls compared are seconds apart; medians per kind, and per round the ratios to ``plain``,
wall-clock and CPU time (the process's own: on a machine shared with other jobs the steadier
reading). The step is built inside each call, as ``run_logit_lens`` builds it. Inside the
step's calls the trace (``assemble.trace_states``) and the decomposition
(``assemble.decompose_after_trace``) are timed too. Memory: each kind in a fresh process
(after loading and a one-prompt warm-up, ``/proc/self/clear_refs`` resets the peak resident
set), the peak above the call's start; it does not vary from run to run, so it is measured once.
``--check`` first compares the hand-written attribution with the step's (they must agree).
``--profile KIND`` profiles the decomposition of one call in this process (torch.profiler's
operators and cProfile's functions) instead. `uptime` is printed at the start, after every
round and at the end. Usage::

    python bench/decompose.py --rounds 3
    python bench/decompose.py --kinds plain,decompose,heads --rounds 5 --repeats 1
    python bench/decompose.py --profile heads
    python bench/decompose.py --n-layers 36 --d-model 1280 --n-heads 20 --kinds plain,heads  # GPT-2 large
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logit_lens import (
    D_MODEL,
    N_LAYERS,
    VOCAB,
    _peak_bytes,
    _reset_peak,
    _rss_bytes,
    build_model,
    prompts_for,
)

KINDS = ("plain", "decompose", "heads", "sites", "user", "user_heads")
STEP_KWARGS = {
    "plain": {},
    "decompose": {"decompose": True},
    "heads": {"decompose": True, "heads": True},
    "sites": {"sites": ("resid_mid", "resid_post")},
    "user": {},
    "user_heads": {},
}


def build(folder: Path, n_layers: int, d_model: int, n_heads: int) -> None:
    """``bench/logit_lens.py``'s model (GPT-2 small's shape by default) with another depth,
    width or head count: how the heads' cost grows with the model."""
    build_model(folder, n_layers=n_layers)
    if (d_model, n_heads) == (D_MODEL, 12):
        return
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=n_layers, n_embd=d_model, n_head=n_heads, vocab_size=VOCAB, n_positions=1024
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)


def uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


# -- the hand-written baseline ------------------------------------------------------------------


def hooked_states(hf_model, input_ids, attention_mask, heads: bool) -> dict:
    """One forward pass of a GPT-2 model with plain hooks: the embedding (block 0's input), each
    attention's and MLP's output, each block's output and, with ``heads``, the input of each
    attention's ``c_proj``; every tensor ``[n_inputs * seq, d]``."""
    import torch

    blocks = hf_model.transformer.h
    saved: dict = {"attn": [], "mlp": [], "post": [], "z": []}

    def flat(x):
        x = x[0] if isinstance(x, tuple) else x
        return x.reshape(-1, x.shape[-1])

    hooks = [
        blocks[0].register_forward_pre_hook(lambda _m, a: saved.__setitem__("embed", flat(a[0])))
    ]
    for block in blocks:
        hooks.append(
            block.attn.register_forward_hook(lambda _m, _i, o: saved["attn"].append(flat(o)))
        )
        hooks.append(
            block.mlp.register_forward_hook(lambda _m, _i, o: saved["mlp"].append(flat(o)))
        )
        hooks.append(block.register_forward_hook(lambda _m, _i, o: saved["post"].append(flat(o))))
        if heads:
            hooks.append(
                block.attn.c_proj.register_forward_pre_hook(
                    lambda _m, a: saved["z"].append(flat(a[0]))
                )
            )
    try:
        with torch.inference_mode():
            hf_model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                use_cache=False,
                logits_to_keep=1,
            )
    finally:
        for hook in hooks:
            hook.remove()
    return saved


def hand_dla(hf_model, saved: dict, top1, cells, heads: bool):
    """Direct logit attribution of the top-1 token at ``cells`` (indices into the flattened
    positions) for every block output: ``[n_layers, cells, C]`` in the step's component order
    (NaN after the row's block), written as a user would with plain torch."""
    import torch

    ln_f, unembedding = hf_model.transformer.ln_f, hf_model.lm_head.weight
    n_layers = len(saved["post"])
    n_heads = hf_model.config.n_head
    with torch.inference_mode():
        embed = saved["embed"][cells]
        per_block = []  # [cells, k, d] per block: its terms in the component order
        for layer in range(n_layers):
            attn = saved["attn"][layer][cells]
            mlp = saved["mlp"][layer][cells]
            if heads:
                c_proj = hf_model.transformer.h[layer].attn.c_proj
                z = saved["z"][layer][cells].view(len(cells), n_heads, -1)
                w = c_proj.weight.view(n_heads, -1, c_proj.weight.shape[1])  # Conv1D: [in, out]
                head_vectors = torch.einsum("nhk,hkd->nhd", z, w)
                bias = c_proj.bias.expand(len(cells), 1, -1)
                per_block.append(torch.cat([head_vectors, bias, mlp.unsqueeze(1)], dim=1))
            else:
                per_block.append(torch.stack([attn, mlp], dim=1))
        terms = torch.cat([embed.unsqueeze(1), *per_block], dim=1)  # [cells, C, d]
        per_layer = per_block[0].shape[1]
        out = torch.full((n_layers, len(cells), terms.shape[1]), float("nan"))
        for layer in range(n_layers):
            x = saved["post"][layer][cells]
            scale = torch.rsqrt(x.var(-1, unbiased=False) + ln_f.eps)
            q = ln_f.weight * unembedding.index_select(0, top1[layer])
            q = (q - q.mean(-1, keepdim=True)) * scale.unsqueeze(-1)
            k = 1 + per_layer * (layer + 1)
            out[layer, :, :k] = torch.einsum("nkd,nd->nk", terms[:, :k], q)
    return out


# -- one process --------------------------------------------------------------------------------


def setup(folder: str, shape: str, threads: int):
    """The model, the prompts and ``call(kind) -> parts`` (the parts' seconds), timing the trace
    and the decomposition inside the step."""
    import torch

    from murano_widgets import LogitLens, MuranoModel, PromptBatch
    from murano_widgets.step import assemble as step_module

    torch.set_num_threads(threads)
    model = MuranoModel(folder)
    prompts = prompts_for(shape)
    timed: dict[str, list[float]] = {"trace": [], "decompose": []}

    def wrap(name: str, key: str) -> None:
        original = getattr(step_module, name)

        def timed_call(*args, **kwargs):
            start = time.perf_counter()
            out = original(*args, **kwargs)
            timed[key].append(time.perf_counter() - start)
            return out

        setattr(step_module, name, timed_call)

    wrap("trace_states", "trace")
    wrap("decompose_after_trace", "decompose")

    def call(kind: str, batch: list[str] = prompts) -> dict:
        for values in timed.values():
            values.clear()
        # The step is built in the call, as run_logit_lens and show_logit_lens build it.
        step = LogitLens(model, layers="all", top_k=5, **STEP_KWARGS[kind])
        result = step({"prompts": PromptBatch(batch)})["logit_lens"]
        parts = {"trace": sum(timed["trace"]), "decompose": sum(timed["decompose"])}
        if kind.startswith("user"):
            heads = kind == "user_heads"
            hf_model = model._hf_model
            start = time.perf_counter()
            ids = model.tokenizer(batch, return_tensors="pt", padding=True)
            saved = hooked_states(hf_model, ids["input_ids"], ids["attention_mask"], heads)
            parts["user_pass"] = time.perf_counter() - start
            start = time.perf_counter()
            mask = result.attention_mask.bool()
            cells = torch.nonzero(mask.reshape(-1)).squeeze(1)
            hand_dla(hf_model, saved, result.predicted_tokens[:, mask], cells, heads)
            parts["user_dla"] = time.perf_counter() - start
            del saved
        return parts

    return prompts, call


def time_worker(
    kinds: list[str], shape: str, folder: str, repeats: int, order: int, threads: int
) -> dict:
    """Every kind in this one process, in a rotated order, ``repeats`` cycles: each cycle's
    wall-clock, CPU and parts per kind (a cycle's calls are seconds apart: its ratios are the
    pairs to compare)."""
    prompts, call = setup(folder, shape, threads)
    for kind in kinds:  # warm-up: every kind once, small
        call(kind, prompts[:1])
    kinds = kinds[order % len(kinds) :] + kinds[: order % len(kinds)]
    cycles = []
    for _ in range(repeats):
        cycle = {}
        for kind in kinds:
            start, start_cpu = time.perf_counter(), time.process_time()
            parts = call(kind)
            parts["seconds"] = time.perf_counter() - start
            parts["cpu_seconds"] = time.process_time() - start_cpu
            cycle[kind] = parts
        cycles.append(cycle)
    return {"order": kinds, "cycles": cycles}


def memory_worker(kind: str, shape: str, folder: str, threads: int) -> dict:
    """One call of ``kind`` in a fresh process: its peak resident set above its start (after
    loading and a small warm-up)."""
    prompts, call = setup(folder, shape, threads)
    call(kind, prompts[:1])
    _reset_peak()
    base = _rss_bytes()
    call(kind)
    return {"peak_gb": (_peak_bytes() - base) / 1e9}


def spawn(args, worker: str, *extra: str) -> dict:
    command = [
        sys.executable, __file__, "--worker", worker, "--shape", args.shape, "--model",
        str(args.model), "--threads", str(args.threads), "--kinds", args.kinds, *extra,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1][:160]}
    return json.loads(lines[-1])


# -- the check and the profile --------------------------------------------------------------------


def check(folder: Path) -> None:
    """The hand-written attribution equals the step's, with and without heads."""
    import torch

    from murano_widgets import LogitLens, MuranoModel, PromptBatch

    model = MuranoModel(folder)
    prompts = prompts_for("2x16")
    for heads in (False, True):
        result = LogitLens(model, decompose=True, heads=heads)({"prompts": PromptBatch(prompts)})[
            "logit_lens"
        ]
        batch = model.tokenizer(prompts, return_tensors="pt", padding=True)
        saved = hooked_states(model._hf_model, batch["input_ids"], batch["attention_mask"], heads)
        mask = result.attention_mask.bool()
        cells = torch.nonzero(mask.reshape(-1)).squeeze(1)
        ours = hand_dla(model._hf_model, saved, result.predicted_tokens[:, mask], cells, heads)
        theirs = result.contributions[:, mask]
        assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
        assert torch.equal(ours.isnan(), theirs.isnan())
        diff = (ours - theirs).nan_to_num().abs().max().item()
        scale = theirs.nan_to_num().abs().max().item()
        print(f"check heads={heads}: hand-written vs step, max |diff| {diff:.2e} (of {scale:.2f})")
        assert diff <= 1e-3 * max(scale, 1.0), diff


def profile(kind: str, shape: str, folder: Path, threads: int) -> None:
    """One call of ``kind``: its parts' seconds, then torch.profiler's operators and cProfile's
    functions inside the decomposition alone (``assemble.decompose_after_trace``)."""
    import cProfile
    import pstats

    import torch

    from murano_widgets.step import assemble as step_module

    prompts, call = setup(str(folder), shape, threads)
    call(kind, prompts[:1])
    for _ in range(2):
        start = time.perf_counter()
        parts = call(kind)
        print(f"{kind}, {shape}: {time.perf_counter() - start:.2f} s, parts {parts}")
    wrapped = step_module.decompose_after_trace
    tables = []

    def profiled(*args, **kwargs):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            wrapped(*args, **kwargs)
        tables.append(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14))
        profiler = cProfile.Profile()
        out = profiler.runcall(wrapped, *args, **kwargs)
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(14)
        return out

    step_module.decompose_after_trace = profiled
    start = time.perf_counter()
    parts = call(kind)
    print(
        f"profiled call (the decomposition ran twice): {time.perf_counter() - start:.2f} s, {parts}"
    )
    print("\n".join(tables))


# -- the run -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="8x64")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--n-layers", type=int, default=N_LAYERS)
    parser.add_argument("--d-model", type=int, default=D_MODEL)
    parser.add_argument("--n-heads", type=int, default=12)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--profile")
    parser.add_argument("--model", type=Path)
    parser.add_argument("--worker")
    parser.add_argument("--order", type=int, default=0)
    args = parser.parse_args()
    if args.worker == "time":
        kinds = args.kinds.split(",")
        result = time_worker(
            kinds, args.shape, str(args.model), args.repeats, args.order, args.threads
        )
        print(json.dumps(result))
        return
    if args.worker:
        print(json.dumps(memory_worker(args.worker, args.shape, str(args.model), args.threads)))
        return
    print(f"uptime at the start: {uptime()}")
    with tempfile.TemporaryDirectory() as tmp:
        args.model = args.model or Path(tmp) / "gpt2-shaped"
        if not (args.model / "config.json").exists():
            build(args.model, args.n_layers, args.d_model, args.n_heads)
        if args.profile:
            profile(args.profile, args.shape, args.model, args.threads)
        else:
            if args.check:
                check(args.model)
            run(args)
    print(f"uptime at the end: {uptime()}")


def load() -> str:
    return uptime().split("load average: ")[-1]


def expected_sites(cycle: dict) -> float:
    """What the sublayer rows should cost: the mid rows double the rows' unembedding and
    reductions (everything in the plain call but its trace); the trace is shared."""
    plain = cycle["plain"]
    return plain["trace"] + 2 * (plain["seconds"] - plain["trace"])


def ratio(cycles: list[dict], kind: str, key: str = "seconds", to: str = "plain") -> float:
    """The median over cycles of ``kind / to`` in the same cycle."""
    return statistics.median(c[kind][key] / c[to][key] for c in cycles)


def run(args) -> None:
    kinds = args.kinds.split(",")
    assert kinds[0] == "plain", "the ratios are to the plain step: list it first"
    print(
        f"random GPT-2 model ({args.n_layers} layers, d_model {args.d_model}, {args.n_heads} "
        f"heads, vocab {VOCAB}), "
        f"float32, {args.shape}, all layers, {args.threads} torch threads"
    )
    memory: dict[str, dict] = {}
    if not args.skip_memory:
        print("peak resident set above the start of one call, a fresh process per kind:")
        for kind in kinds:
            memory[kind] = spawn(args, kind)
            print(
                f"  {kind:<11} {memory[kind].get('peak_gb', float('nan')):.3f} GB"
                f"{'  ' + memory[kind]['error'] if 'error' in memory[kind] else ''}"
                f"  [load {load()}]",
                flush=True,
            )
    print(
        f"time: one process per round, {args.repeats} cycles of every kind in it (rotated "
        "order); per round the median seconds and the median of the cycles' ratios to plain, "
        "wall / CPU"
    )
    others = kinds[1:]
    print(f"{'round':>5}  " + "  ".join(f"{k:>10}" for k in kinds) + "   ratios (wall/cpu)   load")
    cycles: list[dict] = []
    for round_ in range(args.rounds):
        run_ = spawn(args, "time", "--repeats", str(args.repeats), "--order", str(round_))
        if "error" in run_:
            print(f"{round_:>5}  failed: {run_['error']}")
            continue
        these = run_["cycles"]
        cycles += these
        seconds = "  ".join(
            f"{statistics.median(c[k]['seconds'] for c in these):10.2f}" for k in kinds
        )
        ratios = ", ".join(
            f"{k} {ratio(these, k):.3f}/{ratio(these, k, 'cpu_seconds'):.3f}" for k in others
        )
        print(f"{round_:>5}  {seconds}   {ratios}   [{load()}]", flush=True)
    if cycles:
        report(cycles, kinds, memory)


def report(cycles: list[dict], kinds: list[str], memory: dict[str, dict]) -> None:
    def med(kind: str, key: str) -> float:
        return statistics.median(c[kind][key] for c in cycles)

    def peak(kind: str) -> float:
        return memory.get(kind, {}).get("peak_gb", float("nan"))

    print(f"\nmedians over {len(cycles)} cycles (all rounds)")
    print(
        f"{'kind':<11} {'wall s':>7} {'cpu s':>7} {'trace s':>8} {'own s':>7} {'x plain':>8}"
        f" {'x plain cpu':>12} {'peak GB':>8} {'peak x plain':>13}"
    )
    for kind in kinds:
        own = med(kind, "decompose") if kind in ("decompose", "heads") else None
        if kind.startswith("user"):
            own = med(kind, "user_pass") + med(kind, "user_dla")
        print(
            f"{kind:<11} {med(kind, 'seconds'):7.2f} {med(kind, 'cpu_seconds'):7.2f}"
            f" {med(kind, 'trace'):8.2f} {'' if own is None else f'{own:7.2f}':>7}"
            f" {ratio(cycles, kind):8.3f} {ratio(cycles, kind, 'cpu_seconds'):12.3f}"
            f" {peak(kind):8.3f} {peak(kind) / peak('plain'):13.2f}"
        )
    print("(own: the decomposition inside the step; for user, the hooked pass and the DLA)")
    for kind, limit in {"decompose": 1.15, "heads": 1.30}.items():
        if kind in kinds:
            own = statistics.median(c[kind]["decompose"] / c["plain"]["seconds"] for c in cycles)
            print(
                f"target {kind} <= {limit:.2f} x plain: {ratio(cycles, kind):.3f} wall, "
                f"{ratio(cycles, kind, 'cpu_seconds'):.3f} CPU; its own work / plain {own:.3f}"
            )
    if "sites" in kinds:
        print(
            "target sites <= trace + 2 x (plain - trace) "
            f"({statistics.median(expected_sites(c) for c in cycles):.2f} s): sites / that "
            f"{statistics.median(c['sites']['seconds'] / expected_sites(c) for c in cycles):.3f}"
        )
    for ours, theirs in (("decompose", "user"), ("heads", "user_heads")):
        if ours in kinds and theirs in kinds:
            print(
                f"{ours} / {theirs} (plain step + hooked pass + hand-written DLA): "
                f"{ratio(cycles, ours, to=theirs):.3f} wall, "
                f"{ratio(cycles, ours, 'cpu_seconds', theirs):.3f} CPU, "
                f"peak {peak(ours) / peak(theirs):.2f}"
            )


if __name__ == "__main__":
    main()
