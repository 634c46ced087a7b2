"""Scores the demo model on the toy world's held-out prompts, with plain transformers.

``python -m murano_widgets.demo_model.evaluate [--model PATH]`` prints the top-1 accuracy of the
next token per family and held-out split, then, for the package's demo prompts, the probability
of the answer at every layer (a logit lens computed here with hooks on the decoder blocks, the
final norm and the unembedding, independently of the package's ``LogitLens``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from murano_widgets.demo_model import corpus

__all__ = ["Score", "evaluate", "format_table", "layer_probabilities", "load", "predict_next"]

DEFAULT_MODEL = Path(__file__).resolve().parent / "toy-world"


@dataclass(frozen=True)
class Score:
    """Top-1 accuracy of one family on one held-out split.

    Attributes:
        family: The family, e.g. ``"capital"``.
        split: What was held out (see ``corpus.EvalPrompt.split``).
        correct: Prompts whose top-1 next token was the answer's first token.
        total: Prompts asked.
        misses: Up to five ``(prompt, expected, predicted)`` failures.
    """

    family: str
    split: str
    correct: int
    total: int
    misses: tuple[tuple[str, str, str], ...] = ()

    @property
    def accuracy(self) -> float:
        """``correct / total``."""
        return self.correct / self.total


def load(path: str | Path = DEFAULT_MODEL):
    """Loads model (float32, eval mode) and tokenizer from a folder with the Auto classes."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.eval()
    return model, AutoTokenizer.from_pretrained(path)


@torch.no_grad()
def predict_next(model, tokenizer, prompts: Sequence[str], batch_size: int = 64) -> list[int]:
    """The top-1 next-token id after each prompt (batched, right-padded, no special tokens)."""
    predictions: list[int] = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(
            list(prompts[start : start + batch_size]),
            add_special_tokens=False,
            padding=True,
            return_tensors="pt",
            return_token_type_ids=False,
        )
        logits = model(**batch).logits
        last = batch["attention_mask"].sum(dim=1) - 1
        predictions += logits[torch.arange(len(last)), last].argmax(dim=-1).tolist()
    return predictions


def _seed_of(path: Path) -> int:
    training = path / "training.json"
    if training.is_file():
        return int(json.loads(training.read_text())["config"]["seed"])
    return 0


def evaluate(path: str | Path = DEFAULT_MODEL, seed: int | None = None) -> list[Score]:
    """Top-1 accuracy on ``corpus.eval_prompts`` per family and split.

    Args:
        path: The model folder.
        seed: The corpus seed; read from the folder's ``training.json`` when not given.

    Returns:
        One ``Score`` per (family, split), in the order of the prompts.
    """
    path = Path(path)
    model, tokenizer = load(path)
    prompts = corpus.eval_prompts(_seed_of(path) if seed is None else seed)
    predicted = predict_next(model, tokenizer, [p.prompt for p in prompts])
    groups: dict[tuple[str, str], list[tuple[corpus.EvalPrompt, int]]] = {}
    for prompt, token in zip(prompts, predicted, strict=True):
        groups.setdefault((prompt.family, prompt.split), []).append((prompt, token))
    scores = []
    for (family, split), items in groups.items():
        misses = []
        correct = 0
        for prompt, token in items:
            expected = tokenizer(prompt.answer, add_special_tokens=False)["input_ids"][0]
            if token == expected:
                correct += 1
            elif len(misses) < 5:
                misses.append((prompt.prompt, prompt.answer, tokenizer.decode([token])))
        scores.append(Score(family, split, correct, len(items), tuple(misses)))
    return scores


FACT_SPLIT = "template"


def summary(scores: Sequence[Score]) -> dict[str, float]:
    """Pooled accuracies: held-out fact templates, held-out arithmetic, everything."""

    def pooled(selected: list[Score]) -> float:
        return sum(s.correct for s in selected) / max(1, sum(s.total for s in selected))

    facts = [s for s in scores if s.family in corpus.FACT_FAMILIES]
    arithmetic = [s for s in scores if s.family in corpus.ARITHMETIC_CLAUSES]
    return {
        "held-out fact templates": pooled(facts),
        "held-out arithmetic": pooled(arithmetic),
        "all held-out prompts": pooled([s for s in scores if s.split != "demo"]),
    }


def format_table(scores: Sequence[Score]) -> str:
    """A Markdown table of the scores, then the pooled accuracies."""
    lines = ["| family | held out | correct | accuracy |", "|---|---|---:|---:|"]
    for score in scores:
        lines.append(
            f"| {score.family} | {score.split} | {score.correct}/{score.total} "
            f"| {score.accuracy:.1%} |"
        )
    for name, value in summary(scores).items():
        lines.append(f"| **{name}** | | | **{value:.1%}** |")
    return "\n".join(lines)


@torch.no_grad()
def layer_probabilities(model, tokenizer, prompt: str, answer: str) -> list[tuple[float, str]]:
    """A logit lens at the prompt's last token: per layer, p(answer) and the top-1 token.

    Each decoder block's output goes through the model's final norm and unembedding (the last
    block's result is the model's own output distribution).

    Args:
        model: A Llama-style ``*ForCausalLM`` (``model.model.layers``, ``model.model.norm``).
        tokenizer: Its tokenizer.
        prompt: The text.
        answer: The expected continuation; its first token is scored.

    Returns:
        ``(probability of the answer, top-1 token)`` for each layer, first to last.
    """
    outputs: list[torch.Tensor] = []

    def keep(_module, _inputs, output):
        outputs.append(output[0] if isinstance(output, tuple) else output)

    hooks = [layer.register_forward_hook(keep) for layer in model.model.layers]
    try:
        ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        model(input_ids=ids)
    finally:
        for hook in hooks:
            hook.remove()
    target = tokenizer(answer, add_special_tokens=False)["input_ids"][0]
    rows = []
    for hidden in outputs:
        probs = model.lm_head(model.model.norm(hidden[0, -1])).softmax(-1)
        rows.append((float(probs[target]), tokenizer.decode([int(probs.argmax())])))
    return rows


DEMO_PROMPTS = [("The capital of France is", " Paris"), ("Monday, Tuesday,", " Wednesday")]


def format_lens(model, tokenizer, prompts=DEMO_PROMPTS) -> str:
    """A Markdown table of ``layer_probabilities`` for the demo prompts."""
    lines = []
    for prompt, answer in prompts:
        lines += [
            f"`{prompt}` → `{answer}`",
            "",
            "| layer | p(answer) | top-1 |",
            "|---:|---:|---|",
        ]
        for layer, (probability, top) in enumerate(
            layer_probabilities(model, tokenizer, prompt, answer)
        ):
            lines.append(f"| {layer} | {probability:.2f} | `{top}` |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> list[Score]:
    """The command line: print the accuracy table, misses and the demo prompts' lens."""
    parser = argparse.ArgumentParser(
        prog="python -m murano_widgets.demo_model.evaluate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the model folder")
    parser.add_argument("--seed", type=int, default=None, help="corpus seed (default: saved)")
    args = parser.parse_args(argv)
    scores = evaluate(args.model, args.seed)
    print(format_table(scores))
    for score in scores:
        for prompt, expected, got in score.misses:
            print(
                f"miss [{score.family}/{score.split}] {prompt!r}: expected {expected!r}, "
                f"got {got!r}"
            )
    model, tokenizer = load(args.model)
    print()
    print(format_lens(model, tokenizer))
    return scores


if __name__ == "__main__":
    main()
