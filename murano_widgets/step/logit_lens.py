"""The ``LogitLens`` pipeline step: its options, checked before any model work, and its calls.

The step holds its options as one checked, frozen record
(:class:`~murano_widgets.step.config.StepConfig`) and calls plain functions, read top to
bottom: :mod:`~murano_widgets.step.trace`, :mod:`~murano_widgets.step.chunk_loop`,
:mod:`~murano_widgets.step.reductions`, :mod:`~murano_widgets.step.assemble`
(:func:`~murano_widgets.step.assemble.run_step`).

One pass over the batched prompts (a forward pass with hooks, or an nnsight trace:
:mod:`murano_widgets.step.trace`) saves each requested layer's block output; then, per chunk of
real (non-padded) positions and per layer, the final norm and the unembedding turn it into logits
that are reduced at once to the small per-cell fields of a :class:`LogitLensResult`
(:mod:`murano_widgets.step.chunk_loop`; :mod:`murano_widgets.step.assemble` lays them out as the
result). Peak extra memory is one chunk's logits (a few times ``max_chunk_bytes``) whatever the
number of layers, prompts or tokens.

With ``remote=True`` (nnsight's execution on NDIF) the same reductions run inside the trace, so
that only reduced tensors travel back.

Several lenses side by side (``lens={"logit": None, "tuned": tuned}``) share the trace, the saved
block outputs and the final distribution: each adds only its translation, its unembedding and its
reductions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import torch

from murano_widgets.attribution.components import ComponentLayout
from murano_widgets.attribution.readout import Readout
from murano_widgets.backends.base import ModelBackend
from murano_widgets.lenses import Lens
from murano_widgets.results import LensResults, LogitLensResult
from murano_widgets.step.assemble import run_step
from murano_widgets.step.config import (
    DEFAULT_MAX_CHUNK_BYTES,
    StepConfig,
    configure,
    resolve_layers,
)
from murano_widgets.types import RESID_POST, Node, PromptBatch, validate_prompts

# DEFAULT_MAX_CHUNK_BYTES and resolve_layers are the step's own, read where the step is.
__all__ = ["DEFAULT_MAX_CHUNK_BYTES", "LogitLens", "resolve_layers"]


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
        remote: Run the trace on NDIF through nnsight's remote execution (nnsight 0.8, the
            client NDIF's server accepts; another raises :class:`NDIFError` here).
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
        groups: Token groups whose summed probability every cell keeps
            (:attr:`LogitLensResult.group_probs`): a dict of name to a
            :class:`~murano_widgets.TokenGroup` or a word (its :meth:`TokenGroup.word` set) for
            every prompt, or to a list of them, one per prompt. A group's probability is the
            probability that the next token is one of its tokens.

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

    # Whether block outputs alone, locally, may come from a plain forward pass with hooks
    # rather than an nnsight trace (the tests turn it off to check that both give the same
    # result).
    _PLAIN_FORWARD = True

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
        groups: Mapping[str, Any] | None = None,
    ) -> None:
        #: The options, checked (every one of them, before any model work).
        self.config: StepConfig = configure(
            model,
            layers,
            store_full_probs,
            top_k=top_k,
            max_chunk_bytes=max_chunk_bytes,
            remote=remote,
            reduce_in_trace=reduce_in_trace,
            lens=lens,
            targets=targets,
            variants=variants,
            positions=positions,
            kl_between_lenses=kl_between_lenses,
            sites=sites,
            decompose=decompose,
            heads=heads,
            groups=groups,
        )

    def with_options(self, **changes: Any) -> LogitLens:
        """The same step with other ``targets`` or ``groups`` (checked as the step's own are),
        sharing the model and lenses; the step itself is left as it is.

        Raises:
            TypeError: For another option.
            TypeError, ValueError: For bad targets or groups.
        """
        step = copy.copy(self)
        step.config = self.config.replace(**changes)
        return step

    # The options, read from the record (the step's Args say each).
    @property
    def model(self) -> ModelBackend:
        return self.config.model

    @property
    def layers(self) -> list[int]:
        return self.config.layers

    @property
    def rows(self) -> list[int | Node]:
        """The rows, in order: a block index for its output, ``Node(l, "resid_mid")`` before it."""
        return self.config.rows

    @property
    def lens(self) -> Lens | None:
        """The lens of a single-lens step (``None`` with named lenses)."""
        return self.config.lens

    @property
    def lenses(self) -> dict[str, Lens]:
        """The lenses by name: with one lens, its kind names it."""
        return self.config.lenses

    @property
    def named(self) -> bool:
        """Whether ``lens`` named its lenses (then results are :class:`LensResults`)."""
        return self.config.named

    @property
    def store_full_probs(self) -> bool:
        return self.config.store_full_probs

    @property
    def top_k(self) -> int:
        return self.config.top_k

    @property
    def max_chunk_bytes(self) -> int:
        return self.config.max_chunk_bytes

    @property
    def remote(self) -> bool:
        return self.config.remote

    @property
    def reduce_in_trace(self) -> bool:
        return self.config.reduce_in_trace

    @property
    def kl_between_lenses(self) -> bool:
        return self.config.kl_between_lenses

    @property
    def targets(self) -> list[str] | None:
        return self.config.targets

    @property
    def variants(self) -> bool:
        return self.config.variants

    @property
    def positions(self) -> str:
        return self.config.positions

    @property
    def sites(self) -> tuple[str, ...]:
        return self.config.sites

    @property
    def decompose(self) -> bool:
        return self.config.decompose

    @property
    def heads(self) -> bool:
        return self.config.heads

    @property
    def groups(self) -> dict[str, Any] | None:
        return self.config.groups

    @property
    def components(self) -> ComponentLayout | None:
        """With ``decompose``: the components read in the trace."""
        return self.config.components

    @property
    def readout(self) -> Readout | None:
        """With ``decompose``: the lens's readout, linearised."""
        return self.config.readout

    @property
    def addresses(self) -> list[Node]:
        """One :class:`Node` per row."""
        return self.config.addresses

    def __repr__(self) -> str:
        return (
            f"LogitLens(layers={self.layers}, store_full_probs={self.store_full_probs}, "
            f"top_k={self.top_k}, remote={self.remote}, "
            f"lens={list(self.lenses) if self.named else next(iter(self.lenses))!r}, "
            f"positions={self.positions!r}"
            + (f", groups={list(self.groups)}" if self.groups else "")
            + ")"
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
        # run_step is called here, not through a helper: the warnings it gives name the
        # caller's line (their stacklevel counts these frames).
        return run_step(
            self.config,
            prompts,
            answers,
            prompt_ids,
            foils,
            intervention=self.intervention,
            plain=self._PLAIN_FORWARD,
        )[0]

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
        result, hidden = run_step(
            self.config, prompts, intervention=self.intervention, plain=self._PLAIN_FORWARD
        )
        assert hidden is not None
        return result, hidden
