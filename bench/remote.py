"""Benchmark: the remote lens on a real (local) NDIF server, against the local run.

For two vocabulary sizes of one GPT-2-shaped random model it measures:

- the bytes the server sends back per cell (a cell is one layer at one real token), as they
  travel (zstd-compressed, nnsight's default) and once decompressed: the reductions run on the
  server, so this must not grow with the vocabulary. Next to it, what the block outputs
  (``d_model`` floats per cell) and the full logits (``vocab`` floats per cell) would weigh;
- the time of ``LogitLens(..., remote=True)`` (median of the warm runs; the first request to a
  model also deploys it, reported apart) next to the local ``LogitLens`` on the same machine,
  both on one torch thread by default (the local server's model actor holds one Ray CPU; on a
  loaded 2-core machine two threads were 5 times slower than one, so compare like with like).

Needs a venv with nnsight 0.8 and the project (``.ci/remote.sh`` builds one in
``build/remote-venv``), root, and the NDIF server of ``../shared/ndif`` installed. It starts the
server unless one is running (and then stops it), and runs itself inside the server's network
namespace::

    build/remote-venv/bin/python bench/remote.py            # vocab 1024 and 50257
    build/remote-venv/bin/python bench/remote.py --rounds 5 --vocabs 1024,32000
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

N_LAYERS, D_MODEL, N_HEAD = 6, 256, 4
TOP_K = 5
REPO = Path(__file__).resolve().parent.parent


def build_model(folder: Path, vocab: int) -> None:
    """A random GPT-2-shaped model and a word-level tokenizer of exactly ``vocab`` tokens."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, GPT2Config, PreTrainedTokenizerFast

    words = {f"w{i}": i for i in range(vocab - 1)} | {"<|endoftext|>": vocab - 1}
    tokenizer = Tokenizer(models.WordLevel(words, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=N_LAYERS,
        n_embd=D_MODEL,
        n_head=N_HEAD,
        vocab_size=vocab,
        n_positions=256,
        bos_token_id=vocab - 1,
        eos_token_id=vocab - 1,
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    fast.save_pretrained(folder)


def prompts(vocab: int) -> list[str]:
    """Eight ragged prompts, 8 to 64 tokens (one token per word)."""
    import random

    rng = random.Random(0)
    lengths = [8, 64, 16, 48, 24, 40, 32, 56]
    return [" ".join(f"w{rng.randrange(vocab - 1)}" for _ in range(n)) for n in lengths]


def measure(folder: str, vocab: int, rounds: int, threads: int) -> dict:
    """Inside the namespace: the remote and the local lens on one model."""
    import nnsight.modeling.huggingface as hf
    import torch
    from nnsight import CONFIG
    from nnsight.intervention.backends.remote import RemoteBackend

    from murano_widgets import LogitLens, MuranoModel, PromptBatch

    CONFIG.API.HOST = "http://127.0.0.1:8001"
    CONFIG.API.APIKEY = None
    CONFIG.APP.REMOTE_LOGGING = False
    hf._ID_CACHE[folder] = folder  # a local folder: the server loads the same path

    # Count what travels: the request blob up, the result blob down (both as sent).
    sizes: dict[str, list[int]] = {"up": [], "down": [], "down_raw": []}
    serialize, finalize = RemoteBackend._serialize, RemoteBackend.finalize

    def counted_serialize(self, tracer):
        blob = serialize(self, tracer)
        sizes["up"].append(len(blob))
        return blob

    def counted_finalize(self, content):
        sizes["down"].append(len(content))
        if self.compress:
            import zstandard

            sizes["down_raw"].append(len(zstandard.ZstdDecompressor().decompress(content)))
        else:
            sizes["down_raw"].append(len(content))
        return finalize(self, content)

    RemoteBackend._serialize, RemoteBackend.finalize = counted_serialize, counted_finalize

    if threads:
        torch.set_num_threads(threads)
    model = MuranoModel(folder, backend="nnsight")
    batch = {"prompts": PromptBatch(prompts(vocab))}
    times: dict[str, list[float]] = {"remote": [], "local": [], "in_trace": []}
    first = None
    runs = (("remote", {"remote": True}), ("local", {}), ("in_trace", {"reduce_in_trace": True}))
    for round_ in range(rounds + 1):
        for where, options in runs:
            start = time.perf_counter()
            result = LogitLens(model, top_k=TOP_K, **options)(dict(batch))["logit_lens"]
            seconds = time.perf_counter() - start
            if round_ == 0 and where == "remote":
                first = seconds  # deploys the model on the server
            elif round_ > 0:  # round 0 deploys remotely, loads the weights locally
                times[where].append(seconds)
    cells = N_LAYERS * int(result.attention_mask.sum())
    return {
        "vocab": vocab,
        "cells": cells,
        "up": statistics.median(sizes["up"]),
        "down": statistics.median(sizes["down"]),
        "down_raw": statistics.median(sizes["down_raw"]),
        "first_remote": first,
        "remote": statistics.median(times["remote"]),
        "local": statistics.median(times["local"]),
        "in_trace": statistics.median(times["in_trace"]),
        "threads": torch.get_num_threads(),
    }


def report(rows: list[dict]) -> None:
    print(
        f"GPT-2-shaped random model, {N_LAYERS} layers, d_model {D_MODEL}, float32, "
        f"8 ragged prompts (8-64 tokens), top_k={TOP_K}; local NDIF server on this CPU "
        f"(local runs with {rows[0]['threads']} torch threads)\n"
    )
    header = (
        f"{'vocab':>7} {'cells':>6} {'B/cell sent':>11} {'B/cell raw':>10} "
        f"{'hidden B/cell':>13} {'logits B/cell':>13} {'request':>9}"
    )
    print(header)
    for row in rows:
        print(
            f"{row['vocab']:>7} {row['cells']:>6} {row['down'] / row['cells']:>11.1f} "
            f"{row['down_raw'] / row['cells']:>10.1f} {4 * D_MODEL:>13} {4 * row['vocab']:>13} "
            f"{row['up'] / 1024:>7.0f} KB"
        )
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        grow = (large["down"] / large["cells"]) / (small["down"] / small["cells"])
        print(
            f"\nbytes per cell, vocab {large['vocab']} / vocab {small['vocab']}: {grow:.2f}x "
            f"(the vocabulary grew {large['vocab'] / small['vocab']:.0f}x); full logits would "
            f"be {4 * large['vocab'] / (large['down'] / large['cells']):.0f}x what is sent"
        )
    print(
        f"\n{'vocab':>7} {'local s':>8} {'local in-trace s':>16} {'remote s':>9} "
        f"{'remote/local':>12} {'remote/in-trace':>15} {'first remote s':>15}"
    )
    for row in rows:
        print(
            f"{row['vocab']:>7} {row['local']:>8.3f} {row['in_trace']:>16.3f} "
            f"{row['remote']:>9.3f} {row['remote'] / row['local']:>11.2f}x "
            f"{row['remote'] / row['in_trace']:>14.2f}x {row['first_remote']:>15.1f}"
        )
    print(
        "\nlocal: the default step (block outputs saved, reduced after the trace in chunks); "
        "local in-trace: the server's reductions run here (reduce_in_trace=True); first "
        "remote: the first request to a model, which deploys it on the server"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocabs", default="1024,50257")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for the local runs (0: torch's default). The server's model actor "
        "holds one Ray CPU and runs torch on one thread, so 1 compares like with like",
    )
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:  # the worker, in the server's namespace
        folders = json.loads(args.inside)
        rows = [
            measure(folder, int(vocab), args.rounds, args.threads)
            for vocab, folder in folders.items()
        ]
        print(json.dumps(rows))
        return

    shared = Path(os.environ.get("NDIF_SHARED", REPO.parent / "shared" / "ndif"))
    env_sh = shared / "env.sh"
    namespace = subprocess.run(
        ["bash", "-c", f'source "{env_sh}" >/dev/null && echo "$NDIF_NETNS"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    running = (
        namespace
        in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    )
    with tempfile.TemporaryDirectory(prefix="murano-remote-bench-") as tmp:
        folders = {}
        for vocab in (int(v) for v in args.vocabs.split(",")):
            folder = Path(tmp) / f"gpt2-v{vocab}"
            build_model(folder, vocab)
            folders[vocab] = str(folder)
        if not running:
            subprocess.run(["bash", str(shared / "start.sh")], check=True)
        try:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(REPO), env.get("PYTHONPATH", "")) if p
            )
            done = subprocess.run(
                [
                    "bash",
                    str(shared / "run.sh"),
                    sys.executable,
                    __file__,
                    "--rounds",
                    str(args.rounds),
                    "--threads",
                    str(args.threads),
                    "--inside",
                    json.dumps(folders),
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=1200,
            )
        finally:
            if not running:
                subprocess.run(["bash", str(shared / "stop.sh")], check=False)
    if done.returncode != 0:
        sys.exit(f"the benchmark failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    report(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
