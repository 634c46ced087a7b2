"""Training a tuned lens: the run (:func:`train_tuned_lens`), the data (token chunks), the
frozen model's block outputs, one optimizer step of the translators, and the checks of the
training arguments.

:meth:`murano_widgets.TunedLens.train` is the entry; this module holds what it runs. It imports
nothing of :mod:`murano_widgets.lenses.tuned` (the lens's class is handed in), so the tuned lens
imports it and no circle runs between them.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import numbers
import os
import time
from collections.abc import Sequence
from typing import Any

import torch

from murano_widgets._checks import (
    check_bool,
    check_float,
    check_int,
    check_model,
    check_str,
)
from murano_widgets._progress import progress_bar
from murano_widgets.lenses.base import lens_versions, model_context
from murano_widgets.types import check_texts

__all__ = [
    "DEFAULT_MAX_CHUNK_BYTES",
    "STATE_FILE",
    "block_outputs",
    "check_train_args",
    "texts_hash",
    "token_chunks",
    "train_tuned_lens",
]

STATE_FILE = "training_state.pt"
"""Optimizer state and step count of an unfinished or resumable training run."""

DEFAULT_MAX_CHUNK_BYTES = 128 * 2**20


class _Trainer:
    """One optimisation step at a time over fixed chunks, in an order fixed by the seed."""

    def __init__(
        self,
        model: Any,
        lens: Any,
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


def check_train_args(
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


def texts_hash(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def train_tuned_lens(
    lens_class: Any,
    model: Any,
    texts: Sequence[str],
    *,
    steps: int,
    tokens_per_step: int,
    lr: float,
    seed: int,
    seq_len: int | None,
    momentum: float,
    weight_decay: float,
    resume_from: str | os.PathLike[str] | None,
    stop_after: int | None,
    save_to: str | os.PathLike[str] | None,
    save_every: int | None,
    max_chunk_bytes: int,
    base_model_name: str | None,
    progress: bool,
) -> Any:
    """What :meth:`TunedLens.train <murano_widgets.TunedLens.train>` runs (its docstring says
    each argument and error): the settings checked, the lens to start from (:func:`_start`),
    then the optimiser's steps, the lens saved as asked (:func:`_snapshot`).

    Args:
        lens_class: The tuned lens's class (handed in: this module imports nothing of
            :mod:`murano_widgets.lenses.tuned`).
    """
    check_model(model)
    settings = check_train_args(steps, tokens_per_step, lr, momentum, weight_decay)
    steps, tokens_per_step = settings["steps"], settings["tokens_per_step"]
    check_texts(texts)
    seed = check_int("seed", seed, 0, 2**32 - 1, None)
    if seq_len is None:
        seq_len = min(2048, model_context(model) or 2048)
    if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral) or seq_len < 2:
        raise ValueError(f"seq_len must be an int of at least 2, got {seq_len!r}")
    seq_len = int(seq_len)
    if stop_after is not None:
        stop_after = check_int("stop_after", stop_after, 0, None, None)
    if save_every is not None:
        save_every = check_int("save_every", save_every, 1, None, None)
    max_chunk_bytes = check_int("max_chunk_bytes", max_chunk_bytes, 1, None, None)
    base_model_name = check_str("base_model_name", base_model_name, optional=True)
    progress = check_bool("progress", progress)
    chunks = token_chunks(model, texts, seq_len)
    run = {
        **settings,
        "seed": int(seed),
        "seq_len": seq_len,
        "samples_per_step": max(1, math.ceil(tokens_per_step / seq_len)),
        "texts_sha256": texts_hash(texts),
        "n_chunks": len(chunks),
    }
    lens, state, provenance = _start(lens_class, model, run, resume_from, base_model_name)
    trainer = _Trainer(model, lens, chunks, run, max_chunk_bytes)
    if state.get("optimizer") is not None:
        trainer.optimizer.load_state_dict(state["optimizer"])
    start_step = int(state["step"])
    last_step = steps if stop_after is None else min(steps, start_step + int(stop_after))
    # What a snapshot records as it goes: the seconds spent, each step's KL per layer.
    progress_so_far = {
        "seconds": float(state["seconds"]),
        "losses": [list(x) for x in state["losses"]],
    }

    def snapshot(step: int) -> Any:
        return _snapshot(
            lens_class, lens, trainer, provenance, run, len(texts), step, steps, progress_so_far
        )

    bar = progress_bar(
        total=steps, initial=start_step, desc="tuned lens", enabled=progress, unit="step"
    )
    try:
        for step in range(start_step, last_step):
            began = time.perf_counter()
            layer_kl = trainer.step(step)
            progress_so_far["seconds"] += time.perf_counter() - began
            progress_so_far["losses"].append(layer_kl)
            bar.update(1)
            bar.set_postfix(kl=f"{sum(layer_kl) / max(1, len(layer_kl)):.3f}")
            if save_to is not None and save_every and (step + 1) % save_every == 0:
                snapshot(step + 1).save(save_to)
    finally:
        bar.close()
    lens = snapshot(last_step)
    if save_to is not None:
        lens.save(save_to)
    return lens


def _start(
    lens_class: Any,
    model: Any,
    run: dict[str, Any],
    resume_from: str | os.PathLike[str] | None,
    base_model_name: str | None,
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The lens to start from (the identity, or a run saved to resume), its training state and
    the provenance it keeps.

    Raises:
        ValueError: For a ``resume_from`` folder without a training state, or of another run.
    """
    if resume_from is None:
        lens = lens_class.identity(model, base_model_name=base_model_name)
        return lens, {"run": run, "step": 0, "seconds": 0.0, "losses": []}, {}
    lens = lens_class.load(resume_from, model)
    state = lens.training_state
    if state is None:
        raise ValueError(
            f"resume_from={str(resume_from)!r} has no {STATE_FILE}: it is a finished "
            "or published lens, not a training run to continue"
        )
    different = {
        key: (state["run"].get(key), value)
        for key, value in run.items()
        if state["run"].get(key) != value
    }
    if different:
        raise ValueError(
            f"resume_from={str(resume_from)!r} is another run: "
            + ", ".join(f"{k} was {a!r}, now {b!r}" for k, (a, b) in different.items())
        )
    return lens, state, dict(lens.provenance)


def _snapshot(
    lens_class: Any,
    lens: Any,
    trainer: _Trainer,
    provenance: dict[str, Any],
    run: dict[str, Any],
    n_texts: int,
    step: int,
    steps: int,
    so_far: dict[str, Any],
) -> Any:
    """The lens after ``step`` of ``steps``, its provenance recording the run, and its
    training state while the run is unfinished."""
    weight, bias = trainer.stacked()
    seconds, losses = so_far["seconds"], so_far["losses"]
    samples_per_step, seq_len = run["samples_per_step"], run["seq_len"]
    done = lens_class(
        weight,
        bias,
        lens.config,
        {
            **provenance,
            **lens_versions(),
            "source": "trained",
            "base_model": lens.config["base_model_name_or_path"],
            "trained_with": "murano_widgets.lenses.tuned.TunedLens.train",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "steps": step,
            "steps_planned": steps,
            "tokens_per_step": samples_per_step * seq_len,
            "tokens": step * samples_per_step * seq_len,
            "seq_len": seq_len,
            "seed": run["seed"],
            "lr": run["lr"],
            "momentum": run["momentum"],
            "weight_decay": run["weight_decay"],
            "grad_clip": 1.0,
            "n_texts": n_texts,
            "texts_sha256": run["texts_sha256"],
            "seconds": round(seconds, 1),
            "final_train_kl": losses[-1] if losses else None,
        },
    )
    done.training_state = (
        None
        if step >= steps
        else {
            "run": run,
            "step": step,
            "seconds": seconds,
            "losses": losses,
            "optimizer": trainer.optimizer.state_dict(),
        }
    )
    return done
