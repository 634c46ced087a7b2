"""The chunk loop: saved block outputs reduced after the trace, chunk by chunk of positions.

Per chunk of real (non-padded) positions and per layer, each lens's translation, the final norm
and the unembedding (:meth:`~murano_widgets.Lens.logits`, which a Patchscope overrides to run
the model) turn the saved outputs into logits that are reduced at once
(:func:`~murano_widgets.step.reductions.reduce_lenses`). Peak extra memory is one chunk's
logits (a few times ``max_chunk_bytes``) whatever the number of layers, prompts or tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from murano_widgets._memory import Need
from murano_widgets.attribution.direct import read_row
from murano_widgets.lenses import Lens
from murano_widgets.metrics import REDUCED_FIELDS
from murano_widgets.step.config import StepConfig
from murano_widgets.step.inputs import InputPlan
from murano_widgets.step.reductions import (
    Buffers,
    chunks,
    reduce_lenses,
    rows_per_chunk,
    stack_layers,
)
from murano_widgets.step.trace import to_cpu
from murano_widgets.types import Node

# Layers are reduced together, as one [layers * rows, vocab] tensor, up to this many entries
# (4 MB of float32): on small chunks each reduction op costs more in dispatch than in
# arithmetic. Larger chunks gain nothing from it, and would only hold more memory.
_GROUP_ENTRIES = 2**20


def reduction_bytes(config: StepConfig, plan: InputPlan) -> int:
    """About the memory the reduction of ``plan`` allocates: three ``[rows, vocab]``
    float32 chunk buffers, and the full probabilities if they are kept."""
    vocab = int(config.model.vocab_size)
    rows = rows_per_chunk(config.max_chunk_bytes, vocab, len(plan.reduce_rows))
    kept = len(config.lenses) * len(config.rows) * plan.shown_mask.numel() * vocab * 4
    return 3 * rows * vocab * 4 + (kept if config.store_full_probs else 0)


def memory_needs(config: StepConfig, plan: InputPlan) -> list[Need]:
    """The parts of a run's peak memory that grow with the vocabulary, the positions or
    the prompts, for :func:`~murano_widgets._memory.preflight` (the model's own forward
    pass is the model's, not counted)."""
    vocab = int(config.model.vocab_size)
    n_lenses, n_rows = len(config.lenses), len(config.rows)
    n_inputs, seq = plan.shown_mask.shape
    cells = n_lenses * n_rows * n_inputs * seq
    needs = []
    if config.store_full_probs:
        needs.append(
            Need(
                "store_full_probs=True",
                cells * vocab * 4,
                f"{n_lenses} lens(es) x {n_rows} layers x {n_inputs} prompts x {seq} "
                f"positions x vocabulary {vocab} x 4 bytes",
                "Leave store_full_probs=False (every heatmap field, target and answer is "
                "reduced without it), or run fewer prompts or layers (layers=[...]) at a "
                "time.",
            )
        )
    # The result's per-cell fields: the top-k ids and probabilities, and the reduced ones.
    per_cell = config.top_k * 12 + 8 * (len(REDUCED_FIELDS) + 2)
    needs.append(
        Need(
            f"{n_inputs} prompts x {seq} positions",
            cells * per_cell,
            f"{cells} cells x {per_cell} bytes (top_k={config.top_k} and the per-cell fields)",
            "Run fewer prompts at a time, positions='last', fewer layers or a smaller top_k.",
        )
    )
    if config.remote:
        return needs  # the trace and its buffers are NDIF's
    device, d_model, element = _geometry(config.model)
    saved = 0 if config.reduce_in_trace else n_rows * plan.input_ids.numel() * d_model * element
    chunk = 3 * rows_per_chunk(config.max_chunk_bytes, vocab, len(plan.reduce_rows)) * vocab * 4
    needs.append(
        Need(
            f"max_chunk_bytes={config.max_chunk_bytes}",
            chunk,
            f"three [rows, vocabulary {vocab}] float32 buffers",
            "Lower max_chunk_bytes.",
            device,
        )
    )
    if saved:
        needs.append(
            Need(
                f"{plan.input_ids.shape[0]} rows x {plan.input_ids.shape[1]} tokens",
                saved,
                f"{n_rows} saved block outputs x d_model {d_model} x {element} bytes",
                "Run fewer or shorter prompts at a time, or fewer layers.",
                device,
            )
        )
    return needs


def reduce_after_trace(
    config: StepConfig, hidden: dict[int | Node, torch.Tensor], plan: InputPlan
) -> tuple[
    list[dict[str, torch.Tensor]],
    torch.Tensor,
    list[torch.Tensor | None],
    dict[tuple[int, int], torch.Tensor] | None,
]:
    """Reduces saved block outputs in chunks of positions, for every lens. Only real
    positions are unembedded (padding costs nothing), gathered chunk by chunk rather than
    copied out whole.

    Returns:
        Per lens, its fields ``{name: [n_layers, R, ...]}``; the final predictions ``[R]``;
        per lens, its full probabilities (or ``None``); and with ``kl_between_lenses``,
        ``{(a, b): [n_layers, R]}`` (lens indices, the final distribution last).
    """
    mask = plan.shown_mask
    lenses = list(config.lenses.values())
    between = config.kl_between_lenses
    real_rows = plan.reduce_rows.to(next(iter(hidden.values())).device)
    keys = config.rows
    for lens in lenses:  # a lens that runs the model per cell (a Patchscope) counts them
        getattr(lens, "start_run", lambda *_: None)(len(real_rows), keys, config.last + 1)
    # Where each shown row's probabilities go in the returned [n_inputs * seq] layout.
    shown_at = torch.nonzero(mask.reshape(-1)).squeeze(1)
    vocab_size = int(config.model.vocab_size)
    # The full probabilities go straight into the tensors that are returned (padding
    # stays NaN), so keeping them costs those tensors and nothing more.
    all_probs = [
        torch.full((len(keys), mask.numel(), vocab_size), float("nan"))
        if config.store_full_probs
        else None
        for _ in lenses
    ]
    row_of = {key: i for i, key in enumerate(keys)}
    reduced: list[list[dict[str, torch.Tensor]]] = [[] for _ in lenses]
    finals: list[torch.Tensor] = []
    pairs: list[dict[tuple[int, int], torch.Tensor]] = []
    # Three [rows, vocab] buffers live through the loop: the logits, the softmax and the
    # final distribution; each chunk, layer and lens writes into them again. KL between
    # lenses keeps every lens's logits of a layer, the final logits and a difference as
    # well: 2 + n + 2 buffers, so the chunks are cut (n + 4) / 3 times smaller to keep the
    # same peak.
    budget = config.max_chunk_bytes * 3 // (len(lenses) + 4) if between else config.max_chunk_bytes
    buffers = Buffers()
    with torch.inference_mode():
        for chunk in chunks(budget, vocab_size, len(real_rows)):
            rows = real_rows[chunk]
            shown = shown_at[chunk.start : min(chunk.stop, plan.n_shown)]
            tracked = None
            if plan.tracked is not None:
                tracked = plan.tracked.rows(chunk.start, chunk.stop).to(rows.device)

            logits = ChunkLogits(config, hidden, buffers, rows, between)

            def keep(
                k: int, layer: int | Node, fields: dict[str, Any], shown: torch.Tensor = shown
            ) -> dict[str, Any]:
                probs = fields.pop("probs", None)
                target = all_probs[k]
                if target is not None and probs is not None and len(shown):
                    target[row_of[layer]].index_copy_(0, shown, probs[: len(shown)].cpu())
                return to_cpu(fields)

            per_lens, final, between_layers = reduce_lenses(
                logits.of,
                n_lenses=len(lenses),
                layers=keys,
                final_layer=config.last,
                top_k=config.top_k,
                keep_probs=config.store_full_probs,
                buffers=buffers,
                keep=keep,
                tracked=tracked,
                between=between,
                logits_of_layers=logits.of_layers,
                group=max(
                    1,
                    min(
                        len(keys),
                        budget // (4 * vocab_size * len(rows)),
                        _GROUP_ENTRIES // (len(rows) * vocab_size),
                    ),
                ),
            )
            for k, per_layer in enumerate(per_lens):
                reduced[k].append(stack_layers(per_layer))
            assert final is not None
            finals.append(final.predictions.cpu())
            if between_layers is not None:
                pairs.append({pair: torch.stack(v).cpu() for pair, v in between_layers.items()})
            del final, per_lens, between_layers
    fields = [
        {key: torch.cat([c[key] for c in chunks_of_lens], dim=1) for key in chunks_of_lens[0]}
        for chunks_of_lens in reduced
    ]
    shaped = [
        None if probs is None else probs.view(len(keys), *mask.shape, vocab_size)
        for probs in all_probs
    ]
    kl = {pair: torch.cat([c[pair] for c in pairs], dim=1) for pair in pairs[0]} if pairs else None
    return fields, torch.cat(finals), shaped, kl


class ChunkLogits:
    """Where a chunk's logits come from: its rows of the saved states, each lens's
    translation, the final norm and the unembedding, into the chunk's reused buffers."""

    def __init__(
        self,
        config: StepConfig,
        hidden: dict[int | Node, torch.Tensor],
        buffers: Buffers,
        rows: torch.Tensor,
        between: bool,
    ) -> None:
        self.config, self.hidden, self.buffers = config, hidden, buffers
        self.rows, self.between = rows, between
        self.lenses = list(config.lenses.values())
        self.vocab_size = int(config.model.vocab_size)

    def of(self, k: int, layer: int | Node, out: torch.Tensor | None = None) -> torch.Tensor:
        """Lens ``k``'s ``[rows, vocab]`` logits at ``layer``: into ``out``, or its buffer
        (one per lens with KL between lenses, which keeps every lens's logits of a layer)."""
        config, model, rows = self.config, self.config.model, self.rows
        if out is None:
            role = f"logits{k}" if self.between else "logits"
            out = self.buffers.get(role, len(rows), self.vocab_size, self.hidden[layer].device)
        states = self.hidden[layer].index_select(0, rows)
        if isinstance(layer, Node):
            states = read_row(self.lenses[k], layer, states, config.last + 1)
            return model.unembed(states, out=out)
        return self.lenses[k].logits(
            model, layer, states, config.last + 1, out=out, max_bytes=config.max_chunk_bytes
        )

    def of_layers(self, k: int, layers: Sequence[Any]) -> torch.Tensor:
        """Several layers' logits, stacked layer after layer, each as :meth:`of` gives it."""
        model, rows, lens = self.config.model, self.rows, self.lenses[k]
        n = len(rows)
        out = self.buffers.get("logits", n * len(layers), self.vocab_size, rows.device)
        if type(lens).logits is not Lens.logits:
            # A lens that makes its own logits (a Patchscope runs the model): one layer at a
            # time, each into its block of rows.
            for g, layer in enumerate(layers):
                self.of(k, layer, out[g * n : (g + 1) * n])
            return out
        states = [
            read_row(lens, layer, self.hidden[layer].index_select(0, rows), self.config.last + 1)
            for layer in layers
        ]
        if hasattr(model, "unembed_blocks"):
            return model.unembed_blocks(torch.cat(states), len(layers), out)
        for g, each in enumerate(states):
            model.unembed(each, out=out[g * n : (g + 1) * n])
        return out


def _geometry(model: Any) -> tuple[str, int, int]:
    """Where the model's unembedding lives, its width and its element size (``"cpu"``, 0, 4
    where a backend does not say)."""
    try:
        weight = model._head_weight
        device = "cpu" if weight.device.type == "meta" else str(weight.device)
        return device, int(weight.shape[-1]), int(weight.element_size())
    except Exception:  # a backend of the user's: count what is known
        return "cpu", 0, 4
