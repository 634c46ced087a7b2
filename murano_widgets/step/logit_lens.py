"""The ``LogitLens`` pipeline step.

One nnsight trace on the batched prompts saves each requested layer's block output; then, per
chunk of real (non-padded) positions and per layer, the final norm and the unembedding turn it
into logits that are reduced at once to the small per-cell fields of a
:class:`LogitLensResult`. Peak extra memory is one chunk's logits (a few times
``max_chunk_bytes``) whatever the number of layers, prompts or tokens.

With ``remote=True`` (nnsight's execution on NDIF) the same reductions run inside the trace, so
that only reduced tensors travel back.

Several lenses side by side (``lens={"logit": None, "tuned": tuned}``) share the trace, the saved
block outputs and the final distribution: each adds only its translation, its unembedding and its
reductions.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

import nnsight
import numpy as np
import torch

from murano_widgets._checks import check_bool, check_int, check_model
from murano_widgets._memory import return_freed_memory
from murano_widgets.attribution.components import ComponentLayout, check_mid_rows
from murano_widgets.attribution.direct import decompose_rows, read_row
from murano_widgets.attribution.readout import Readout, readout_of
from murano_widgets.attribution.sublayers import sublayers_of
from murano_widgets.backends.base import ModelBackend
from murano_widgets.backends.contract import BlockBackend, block_backend
from murano_widgets.lenses import FINAL, Lens, as_lens, named_lenses
from murano_widgets.metrics import REDUCED_FIELDS, SECTIONS, missing_value
from murano_widgets.results import LensResults, LogitLensResult, as_given
from murano_widgets.step.inputs import InputPlan, encoder_for, plan_inputs, score
from murano_widgets.step.reductions import (
    Buffers,
    chunks,
    reduce_lenses,
    rows_per_chunk,
    stack_layers,
)
from murano_widgets.types import (
    RESID_MID,
    RESID_POST,
    SITES,
    AnswerSets,
    Node,
    PromptBatch,
    validate_answers,
    validate_foils,
    validate_prompts,
    validate_targets,
)

__all__ = ["LogitLens"]

DEFAULT_MAX_CHUNK_BYTES = 256 * 2**20
# When the reduction allocates less than this, the forward pass's freed memory is not handed
# back to the operating system. Handing it back costs more than the call (malloc_trim, 4 ms on
# the demo bench's 64 prompts): the next call faults the same pages in again, and the step
# ran 6-9 % faster there without it (bench/demo_model.py, 70 MB of chunk buffers), for 28 MB
# more peak (527 -> 555 MB). From here on the chunks grow towards their 256 MiB, and keeping
# the forward pass's memory would add to their peak (0.5 GB at 16 x 256 on GPT-2's shape).
_TRIM_ABOVE = 128 * 2**20
# Layers are reduced together, as one [layers * rows, vocab] tensor, up to this many entries
# (4 MB of float32): on small chunks each reduction op costs more in dispatch than in
# arithmetic. Larger chunks gain nothing from it, and would only hold more memory.
_GROUP_ENTRIES = 2**20


class LogitLens:
    """Pipeline step: the logit lens of every requested layer on a batch of prompts.

    Reads ``results["prompts"]`` (a :class:`PromptBatch`) and writes
    ``results["logit_lens"]`` (a :class:`LogitLensResult`).

    Args:
        model: The model, e.g. a :class:`MuranoModel`: anything with the
            :class:`ModelBackend` members.
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
        lens: A :class:`~murano_widgets.Lens` applied to each block output before the final
            norm and the unembedding, such as a :class:`~murano_widgets.TunedLens`; ``None``
            for the plain logit lens. The last layer and the final distribution are never
            translated. Or several lenses side by side, by name:
            ``{"logit": None, "tuned": tuned}`` (names are non-empty strings, the order is
            kept): one trace for all of them, and ``results["logit_lens"]`` is then a
            :class:`~murano_widgets.LensResults` (name → :class:`LogitLensResult`, each equal
            to running the step with that lens alone).
        kl_between_lenses: With named lenses: also measure KL(a ‖ b) in bits between every two
            lenses, and each lens and the model's own output, at every cell
            (:attr:`LensResults.kl_between`). It keeps one more ``[rows, vocab]`` buffer per
            lens, so the chunks shrink to keep the peak memory where it was.
        targets: Strings whose probability and rank are tracked at every position of every
            prompt (their first token, as it would follow the first prompt). Answers per
            prompt come with the prompts: ``PromptBatch(prompts, answers=...)``.
        variants: Also count each answer's and target's forms with and without a leading
            space and with the first letter's case changed (the single-token ones, each once).
        positions: ``"all"`` reduces every real position (the heatmap); ``"last"`` only each
            prompt's last one, where the next token is predicted (all a data set over many
            prompts needs: the unembedding and the reductions cost a position's share). The
            other cells then hold no value (NaN, -1), as padding does.
        sites: Which points of each block to read, as rows: ``("resid_post",)`` (the block
            outputs), or with ``"resid_mid"`` also the residual stream after each attention,
            just before the MLP. Rows interleave in layer order (``L3.resid_mid``, then
            ``L3.resid_post``) and carry those :class:`Node` addresses. A lens reads a
            ``resid_mid`` row of block ``l`` with its translator of block ``l - 1``.
        decompose: Direct logit attribution: each component's (the embedding's, each
            attention's and MLP's) direct contribution to every cell's top-1 logit, to each
            answer (minus its foil, ``PromptBatch(foils=...)``) and target; see
            :class:`LogitLensResult`'s ``contributions``. Logits are taken before a final
            soft-cap (Gemma 2), which is not linear.
        heads: With ``decompose``, split each attention into its heads (and its output
            bias).

    Raises:
        TypeError: If ``model`` is not a model backend, or an argument has the wrong type.
        ValueError: If ``model`` is on the ``meta`` device, if ``layers`` is a string other
            than ``"all"``, an empty list, or holds duplicates or indices out of range (checked
            against the model here, before any model work), if ``top_k`` or
            ``max_chunk_bytes`` is out of range, if ``lens`` does not fit the model (or is an
            empty dict, or names a lens ``""`` or ``"final"``), if ``kl_between_lenses`` is
            asked without named lenses, or if ``positions`` is not ``"all"`` or ``"last"``.
    """

    #: An intervention inside the trace, or ``None`` (the plain lens): activation patching sets
    #: it (:func:`murano_widgets.patch_lens`). Called as ``intervention(model, index)`` in
    #: forward order at every block, after the states the rows read inside the block and
    #: before the block's output is read (it may overwrite part of that output, and read it).
    #: Where the step reduces inside its trace, ``intervention.reduce_in_trace(model)`` is
    #: called last inside it; what it returns is saved with the step's own fields (so that it
    #: comes back from a remote trace) and set as ``intervention.reduced`` after the trace.
    #: A path that reads the block outputs without an nnsight trace must not run while it is set.
    intervention: Any = None

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
        lens: Any = None,
        targets: Sequence[str] | None = None,
        variants: bool = False,
        positions: str = "all",
        kl_between_lenses: bool = False,
        sites: Sequence[str] = (RESID_POST,),
        decompose: bool = False,
        heads: bool = False,
    ) -> None:
        check_model(model)
        self.model = model
        self.layers = resolve_layers(layers, model.n_layers)
        self.store_full_probs = check_bool("store_full_probs", store_full_probs)
        vocab_size = int(model.vocab_size)
        self.top_k = check_int("top_k", top_k, 1, vocab_size, "the vocabulary size")
        self.max_chunk_bytes = check_int("max_chunk_bytes", max_chunk_bytes, 1, None, None)
        self.remote = check_bool("remote", remote)
        self.reduce_in_trace = (
            self.remote
            if reduce_in_trace is None
            else check_bool("reduce_in_trace", reduce_in_trace)
        )
        named = named_lenses(lens, model)
        #: The lens of a single-lens step (``None`` with named lenses).
        self.lens: Lens | None = None
        #: The lenses by name: with one lens, its kind names it.
        self.lenses: dict[str, Lens]
        if named is not None:
            self.lenses = named
        else:
            single = as_lens(lens, model)
            self.lens, self.lenses = single, {single.kind: single}
        #: Whether ``lens`` named its lenses (then results are :class:`LensResults`).
        self.named = named is not None
        # A lens fitted for some layers only (a Jacobian lens's source_layers) says so now.
        for each in self.lenses.values():
            each.check_layers(self.layers, model.n_layers)
        self.kl_between_lenses = check_bool("kl_between_lenses", kl_between_lenses)
        if self.kl_between_lenses and not self.named:
            raise ValueError(
                "kl_between_lenses=True measures KL between named lenses: give them as "
                "lens={'logit': None, 'tuned': tuned}"
            )
        self.targets = None if targets is None else validate_targets(targets)
        self.variants = check_bool("variants", variants)
        if not isinstance(positions, str) or positions not in ("all", "last"):
            raise ValueError(f"positions must be 'all' or 'last', got {positions!r}")
        self.positions = positions
        self.sites = _check_sites(sites)
        self.decompose = check_bool("decompose", decompose)
        self.heads = check_bool("heads", heads)
        if self.heads and not self.decompose:
            raise ValueError(
                "heads=True splits the attention terms of direct logit attribution: pass "
                "decompose=True as well"
            )
        if RESID_MID in self.sites:
            check_mid_rows(model)
        #: The rows, in order: a block index for its output, Node(l, "resid_mid") before it.
        self.rows: list[int | Node] = [
            key
            for layer in self.layers
            for key in ((Node(layer, RESID_MID),) if RESID_MID in self.sites else ())
            + ((layer,) if RESID_POST in self.sites else ())
        ]
        mid_sources = sorted({key.layer - 1 for key in self.rows if isinstance(key, Node)} - {-1})
        for each in self.lenses.values():
            if mid_sources:
                each.check_layers(mid_sources, model.n_layers)
        self._mid_path = (
            sublayers_of(getattr(model, "config", None), "sites=('resid_mid', ...)").mid
            if RESID_MID in self.sites
            else None
        )
        self.components = ComponentLayout(model, self.heads) if self.decompose else None
        self.readout = readout_of(model) if self.decompose else None
        #: The model as a BlockBackend, where the rows or the decomposition read inside its
        #: blocks (else ``None``): checked here, before any model work, not in the trace.
        self.block_model: BlockBackend | None = None
        if self.decompose or RESID_MID in self.sites:
            wanted = "decompose=True" if self.decompose else "sites=('resid_mid', ...)"
            self.block_model = block_backend(model, wanted)

    @property
    def addresses(self) -> list[Node]:
        """One :class:`Node` per row."""
        return [key if isinstance(key, Node) else Node(key, RESID_POST) for key in self.rows]

    def __repr__(self) -> str:
        return (
            f"LogitLens(layers={self.layers}, store_full_probs={self.store_full_probs}, "
            f"top_k={self.top_k}, remote={self.remote}, "
            f"lens={list(self.lenses) if self.named else next(iter(self.lenses))!r}, "
            f"positions={self.positions!r})"
        )

    def __call__(self, results: dict[str, Any]) -> dict[str, Any]:
        """Runs the lens on ``results["prompts"]`` and stores ``results["logit_lens"]``.

        Raises:
            TypeError: If ``results`` is not a dict-like container.
            KeyError: If ``results`` has no ``"prompts"``.
            TypeError, ValueError: If the prompts are not a non-empty list of non-empty strings,
                or a prompt is longer than the model's context.
        """
        if not isinstance(results, MutableMapping):
            raise TypeError(
                "results must be a dict (or Results) holding results['prompts'] = "
                f"PromptBatch([...]); got {type(results).__name__} {results!r:.60}"
            )
        if "prompts" not in results:
            raise KeyError(
                "results has no 'prompts': set results['prompts'] = PromptBatch([...]) first"
            )
        batch = results["prompts"]
        prompts = batch.prompts if isinstance(batch, PromptBatch) else batch
        prompts = validate_prompts(prompts, 'results["prompts"]')
        answers = batch.answers if isinstance(batch, PromptBatch) else None
        foils = batch.foils if isinstance(batch, PromptBatch) else None
        results["logit_lens"] = self.run(prompts, answers, foils=foils)
        return results

    def run(
        self,
        prompts: list[str],
        answers: Any = None,
        *,
        prompt_ids: list[list[int]] | None = None,
        foils: list[str | None] | None = None,
    ) -> LogitLensResult | LensResults:
        """The lens of ``prompts`` (already validated) as a :class:`LogitLensResult` (a
        :class:`LensResults` with named lenses).

        Args:
            prompts: The prompts.
            answers: As for :class:`PromptBatch`'s ``answers``, or ``None``.
            prompt_ids: The token ids to read instead of tokenizing ``prompts`` (one non-empty
                list of ints per prompt: generated tokens, or a chat template's), or ``None``.

        Raises:
            ValueError: If ``prompt_ids`` does not hold one non-empty list of token ids (from
                0 to the vocabulary size) per prompt.
        """
        return self._run(prompts, answers, prompt_ids, foils)[0]

    def run_with_block_outputs(
        self, prompts: list[str]
    ) -> tuple[LogitLensResult | LensResults, dict[int, torch.Tensor]]:
        """The lens, and the block outputs its trace saved, ``{layer: [n_inputs * seq, d]}``.

        For code that needs more of the same positions than the step keeps (comparing two
        lenses cell by cell, attributing a cell to components) without running the model a
        second time. The rows follow the result's padded layout: no answers or given ids add
        rows here.

        Raises:
            ValueError: If the step reduces inside its trace (``remote=True``): the block
                outputs then never leave the trace.
        """
        if self.reduce_in_trace:
            raise ValueError("block outputs are kept only when the step reduces after its trace")
        result, hidden = self._run(prompts, None, None)
        assert hidden is not None
        return result, hidden

    def _run(
        self,
        prompts: list[str],
        answers: Any,
        prompt_ids: list[list[int]] | None,
        foils: list[str | None] | None = None,
    ) -> tuple[LogitLensResult | LensResults, dict[int, torch.Tensor] | None]:
        """:meth:`run`, also returning the block outputs the after-trace path saved."""
        answer_sets: AnswerSets | None = (
            None if answers is None else validate_answers(answers, len(prompts))
        )
        if prompt_ids is not None:
            prompt_ids = _check_prompt_ids(prompt_ids, len(prompts), int(self.model.vocab_size))
        plan = plan_inputs(
            self.model.tokenizer,
            prompts,
            answer_sets,
            self.targets,
            self.variants,
            prompt_ids,
            last_only=self.positions == "last",
        )
        inputs = _model_inputs(self.model, plan)
        mask = plan.display_mask.bool()
        shown = plan.shown_mask
        if foils is not None:
            if answer_sets is None:
                raise ValueError("foils are alternatives to the answers: give answers as well")
            foils = validate_foils(foils, len(prompts))
        n_layers, (n_inputs, seq) = len(self.rows), mask.shape
        # Answer and foil tokens now: a foil that adds no token fails before the model runs.
        tokens = (
            _answer_tokens(plan, self.model.tokenizer, prompts, prompt_ids, foils)
            if self.decompose
            else (None, None)
        )
        hidden: dict[Any, torch.Tensor] | None = None
        decomposed: list[dict[str, torch.Tensor]] | None = None
        if self.reduce_in_trace:
            reduced, final, all_probs, between, decomposed = self._reduce_in_trace(
                inputs, plan, tokens
            )
        else:
            states = self._trace_states(inputs, trim=self._reduction_bytes(plan) >= _TRIM_ABOVE)
            hidden = _row_states(states, self.rows)
            reduced, final, all_probs, between = self._reduce_after_trace(hidden, plan)
            if self.decompose:
                decomposed = self._decompose_after_trace(states, plan, reduced, tokens)
            del states
        final = final[: plan.n_shown]

        # Scatter the shown positions back into padded [n_layers, n_inputs, seq] tensors (by
        # their flat index, found once: a boolean mask would be searched again for each field).
        at = torch.nonzero(shown.reshape(-1)).squeeze(1)

        def padded(values: torch.Tensor, fill: float | int) -> torch.Tensor:
            rest = values.shape[2:]
            out = torch.full((n_layers, n_inputs * seq, *rest), fill, dtype=values.dtype)
            out.index_copy_(1, at, values[:, : plan.n_shown])
            return out.view(n_layers, n_inputs, seq, *rest)

        final_tokens = torch.full((n_inputs * seq,), -1, dtype=torch.long)
        final_tokens = final_tokens.index_copy_(0, at, final).view(n_inputs, seq)
        input_ids = plan.display_ids
        topk = [padded(fields["topk_tokens"], -1) for fields in reduced]
        # Each distinct token id is decoded once, whatever the number of lenses.
        decoded = _decode_unique(self.model.tokenizer, [*topk, final_tokens, input_ids[mask]])
        results: dict[str, LogitLensResult] = {}
        for k, ((name, lens), fields, topk_tokens, probs) in enumerate(
            zip(self.lenses.items(), reduced, topk, all_probs, strict=True)
        ):
            real = {key: values[:, : plan.n_shown] for key, values in fields.items()}
            tracked_fields, answer_sets_scored = score(plan, fields, padded)
            token_strings = (
                decoded
                if len(self.lenses) == 1
                else _subset(decoded, [topk_tokens, final_tokens, input_ids[mask]])
            )
            topk_probs = padded(real["topk_probs"], float("nan"))
            predicted_tokens = topk_tokens[..., 0]
            max_probs = topk_probs[..., 0]
            # The model's own output is the same under every lens: said once, with the first.
            _warn_non_finite(
                max_probs,
                final_tokens if not results else None,
                shown,
                [key if isinstance(key, int) else str(key) for key in self.rows],
                name if self.named else None,
            )
            input_words_ids = input_ids.masked_fill(~mask, -1)
            # Keyed by field name at run time, so typed as keyword arguments of any field.
            reduced_fields: dict[str, Any] = {
                key: padded(real[key], missing_value(SECTIONS[key])) for key in REDUCED_FIELDS
            }
            decomposed_fields: dict[str, Any] = (
                {} if decomposed is None else _decomposed_fields(decomposed[k], padded, self, foils)
            )
            results[name] = LogitLensResult(
                all_probs=probs,
                max_probs=max_probs,
                predicted_tokens=predicted_tokens,
                predicted_words=_words(predicted_tokens, token_strings),
                input_words=_words(input_words_ids, token_strings),
                attention_mask=plan.display_mask.long(),
                addresses=self.addresses,
                topk_tokens=topk_tokens,
                topk_probs=topk_probs,
                **reduced_fields,
                final_tokens=final_tokens,
                input_ids=input_ids,
                prompts=list(prompts),
                token_strings=token_strings,
                vocab_size=int(self.model.vocab_size),
                model_name=getattr(self.model, "name", None),
                n_model_layers=int(self.model.n_layers),
                lens_kind=lens.kind,
                lens_provenance=lens.provenance,
                lens_title=lens.title,
                answer_sets=answer_sets_scored,
                **decomposed_fields,
                **tracked_fields,
            )
        kl_between = None
        if between is not None:
            names = [*self.lenses, FINAL]
            kl_between = {
                (names[a], names[b]): padded(values, float("nan"))
                for (a, b), values in between.items()
            }
        return as_given(LensResults(results, kl_between, named=self.named)), hidden

    def _reduction_bytes(self, plan: InputPlan) -> int:
        """About the memory the reduction of ``plan`` allocates: three ``[rows, vocab]``
        float32 chunk buffers, and the full probabilities if they are kept."""
        vocab = int(self.model.vocab_size)
        rows = rows_per_chunk(self.max_chunk_bytes, vocab, len(plan.reduce_rows))
        kept = len(self.lenses) * len(self.rows) * plan.shown_mask.numel() * vocab * 4
        return 3 * rows * vocab * 4 + (kept if self.store_full_probs else 0)

    def _trace_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"remote": True} if self.remote else {}
        accepted = self.model.forward_kwargs
        if "logits_to_keep" in accepted:
            # The lens projects the block outputs itself; the model's own lm_head over every
            # position would be one layer's worth of unembedding spent for nothing.
            kwargs["logits_to_keep"] = 1
        if "use_cache" in accepted:
            # A key/value cache is for generating; here it would only hold every layer's keys
            # and values until the trace ends (0.3 GB at 16 x 256 on GPT-2's shape).
            kwargs["use_cache"] = False
        return kwargs

    def _trace_states(self, inputs: dict[str, torch.Tensor], trim: bool = True) -> dict[str, Any]:
        """One trace saving what the rows (and the decomposition) read, every tensor
        ``[n_inputs * seq, d_model]`` (padding included: rows follow the batch):
        ``{"post": {layer: x}, "mid": {layer: x}}`` and, with ``decompose``, the embedding,
        attention outputs and heads' inputs (see :meth:`ComponentLayout.read`).

        Block outputs alone, locally, need no trace: the model's own forward pass with hooks
        (:meth:`MuranoModel.block_outputs`) gives the same tensors. ``trim`` hands the forward
        pass's freed memory back to the operating system afterwards."""
        model = self.model
        saved: dict[str, Any] = {}
        if self._plain_forward():
            posts = sorted({*self.layers, model.n_layers - 1})
            with torch.inference_mode():
                saved["post"] = model.block_outputs(  # type: ignore[attr-defined]
                    dict(inputs), posts, **self._trace_kwargs()
                )
            saved["mid"] = {}
        else:
            with torch.inference_mode(), model.trace(dict(inputs), **self._trace_kwargs()):
                self._read_states(saved, nnsight.save)
        states = _flatten_states(saved)
        del saved
        if trim:
            return_freed_memory()
        return states

    # Whether block outputs alone, locally, come from a plain forward pass with hooks rather
    # than an nnsight trace (the tests turn it off to check that both give the same result).
    # An intervention (activation patching) is nnsight code, so it always takes the trace.
    _PLAIN_FORWARD = True

    def _plain_forward(self) -> bool:
        return (
            self._PLAIN_FORWARD
            and not self.remote
            and self.components is None
            and self.intervention is None
            and RESID_MID not in self.sites
            and callable(getattr(self.model, "block_outputs", None))
        )

    def _read_states(self, states: dict[str, Any], take: Any) -> None:
        """Inside a trace: every state the rows and the decomposition need, in forward order,
        into ``states`` (``take`` keeps each: saves it, or selects the reduced rows)."""
        model = self.model
        last = model.n_layers - 1
        mids = {key.layer for key in self.rows if isinstance(key, Node)}
        if self.components is not None:
            self.components.read(model, last, mids, take, states)
            return
        posts = {*self.layers, last}
        states.update({"post": {}, "mid": {}})
        blocks = self.block_model
        for index in range(last + 1):
            if index in mids:
                # Rows inside a block are resid_mid rows: the step checked its model for them.
                assert blocks is not None
                states["mid"][index] = take(_path(blocks.block(index), self._mid_path).input)
            if self.intervention is not None:
                self.intervention(model, index)
            if index in posts:
                states["post"][index] = take(model.layer(index))

    def _decompose(
        self,
        states: dict[str, Any],
        shown: torch.Tensor,
        per_layer: list[dict[str, torch.Tensor]],
        plan: InputPlan,
        tokens: tuple[torch.Tensor | None, torch.Tensor | None],
        lens: Lens,
        layout: ComponentLayout | None = None,
        readout: Readout | None = None,
    ) -> dict[str, torch.Tensor]:
        """One lens's attribution fields over the shown cells (see :func:`decompose_rows`)."""
        layout = layout or self.components
        readout = readout or self.readout
        assert layout is not None and readout is not None
        top1 = torch.stack([fields["topk_tokens"][: plan.n_shown, 0] for fields in per_layer])
        answers, foil_ids = tokens
        device = shown.device
        targets = (
            torch.tensor([ids[0] for ids in plan.target_token_ids], device=device)
            if plan.target_token_ids is not None
            else None
        )
        return decompose_rows(
            layout,
            readout,
            lens,
            int(self.model.n_layers),
            states,
            self.rows,
            shown,
            top1.to(device),
            (plan.shown_mask.sum(dim=1).cumsum(0) - 1).to(device),
            torch.repeat_interleave(
                torch.arange(plan.shown_mask.shape[0]), plan.shown_mask.sum(dim=1)
            ).to(device),
            None if answers is None else answers.to(device),
            None if foil_ids is None else foil_ids.to(device),
            targets,
        )

    def _decompose_after_trace(
        self,
        states: dict[str, Any],
        plan: InputPlan,
        reduced: list[dict[str, torch.Tensor]],
        tokens: tuple[torch.Tensor | None, torch.Tensor | None],
    ) -> list[dict[str, torch.Tensor]]:
        """Every lens's attribution fields, from the saved states and the reduced top-1s."""
        shown = plan.reduce_rows[: plan.n_shown].to(states["post"][0].device)
        out = []
        with torch.inference_mode():
            for fields, lens in zip(reduced, self.lenses.values(), strict=True):
                per_layer = [
                    {"topk_tokens": fields["topk_tokens"][i]} for i in range(len(self.rows))
                ]
                out.append(_to_cpu(self._decompose(states, shown, per_layer, plan, tokens, lens)))
        return out

    def _reduce_after_trace(
        self, hidden: dict[int | Node, torch.Tensor], plan: InputPlan
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
        model = self.model
        mask = plan.shown_mask
        last = model.n_layers - 1
        lenses = list(self.lenses.values())
        between = self.kl_between_lenses
        real_rows = plan.reduce_rows.to(next(iter(hidden.values())).device)
        keys = self.rows
        # Where each shown row's probabilities go in the returned [n_inputs * seq] layout.
        shown_at = torch.nonzero(mask.reshape(-1)).squeeze(1)
        vocab_size = int(model.vocab_size)
        # The full probabilities go straight into the tensors that are returned (padding
        # stays NaN), so keeping them costs those tensors and nothing more.
        all_probs = [
            torch.full((len(keys), mask.numel(), vocab_size), float("nan"))
            if self.store_full_probs
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
        budget = self.max_chunk_bytes * 3 // (len(lenses) + 4) if between else self.max_chunk_bytes
        buffers = Buffers()
        with torch.inference_mode():
            for chunk in chunks(budget, vocab_size, len(real_rows)):
                rows = real_rows[chunk]
                shown = shown_at[chunk.start : min(chunk.stop, plan.n_shown)]
                tracked = None
                if plan.tracked is not None:
                    tracked = plan.tracked.rows(chunk.start, chunk.stop).to(rows.device)

                def logits_of(k: int, layer: int | Node, rows: torch.Tensor = rows) -> torch.Tensor:
                    role = f"logits{k}" if between else "logits"
                    out = buffers.get(role, len(rows), vocab_size, hidden[layer].device)
                    states = read_row(
                        lenses[k], layer, hidden[layer].index_select(0, rows), last + 1
                    )
                    return model.unembed(states, out=out)

                def logits_of_layers(
                    k: int, layers: Sequence[Any], rows: torch.Tensor = rows
                ) -> torch.Tensor:
                    # Each layer's logits as logits_of gives them, one block of rows each.
                    n = len(rows)
                    out = buffers.get("logits", n * len(layers), vocab_size, rows.device)
                    states = [
                        read_row(lenses[k], layer, hidden[layer].index_select(0, rows), last + 1)
                        for layer in layers
                    ]
                    if hasattr(model, "unembed_blocks"):
                        return model.unembed_blocks(torch.cat(states), len(layers), out)
                    for g, each in enumerate(states):
                        model.unembed(each, out=out[g * n : (g + 1) * n])
                    return out

                def keep(
                    k: int, layer: int | Node, fields: dict[str, Any], shown: torch.Tensor = shown
                ) -> dict[str, Any]:
                    probs = fields.pop("probs", None)
                    target = all_probs[k]
                    if target is not None and probs is not None and len(shown):
                        target[row_of[layer]].index_copy_(0, shown, probs[: len(shown)].cpu())
                    return _to_cpu(fields)

                per_lens, final, between_layers = reduce_lenses(
                    logits_of,
                    len(lenses),
                    keys,
                    last,
                    self.top_k,
                    self.store_full_probs,
                    buffers,
                    keep,
                    tracked,
                    between,
                    logits_of_layers,
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
        kl = (
            {pair: torch.cat([c[pair] for c in pairs], dim=1) for pair in pairs[0]}
            if pairs
            else None
        )
        return fields, torch.cat(finals), shaped, kl

    def _reduce_in_trace(
        self,
        inputs: dict[str, torch.Tensor],
        plan: InputPlan,
        tokens: tuple[torch.Tensor | None, torch.Tensor | None],
    ) -> tuple[
        list[dict[str, torch.Tensor]],
        torch.Tensor,
        list[torch.Tensor | None],
        dict[tuple[int, int], torch.Tensor] | None,
        list[dict[str, torch.Tensor]] | None,
    ]:
        """Reduces inside the trace, so that only the reduced fields are saved (and travel):
        per lens its fields, the final predictions, per lens its full probabilities (or
        ``None``), the KLs between lenses (or ``None``) and with ``decompose`` per lens its
        attribution fields (else ``None``)."""
        model = self.model
        last = model.n_layers - 1
        mask = plan.shown_mask
        rows = plan.reduce_rows.to(model.device)
        tracked = None if plan.tracked is None else plan.tracked.to(model.device)
        lenses = list(self.lenses.values())
        if self.remote:
            from nnsight.ndif import register

            # NDIF does not have this package: send the reduction code along by value.
            register("murano_widgets")
        # Before the trace: nnsight 0.7 hands back to this frame only the values saved inside
        # it, so a plain ``decomposed = None`` in there would leave the name unbound here.
        decomposed = None
        intervened = None
        with torch.inference_mode(), model.trace(dict(inputs), **self._trace_kwargs()):
            # Block outputs must be read in the order the forward pass produces them, and the
            # final distribution comes from the last one: collect first, reduce after.
            states: dict[str, Any] = {}
            self._read_states(states, lambda proxy: proxy.flatten(0, 1).index_select(0, rows))
            hidden = _row_states(states, self.rows)
            per_lens, final, between = reduce_lenses(
                lambda k, key: model.project_on_vocab(
                    read_row(lenses[k], key, hidden[key], last + 1)
                ),
                len(lenses),
                self.rows,
                last,
                self.top_k,
                self.store_full_probs,
                tracked=tracked,
                between=self.kl_between_lenses,
            )
            # A remote trace sends back only what is saved inside it, so the containers are
            # made here: one saved tensor per field and lens, the final predictions, the KLs.
            fields = nnsight.save([stack_layers(per_layer) for per_layer in per_lens])
            # reduce_lenses has a final distribution whenever it is given the final layer.
            assert final is not None
            predictions = nnsight.save(final.predictions)
            kl = nnsight.save(
                {pair: torch.stack(values) for pair, values in (between or {}).items()}
            )
            if self.components is not None and self.readout is not None:
                # decompose=True: the step checked its model for what reading blocks needs.
                blocks = self.block_model
                assert blocks is not None
                # The weights where the model runs (on NDIF: the server's), not copies sent
                # along with the trace.
                readout = self.readout.with_head(blocks.unembedding_weight())
                layout = self.components
                if layout.heads:
                    layout = layout.with_out_weights(
                        [
                            layout.out_projection(blocks.block(layer)).weight
                            for layer in range(model.n_layers)
                        ]
                    )
                shown = torch.arange(plan.n_shown, device=rows.device)
                decomposed = nnsight.save(
                    [
                        self._decompose(
                            states, shown, per_layer, plan, tokens, lens, layout, readout
                        )
                        for per_layer, lens in zip(per_lens, lenses, strict=True)
                    ]
                )
            if self.intervention is not None:
                intervened = nnsight.save(self.intervention.reduce_in_trace(model))
        if self.intervention is not None:
            self.intervention.reduced = intervened
        reduced, all_probs = [], []
        for lens_fields in fields:
            real = _to_cpu({name: torch.as_tensor(value) for name, value in lens_fields.items()})
            probs = real.pop("probs", None)
            full = None
            if probs is not None:
                full = torch.full((len(self.rows), *mask.shape, probs.shape[-1]), float("nan"))
                full[:, mask] = probs[:, : plan.n_shown]
            reduced.append(real)
            all_probs.append(full)
        kl_cpu = (
            {pair: torch.as_tensor(v).cpu() for pair, v in kl.items()}
            if self.kl_between_lenses
            else None
        )
        decomposed_cpu = (
            None
            if decomposed is None
            else [_to_cpu({k: torch.as_tensor(v) for k, v in each.items()}) for each in decomposed]
        )
        return reduced, torch.as_tensor(predictions).cpu(), all_probs, kl_cpu, decomposed_cpu


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
    if isinstance(layers, np.ndarray) and layers.ndim == 0:
        layers = layers.item()
    if isinstance(layers, (bool, int, np.integer, np.bool_)) or not isinstance(layers, Iterable):
        hint = (
            f"; for one layer write layers=[{layers}]"
            if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool)
            else ""
        )
        raise TypeError(
            f"layers must be 'all' or a list of ints, got {type(layers).__name__} {layers!r}{hint}"
        )
    if isinstance(layers, (set, frozenset, Mapping)):
        raise TypeError(
            f"layers must be 'all' or a list of ints, got a {type(layers).__name__}; "
            "give a list, e.g. layers=[0, 3, -1]"
        )
    layers = list(layers)
    if not layers:
        raise ValueError("layers is an empty list: give at least one layer index, or 'all'")
    resolved: dict[int, Any] = {}
    for given in layers:
        if isinstance(given, (bool, np.bool_)) or not isinstance(given, (int, np.integer)):
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


def _check_prompt_ids(prompt_ids: Any, n_prompts: int, vocab_size: int) -> list[list[int]]:
    if not isinstance(prompt_ids, (list, tuple)) or len(prompt_ids) != n_prompts:
        raise ValueError(
            f"prompt_ids must be a list of {n_prompts} token id lists (one per prompt), got "
            f"{type(prompt_ids).__name__} of length {len(prompt_ids) if hasattr(prompt_ids, '__len__') else '?'}"
        )
    checked = []
    for index, ids in enumerate(prompt_ids):
        ids = ids.tolist() if isinstance(ids, (torch.Tensor, np.ndarray)) else ids
        if (
            not isinstance(ids, (list, tuple))
            or not ids
            or not all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) and 0 <= i < vocab_size
                for i in ids
            )
        ):
            raise ValueError(
                f"prompt_ids[{index}] must be a non-empty list of token ids from 0 to "
                f"{vocab_size - 1}, got {ids!r:.80}"
            )
        checked.append([int(i) for i in ids])
    return checked


def _model_inputs(model: ModelBackend, plan: InputPlan) -> dict[str, torch.Tensor]:
    """The model's batch from the plan, with the position ids one-by-one runs would get.

    Raises:
        ValueError: Before any model work, if a prompt (with an appended answer) is longer
            than a model with a table of absolute positions can read. Beyond a rotary or ALiBi
            model's trained length it warns instead: the model runs, but its predictions there
            are untested.
    """
    # No token-type ids: they make GPT-2 add a token-type embedding to every position.
    inputs = {"input_ids": plan.input_ids, "attention_mask": plan.attention_mask}
    lengths = inputs["attention_mask"].sum(dim=1)
    longest_row = int(lengths.argmax())
    tokens = int(lengths[longest_row])
    longest = plan.row_prompt[longest_row]
    own = int(plan.display_mask[longest].sum())
    what = f"prompts[{longest}]" + (
        f" with its answer's {tokens - own} tokens appended" if tokens > own else ""
    )
    if model.context_length is not None and tokens > model.context_length:
        raise ValueError(
            f"{what} is {tokens} tokens long, more than the model's context of "
            f"{model.context_length} tokens (its table of absolute positions); shorten it"
        )
    if model.trained_length is not None and tokens > model.trained_length:
        warnings.warn(
            f"{what} is {tokens} tokens long, beyond the {model.trained_length} "
            "tokens the model was trained on; its predictions past that are unreliable",
            stacklevel=4,
        )
    if "position_ids" in model.forward_kwargs:
        # Left padding would otherwise shift every real token's position.
        inputs["position_ids"] = (inputs["attention_mask"].cumsum(dim=1) - 1).clamp_min(0)
    inputs = {key: value.to(model.device) for key, value in inputs.items()}
    return inputs


def _warn_non_finite(
    max_probs: torch.Tensor,
    final_tokens: torch.Tensor | None,
    mask: torch.Tensor,
    layers: list[int | str],
    lens_name: str | None = None,
) -> None:
    """One warning naming the layers and positions whose distributions were not finite (and
    the lens, among lenses side by side)."""
    bad_cells = torch.isnan(max_probs) & mask
    bad_final = torch.zeros_like(mask) if final_tokens is None else (final_tokens < 0) & mask
    if not bad_cells.any() and not bad_final.any():
        return
    parts = []
    if bad_cells.any():
        rows, prompts, positions = torch.nonzero(bad_cells, as_tuple=True)
        where = sorted(
            {(layers[r], p) for r, p in zip(rows.tolist(), prompts.tolist(), strict=True)}
        )
        shown = ", ".join(f"layer {layer} of prompt {p}" for layer, p in where[:8])
        more = f" and {len(where) - 8} more" if len(where) > 8 else ""
        parts.append(
            f"{int(bad_cells.sum())} cells ({shown}{more}) have non-finite logits and are shown "
            "as missing"
        )
    if bad_final.any():
        prompts, positions = torch.nonzero(bad_final, as_tuple=True)
        shown = ", ".join(
            f"prompt {p} position {s}"
            for p, s in list(zip(prompts.tolist(), positions.tolist(), strict=True))[:8]
        )
        parts.append(
            f"the model's own output is not finite at {shown}: the final-based fields "
            "(final_token_probs, final_token_ranks, kl_to_final) are missing there"
        )
    label = "logit lens" if lens_name is None else f"logit lens, lens {lens_name!r}"
    warnings.warn(f"{label}: " + "; ".join(parts), RuntimeWarning, stacklevel=4)


def _to_cpu(fields: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.detach().cpu() for key, value in fields.items()}


class _TokenStrings(weakref.WeakKeyDictionary):
    """Each tokenizer's decoded ids, kept across calls (a token id decodes alone to the same
    text every time; at most one string per id of the vocabulary). Keyed weakly by the
    tokenizer, with the Rust tokenizer it came from: swapping that starts afresh.

    It pickles as an empty cache: a remote trace sends this module's code to NDIF by value
    (``register("murano_widgets")``), and cloudpickle takes the globals the code names along,
    where a weak reference cannot go."""

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (type(self), ())


_TOKEN_STRINGS: _TokenStrings = _TokenStrings()


def _decode_unique(tokenizer: Any, id_tensors: list[torch.Tensor]) -> dict[int, str]:
    """Each distinct token id decoded, in ascending id order. An id is decoded once per
    tokenizer, then kept, and alone: the Rust tokenizer's batch decode runs on its thread
    pool, which on two busy cores took 2.6 ms a call of 200 ids that take 0.1 ms to decode
    (and transformers' batch_decode adds a Python conversion per id around it)."""
    ids = torch.unique(torch.cat([t.reshape(-1) for t in id_tensors]))
    ids = ids[ids >= 0].tolist()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    known = _known_strings(tokenizer, backend)
    missing = [i for i in ids if i not in known]
    if missing and backend is not None:
        known.update({i: backend.decode([i], skip_special_tokens=False) for i in missing})
    elif missing:
        words = tokenizer.batch_decode([[i] for i in missing], clean_up_tokenization_spaces=False)
        known.update(zip(missing, words, strict=True))
    return {i: known[i] for i in ids}


def _known_strings(tokenizer: Any, backend: Any) -> dict[int, str]:
    """The tokenizer's decoded ids so far (a fresh dict for one that cannot be kept)."""
    try:
        source, known = _TOKEN_STRINGS.get(tokenizer, (None, None))
        if known is None or source is not backend:
            known = {}
            _TOKEN_STRINGS[tokenizer] = (backend, known)
    except TypeError:  # not weakly referenceable, or not hashable
        known = {}
    return known


def _subset(table: dict[int, str], id_tensors: list[torch.Tensor]) -> dict[int, str]:
    """The entries of ``table`` for the distinct ids of ``id_tensors``, in ascending id order
    (as :func:`_decode_unique` makes them: one lens's table among lenses side by side)."""
    ids = torch.unique(torch.cat([t.reshape(-1) for t in id_tensors]))
    return {i: table[i] for i in ids[ids >= 0].tolist()}


def _words(ids: torch.Tensor, table: dict[int, str]) -> list:
    """Maps an id tensor to nested lists of decoded words ("" for -1) through the table."""
    keys = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
    values = np.array(["", *table.values()], dtype=object)
    order = np.argsort(keys)
    flat = ids.reshape(-1).numpy()
    where = np.searchsorted(keys[order], flat)
    where = np.where(flat >= 0, order[np.minimum(where, len(keys) - 1)] + 1, 0)
    return values[where].reshape(tuple(ids.shape)).tolist()


def _check_sites(sites: Any) -> tuple[str, ...]:
    """``sites`` as a tuple of known sites, each once.

    Raises:
        TypeError: For a string or anything that is not a list of strings.
        ValueError: For an empty list, an unknown site or a duplicate.
    """
    allowed = ", ".join(repr(site) for site in SITES)
    if isinstance(sites, str) or not isinstance(sites, (list, tuple)):
        raise TypeError(
            f"sites must be a tuple of sites ({allowed}), e.g. sites=('resid_mid', "
            f"'resid_post'); got {type(sites).__name__} {sites!r:.60}"
        )
    if not sites:
        raise ValueError(f"sites is empty: give at least one of {allowed}")
    for site in sites:
        if site not in SITES:
            raise ValueError(f"sites holds {site!r}; allowed: {allowed}")
    if len(set(sites)) != len(sites):
        raise ValueError(f"sites holds a site twice: {tuple(sites)!r}")
    return tuple(site for site in SITES if site in sites)


def _path(envoy: Any, path: str | None) -> Any:
    assert path is not None
    for part in path.split("."):
        envoy = getattr(envoy, part)
    return envoy


def _flatten_states(saved: dict[str, Any]) -> dict[str, Any]:
    """Saved trace values as ``[n_inputs * seq, width]`` tensors, in the same nesting."""

    def flat(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: flat(each) for key, each in value.items()}
        tensor = torch.as_tensor(value[0] if isinstance(value, tuple) else value)
        return tensor.reshape(-1, tensor.shape[-1])

    return flat(saved)


def _row_states(states: dict[str, Any], rows: list[Any]) -> dict[Any, Any]:
    """The state each row reads, ``{row key: [positions, d]}``; the last block's output too
    (the final distribution comes from it)."""
    hidden: dict[Any, Any] = dict(states["post"])
    for key in rows:
        if isinstance(key, Node):
            hidden[key] = states["mid"][key.layer]
    return hidden


def _answer_tokens(
    plan: InputPlan,
    tokenizer: Any,
    prompts: list[str],
    prompt_ids: list[list[int]] | None,
    foils: list[str | None] | None,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Each prompt's answer token (its first answer set's first accepted string's first
    token) and foil token, -1 where there is none; ``None`` without answers (or foils)."""
    if not plan.answer_sets:
        return None, None
    first = next(iter(plan.answer_sets.values()))
    answers = torch.tensor([sequences[0][0] if sequences else -1 for sequences in first.token_ids])
    if foils is None:
        return answers, None
    encoder = encoder_for(tokenizer, prompts, prompt_ids)
    foil_ids = torch.tensor(
        [
            -1 if foil is None else encoder.continuation(index, foil, f"foils[{index}]")[0]
            for index, foil in enumerate(foils)
        ]
    )
    return answers, foil_ids


def _decomposed_fields(
    fields: dict[str, torch.Tensor], padded: Any, step: LogitLens, foils: list[str | None] | None
) -> dict[str, Any]:
    """The result's attribution fields, cells laid out as the result's padded grid."""
    assert step.components is not None and step.readout is not None
    out: dict[str, Any] = {
        "component_labels": list(step.components.labels),
        "contributions": padded(fields["contributions"], float("nan")),
        "contribution_bias": padded(fields["contribution_bias"], float("nan")),
        "top1_logits": padded(fields["top1_logits"], float("nan")),
        "foils": None if foils is None else list(foils),
        "logit_softcap": step.readout.softcap,
    }
    for name in (
        "answer_row_contributions",
        "answer_row_bias",
        "answer_contributions",
        "answer_contribution_bias",
    ):
        if name in fields:
            out[name] = fields[name]
    if "answer_token_contributions" in fields:
        out["answer_token_contributions"] = padded(
            fields["answer_token_contributions"], float("nan")
        )
        out["answer_token_bias"] = padded(fields["answer_token_bias"], float("nan"))
    if "target_contributions" in fields:
        out["target_contributions"] = padded(fields["target_contributions"], float("nan"))
        out["target_bias"] = padded(fields["target_bias"], float("nan"))
    return out
