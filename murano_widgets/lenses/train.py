"""Training a tuned lens: the data (token chunks), the frozen model's block outputs, one
optimizer step of the translators, and the checks of the training arguments.

:meth:`murano_widgets.TunedLens.train` is the entry; this module holds what it runs. It imports
nothing of :mod:`murano_widgets.lenses.tuned` at run time (the lens is handed in), so the two
can import each other's names without a circle.
"""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from murano_widgets._checks import (
    check_float,
)

if TYPE_CHECKING:
    from murano_widgets.lenses.tuned import TunedLens

__all__ = ["block_outputs", "token_chunks"]


class _Trainer:
    """One optimisation step at a time over fixed chunks, in an order fixed by the seed."""

    def __init__(
        self,
        model: Any,
        lens: TunedLens,
        chunks: torch.Tensor,
        run: dict[str, Any],
        max_chunk_bytes: int,
    ) -> None:
        if isinstance(max_chunk_bytes, bool) or not isinstance(max_chunk_bytes, int):
            raise ValueError(f"max_chunk_bytes must be a positive int, got {max_chunk_bytes!r}")
        if max_chunk_bytes <= 0:
            raise ValueError(f"max_chunk_bytes must be a positive int, got {max_chunk_bytes!r}")
        self.model = model
        self.chunks = chunks
        self.run = run
        self.n_layers = int(model.n_layers)
        self.device = torch.device(getattr(model, "device", "cpu"))
        vocab = int(getattr(model, "vocab_size", None) or len(model.tokenizer))
        self.rows = max(1, max_chunk_bytes // (4 * vocab))
        seq_len = run["seq_len"]
        self.batch = max(1, min(run["samples_per_step"], self.rows // seq_len))
        # Translators 1 .. n_layers - 1 learn; translator 0 (embeddings) and the final state
        # have none to learn here.
        self.weights = [
            torch.nn.Parameter(lens.weight[i].to(self.device).clone()) for i in range(self.n_layers)
        ]
        self.biases = [
            torch.nn.Parameter(lens.bias[i].to(self.device).clone()) for i in range(self.n_layers)
        ]
        self.trained = list(range(1, self.n_layers))
        params = [p for i in self.trained for p in (self.weights[i], self.biases[i])]
        self.params = params
        self.optimizer = torch.optim.SGD(
            params,
            lr=run["lr"],
            momentum=run["momentum"],
            nesterov=True,
            weight_decay=run["weight_decay"],
        )

    def stacked(self) -> tuple[torch.Tensor, torch.Tensor]:
        weight = torch.stack([w.detach().cpu() for w in self.weights])
        bias = torch.stack([b.detach().cpu() for b in self.biases])
        return weight, bias

    def indices(self, step: int) -> torch.Tensor:
        """The chunks of ``step``: consecutive samples of per-epoch seeded permutations."""
        per_step, n = self.run["samples_per_step"], len(self.chunks)
        first = step * per_step
        out = []
        for sample in range(first, first + per_step):
            epoch, position = divmod(sample, n)
            out.append(self._permutation(epoch)[position])
        return torch.stack(out)

    def _permutation(self, epoch: int) -> torch.Tensor:
        cache = getattr(self, "_perm", None)
        if cache is None or cache[0] != epoch:
            generator = torch.Generator().manual_seed(self.run["seed"] * 1_000_003 + epoch)
            cache = self._perm = (epoch, torch.randperm(len(self.chunks), generator=generator))
        return cache[1]

    def step(self, step: int) -> list[float]:
        """One optimizer step; returns the mean KL per block output (the last is 0)."""
        model, n_layers = self.model, self.n_layers
        indices = self.indices(step)
        n_tokens = len(indices) * self.run["seq_len"]
        totals = [0.0] * n_layers
        self.optimizer.zero_grad(set_to_none=True)
        for start in range(0, len(indices), self.batch):
            ids = self.chunks[indices[start : start + self.batch]].to(self.device)
            hidden = block_outputs(model, ids)
            for begin in range(0, hidden[0].shape[0], self.rows):
                rows = slice(begin, begin + self.rows)
                with torch.no_grad():
                    final = model.unembed(hidden[-1][rows]).float().log_softmax(-1)
                    final_probs = final.exp()
                for layer in range(n_layers - 1):
                    index = layer + 1
                    h = hidden[layer][rows].detach()
                    weight, bias = self.weights[index], self.biases[index]
                    translated = torch.addmm(bias.to(h.dtype), h, weight.t().to(h.dtype)) + h
                    logits = model.unembed(translated).float()
                    kl = (final_probs * (final - logits.log_softmax(-1))).sum()
                    (kl / n_tokens).backward(inputs=[weight, bias])
                    totals[layer] += float(kl.detach())
                    del logits, translated, kl
                del final, final_probs
            del hidden
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        factor = (self.run["steps"] - step) / self.run["steps"]
        for group in self.optimizer.param_groups:
            group["lr"] = self.run["lr"] * factor
        self.optimizer.step()
        return [total / n_tokens for total in totals]


def block_outputs(model: Any, input_ids: torch.Tensor) -> list[torch.Tensor]:
    """Every block's output for ``input_ids`` (no padding), as ``[tokens, d_model]`` tensors."""
    saved: list[Any] = []
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    with torch.no_grad(), model.trace(inputs, use_cache=False):
        for index in range(int(model.n_layers)):
            saved.append(model.layer(index).save())
    outputs = []
    for value in saved:
        value = value[0] if isinstance(value, tuple) else value
        value = torch.as_tensor(value).detach()
        outputs.append(value.reshape(-1, value.shape[-1]))
    return outputs


def token_chunks(model: Any, texts: Sequence[str], seq_len: int) -> torch.Tensor:
    """The texts as ``[chunks, seq_len]`` token ids: joined by EOS, each chunk starting with EOS.

    Raises:
        ValueError: If the tokenizer has no EOS token or the texts make no full chunk.
    """
    tokenizer = model.tokenizer
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no EOS token to separate and start the chunks with")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{index}] is {type(text).__name__}, not a string")
    encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    stream: list[int] = []
    for ids in encoded:
        stream.extend(ids)
        stream.append(eos)
    body = seq_len - 1
    n = len(stream) // body
    if n == 0:
        raise ValueError(
            f"texts hold {len(stream)} tokens (with separators), fewer than one chunk of "
            f"seq_len={seq_len}: give more text or a smaller seq_len"
        )
    data = torch.tensor(stream[: n * body], dtype=torch.long).view(n, body)
    return torch.cat([torch.full((n, 1), eos, dtype=torch.long), data], dim=1)


def _check_train_args(
    steps: int, tokens_per_step: int, lr: float, momentum: float, weight_decay: float
) -> dict[str, Any]:
    """The training settings, checked (numpy numbers accepted) and as plain Python numbers."""
    counts: dict[str, int] = {}
    for name, value in (("steps", steps), ("tokens_per_step", tokens_per_step)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {type(value).__name__} {value!r}")
        counts[name] = int(value)
    return {
        **counts,
        "lr": check_float("lr", lr, 0.0, None, low_open=True),
        "momentum": check_float("momentum", momentum, 0.0, 1.0, high_open=True),
        "weight_decay": check_float("weight_decay", weight_decay, 0.0, None),
    }


def _texts_hash(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()
