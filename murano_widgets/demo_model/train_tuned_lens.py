"""Trains the demo model's tuned lens, on CPU, reproducibly, and writes its card.

Run ``python -m murano_widgets.demo_model.train_tuned_lens`` to rebuild
``murano_widgets/demo_model/toy-world-tuned-lens/`` (``config.json`` and ``params.pt`` in
tuned-lens's format, ``provenance.json`` and the card ``README.md``), or add ``--card-only`` to
re-measure a saved lens and rewrite its card.

The data is the demo model's own training split: the documents ``corpus.generate_corpus``
writes with the model's seed and document count (``toy-world/training.json``). The card compares
the logit lens and the tuned lens on held-out text: the evaluation prompts of
``corpus.eval_prompts`` followed by their answers (phrasings the model never saw for their
family), each read on its own as the lens step reads a prompt. The same seed and thread count
give the same translators.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from murano_widgets.demo_model import DEMO_MODEL_PATH, corpus

__all__ = [
    "DEFAULT_OUT",
    "LensTrainConfig",
    "card",
    "held_out_texts",
    "main",
    "parse_card",
    "top1_per_layer",
    "train",
    "training_texts",
]

DEFAULT_OUT = Path(__file__).resolve().parent / "toy-world-tuned-lens"
CARD_PROMPTS = ("The opposite of hot is", "The capital of France is")


@dataclass(frozen=True)
class LensTrainConfig:
    """Everything that decides the trained translators.

    Attributes:
        steps: Optimizer steps (the learning rate decays linearly to zero over them).
        tokens_per_step: Tokens per step.
        seq_len: Tokens per chunk (the demo model was trained on rows of 128).
        lr: Peak learning rate of SGD with Nesterov momentum.
        seed: The data order's seed.
        threads: ``torch.set_num_threads``; float sums, hence translators, depend on it.
    """

    steps: int = 120
    tokens_per_step: int = 4096
    seq_len: int = 128
    lr: float = 0.1
    seed: int = 0
    threads: int = 2


def model_training() -> dict[str, Any]:
    """How the demo model was trained (``training.json``'s ``config``): its corpus seed and
    size, which the lenses' scripts read to hold their texts out of its training."""
    return json.loads((DEMO_MODEL_PATH / "training.json").read_text())["config"]


def training_texts() -> list[str]:
    """The demo model's training documents (its seed and document count)."""
    config = model_training()
    return corpus.generate_corpus(config["seed"], config["n_documents"])


def held_out_texts() -> list[str]:
    """The held-out evaluation prompts followed by their answers (the demo prompts excluded:
    they are in the training text)."""
    seed = model_training()["seed"]
    return [p.prompt + p.answer for p in corpus.eval_prompts(seed) if p.split != "demo"]


def train(config: LensTrainConfig, out: Path = DEFAULT_OUT, *, progress: bool = True):
    """Trains the lens on the demo model, saves it to ``out`` and returns it."""
    from murano_widgets.demo_model import load_demo_model
    from murano_widgets.lenses.tuned import TunedLens

    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        model = load_demo_model()
        lens = TunedLens.train(
            model,
            training_texts(),
            steps=config.steps,
            tokens_per_step=config.tokens_per_step,
            seq_len=config.seq_len,
            lr=config.lr,
            seed=config.seed,
            base_model_name="murano_widgets/demo_model/toy-world",
            save_to=out,
            save_every=20,
            progress=progress,
        )
        lens.provenance["threads"] = config.threads
        lens.provenance["data"] = (
            "the demo model's training split: corpus.generate_corpus"
            f"(seed={model_training()['seed']}, n_documents={model_training()['n_documents']})"
        )
        lens.save(out)
        return lens
    finally:
        torch.set_num_threads(threads)


@torch.inference_mode()
def top1_per_layer(model, prompt: str, lens=None) -> list[tuple[str, float]]:
    """The lens's top-1 next token and its probability at the prompt's last position, per
    layer (the logit lens when ``lens`` is ``None``)."""
    inputs = model.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
    saved: list[Any] = []
    with model.trace(dict(inputs), use_cache=False):
        for index in range(model.n_layers):
            saved.append(model.layer(index).save())
    rows = []
    for layer, value in enumerate(saved):
        value = value[0] if isinstance(value, tuple) else value
        hidden = value[0, -1:]
        if lens is not None:
            hidden = lens.translate(layer, hidden)
        probs = model.unembed(hidden).float().softmax(-1)[0]
        p, token = probs.max(-1)
        rows.append((model.tokenizer.decode([int(token)]), float(p)))
    return rows


def measure(lens) -> dict[str, Any]:
    """Per-layer KL on the held-out text for the logit and the tuned lens, and the examples."""
    from murano_widgets.demo_model import load_demo_model
    from murano_widgets.lenses.evaluate import per_layer_kl

    model = load_demo_model()
    texts = held_out_texts()
    n_tokens = sum(
        len(ids) for ids in model.tokenizer(texts, add_special_tokens=False)["input_ids"]
    )
    return {
        "n_texts": len(texts),
        "n_tokens": n_tokens,
        "logit": per_layer_kl(model, texts, batch_size=256),
        "tuned": per_layer_kl(model, texts, lens, batch_size=256),
        "examples": {
            prompt: {
                "logit": top1_per_layer(model, prompt),
                "tuned": top1_per_layer(model, prompt, lens),
            }
            for prompt in CARD_PROMPTS
        },
    }


def card(lens, measured: dict[str, Any], size_bytes: int) -> str:
    """The lens's card (``README.md``)."""
    p = lens.provenance
    rows = "\n".join(
        f"| {layer} | {logit:.4f} | {tuned:.4f} |"
        + (" the model's own output |" if layer == len(measured["logit"]) - 1 else " |")
        for layer, (logit, tuned) in enumerate(
            zip(measured["logit"], measured["tuned"], strict=True)
        )
    )
    examples = []
    for prompt, found in measured["examples"].items():
        lines = "\n".join(
            f"| {layer} | `{lw!r}` {lp:.2f} | `{tw!r}` {tp:.2f} |"
            for layer, ((lw, lp), (tw, tp)) in enumerate(
                zip(found["logit"], found["tuned"], strict=True)
            )
        )
        examples.append(
            f"`{prompt}`\n\n| layer | logit lens top-1 | tuned lens top-1 |\n|---:|---|---|\n{lines}\n"
        )
    examples_text = "\n".join(examples)
    flags = " ".join(
        f"--{name.replace('_', '-')} {value}"
        for name, value in asdict(_config_of(lens)).items()
        if value != getattr(LensTrainConfig(), name)
    )
    command = "python -m murano_widgets.demo_model.train_tuned_lens" + (
        f" {flags}" if flags else ""
    )
    return f"""# toy-world-tuned-lens: a tuned lens for the murano_widgets demo model

A tuned lens (Belrose et al. 2023, "Eliciting Latent Predictions from Transformers with the Tuned
Lens") for the demo model `toy-world` (`murano_widgets.load_demo_model()`): one affine translator
`h + A h + b` per layer, learned so that each layer's lens distribution matches the model's final
one. Load it with `murano_widgets.load_demo_tuned_lens()` and pass it to the logit lens step
(`lens=`). The folder is in the format of the `tuned-lens` package (0.2.0): `config.json` and
`params.pt` ({size_bytes / 1e3:.0f} kB of float32), which tuned-lens itself reads with
`TunedLens.from_model_and_pretrained(model, folder)`; `provenance.json` records the run.

## Training

- Data: the demo model's own training split,
  `{p["data"].split(": ", 1)[-1]}` ({p["n_texts"]:,} documents), joined by `<|endoftext|>` and cut into chunks of {p["seq_len"]}
  tokens that each start with `<|endoftext|>`.
- Recipe (the paper's): the model frozen; loss KL(final distribution ‖ lens distribution) for
  every block output but the last, averaged over tokens; SGD with Nesterov momentum
  {p["momentum"]}, weight decay {p["weight_decay"]}, learning rate {p["lr"]} decaying linearly
  to 0, gradient-norm clipping at {p["grad_clip"]}; translators start at zero (the logit lens).
  Translator 0 (the embeddings, which the lens step does not read) stays zero.
- {p["steps"]} steps of {p["tokens_per_step"]:,} tokens ({p["tokens"]:,} tokens), seed
  {p["seed"]}: {p["seconds"] / 60:.1f} minutes on {p["threads"]} CPU threads (torch {p["torch"]}) of a
  machine shared with other jobs. Reproduce with `{command}`; the same seed and thread count give
  the same translators.

## Per-layer KL to the final distribution, on held-out text

The {measured["n_texts"]:,} held-out evaluation prompts of `corpus.eval_prompts` followed by their
answers ({measured["n_tokens"]:,} tokens; phrasings the model never saw for their family), each
read on its own as the lens step reads a prompt. Mean KL(final ‖ lens) in bits over every token,
for each block's output (lower is closer to what the model finally predicts):

| layer | logit lens | tuned lens | |
|---:|---:|---:|---|
{rows}

The tuned lens is closer to the final distribution at every layer but the last, where both are
the model's own output. Re-measure with
`python -m murano_widgets.demo_model.train_tuned_lens --card-only`; the package's tests check
this table against the shipped lens.

## What it changes

The top-1 next token and its probability at the last position, per layer:

{examples_text}
## What it is not

It is fitted to the toy world's text and to this model only: with another model it raises an
error (layer count, width), and on text unlike the toy world it has not been measured.
"""


def _config_of(lens) -> LensTrainConfig:
    p = lens.provenance
    return LensTrainConfig(
        steps=p["steps"],
        tokens_per_step=p["tokens_per_step"],
        seq_len=p["seq_len"],
        lr=p["lr"],
        seed=p["seed"],
        threads=p["threads"],
    )


def parse_card(text: str) -> dict[str, list[float]]:
    """The per-layer KL table of a card: ``{"logit": [...], "tuned": [...]}``."""
    import re

    found = re.findall(r"^\| (\d+) \| (\d+\.\d{4}) \| (\d+\.\d{4}) \|", text, flags=re.M)
    return {
        "logit": [float(logit) for _, logit, _ in found],
        "tuned": [float(tuned) for _, _, tuned in found],
    }


def write_card(out: Path = DEFAULT_OUT):
    """Measures the saved lens in ``out`` and writes its card and measured numbers."""
    from murano_widgets.demo_model import load_demo_model
    from murano_widgets.lenses.tuned import TunedLens

    lens = TunedLens.load(out, load_demo_model())
    threads = torch.get_num_threads()
    torch.set_num_threads(lens.provenance.get("threads", threads))
    try:
        measured = measure(lens)
    finally:
        torch.set_num_threads(threads)
    lens.provenance["held_out_kl"] = {
        "texts": "corpus.eval_prompts + answers, demo split excluded",
        "unit": "bits",
        "n_texts": measured["n_texts"],
        "n_tokens": measured["n_tokens"],
        "logit": measured["logit"],
        "tuned": measured["tuned"],
    }
    lens.save(out)
    size = (out / "params.pt").stat().st_size
    (out / "README.md").write_text(card(lens, measured, size))
    return measured


def _parse(argv: Sequence[str] | None) -> tuple[LensTrainConfig, Path, bool]:
    parser = argparse.ArgumentParser(
        prog="python -m murano_widgets.demo_model.train_tuned_lens",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to save the lens")
    parser.add_argument(
        "--card-only", action="store_true", help="measure a saved lens and (re)write its card"
    )
    for field, default in asdict(LensTrainConfig()).items():
        kind = float if isinstance(default, float) else int
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind, default=None)
    args = parser.parse_args(argv)
    overrides = {
        field: getattr(args, field)
        for field in asdict(LensTrainConfig())
        if getattr(args, field) is not None
    }
    return replace(LensTrainConfig(), **overrides), args.out, args.card_only


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The command line: train and save, then measure and write the card."""
    config, out, card_only = _parse(argv)
    if not card_only:
        lens = train(config, out)
        print(f"trained in {lens.provenance['seconds']:.0f} s", flush=True)
    measured = write_card(out)
    for layer, (logit, tuned) in enumerate(zip(measured["logit"], measured["tuned"], strict=True)):
        print(f"layer {layer}: KL logit lens {logit:.4f}  tuned lens {tuned:.4f}")
    return measured


if __name__ == "__main__":
    main()
