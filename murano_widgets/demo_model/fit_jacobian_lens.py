"""Fits the demo model's Jacobian lens, on CPU, reproducibly, and writes its card.

Run ``python -m murano_widgets.demo_model.fit_jacobian_lens`` to rebuild
``murano_widgets/demo_model/toy-world-jacobian-lens/`` (the lens file in the reference format,
float16; ``provenance.json`` with its sha256; the card ``README.md``), or add ``--card-only`` to
re-measure the saved lens and rewrite its card and provenance.

The data is the demo model's own training split, read as the model was trained: consecutive
documents of ``corpus.generate_corpus`` (its seed; the first ``n_texts · docs_per_text``
documents) joined by ``<|endoftext|>``, each text starting with it, cut to ``max_seq_len``
tokens. The card compares the logit, the tuned and the Jacobian lens on the held-out text the
tuned lens's card uses (``train_tuned_lens.held_out_texts``): per-layer KL to the model's final
distribution and top-1 agreement with its final prediction. The same settings and thread count
give the same matrices.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from murano_widgets.demo_model import DEMO_JACOBIAN_LENS_FILE, corpus
from murano_widgets.demo_model.train_tuned_lens import (
    CARD_PROMPTS,
    held_out_texts,
    model_training,
    top1_per_layer,
)

__all__ = [
    "DEFAULT_OUT",
    "FitConfig",
    "card",
    "fit",
    "fitting_texts",
    "main",
    "measure",
    "parse_card",
]

DEFAULT_OUT = DEMO_JACOBIAN_LENS_FILE.parent
BASE_MODEL = "murano_widgets/demo_model/toy-world"
KINDS = ("logit", "tuned", "jacobian")


@dataclass(frozen=True)
class FitConfig:
    """Everything that decides the fitted matrices.

    Attributes:
        n_texts: Texts averaged (the published lenses used up to 1,000).
        docs_per_text: Training documents joined into one text (28 tokens each on average:
            5 make texts of about 140 tokens, cut to ``max_seq_len``).
        max_seq_len: Tokens kept of each text (the demo model was trained on rows of 128).
        skip_first: Leading positions left out of the valid positions.
        dim_batch: Output dimensions per backward pass (speed only).
        threads: ``torch.set_num_threads``; float sums, hence matrices, depend on it.
    """

    n_texts: int = 1000
    docs_per_text: int = 5
    max_seq_len: int = 128
    skip_first: int = 16
    dim_batch: int = 8
    threads: int = 2


def fitting_texts(config: FitConfig) -> list[str]:
    """The training split's first documents, ``docs_per_text`` to a text, joined and begun by
    ``<|endoftext|>`` as the model's training rows were."""
    from murano_widgets.demo_model import load_demo_model

    eos = load_demo_model().tokenizer.eos_token
    documents = corpus.generate_corpus(
        model_training()["seed"], config.n_texts * config.docs_per_text
    )
    step = config.docs_per_text
    return [eos + eos.join(documents[i : i + step]) for i in range(0, len(documents), step)]


def fit(config: FitConfig, out: Path = DEFAULT_OUT, *, progress: bool = True):
    """Fits the lens on the demo model, saves it to ``out`` and returns it."""
    from murano_widgets.demo_model import load_demo_model
    from murano_widgets.lenses.jacobian import JacobianLens

    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        model = load_demo_model()
        out.mkdir(parents=True, exist_ok=True)
        checkpoint = out.parent / f".{out.name}.checkpoint.pt"  # resumable; removed at the end
        lens = JacobianLens.fit(
            model,
            fitting_texts(config),
            dim_batch=config.dim_batch,
            max_seq_len=config.max_seq_len,
            skip_first=config.skip_first,
            checkpoint_path=checkpoint,
            progress=progress,
            corpus="toy-world training split",
        )
        checkpoint.unlink(missing_ok=True)
        # The model's name at fit time is this machine's folder; the lens is for the shipped
        # model wherever it is installed.
        lens.metadata.pop("model_name", None)
        lens.metadata["base_model"] = BASE_MODEL
        lens.metadata["threads"] = config.threads
        lens.metadata["docs_per_text"] = config.docs_per_text
        lens.metadata["data"] = (
            "the demo model's training split: corpus.generate_corpus"
            f"(seed={model_training()['seed']}), the first "
            f"{config.n_texts * config.docs_per_text} documents, {config.docs_per_text} to a text"
        )
        lens.save(out / DEMO_JACOBIAN_LENS_FILE.name)
        return lens
    finally:
        torch.set_num_threads(threads)


def measure(lens) -> dict[str, Any]:
    """Per-layer KL and top-1 agreement on the held-out text for the three lenses, and the
    card's examples."""
    from murano_widgets.demo_model import load_demo_model, load_demo_tuned_lens
    from murano_widgets.lenses.evaluate import per_layer_metrics

    model = load_demo_model()
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(model), "jacobian": lens}
    texts = held_out_texts()
    n_tokens = sum(
        len(ids) for ids in model.tokenizer(texts, add_special_tokens=False)["input_ids"]
    )
    measured: dict[str, Any] = {"n_texts": len(texts), "n_tokens": n_tokens}
    for kind, each in lenses.items():
        measured[kind] = per_layer_metrics(model, texts, each, batch_size=256)
    measured["examples"] = {
        prompt: {kind: top1_per_layer(model, prompt, each) for kind, each in lenses.items()}
        for prompt in CARD_PROMPTS
    }
    return measured


def card(lens, measured: dict[str, Any], size_bytes: int) -> str:
    """The lens's card (``README.md``)."""
    m = lens.metadata
    n_layers = len(measured["logit"]["kl"])
    rows = "\n".join(
        f"| {layer} | "
        + " | ".join(f"{measured[kind]['kl'][layer]:.4f}" for kind in KINDS)
        + " | "
        + " | ".join(f"{measured[kind]['top1'][layer]:.4f}" for kind in KINDS)
        + (" | the model's own output |" if layer == n_layers - 1 else " | |")
        for layer in range(n_layers)
    )
    examples = []
    for prompt, found in measured["examples"].items():
        lines = "\n".join(
            f"| {layer} | "
            + " | ".join(
                f"`{found[kind][layer][0]!r}` {found[kind][layer][1]:.2f}" for kind in KINDS
            )
            + " |"
            for layer in range(n_layers)
        )
        examples.append(
            f"`{prompt}`\n\n| layer | logit lens | tuned lens | Jacobian lens |\n"
            f"|---:|---|---|---|\n{lines}\n"
        )
    config = _config_of(lens)
    flags = " ".join(
        f"--{name.replace('_', '-')} {value}"
        for name, value in asdict(config).items()
        if value != getattr(FitConfig(), name)
    )
    command = "python -m murano_widgets.demo_model.fit_jacobian_lens" + (
        f" {flags}" if flags else ""
    )
    logit_kl, jacobian_kl = measured["logit"]["kl"], measured["jacobian"]["kl"]
    closer = [layer for layer in range(n_layers - 1) if jacobian_kl[layer] < logit_kl[layer]]
    farther = [layer for layer in range(n_layers - 1) if jacobian_kl[layer] >= logit_kl[layer]]
    return f"""# toy-world-jacobian-lens: a Jacobian lens for the murano_widgets demo model

A Jacobian lens (J-lens; Gurnee et al. 2026, "Verbalizable Representations Form a Global
Workspace in Language Models") for the demo model `toy-world`
(`murano_widgets.load_demo_model()`): for each layer `l` below the last, one 128 × 128 matrix
`J_l`, the average over text of how block `l`'s output moves the last block's output. The lens
reads `softmax(W_U · norm(J_l · h))`; the last layer is the model's own output. Load it with
`murano_widgets.load_demo_jacobian_lens()` and pass it as `lens=`. The file
`{DEMO_JACOBIAN_LENS_FILE.name}` ({size_bytes / 1e3:.0f} kB) is in the reference format
(`{{"J", "n_prompts", "source_layers", "d_model", "metadata"}}`, float16), which TransformerLens
4.3 reads as well; `provenance.json` records the run and the file's sha256.

## Fitting

- Data: {m["data"]}; {m["n_texts"]:,} texts, each begun and joined by `<|endoftext|>` as
  the model's training rows were, cut to {m["max_seq_len"]} tokens ({m["n_skipped"]} left out as
  too short).
- Estimator (the reference's, exactly): per text one forward pass and
  {-(-lens.d_model // m["dim_batch"])} backward passes (`ceil(128 / {m["dim_batch"]})`) with one-hot
  cotangents on the last block's output at every valid position; valid positions leave out the first {m["skip_first_positions"]} and the
  last; the gradients averaged over valid source positions, then over texts.
- {lens.n_prompts:,} texts in {m["seconds"] / 60:.1f} minutes on {m["threads"]} CPU threads (torch
  {m["torch"]}) of a machine shared with other jobs. Reproduce with `{command}`; the same
  settings and thread count give the same matrices.

## On held-out text

The {measured["n_texts"]:,} held-out evaluation prompts of `corpus.eval_prompts` followed by
their answers ({measured["n_tokens"]:,} tokens; phrasings the model never saw for their family),
each read on its own as the lens step reads a prompt: the tuned lens card's text. Per block
output, the mean KL(final ‖ lens) in bits (lower is closer to what the model finally predicts)
and the share of tokens whose lens top-1 is the model's final top-1:

| layer | KL logit | KL tuned | KL Jacobian | top-1 logit | top-1 tuned | top-1 Jacobian | |
|---:|---:|---:|---:|---:|---:|---:|---|
{rows}

{_comparison(closer, farther, n_layers)}
The fit equals the definition and TransformerLens's own fit (`tests/test_jacobian_lens.py`,
`tests/transformer_lens_interop/`), so these are the J-lens's own numbers on this model. It
asks another question than this table does: `J_l` sums a layer's effect on the last block's
output at every later position, not only at its own, so `J_l · h` reads what the state
contributes to what the model says from here on, while the table scores the next token at the
same position (the score the tuned lens is trained on).
Re-measure with
`python -m murano_widgets.demo_model.fit_jacobian_lens --card-only`; the package's tests check
this table against the shipped lens.

## What it changes

The top-1 next token and its probability at the last position, per layer:

{chr(10).join(examples)}
## What it is not

It is fitted to the toy world's text and to this model only: with another model it raises an
error (width, depth), and on text unlike the toy world it has not been measured.
"""


def _comparison(closer: list[int], farther: list[int], n_layers: int) -> str:
    """Where the J-lens's KL beats the logit lens's, in words."""
    every = f"every layer below the last (0..{n_layers - 2})"
    if not closer:
        return (
            "By this measure the Jacobian lens is farther from the final distribution than the "
            f"logit lens at {every}."
        )
    if not farther:
        return (
            "By this measure the Jacobian lens is closer to the final distribution than the "
            f"logit lens at {every}."
        )
    return (
        "By this measure the Jacobian lens is closer to the final distribution than the logit "
        f"lens at layers {', '.join(map(str, closer))} and farther at layers "
        f"{', '.join(map(str, farther))}."
    )


def _config_of(lens) -> FitConfig:
    m = lens.metadata
    return FitConfig(
        n_texts=m["n_texts"],
        docs_per_text=m["docs_per_text"],
        max_seq_len=m["max_seq_len"],
        skip_first=m["skip_first_positions"],
        dim_batch=m["dim_batch"],
        threads=m["threads"],
    )


def parse_card(text: str) -> dict[str, dict[str, list[float]]]:
    """The per-layer table of a card: ``{kind: {"kl": [...], "top1": [...]}}``."""
    number = r"(\d+\.\d{4})"
    found = re.findall(r"^\| (\d+) \| " + r" \| ".join([number] * 6) + r" \|", text, flags=re.M)
    out: dict[str, dict[str, list[float]]] = {kind: {"kl": [], "top1": []} for kind in KINDS}
    for row in found:
        values = [float(v) for v in row[1:]]
        for index, kind in enumerate(KINDS):
            out[kind]["kl"].append(values[index])
            out[kind]["top1"].append(values[3 + index])
    return out


def write_card(out: Path = DEFAULT_OUT) -> dict[str, Any]:
    """Measures the saved lens in ``out`` and writes its card and provenance."""
    from murano_widgets.demo_model import load_demo_model
    from murano_widgets.lenses.jacobian import JacobianLens

    file = out / DEMO_JACOBIAN_LENS_FILE.name
    lens = JacobianLens.load(file, load_demo_model())
    threads = torch.get_num_threads()
    torch.set_num_threads(lens.metadata.get("threads", threads))
    try:
        measured = measure(lens)
    finally:
        torch.set_num_threads(threads)
    data = file.read_bytes()
    provenance = {
        "file": file.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "n_prompts": lens.n_prompts,
        "source_layers": lens.source_layers,
        "d_model": lens.d_model,
        "dtype": "float16",
        **lens.metadata,
        "held_out": {
            "texts": "corpus.eval_prompts + answers, demo split excluded",
            "n_texts": measured["n_texts"],
            "n_tokens": measured["n_tokens"],
            "kl_bits": {kind: measured[kind]["kl"] for kind in KINDS},
            "top1_agreement": {kind: measured[kind]["top1"] for kind in KINDS},
        },
    }
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    (out / "README.md").write_text(card(lens, measured, len(data)))
    return measured


def _parse(argv: Sequence[str] | None) -> tuple[FitConfig, Path, bool]:
    parser = argparse.ArgumentParser(
        prog="python -m murano_widgets.demo_model.fit_jacobian_lens",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the lens folder")
    parser.add_argument(
        "--card-only", action="store_true", help="measure the saved lens and (re)write its card"
    )
    for name in asdict(FitConfig()):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None)
    args = parser.parse_args(argv)
    overrides = {
        name: getattr(args, name) for name in asdict(FitConfig()) if getattr(args, name) is not None
    }
    return replace(FitConfig(), **overrides), args.out, args.card_only


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The command line: fit and save, then measure and write the card."""
    config, out, card_only = _parse(argv)
    if not card_only:
        lens = fit(config, out)
        print(f"fitted on {lens.n_prompts} texts in {lens.metadata['seconds']:.0f} s", flush=True)
    measured = write_card(out)
    for layer in range(len(measured["logit"]["kl"])):
        print(
            f"layer {layer}: KL "
            + "  ".join(f"{kind} {measured[kind]['kl'][layer]:.4f}" for kind in KINDS)
            + " | top-1 "
            + "  ".join(f"{kind} {measured[kind]['top1'][layer]:.3f}" for kind in KINDS)
        )
    return measured


if __name__ == "__main__":
    main()
