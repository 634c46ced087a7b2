"""The ``LogitLens`` pipeline step: its options, checked before any model work, and its calls.

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

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
import torch

from murano_widgets._checks import check_bool, check_int, check_model
from murano_widgets.attribution.components import ComponentLayout, check_mid_rows
from murano_widgets.attribution.readout import readout_of
from murano_widgets.attribution.sublayers import sublayers_of
from murano_widgets.backends.base import ModelBackend
from murano_widgets.backends.contract import BlockBackend, block_backend
from murano_widgets.lenses import Lens, as_lens, named_lenses
from murano_widgets.results import LensResults, LogitLensResult
from murano_widgets.step.assemble import StepRun
from murano_widgets.step.groups import check_groups
from murano_widgets.types import (
    RESID_MID,
    RESID_POST,
    SITES,
    Node,
    PromptBatch,
    validate_prompts,
    validate_targets,
)

__all__ = ["LogitLens"]

DEFAULT_MAX_CHUNK_BYTES = 256 * 2**20


class LogitLens(StepRun):
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
        self.groups = check_groups(groups)
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
        # Last, with every option set: a lens that cannot run with them says so now.
        for each in self.lenses.values():
            each.check_step(self)
        if self.remote:
            # Last, after the arguments: an nnsight that NDIF's server refuses (0.7, which
            # nnterp 1.3 needs) is one clear error now, not an HTTP error from the server.
            from murano_widgets.backends.nnsight import check_ndif_client

            check_ndif_client()

    @property
    def addresses(self) -> list[Node]:
        """One :class:`Node` per row."""
        return [key if isinstance(key, Node) else Node(key, RESID_POST) for key in self.rows]

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
