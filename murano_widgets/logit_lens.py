"""The ``LogitLens`` pipeline step.

One nnsight trace on the batched prompts saves each requested layer's block output; then, per
chunk of real (non-padded) positions and per layer, the final norm and the unembedding turn it
into logits that are reduced at once to the small per-cell fields of a
:class:`LogitLensResult`. Peak extra memory is one chunk's logits (a few times
``max_chunk_bytes``) whatever the number of layers, prompts or tokens.

With ``remote=True`` (nnsight's execution on NDIF) the same reductions run inside the trace, so
that only reduced tensors travel back.
"""

from __future__ import annotations

import ctypes
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch

from ._reductions import (
    Buffers,
    FinalDistribution,
    reduce_final,
    reduce_logits,
    rows_per_chunk,
)
from .model import ModelBackend
from .result import LogitLensResult
from .types import RESID_POST, Node, PromptBatch, validate_prompts

__all__ = ["LogitLens"]

DEFAULT_MAX_CHUNK_BYTES = 256 * 2**20


class LogitLens:
    """Pipeline step: the logit lens of every requested layer on a batch of prompts.

    Reads ``results["prompts"]`` (a :class:`PromptBatch`) and writes
    ``results["logit_lens"]`` (a :class:`LogitLensResult`).

    Args:
        model: The model, e.g. a :class:`MuranoModel`.
        layers: ``"all"`` or a list of layer indices (negative ones count from the end).
            Rows come out in ascending layer order.
        store_full_probs: Keep ``all_probs`` (``n_layers·n_inputs·seq·vocab`` floats: only for
            small, targeted runs).
        top_k: How many of the most likely tokens to keep per cell.
        max_chunk_bytes: The size of one chunk of float32 logits; the peak extra memory is
            about three times this, plus the saved block outputs.
        remote: Run the trace on NDIF through nnsight's remote execution.
        reduce_in_trace: Reduce inside the trace (what ``remote=True`` does) rather than after
            it. Defaults to ``remote``; locally it only costs memory, since nnsight keeps every
            in-trace value alive until the trace ends.

    Raises:
        ValueError: If ``layers`` is a string other than ``"all"``, an empty list, or holds
            duplicates or indices out of range (checked against the model here, before any
            model work), or if ``top_k`` or ``max_chunk_bytes`` is out of range.
        TypeError: If ``layers`` holds something other than ints.
    """

    def __init__(
        self,
        model: ModelBackend,
        layers: Sequence[int] | str = "all",
        store_full_probs: bool = False,
        *,
        top_k: int = 5,
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        remote: bool = False,
        reduce_in_trace: bool | None = None,
    ) -> None:
        self.model = model
        self.layers = resolve_layers(layers, model.n_layers)
        self.store_full_probs = _check_bool("store_full_probs", store_full_probs)
        vocab_size = _vocab_size(model)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab_size:
            raise ValueError(
                f"top_k must be an int from 1 to {vocab_size} (the vocabulary size), got {top_k!r}"
            )
        self.top_k = top_k
        if (
            isinstance(max_chunk_bytes, bool)
            or not isinstance(max_chunk_bytes, int)
            or max_chunk_bytes <= 0
        ):
            raise ValueError(f"max_chunk_bytes must be a positive int, got {max_chunk_bytes!r}")
        self.max_chunk_bytes = max_chunk_bytes
        self.remote = _check_bool("remote", remote)
        self.reduce_in_trace = (
            self.remote
            if reduce_in_trace is None
            else _check_bool("reduce_in_trace", reduce_in_trace)
        )

    def __repr__(self) -> str:
        return (
            f"LogitLens(layers={self.layers}, store_full_probs={self.store_full_probs}, "
            f"top_k={self.top_k}, remote={self.remote})"
        )

    def __call__(self, results: dict[str, Any]) -> dict[str, Any]:
        """Runs the lens on ``results["prompts"]`` and stores ``results["logit_lens"]``.

        Raises:
            KeyError: If ``results`` has no ``"prompts"``.
            TypeError, ValueError: If the prompts are not a non-empty list of non-empty strings,
                or a prompt is longer than the model's context.
        """
        if "prompts" not in results:
            raise KeyError(
                "results has no 'prompts': set results['prompts'] = PromptBatch([...]) first"
            )
        batch = results["prompts"]
        prompts = batch.prompts if isinstance(batch, PromptBatch) else batch
        prompts = validate_prompts(prompts, 'results["prompts"]')
        results["logit_lens"] = self.run(prompts)
        return results

    def run(self, prompts: list[str]) -> LogitLensResult:
        """The lens of ``prompts`` (already validated) as a :class:`LogitLensResult`."""
        inputs = _tokenize(self.model, prompts)
        if self.reduce_in_trace:
            real, final = self._reduce_in_trace(inputs)
        else:
            real, final = self._reduce_after_trace(inputs)
        mask = inputs["attention_mask"].cpu().bool()
        n_layers, (n_inputs, seq) = len(self.layers), mask.shape

        # Scatter the real positions back into padded [n_layers, n_inputs, seq] tensors.
        def padded(values: torch.Tensor, fill: float | int) -> torch.Tensor:
            out = torch.full((n_layers, n_inputs, seq, *values.shape[2:]), fill, dtype=values.dtype)
            out[:, mask] = values
            return out

        topk_tokens = padded(real["topk_tokens"], -1)
        topk_probs = padded(real["topk_probs"], float("nan"))
        final_tokens = torch.full((n_inputs, seq), -1, dtype=torch.long)
        final_tokens[mask] = final
        input_ids = inputs["input_ids"].cpu()
        token_strings = _decode_unique(
            self.model.tokenizer, [topk_tokens, final_tokens, input_ids[mask]]
        )
        predicted_tokens = topk_tokens[..., 0]
        input_words_ids = input_ids.masked_fill(~mask, -1)
        return LogitLensResult(
            all_probs=padded(real["probs"], float("nan")) if self.store_full_probs else None,
            max_probs=topk_probs[..., 0],
            predicted_tokens=predicted_tokens,
            predicted_words=_words(predicted_tokens, token_strings),
            input_words=_words(input_words_ids, token_strings),
            attention_mask=inputs["attention_mask"].cpu().long(),
            addresses=[Node(layer, RESID_POST) for layer in self.layers],
            topk_tokens=topk_tokens,
            topk_probs=topk_probs,
            entropy=padded(real["entropy"], float("nan")),
            final_token_probs=padded(real["final_token_probs"], float("nan")),
            final_token_ranks=padded(real["final_token_ranks"], -1),
            kl_to_final=padded(real["kl_to_final"], float("nan")),
            final_tokens=final_tokens,
            input_ids=input_ids,
            prompts=list(prompts),
            token_strings=token_strings,
            vocab_size=_vocab_size(self.model),
            model_name=getattr(self.model, "name", None),
        )

    def _trace_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"remote": True} if self.remote else {}
        if _accepts(self.model, "logits_to_keep"):
            # The lens projects the block outputs itself; the model's own lm_head over every
            # position would be one layer's worth of unembedding spent for nothing.
            kwargs["logits_to_keep"] = 1
        if _accepts(self.model, "use_cache"):
            # A key/value cache is for generating; here it would only hold every layer's keys
            # and values until the trace ends (0.3 GB at 16 x 256 on GPT-2's shape).
            kwargs["use_cache"] = False
        return kwargs

    def _reduce_after_trace(
        self, inputs: dict[str, torch.Tensor]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Saves the block outputs in the trace, then reduces them in chunks of positions."""
        model = self.model
        mask = inputs["attention_mask"].bool()
        last = model.n_layers - 1
        wanted = sorted({*self.layers, last})
        saved: list[Any] = []
        with torch.inference_mode(), model.trace(dict(inputs), **self._trace_kwargs()):
            for index in wanted:
                saved.append(model.layer(index).save())
        # Only real positions are unembedded (padding costs nothing), gathered chunk by chunk
        # rather than copied out whole.
        outputs = [_block_output(tensor) for tensor in saved]
        hidden = {
            index: output.reshape(-1, output.shape[-1])
            for index, output in zip(wanted, outputs, strict=True)
        }
        del saved, outputs
        _return_freed_memory()
        real_rows = torch.nonzero(mask.reshape(-1)).squeeze(1)
        vocab_size = _vocab_size(model)
        step = rows_per_chunk(self.max_chunk_bytes, vocab_size, len(real_rows))
        chunks: list[dict[str, torch.Tensor]] = []
        finals: list[torch.Tensor] = []
        # Three [rows, vocab] buffers live through the loop: the logits, the softmax and the
        # final distribution; each chunk and layer writes into them again.
        buffers = Buffers()
        unembed = _unembed_into(model)

        def logits_of(layer: int, rows: torch.Tensor) -> torch.Tensor:
            out = buffers.get("logits", len(rows), vocab_size, hidden[layer].device)
            return unembed(hidden[layer].index_select(0, rows), out)

        def reduce(logits: torch.Tensor, final: FinalDistribution) -> dict[str, torch.Tensor]:
            fields = reduce_logits(logits, final, self.top_k, self.store_full_probs, buffers)
            return _to_cpu(fields)

        with torch.inference_mode():
            for start in range(0, len(real_rows), step):
                rows = real_rows[start : start + step]
                final, last_fields = reduce_final(
                    logits_of(last, rows), self.top_k, self.store_full_probs, buffers
                )
                reduced = {last: _to_cpu(last_fields)} if last in self.layers else {}
                for layer in self.layers:
                    if layer != last:
                        reduced[layer] = reduce(logits_of(layer, rows), final)
                chunks.append(
                    {
                        key: torch.stack([reduced[layer][key] for layer in self.layers])
                        for key in next(iter(reduced.values()))
                    }
                )
                finals.append(final.tokens.cpu())
                del final, reduced
        real = {key: torch.cat([c[key] for c in chunks], dim=1) for key in chunks[0]}
        return real, torch.cat(finals)

    def _reduce_in_trace(
        self, inputs: dict[str, torch.Tensor]
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Reduces inside the trace, so that only the reduced fields are saved (and travel)."""
        model = self.model
        last = model.n_layers - 1
        mask = inputs["attention_mask"].bool()
        saved_fields: list[Any] = []
        if self.remote:
            from nnsight.ndif import register

            # NDIF does not have this package: send the reduction code along by value.
            register("murano_widgets")
        with torch.inference_mode(), model.trace(dict(inputs), **self._trace_kwargs()):
            # Block outputs must be read in the order the forward pass produces them, and the
            # final distribution comes from the last one: collect first, reduce after.
            hidden = {
                index: _block_output(model.layer(index))[mask]
                for index in sorted({*self.layers, last})
            }
            final, last_fields = reduce_final(
                model.project_on_vocab(hidden[last]), self.top_k, self.store_full_probs
            )
            final_tokens = final.tokens.save()
            for layer in self.layers:
                reduced = (
                    last_fields
                    if layer == last
                    else reduce_logits(
                        model.project_on_vocab(hidden[layer]),
                        final,
                        self.top_k,
                        self.store_full_probs,
                    )
                )
                saved_fields.append({key: value.save() for key, value in reduced.items()})
        per_layer = [_to_cpu(fields) for fields in saved_fields]
        real = {key: torch.stack([f[key] for f in per_layer]) for key in per_layer[0]}
        return real, torch.as_tensor(final_tokens).cpu()


def resolve_layers(layers: Sequence[int] | str, n_layers: int) -> list[int]:
    """Validates ``layers`` against a model of ``n_layers`` and returns them sorted, non-negative.

    Raises:
        ValueError: For a string other than ``"all"``, an empty list, an index out of range or
            a duplicate (after resolving negative indices).
        TypeError: For anything that is not a string or a list of ints.
    """
    if isinstance(layers, str):
        if layers != "all":
            raise ValueError(f"layers must be 'all' or a list of ints, got the string {layers!r}")
        return list(range(n_layers))
    if isinstance(layers, (bool, int)) or not isinstance(layers, Iterable):
        raise TypeError(
            f"layers must be 'all' or a list of ints, got {type(layers).__name__} {layers!r}"
            + (f"; for one layer write layers=[{layers}]" if isinstance(layers, int) else "")
        )
    layers = list(layers)
    if not layers:
        raise ValueError("layers is an empty list: give at least one layer index, or 'all'")
    resolved: dict[int, Any] = {}
    for given in layers:
        if isinstance(given, bool) or not isinstance(given, (int, np.integer)):
            raise TypeError(
                f"layers must hold ints, got {type(given).__name__} {given!r} in {layers!r}"
            )
        if not -n_layers <= given < n_layers:
            raise ValueError(
                f"layers holds {given}, out of range for a model with {n_layers} layers "
                f"(allowed: {-n_layers} to {n_layers - 1})"
            )
        index = int(given) % n_layers
        if index in resolved:
            raise ValueError(
                f"layers holds layer {index} twice ({resolved[index]!r} and {given!r} in {layers!r})"
            )
        resolved[index] = given
    return sorted(resolved)


def _tokenize(model: ModelBackend, prompts: list[str]) -> dict[str, torch.Tensor]:
    """Tokenizes the batch once, padded, with the position ids one-by-one runs would get."""
    tokenizer = model.tokenizer
    # A token-type id makes GPT-2 add a token-type embedding to every position.
    encoded = tokenizer(prompts, return_tensors="pt", padding=True, return_token_type_ids=False)
    inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
    lengths = inputs["attention_mask"].sum(dim=1)
    limit = _context_length(model)
    if limit is not None and int(lengths.max()) > limit:
        index = int(lengths.argmax())
        raise ValueError(
            f"prompts[{index}] is {int(lengths[index])} tokens long, more than the model's "
            f"context of {limit} tokens; shorten it"
        )
    if _accepts(model, "position_ids"):
        # Left padding would otherwise shift every real token's position.
        inputs["position_ids"] = (inputs["attention_mask"].cumsum(dim=1) - 1).clamp_min(0)
    device = getattr(model, "device", None)
    if device is not None:
        inputs = {key: value.to(device) for key, value in inputs.items()}
    return inputs


def _context_length(model: ModelBackend) -> int | None:
    config = getattr(model, "config", None)
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        # Rotary models' "max_position_embeddings" is a training length, not a hard limit;
        # only absolute position tables (GPT-2) really stop there.
        if isinstance(value, int) and getattr(config, "model_type", "") in {"gpt2", "gptj"}:
            return value
    return None


def _accepts(model: ModelBackend, argument: str) -> bool:
    inner = getattr(getattr(model, "nnterp", None), "_model", None)
    if inner is None:
        return False
    try:
        return argument in inspect.signature(inner.forward).parameters
    except (TypeError, ValueError):
        return False


def _return_freed_memory() -> None:
    """Hands the forward pass's freed activations back to the operating system.

    glibc keeps freed heap memory for reuse, and the chunks' ``[rows, vocab]`` buffers are too
    large to reuse it, so without this the forward pass's peak and the reduction's would add up
    (0.5 GB of retained heap at 16 × 256 on GPT-2's shape). Elsewhere there is nothing to do.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):
        return
    trim(0)


def _unembed_into(model: ModelBackend) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``unembed(hidden, out)`` for ``model``, writing the logits into ``out``."""
    unembed = model.unembed  # type: ignore[attr-defined]
    try:
        writes_out = "out" in inspect.signature(unembed).parameters
    except (TypeError, ValueError):
        writes_out = False
    if writes_out:
        return lambda hidden, out: unembed(hidden, out=out)
    return lambda hidden, out: out.copy_(unembed(hidden))


def _block_output(output: Any) -> Any:
    # transformers 5 blocks return a tensor; older ones a tuple whose [0] is the hidden state.
    return output[0] if isinstance(output, tuple) else output


def _to_cpu(fields: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.detach().cpu() for key, value in fields.items()}


def _vocab_size(model: ModelBackend) -> int:
    size = getattr(model, "vocab_size", None)
    return int(size) if size is not None else len(model.tokenizer)


def _decode_unique(tokenizer: Any, id_tensors: list[torch.Tensor]) -> dict[int, str]:
    """Decodes each distinct token id once (one batch decode of the unique ids)."""
    ids = torch.unique(torch.cat([t.reshape(-1) for t in id_tensors]))
    ids = ids[ids >= 0].tolist()
    single = [[i] for i in ids]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        # The Rust tokenizer itself: transformers' batch_decode adds a Python conversion per id
        # around the same call (a tenth of a second per ten thousand ids).
        words = backend.decode_batch(single, skip_special_tokens=False)
    else:
        words = tokenizer.batch_decode(single, clean_up_tokenization_spaces=False)
    return dict(zip(ids, words, strict=True))


def _words(ids: torch.Tensor, table: dict[int, str]) -> list:
    """Maps an id tensor to nested lists of decoded words ("" for -1) through the table."""
    keys = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
    values = np.array(["", *table.values()], dtype=object)
    order = np.argsort(keys)
    flat = ids.reshape(-1).numpy()
    where = np.searchsorted(keys[order], flat)
    where = np.where(flat >= 0, order[np.minimum(where, len(keys) - 1)] + 1, 0)
    return values[where].reshape(tuple(ids.shape)).tolist()


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value
