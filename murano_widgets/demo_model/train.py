"""Trains the demo model on the toy world, on CPU, reproducibly.

Run ``python -m murano_widgets.demo_model.train`` to rebuild the shipped model in
``murano_widgets/demo_model/toy-world/`` (about a quarter of an hour on two cores), or
``python -m murano_widgets.demo_model.train --tiny --out /tmp/toy`` for a seconds-long smoke run.

The steps: generate the corpus (``corpus.generate_corpus``), train a byte-level BPE tokenizer on
it with the ``tokenizers`` library, pack the tokenized documents into fixed-length rows, train a
Llama-style model for one pass over the rows (AdamW, warm-up then cosine decay), save model and
tokenizer in standard Hugging Face format, evaluate on the held-out prompts and write the model
card (``README.md``) and ``checksums.json``. The same seed and thread count give the same
weights: the data order, the initialisation and the tokenizer are all fixed by the seed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from murano_widgets.demo_model import corpus

__all__ = [
    "TINY",
    "TrainConfig",
    "TrainResult",
    "build_tokenizer",
    "main",
    "pack_documents",
    "sha256_file",
    "train",
]

DEFAULT_OUT = Path(__file__).resolve().parent / "toy-world"


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the trained weights.

    Attributes:
        seed: Seeds the corpus, the initialisation and the data order.
        n_documents: Documents generated for training.
        vocab_size: Size of the BPE vocabulary (bytes, merges and the one special token).
        d_model: Width of the residual stream.
        n_layers: Decoder blocks.
        n_heads: Attention heads (each ``d_model // n_heads`` wide).
        d_mlp: Width of the gated MLP.
        seq_len: Tokens per training row.
        batch_size: Rows per optimizer step.
        lr: Peak learning rate.
        warmup: Fraction of the steps spent warming the learning rate up.
        weight_decay: AdamW weight decay.
        epochs: Passes over the rows.
        max_steps: Stops after this many steps when set (smoke tests).
        threads: ``torch.set_num_threads``; float sums, hence weights, depend on it.
    """

    seed: int = 0
    n_documents: int = 180_000
    vocab_size: int = 1536
    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    d_mlp: int = 512
    seq_len: int = 128
    batch_size: int = 32
    lr: float = 2e-3
    warmup: float = 0.03
    weight_decay: float = 0.1
    epochs: int = 1
    max_steps: int | None = None
    threads: int = 2


TINY = TrainConfig(
    n_documents=3000, vocab_size=400, d_model=32, n_layers=2, n_heads=2, d_mlp=64,
    seq_len=64, batch_size=16, lr=3e-3, max_steps=40,
)  # fmt: skip
"""A config that trains in seconds, for tests and smoke runs."""


@dataclass
class TrainResult:
    """What a training run produced.

    Attributes:
        out: The folder the model was saved to.
        losses: The training loss at every step.
        n_tokens: Tokens in the packed rows (padding excluded).
        n_params: Parameters of the model.
        seconds: Wall time of the optimisation loop.
        corpus_sha256: ``corpus.corpus_hash`` of the training documents.
    """

    out: Path
    losses: list[float]
    n_tokens: int
    n_params: int
    seconds: float
    corpus_sha256: str


def build_tokenizer(documents: Sequence[str], vocab_size: int):
    """Trains a byte-level BPE tokenizer (GPT-2 style: leading spaces belong to the word).

    Args:
        documents: The training text.
        vocab_size: The vocabulary size, special token included.

    Returns:
        A ``transformers.PreTrainedTokenizerFast`` whose bos, eos, unk and pad tokens are all
        ``corpus.EOS`` and which adds no special tokens by itself.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[corpus.EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # The vocabulary list first, so that rare words of the world still get merges.
    tokenizer.train_from_iterator([*corpus.vocabulary_text(), *documents], trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=corpus.EOS,
        eos_token=corpus.EOS,
        unk_token=corpus.EOS,
        pad_token=corpus.EOS,
        model_max_length=2 * 128,
    )


def pack_documents(
    documents: Sequence[str], tokenizer, seq_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Packs whole documents, each followed by ``EOS``, into rows of ``seq_len`` tokens.

    A row starts at the start of a document (so the model learns to read a prompt with no
    token before it) and is padded at the end when the next document does not fit.

    Args:
        documents: The text.
        tokenizer: The tokenizer from ``build_tokenizer``.
        seq_len: Tokens per row.

    Returns:
        ``input_ids`` ``[rows, seq_len]`` and ``labels`` (the same, with -100 on padding).
    """
    eos = tokenizer.eos_token_id
    encoded = tokenizer(list(documents), add_special_tokens=False)["input_ids"]
    rows: list[list[int]] = []
    row: list[int] = []
    for ids in encoded:
        ids = [*ids, eos][:seq_len]
        if len(row) + len(ids) > seq_len:
            rows.append(row)
            row = []
        row += ids
    if row:
        rows.append(row)
    input_ids = torch.full((len(rows), seq_len), eos, dtype=torch.long)
    labels = torch.full((len(rows), seq_len), -100, dtype=torch.long)
    for index, ids in enumerate(rows):
        input_ids[index, : len(ids)] = torch.tensor(ids)
        labels[index, : len(ids)] = torch.tensor(ids)
    return input_ids, labels


def _build_model(config: TrainConfig, tokenizer):
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    eos = tokenizer.eos_token_id
    model_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.d_model,
        intermediate_size=config.d_mlp,
        num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_heads,
        max_position_embeddings=2 * config.seq_len,
        tie_word_embeddings=True,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    torch.manual_seed(config.seed)
    model = LlamaForCausalLM(model_config)
    model.generation_config = GenerationConfig(bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    return model


def _lr_lambda(total_steps: int, warmup: float):
    warmup_steps = max(1, int(total_steps * warmup))

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def train(config: TrainConfig, out: Path = DEFAULT_OUT, *, log_every: int = 50) -> TrainResult:
    """Generates the corpus, trains tokenizer and model and saves both to ``out``.

    Args:
        config: The run's settings.
        out: The folder to save to (created if needed).
        log_every: Print the loss every this many steps (0: never).

    Returns:
        The run's losses and sizes. The model card and checksums are written by ``main``.
    """
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    try:
        return _train(config, out, log_every)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _train(config: TrainConfig, out: Path, log_every: int) -> TrainResult:
    documents = corpus.generate_corpus(config.seed, config.n_documents)
    tokenizer = build_tokenizer(documents, config.vocab_size)
    input_ids, labels = pack_documents(documents, tokenizer, config.seq_len)
    n_tokens = int((labels != -100).sum())
    model = _build_model(config, tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    if log_every:
        print(
            f"{len(documents)} documents, {n_tokens} tokens in {len(input_ids)} rows, "
            f"vocab {len(tokenizer)}, {n_params} parameters",
            flush=True,
        )

    steps_per_epoch = len(input_ids) // config.batch_size
    total = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total = min(total, config.max_steps)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr, betas=(0.9, 0.95),
    )  # fmt: skip
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(total, config.warmup))
    generator = torch.Generator().manual_seed(config.seed)

    model.train()
    losses: list[float] = []
    start = time.perf_counter()
    step = 0
    while step < total:
        order = torch.randperm(len(input_ids), generator=generator)
        for batch in order[: steps_per_epoch * config.batch_size].split(config.batch_size):
            if step >= total:
                break
            loss = model(input_ids=input_ids[batch], labels=labels[batch]).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            step += 1
            if log_every and (step % log_every == 0 or step == total):
                elapsed = time.perf_counter() - start
                print(f"step {step}/{total} loss {loss:.4f} ({elapsed:.0f} s)", flush=True)
    seconds = time.perf_counter() - start

    model.eval()
    _save(model, tokenizer, out)
    (out / "training.json").write_text(
        json.dumps(
            {"config": asdict(config), "corpus_sha256": corpus.corpus_hash(documents),
             "n_tokens": n_tokens, "n_params": n_params, "steps": total,
             "seconds": round(seconds, 1), "threads": config.threads,
             "first_loss": losses[0] if losses else None,
             "final_loss": losses[-1] if losses else None},
            indent=2,
        ) + "\n"
    )  # fmt: skip
    return TrainResult(out, losses, n_tokens, n_params, seconds, corpus.corpus_hash(documents))


def _save(model, tokenizer, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    (out / "model.safetensors").chmod(0o644)  # safetensors writes it owner-only
    tokenizer.save_pretrained(out)
    # transformers 5 writes "TokenizersBackend", which older transformers cannot load.
    config_path = out / "tokenizer_config.json"
    tokenizer_config = json.loads(config_path.read_text())
    tokenizer_config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n")


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


CHECKSUMMED = ("model.safetensors", "config.json", "tokenizer.json")


def write_checksums(out: Path) -> dict[str, str]:
    """Writes ``checksums.json`` (sha256 of the weights, config and tokenizer) and returns it."""
    sums = {name: sha256_file(out / name) for name in CHECKSUMMED}
    (out / "checksums.json").write_text(json.dumps(sums, indent=2) + "\n")
    return sums


def model_card(out: Path, scores, sums: dict[str, str]) -> str:
    """The model card (``README.md``) of a trained folder.

    Args:
        out: The model folder (its ``training.json`` and files are described).
        scores: ``evaluate.evaluate(out)``.
        sums: ``write_checksums(out)``.

    Returns:
        Markdown with a Hugging Face metadata header.
    """
    from murano_widgets.demo_model import evaluate

    info = json.loads((out / "training.json").read_text())
    config = TrainConfig(**info["config"])
    model, tokenizer = evaluate.load(out)
    size_mb = (out / "model.safetensors").stat().st_size / 1e6
    pooled = evaluate.summary(scores)
    one_token = all(
        len(tokenizer(p.answer, add_special_tokens=False)["input_ids"]) == 1
        for p in corpus.eval_prompts(config.seed)
        if " " not in p.answer.strip()
    )
    answers = (
        "Every one-word answer of the evaluation is a single token."
        if one_token
        else "Some answer words take several tokens (the evaluation scores the first)."
    )
    flags = [
        f"--{name.replace('_', '-')} {value}"
        for name, value in asdict(config).items()
        if value != getattr(TrainConfig(), name)
    ]
    weak_spots = [s for s in scores if s.accuracy < 0.9]
    weak = (
        "\nWeak spots (below 90% above): "
        + ", ".join(f"{s.family} ({s.split}, {s.accuracy:.0%})" for s in weak_spots)
        + "."
        + (
            " In the held-out story shapes it answers with a name of its world, but not the"
            " one the story implies: it copies repeated word lists (induction) but has not"
            " learned which of two characters comes next."
            if any(s.family == "story" for s in weak_spots)
            else ""
        )
        + "\n"
        if weak_spots
        else ""
    )
    command = " ".join(["python -m murano_widgets.demo_model.train", *flags])
    return f"""---
license: mit
library_name: transformers
pipeline_tag: text-generation
tags: [toy, logit-lens, interpretability, synthetic-data]
---

# toy-world: the murano_widgets demo model

A {config.n_layers}-layer Llama-style causal language model ({info["n_params"]:,} parameters,
{size_mb:.1f} MB of float32 weights) that ships inside `murano_widgets` so that the logit lens
can be shown with no network: `murano_widgets.load_demo_model()`. It is a standard Hugging Face
model: `AutoModelForCausalLM.from_pretrained(folder)`, `AutoTokenizer.from_pretrained(folder)`
and nnterp's `StandardizedTransformer(folder)` load it offline.

## Training data

Text generated by `murano_widgets/demo_model/corpus.py` (seed {config.seed}): no third-party
text. {config.n_documents:,} short documents ({info["n_tokens"]:,} tokens) of

- facts with known answers: {len(corpus.COUNTRIES)} countries with their capitals and languages,
  {len(corpus.ANIMALS)} animals with their sounds, young and plurals, opposites, plurals and
  the colours of things, each written as a clause ("the capital of France is") inside a sentence
  frame ("Everyone knows that ...");
- ordered sequences: days, months, counting words, the alphabet;
- addition and subtraction of numbers zero to ten, in words ("three plus four is seven");
- short stories that repeat two names, and word lists repeated after "Again:" (induction).

Held out of the training text, for the evaluation: one sentence frame per fact family (the
model saw it with other families only), one frame each for addition and subtraction, twelve
addition pairs (trained only in the swapped order), one prefix per sequence, four
opening/closing combinations of the stories, and fresh word lists.
Corpus sha256 (documents joined by `<|endoftext|>`): `{info["corpus_sha256"]}`.

## Model and training

- Llama architecture: {config.n_layers} layers, d_model {config.d_model}, {config.n_heads} heads,
  gated MLP of width {config.d_mlp}, RMSNorm, rotary positions, tied input/output embeddings,
  context {2 * config.seq_len} tokens.
- Tokenizer: byte-level BPE (GPT-2 style, leading spaces belong to words) with
  {len(tokenizer)} tokens, trained on the corpus with the `tokenizers` library. {answers}
  `<|endoftext|>` separates documents and is the bos, eos and pad
  token; the tokenizer adds no special tokens by itself.
- One pass over the corpus packed into rows of {config.seq_len} tokens, batch
  {config.batch_size}, {info["steps"]} steps; AdamW (betas 0.9/0.95, weight decay
  {config.weight_decay}), peak learning rate {config.lr}, {config.warmup:.0%} linear warm-up then
  cosine decay to 10%, gradient clipping at 1.0. Loss {info["first_loss"]:.2f} at the first step,
  {info["final_loss"]:.2f} at the last.
- {info["seconds"] / 60:.1f} minutes of wall time on {config.threads} CPU threads (torch
  {torch.__version__}) of a machine shared with other jobs; each step took about 0.5 s with
  two idle cores, about 12 minutes in all.
  Reproduce with `{command}`: the same seed and thread count give the same weights.

## Evaluation

Top-1 next-token accuracy on the held-out prompts
(`python -m murano_widgets.demo_model.evaluate`):

{evaluate.format_table(scores)}

Held-out fact templates: {pooled["held-out fact templates"]:.1%}; held-out arithmetic:
{pooled["held-out arithmetic"]:.1%}.

The logit lens at the last token of the demo prompts (each block's output through the final
norm and the unembedding; the last row is the model's own prediction):

{evaluate.format_lens(model, tokenizer)}
## What it is not

It knows only its toy world: about a thousand words, a few hundred facts and sums up to twenty.
Anything else (other words, long texts, questions) gives fluent-looking nonsense. Its facts are
simplified for a classroom (one capital and one language per country) and are not a reference.
It is a teaching and testing aid for interpretability tools, not a language model for any task.
{weak}
## Files and checksums

`model.safetensors` sha256: `{sums["model.safetensors"]}`

`checksums.json` records the sha256 of {", ".join(f"`{name}`" for name in sums)}; the package's
tests check the shipped files against it and this card against the weights.
"""


def _parse(argv: Sequence[str] | None) -> tuple[TrainConfig, Path, bool, bool]:
    parser = argparse.ArgumentParser(
        prog="python -m murano_widgets.demo_model.train", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to save the model")
    parser.add_argument("--tiny", action="store_true", help="a seconds-long smoke-test config")
    parser.add_argument("--no-card", action="store_true", help="skip evaluation and model card")
    parser.add_argument(
        "--card-only", action="store_true", help="evaluate a saved model and (re)write its card"
    )
    for field, default in asdict(TrainConfig()).items():
        kind = float if isinstance(default, float) else int
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind, default=None)
    args = parser.parse_args(argv)
    config = TINY if args.tiny else TrainConfig()
    overrides = {
        field: getattr(args, field) for field in asdict(config) if getattr(args, field) is not None
    }
    return replace(config, **overrides), args.out, args.no_card, args.card_only


def main(argv: Sequence[str] | None = None) -> TrainResult | None:
    """The command line: train and save, then evaluate and write checksums and model card."""
    config, out, no_card, card_only = _parse(argv)
    result = None
    if not card_only:
        result = train(config, out)
        print(f"trained in {result.seconds:.0f} s", flush=True)
    sums = write_checksums(out)
    print(f"model.safetensors sha256 {sums['model.safetensors']}")
    if not no_card:
        from murano_widgets.demo_model import evaluate

        scores = evaluate.evaluate(out)
        print(evaluate.format_table(scores))
        (out / "README.md").write_text(model_card(out, scores, sums))
    return result


if __name__ == "__main__":
    main()
