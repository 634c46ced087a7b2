"""Benchmark: the ``LogitLens`` step over one long prompt, against the plain-transformers floor.

A Llama-shaped model with random weights (built here from a ``LlamaConfig``; nothing is
downloaded) and a word-level tokenizer of exactly ``--vocab`` tokens reads one prompt of
``--tokens`` tokens. Two runs, each in a fresh process (memory peaks don't mix), alternating
``--rounds`` times so that drift on a shared machine hits both alike:

- ``step``: ``LogitLens(model, layers="all")`` (top-5, entropy, the final prediction's
  probability and rank, KL to the final layer: its default fields);
- ``floor``: what a user writing plain transformers would do as cheaply as they could for the
  same numbers: one forward with a hook per block saving its output, then per block of 1,024
  positions (never ``[seq, vocab]`` for every position at once) the final norm, the unembedding,
  a log-softmax, the top-5, the entropy, the final prediction's probability and rank and the KL
  to the final layer.

It prints the median seconds of each, their ratio (target: step <= 1.1 x floor) and each one's
peak resident memory above the loaded model (target: <= 1 GB), side by side. ``tracemalloc``
does not see torch's CPU allocations: the peak is the process's ``VmHWM`` reset after loading
(as ``bench/logit_lens.py`` reads it). Usage::

    PYTHONPATH=. python bench/long_step.py   # 8 layers x hidden 512, vocab 32,000, 8,192 tokens
    PYTHONPATH=. python bench/long_step.py --layers 16 --hidden 1024 --tokens 8192 --rounds 3
    PYTHONPATH=. python bench/long_step.py --chunk-mib 128   # the floor's block size, for the step

(``PYTHONPATH=.``: the checkout's package, not the one installed in the venv.)
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

from logit_lens import _peak_bytes, _reset_peak, _rss_bytes

#: The floor's block of positions: [1024, vocab] float32 logits at a time (128 MB at 32k).
FLOOR_BLOCK = 1024


def build_model(folder: Path, layers: int, hidden: int, vocab: int, tokens: int) -> None:
    """A random Llama-shaped model and a word-level tokenizer of exactly ``vocab`` tokens."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, LlamaConfig, PreTrainedTokenizerFast

    words = {f"w{i}": i for i in range(vocab - 1)} | {"</s>": vocab - 1}
    tokenizer = Tokenizer(models.WordLevel(words, unk_token="</s>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="</s>", unk_token="</s>")
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3 // 64 * 64,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 256),
        vocab_size=vocab,
        max_position_embeddings=max(tokens, 2048),
        tie_word_embeddings=False,
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    fast.save_pretrained(folder)


def prompt_of(tokens: int, vocab: int) -> str:
    import random

    rng = random.Random(0)
    return " ".join(f"w{rng.randrange(vocab - 1)}" for _ in range(tokens))


def worker(kind: str, folder: str, tokens: int, vocab: int, chunk_mib: int = 0) -> dict:
    import torch

    prompt = prompt_of(tokens, vocab)
    if kind == "step":
        from murano_widgets import LogitLens, MuranoModel, PromptBatch

        model = MuranoModel(folder)
        chunk = {"max_chunk_bytes": chunk_mib * 2**20} if chunk_mib else {}
        step = LogitLens(model, layers="all", top_k=5, **chunk)
        LogitLens(model)({"prompts": PromptBatch(["w1 w2 w3"])})  # warm-up, small

        def run() -> int:
            lens = step({"prompts": PromptBatch([prompt])})["logit_lens"]
            return int(lens.max_probs.shape[-1])

    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        blocks, norm, head = model.model.layers, model.model.norm, model.lm_head
        model(torch.tensor([[1, 2, 3]]))  # warm-up, small

        def run() -> int:
            ids = tokenizer([prompt], return_tensors="pt", return_token_type_ids=False)
            saved: list[torch.Tensor] = []

            def keep(_module, _inputs, output):
                saved.append(output[0] if isinstance(output, tuple) else output)

            hooks = [block.register_forward_hook(keep) for block in blocks]
            with torch.inference_mode():
                model.model(**ids)  # the body only: the lens unembeds every layer itself
                for hook in hooks:
                    hook.remove()
                seq = saved[0].shape[1]
                out = []
                for start in range(0, seq, FLOOR_BLOCK):
                    final = head(norm(saved[-1][0, start : start + FLOOR_BLOCK]))
                    final_logp = final.log_softmax(-1)
                    final_ids = final_logp.argmax(-1, keepdim=True)
                    del final
                    for h in saved:
                        logp = head(norm(h[0, start : start + FLOOR_BLOCK])).log_softmax(-1)
                        top = logp.topk(5, dim=-1)
                        p = logp.exp()
                        entropy = -(p * logp).sum(-1)
                        final_lp = logp.gather(-1, final_ids)
                        rank = (logp > final_lp).sum(-1)
                        kl = (final_logp.exp() * (final_logp - logp)).sum(-1)
                        out.append((top.values.exp(), top.indices, entropy, final_lp, rank, kl))
            return seq

    _reset_peak()
    base = _rss_bytes()
    start = time.perf_counter()
    seq = run()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_gb": (_peak_bytes() - base) / 1e9, "tokens": seq}


def spawn(kind: str, folder: Path, tokens: int, vocab: int, chunk_mib: int = 0) -> dict:
    command = [sys.executable, __file__, "--worker", kind, "--model", str(folder)]
    command += ["--tokens", str(tokens), "--vocab", str(vocab), "--chunk-mib", str(chunk_mib)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1][:200]}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=32_000)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--chunk-mib",
        type=int,
        default=0,
        help="the step's max_chunk_bytes in MiB (0: its default, 256)",
    )
    parser.add_argument("--worker")
    parser.add_argument("--model", type=Path)
    args = parser.parse_args()
    if args.worker:
        print(
            json.dumps(
                worker(args.worker, str(args.model), args.tokens, args.vocab, args.chunk_mib)
            )
        )
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-shaped"
        build_model(folder, args.layers, args.hidden, args.vocab, args.tokens)
        runs: dict[str, list[dict]] = {"floor": [], "step": []}
        for round_ in range(args.rounds):
            for kind in ("floor", "step") if round_ % 2 == 0 else ("step", "floor"):
                runs[kind].append(spawn(kind, folder, args.tokens, args.vocab, args.chunk_mib))
    errors = [r["error"] for results in runs.values() for r in results if "error" in r]
    if errors:
        raise SystemExit(f"a run failed: {errors[0]}")

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    print(
        f"Llama-shaped, {args.layers} layers x hidden {args.hidden}, vocab {args.vocab:,}, "
        f"one prompt of {runs['step'][0]['tokens']:,} tokens; median of {args.rounds}"
    )
    print(f"{'run':<7} {'seconds':>8} {'x floor':>8} {'peak GB above model':>20}")
    floor = median("floor", "seconds")
    for kind in ("floor", "step"):
        seconds = median(kind, "seconds")
        print(f"{kind:<7} {seconds:8.2f} {seconds / floor:8.2f} {median(kind, 'peak_gb'):20.3f}")
    print("targets: step <= 1.1 x floor; <= 1 GB above the model")


if __name__ == "__main__":
    main()
