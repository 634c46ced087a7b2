"""The Jacobian lens (J-lens): one ``d_model × d_model`` matrix per layer in front of the logit lens.

From "Verbalizable Representations Form a Global Workspace in Language Models" (Gurnee et al.,
Transformer Circuits, 2026). For each source layer ``l`` a matrix

    ``J_l = E_prompt[ (1/|V|) Σ_{t∈V} Σ_{t'∈V, t'≥t} ∂h_final,t' / ∂h_l,t ]``

maps block ``l``'s output to the last block's output (before the final norm); ``h`` are block
outputs and ``V`` the valid positions (the first ``skip_first`` and the last left out). The lens
reads ``softmax(transform(W_U · norm(J_l · h)))`` with the model's own final norm, unembedding
and logit transform (Gemma 2's soft-cap included). The last layer is read as it is: it is the
model's own output. ``J_l = I`` is exactly the logit lens.

The file formats are those of Anthropic's reference implementation and of TransformerLens 4.x
(``transformer_lens.tools.analysis.JacobianLens``), checked both ways against the real
TransformerLens in ``tests/transformer_lens_interop`` (``bash .ci/transformer_lens.sh``):

- the artifact, a ``torch.save`` dict ``{"J": {layer: [d, d]}, "n_prompts", "source_layers",
  "d_model"}`` with an optional plain-valued ``"metadata"`` dict (fp16 by default);
- the fit checkpoint, ``{"jacobian_sum": {layer: [d, d]}, "n_done", "next_idx",
  "source_layers", "target_layer", "skip_first", ...}``: the running sum over ``n_done``
  prompts, which loads as its running mean.

Example:
    >>> from murano_widgets import JacobianLens, LogitLens, load_demo_model
    >>> model = load_demo_model()  # doctest: +SKIP
    >>> lens = JacobianLens.fit(model, texts, skip_first=4)  # doctest: +SKIP
    >>> lens.save("toy-jlens.pt")  # doctest: +SKIP
    >>> LogitLens(model, lens=JacobianLens.load("toy-jlens.pt", model))  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from murano_widgets._checks import check_bool, check_int, check_model, check_path, check_str
from murano_widgets._files import read_torch, write_file
from murano_widgets.lenses.base import Lens, model_name, model_width
from murano_widgets.lenses.jacobian_fit import check_matrices, fit_jacobians
from murano_widgets.lenses.jacobian_hub import resolve

__all__ = ["ESTIMATOR", "JacobianLens"]

ESTIMATOR = "jacobian_lens"
"""The ``estimator`` recorded in a fitted lens's metadata (TransformerLens's name for it)."""

#: Metadata that differs from shard to shard of one fit (each shard's own texts and run), which
#: :meth:`JacobianLens.merge` does not require to agree.
SHARD_KEYS = frozenset(
    {
        "n_prompts",
        "n_texts",
        "texts_sha256",
        "n_skipped",
        "date",
        "seconds",
        "device",
        "merged_from",
    }
)

#: Flat provenance keys some checkpoint writers store beside ``jacobian_sum`` (the reference's
#: and TransformerLens's reading of them).
CHECKPOINT_PROVENANCE = ("model_name", "model_revision", "corpus")

STORAGE_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class JacobianLens(Lens):
    """One transport matrix per source layer: a kind of :class:`~murano_widgets.Lens`.

    Most users get one from :meth:`load`, :meth:`from_pretrained`, :meth:`fit` or
    :meth:`merge` rather than building it. Hand it to ``LogitLens(model, lens=...)`` (or
    ``show_logit_lens``, ``lens_dataset``, ``compare_lenses``, ...) to read every layer through
    it.

    Args:
        jacobians: ``{layer: [d_model, d_model]}``: ``J_l`` maps block ``l``'s output ``h`` to
            ``J_l · h`` (rows are output dimensions, as TransformerLens stores them).
        n_prompts: Prompts averaged into the matrices (what :meth:`merge` weights by).
        d_model: The residual width; checked against the matrices when given.
        metadata: Plain-valued provenance (strings, numbers, lists, string-keyed dicts), saved in
            the artifact's ``"metadata"`` as TransformerLens saves its own.

    Attributes:
        kind: ``"jacobian"``, what the lens step records as ``lens_kind``.
        title: ``"Jacobian lens"``, what the views call it.
        jacobians: The matrices, float32 on the CPU, by layer in ascending order. Changing one
            in place is fine: the device and dtype copies are refreshed.
        n_prompts: See above.
        metadata: See above; edits are saved by :meth:`save`.
        source: Where the lens came from: a file, ``hf://repo/file``, ``"fitted"``, ...

    Raises:
        ValueError: For no matrices, a layer that is not a non-negative int, matrices that are
            not square, disagree in width or with ``d_model``, a negative ``n_prompts``, or
            metadata that a weights-only reader could not load back.
    """

    kind: ClassVar[str] = "jacobian"
    title: ClassVar[str] = "Jacobian lens"

    def __init__(
        self,
        jacobians: Mapping[int, torch.Tensor],
        *,
        n_prompts: int,
        d_model: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        matrices = check_matrices(jacobians, "jacobians", d_model)
        self.jacobians: dict[int, torch.Tensor] = {
            layer: matrix.detach().to("cpu", torch.float32).contiguous()
            for layer, matrix in matrices.items()
        }
        self.n_prompts = check_int("n_prompts", n_prompts, 0, None, None)
        problem = _plain_problem(dict(metadata or {}), "metadata")
        if problem:
            raise ValueError(problem)
        self.metadata: dict[str, Any] = copy.deepcopy(dict(metadata or {}))
        self.source = "built"
        self.origin: dict[str, Any] = {}
        self._operands: dict[tuple, tuple[tuple[int, int], torch.Tensor]] = {}

    # -----------------------------------------------------------------------------------------
    # Shape, provenance and checks

    @property
    def d_model(self) -> int:
        """The width of the residual stream the matrices act on."""
        return int(next(iter(self.jacobians.values())).shape[0])

    @property
    def source_layers(self) -> list[int]:
        """The layers the lens has a matrix for, ascending."""
        return sorted(self.jacobians)

    @property
    def target_layer(self) -> int | None:
        """The block whose output the matrices map to, when recorded (the last block)."""
        target = self.metadata.get("target_layer")
        return target if isinstance(target, int) and not isinstance(target, bool) else None

    @property
    def provenance(self) -> dict[str, Any]:  # type: ignore[override]
        """Where the lens came from, JSON-able: kind, source (file, hub file, fit), prompt count,
        layers, width, and the saved metadata (model, corpus, fit settings, date)."""
        return {
            "kind": self.kind,
            "source": self.source,
            **self.origin,
            "n_prompts": self.n_prompts,
            "source_layers": self.source_layers,
            "d_model": self.d_model,
            "metadata": copy.deepcopy(self.metadata),
        }

    def __repr__(self) -> str:
        layers = self.source_layers
        span = f"{layers[0]}..{layers[-1]}" if len(layers) > 1 else str(layers[0])
        return (
            f"JacobianLens(layers={span} ({len(layers)}), d_model={self.d_model}, "
            f"n_prompts={self.n_prompts}, source={self.source!r})"
        )

    def _for(self) -> str:
        name = self.metadata.get("model_name") or self.metadata.get("base_model")
        return f" (fitted for {name!r})" if isinstance(name, str) and name else ""

    def check(self, model: Any) -> None:
        """Checks that the lens fits ``model``: its width, and that every matrix is for a layer
        the model has below its last (TransformerLens's ``validate_model`` checks the same).

        A lens of another model with the same width and at least as many layers cannot be told
        apart by shape; TransformerLens also compares the recorded model name, which this
        package does not, because a model folder's name changes when it is moved or installed
        (the shipped demo lens would fail everywhere but where it was fitted).

        Raises:
            TypeError: If ``model`` is not a loaded model.
            ValueError: On another width, a matrix for the model's last layer or beyond, or a
                lens recorded as mapping to another target block than the model's last.
        """
        check_model(model)
        n_layers = int(model.n_layers)
        name = model_name(model)
        width = model_width(model)
        if width is not None and width != self.d_model:
            raise ValueError(
                f"the Jacobian lens is for d_model={self.d_model}{self._for()} but the model "
                f"{name!r} has hidden size {width}: it was fitted for another model"
            )
        beyond = [layer for layer in self.source_layers if layer >= n_layers - 1]
        if beyond:
            raise ValueError(
                f"the Jacobian lens has matrices for layers {_span(self.source_layers)}"
                f"{self._for()} but the model {name!r} has {n_layers} layers, whose source layers "
                f"are 0..{n_layers - 2} (the last block's output is the model's own prediction): "
                f"layers {beyond} belong to a deeper model"
            )
        target = self.target_layer
        if target is not None and target != n_layers - 1:
            raise ValueError(
                f"the Jacobian lens maps block outputs to block {target}'s output{self._for()}, "
                f"but the model {name!r} ends at block {n_layers - 1}: it was fitted for a model "
                "of another depth, or against a non-final target, which no lens readout supports"
            )

    def check_layers(self, layers: Sequence[int], n_layers: int) -> None:
        """Checks that the lens has a matrix for every layer asked for but the last.

        A lens fitted for some source layers only has no reading of the others. It does not
        fall back to the logit lens there (a heatmap would mix two lenses under one title):
        like TransformerLens's ``readout``, it refuses.

        Raises:
            ValueError: Naming the layers without a matrix and the ``layers=`` that works.
        """
        missing = [int(layer) for layer in layers if layer != n_layers - 1]
        missing = [layer for layer in missing if layer not in self.jacobians]
        if missing:
            readable = [*self.source_layers, n_layers - 1]
            raise ValueError(
                f"the Jacobian lens has no matrix for layers {missing} (it was fitted for "
                f"layers {_span(self.source_layers)} of this model's {n_layers}): pass "
                f"layers={readable}, or read those layers with another lens"
            )

    # -----------------------------------------------------------------------------------------
    # Applying it

    def translate(self, layer: int, hidden: torch.Tensor) -> torch.Tensor:
        """``J_layer · h`` for every row ``h`` of ``hidden`` (``hidden @ J_layer.T``).

        Runs on ``hidden``'s device and returns ``hidden``'s dtype; the matrix is copied there
        once. In float32 and float64 the product is taken in that dtype; in half precision it is
        taken in float32 and rounded back, as TransformerLens transports in float32: a bfloat16
        product over ``d_model`` terms keeps about 2 significant digits, and on CPUs without
        AVX512-BF16 a bfloat16 matmul ran about 270 times slower than float32 (TESTING.md).

        Args:
            layer: The block whose output ``hidden`` is.
            hidden: ``[..., d_model]``.

        Raises:
            ValueError: If the lens has no matrix for ``layer`` (the block it maps to reads as
                it is), or ``hidden`` is not ``d_model`` wide.
        """
        if isinstance(layer, bool) or not isinstance(layer, numbers.Integral):
            raise ValueError(f"layer must be an int, got {type(layer).__name__} {layer!r}")
        layer = int(layer)
        if layer not in self.jacobians:
            if layer == self.target_layer:
                return hidden  # the block every matrix maps to: its own transport is the identity
            raise ValueError(
                f"the Jacobian lens has no matrix for layer {layer} (it has layers "
                f"{_span(self.source_layers)})"
            )
        if hidden.shape[-1] != self.d_model:
            raise ValueError(
                f"hidden must be [..., {self.d_model}] (the lens's d_model), "
                f"got {tuple(hidden.shape)}"
            )
        if hidden.dtype in (torch.float32, torch.float64):
            return torch.matmul(hidden, self._operand(layer, hidden.device, hidden.dtype))
        product = torch.matmul(hidden.float(), self._operand(layer, hidden.device, torch.float32))
        return product.to(hidden.dtype)

    def pullback(
        self, layer: int, hidden: torch.Tensor, direction: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``J^T r`` and no offset: the lens is linear (see :meth:`Lens.pullback`)."""
        layer = int(layer)
        if layer not in self.jacobians and layer == self.target_layer:
            return direction, direction.new_zeros(direction.shape[:-1])
        matrix = self.jacobians[layer].to(device=direction.device, dtype=torch.float32)
        return direction.float() @ matrix, direction.new_zeros(direction.shape[:-1])

    def _operand(self, layer: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """``J_layer.T`` on ``device`` in ``dtype``, cached until the matrix is changed."""
        matrix = self.jacobians[layer]
        if device.type == "cpu" and dtype == torch.float32:
            return matrix.t()  # a view: BLAS reads the transposed layout as it is
        version = (id(matrix), matrix._version)
        key = (layer, str(device), dtype)
        cached = self._operands.get(key)
        if cached is None or cached[0] != version:
            cached = self._operands[key] = (version, matrix.t().to(device=device, dtype=dtype))
        return cached[1]

    def __getstate__(self) -> dict[str, Any]:
        # A remote trace sends the lens by value: the matrices, not their device copies.
        state = self.__dict__.copy()
        state["_operands"] = {}
        return state

    # -----------------------------------------------------------------------------------------
    # Reading and writing

    @classmethod
    def load(cls, path: str | os.PathLike[str], model: Any | None = None) -> JacobianLens:
        """Reads a Jacobian lens file: an artifact (``"J"``) or a fit checkpoint
        (``"jacobian_sum"``, read as its running mean), and checks it against ``model``.

        The file is read with ``torch.load(..., weights_only=True)``: nothing in it is run.

        Args:
            path: A ``.pt`` file saved by :meth:`save`, by TransformerLens, by the reference
                implementation, or a fit checkpoint of any of them.
            model: The model it will be used with; ``None`` skips the check.

        Raises:
            TypeError: If ``model`` is neither ``None`` nor a loaded model (checked first).
            FileNotFoundError: If the file does not exist.
            IsADirectoryError: If it is a folder (see :meth:`from_pretrained` for those).
            ValueError: For a file that is empty, truncated, not a torch file, refused (it
                would run code), not a Jacobian lens, holds wrong shapes, layers or counts, or a
                lens that does not fit ``model``; the message names the file.
        """
        if model is not None:
            check_model(model)
        file = Path(check_path("path", path)).expanduser()
        if file.is_dir():
            raise IsADirectoryError(
                f"Jacobian lens path {str(file)!r} is a folder: a lens is one .pt file; for a "
                "folder laid out like the hub repo, use JacobianLens.from_pretrained(folder, "
                "filename=...)"
            )
        payload = read_torch(file, "the Jacobian lens file")
        lens = _from_payload(payload, f"the Jacobian lens file {str(file)!r}")
        lens.source = str(file)
        if model is not None:
            try:
                lens.check(model)
            except ValueError as error:
                raise ValueError(f"the Jacobian lens file {str(file)!r}: {error}") from None
        return lens

    def save(self, path: str | os.PathLike[str], dtype: torch.dtype = torch.float16) -> Path:
        """Writes the lens in the reference format, which TransformerLens reads as well.

        ``{"J": {layer: [d, d]}, "n_prompts", "source_layers", "d_model"}`` and, when there is
        any, ``"metadata"``. The file is replaced atomically (see
        :func:`murano_widgets._files.write_file`): an interrupted save leaves the previous file
        whole, never a half-written one.

        Args:
            path: The ``.pt`` file; its folder is made if needed.
            dtype: The storage dtype: float16 (the published format: entries are of order one,
                and it halves the file), bfloat16, float32 (exact) or float64.

        Returns:
            The file.

        Raises:
            ValueError: For another dtype, or a matrix with entries beyond the dtype's range.
        """
        file = Path(check_path("path", path)).expanduser()
        if dtype not in STORAGE_DTYPES:
            raise ValueError(
                "dtype must be one of torch.float16, torch.bfloat16, torch.float32, "
                f"torch.float64; got {dtype!r}"
            )
        limit = torch.finfo(dtype).max
        for layer, matrix in self.jacobians.items():
            largest = float(matrix.abs().max())
            if largest > limit:
                raise ValueError(
                    f"the Jacobian lens's layer {layer} holds entries up to {largest:.3g}, beyond "
                    f"{str(dtype).replace('torch.', '')}'s range ({limit:.3g}): save with "
                    "dtype=torch.float32"
                )
        payload: dict[str, Any] = {
            # Copies, so that each matrix is stored alone (never a view of a larger storage).
            "J": {layer: matrix.to(dtype).clone() for layer, matrix in self.jacobians.items()},
            "n_prompts": self.n_prompts,
            "source_layers": self.source_layers,
            "d_model": self.d_model,
        }
        if self.metadata:
            payload["metadata"] = copy.deepcopy(self.metadata)
        file.parent.mkdir(parents=True, exist_ok=True)
        return write_file(file, lambda temporary: torch.save(payload, temporary))

    @classmethod
    def from_pretrained(
        cls,
        name_or_hub_id: str | os.PathLike[str],
        *,
        filename: str | None = None,
        revision: str | None = None,
        model: Any | None = None,
    ) -> JacobianLens:
        """A published lens by name, a file of a hub repo, or a local file or folder.

        Resolution, in order:

        1. a local ``.pt`` file;
        2. a local folder laid out like the hub repo: ``folder/filename``; without
           ``filename``, the file the registry names for ``model`` if the folder has it, else
           the folder's only ``.pt`` file;
        3. a registry name or Hugging Face model id (``"gpt2-small"``, ``"gpt2"``,
           ``"google/gemma-2-2b"``: the 37 lenses of ``neuronpedia/jacobian-lens``, in
           :file:`jacobian_registry.json`), fetched at the registry's pinned revision unless
           ``revision`` names another; ``filename`` picks another file of the same repo;
        4. a hub repo id with ``filename``.

        Hub files come through ``huggingface_hub.hf_hub_download`` (its cache first). Offline
        (``HF_HUB_OFFLINE=1``, or the hub unreachable) and not cached, it fails at once, naming
        the repo, file and revision to fetch and how to pass the local copy.

        Args:
            name_or_hub_id: See above.
            filename: The file inside a folder or hub repo.
            revision: A hub branch, tag or commit.
            model: The model the lens is for: checked now (see :meth:`check`), and used to
                pick the registry's file in a local folder.

        Raises:
            TypeError: If ``model`` is given but is not a loaded model, or an argument is not a
                string.
            FileNotFoundError: For a local path that does not exist, a folder without the file,
                or a hub file that cannot be had offline.
            ValueError: For a name that is neither published nor a hub repo with ``filename``,
                a folder holding several lens files and no way to choose, or a bad file (see
                :meth:`load`).
        """
        if model is not None:
            check_model(model)
        file, origin = resolve(name_or_hub_id, filename, revision, model)
        lens = cls.load(file, model)
        lens.origin = origin
        lens.source = origin.pop("source", str(file))
        return lens

    # -----------------------------------------------------------------------------------------
    # Combining and fitting

    @classmethod
    def merge(cls, lenses: Sequence[JacobianLens]) -> JacobianLens:
        """Lenses fitted on disjoint slices of prompts, as one: the prompt-weighted mean.

        ``J_l = Σ_i n_i · J_l^(i) / Σ_i n_i`` (computed in float64), the reference's and
        TransformerLens's rule, so a fit can be split across processes or machines.

        Args:
            lenses: Two or more :class:`JacobianLens` with the same layers and width, each of a
                positive ``n_prompts``, whose metadata agree except per-shard facts (texts,
                counts, dates, device): the same model, estimator and fit settings.

        Returns:
            The merged lens; its metadata is the shards' shared metadata, with
            ``merged_from`` listing each shard's own facts.

        Raises:
            TypeError: If ``lenses`` is not a list of :class:`JacobianLens`.
            ValueError: On an empty list, a shard of no prompts, different layers or widths, or
                different model or settings (naming the first difference).
        """
        if isinstance(lenses, (str, bytes)) or not isinstance(lenses, Sequence):
            raise TypeError(f"lenses must be a list of JacobianLens, got {type(lenses).__name__}")
        for index, lens in enumerate(lenses):
            if not isinstance(lens, JacobianLens):
                raise TypeError(f"lenses[{index}] is {type(lens).__name__}, not a JacobianLens")
        if not lenses:
            raise ValueError("lenses must hold at least one JacobianLens to merge, got none")
        empty = [index for index, lens in enumerate(lenses) if lens.n_prompts <= 0]
        if empty:
            raise ValueError(
                f"lenses {empty} were averaged over n_prompts=0 prompts: a merge weights each "
                "lens by its prompts, so every one needs a positive n_prompts"
            )
        first = lenses[0]
        shared = {k: v for k, v in first.metadata.items() if k not in SHARD_KEYS}
        for index, lens in enumerate(lenses[1:], start=1):
            if lens.source_layers != first.source_layers or lens.d_model != first.d_model:
                raise ValueError(
                    f"lenses[{index}] has layers {_span(lens.source_layers)} of d_model "
                    f"{lens.d_model}, lenses[0] layers {_span(first.source_layers)} of d_model "
                    f"{first.d_model}: only lenses of one model and the same layers merge"
                )
            theirs = {k: v for k, v in lens.metadata.items() if k not in SHARD_KEYS}
            if theirs != shared:
                key = sorted(
                    (k for k in shared.keys() | theirs.keys() if shared.get(k) != theirs.get(k)),
                    key=str,
                )[0]
                raise ValueError(
                    f"lenses[{index}] differs from lenses[0] in {key!r} ({theirs.get(key)!r} vs "
                    f"{shared.get(key)!r}): only shards of one fit (the same model, estimator "
                    "and settings) merge"
                )
        total = sum(lens.n_prompts for lens in lenses)
        merged = {}
        for layer in first.source_layers:
            # A tensor start (0.0 + x is x exactly, as 0 + x was): the sum is a tensor, typed so.
            weighted = sum(
                (lens.jacobians[layer].double() * lens.n_prompts for lens in lenses),
                torch.zeros((), dtype=torch.float64),
            )
            merged[layer] = (weighted / total).float()
        metadata = dict(shared)
        if "n_prompts" in first.metadata:
            metadata["n_prompts"] = total  # TransformerLens keeps the count in its metadata too
        metadata["merged_from"] = [
            {
                "n_prompts": lens.n_prompts,
                "source": lens.source,
                **{k: v for k, v in lens.metadata.items() if k in SHARD_KEYS - {"n_prompts"}},
            }
            for lens in lenses
        ]
        out = cls(merged, n_prompts=total, d_model=first.d_model, metadata=metadata)
        out.source = "merged"
        return out

    @classmethod
    def fit(
        cls,
        model: Any,
        texts: Sequence[str],
        *,
        source_layers: Sequence[int] | None = None,
        target_layer: int | None = None,
        dim_batch: int = 8,
        max_seq_len: int = 128,
        skip_first: int = 16,
        checkpoint_path: str | os.PathLike[str] | None = None,
        resume: bool = True,
        progress: bool = True,
        corpus: str | None = None,
    ) -> JacobianLens:
        """Fits a Jacobian lens for ``model`` on ``texts``: the reference estimator, exactly.

        Each text is tokenized as the lens step tokenizes a prompt (the tokenizer's own special
        tokens) and cut to ``max_seq_len`` tokens; texts with at most ``skip_first + 1`` tokens
        have no valid position and are left out (with one warning). Per text: one forward pass
        of the text repeated ``dim_batch`` times, then ``ceil(d_model / dim_batch)`` backward
        passes, each with a one-hot cotangent on ``dim_batch`` output dimensions of the target
        block's output at every valid position; the gradient at each source layer, averaged
        over the valid source positions, gives those rows of the text's ``J_l``. Texts weigh
        equally in the mean. Nothing is random: the same texts, settings and thread count give
        the same matrices, bit for bit, whether the fit ran at once or was interrupted and
        resumed.

        Memory is bounded by one text: its forward graph from the first source block to the
        target, ``dim_batch`` rows wide, and two float32 ``[d_model, d_model]`` matrices per
        source layer (the text's and the running sum). It runs on the model's device.

        Args:
            model: A :class:`~murano_widgets.MuranoModel` (either backend; CPU or GPU). Its
                parameters are frozen during the fit and restored after.
            texts: The corpus, one prompt per string (the published lenses used up to 1,000
                texts of 128 tokens; about 100 is usable).
            source_layers: The layers to fit (negative ones count from the end); default every
                layer below the target.
            target_layer: The block whose output the matrices map to; default the last. A lens
                with another target can be saved, but no readout reads it.
            dim_batch: Output dimensions per backward pass: higher is faster and takes
                ``dim_batch`` copies of the text's activations in memory; the arithmetic is the
                same.
            max_seq_len: Tokens kept of each text.
            skip_first: Leading positions left out of the valid positions (attention sinks).
            checkpoint_path: A ``.pt`` file written atomically after every text in the fit
                checkpoint schema (which :meth:`load` and TransformerLens read as the running
                mean). An interrupted fit (``KeyboardInterrupt`` included) leaves it valid.
            resume: Continue from ``checkpoint_path`` if it exists; it must come from a fit of
                the same model, texts and settings (or it is refused, naming what changed).
                ``False`` starts over and overwrites it.
            progress: Show a tqdm progress bar over texts.
            corpus: A name for the texts, recorded in the metadata (TransformerLens's
                ``corpus``).

        Returns:
            The lens, float32; its metadata records the model, settings, texts' hash and run.

        Raises:
            TypeError: If ``model`` is not a loaded model with plain torch decoder blocks, or an
                argument has the wrong type.
            IsADirectoryError: If ``checkpoint_path`` is a folder.
            ValueError: For bad settings (each named, before any model work), texts that are not
                a non-empty list of valid strings or all too short, or a checkpoint of another
                run.
        """
        check_model(model)
        resume = check_bool("resume", resume)
        progress = check_bool("progress", progress)
        corpus = check_str("corpus", corpus, optional=True)
        if checkpoint_path is not None:
            checkpoint_path = Path(check_path("checkpoint_path", checkpoint_path)).expanduser()
            if checkpoint_path.is_dir():
                raise IsADirectoryError(
                    f"checkpoint_path {str(checkpoint_path)!r} is a folder; give a file name in "
                    "it, such as 'checkpoint.pt'"
                )
        state = fit_jacobians(
            model,
            texts,
            source_layers=source_layers,
            target_layer=target_layer,
            dim_batch=dim_batch,
            max_seq_len=max_seq_len,
            skip_first=skip_first,
            checkpoint_path=checkpoint_path,
            resume=resume,
            progress=progress,
            corpus=corpus,
        )
        lens = cls(
            {layer: total / state.n_done for layer, total in state.sums.items()},
            n_prompts=state.n_done,
            metadata=state.metadata,
        )
        lens.source = "fitted"
        if checkpoint_path is not None:
            lens.origin = {"checkpoint": str(checkpoint_path)}
        return lens


# ---------------------------------------------------------------------------------------------
# Reading files


def _from_payload(payload: Any, where: str) -> JacobianLens:
    """The lens in a loaded artifact or fit checkpoint, every field checked (``where`` names
    the file in messages)."""
    if not isinstance(payload, dict):
        raise ValueError(
            f"{where} holds a {type(payload).__name__}, not a Jacobian lens: expected a dict "
            "with 'J' (an artifact) or 'jacobian_sum' (a fit checkpoint)"
        )
    if "J" in payload:
        matrices = check_matrices(payload["J"], f"{where}: 'J'", None, file=True)
        n_prompts = _count(payload, "n_prompts", where, default=0, low=0)
        metadata_in = payload.get("metadata")
        metadata = _sanitized(metadata_in, where) if metadata_in is not None else {}
    elif "jacobian_sum" in payload:
        sums = check_matrices(payload["jacobian_sum"], f"{where}: 'jacobian_sum'", None, file=True)
        key = "n_done" if "n_done" in payload else "n_prompts"
        n_prompts = _count(payload, key, where, default=None, low=1)
        matrices = {layer: total.float() / n_prompts for layer, total in sums.items()}
        raw = (
            dict(payload.get("metadata") or {}) if isinstance(payload.get("metadata"), dict) else {}
        )
        for flat in (*CHECKPOINT_PROVENANCE, "target_layer"):
            if flat in payload and flat not in raw:
                raw[flat] = payload[flat]
        if "skip_first" in payload and "skip_first_positions" not in raw:
            raw["skip_first_positions"] = payload["skip_first"]
        metadata = _sanitized(raw, where)
        # TransformerLens marks a lens read from a checkpoint so that merge keeps it apart from
        # lenses fitted natively; the same key keeps the two packages' merges alike.
        metadata["converted_from"] = "jacobian_lens_checkpoint"
    else:
        found = ", ".join(repr(k) for k in list(payload)[:8]) or "no keys"
        raise ValueError(
            f"{where} is not a Jacobian lens: it has {found}, but neither 'J' (an artifact) nor "
            "'jacobian_sum' (a fit checkpoint)"
        )
    d = int(next(iter(matrices.values())).shape[0])
    if "d_model" in payload:
        given = payload["d_model"]
        if isinstance(given, bool) or not isinstance(given, int) or given != d:
            raise ValueError(
                f"{where}: 'd_model' is {given!r} but the matrices are [{d}, {d}]: the file is "
                "inconsistent"
            )
    listed = payload.get("source_layers")
    if listed is not None and (
        not isinstance(listed, (list, tuple)) or sorted(_ints(listed)) != sorted(matrices)
    ):
        raise ValueError(
            f"{where}: 'source_layers' lists {_short(listed)} but the matrices are for layers "
            f"{sorted(matrices)}: the file is inconsistent"
        )
    target = metadata.get("target_layer")
    if target is not None and (
        isinstance(target, bool) or not isinstance(target, int) or target <= max(matrices)
    ):
        raise ValueError(
            f"{where}: 'target_layer' is {target!r}, but it must be an int above every source "
            f"layer ({sorted(matrices)})"
        )
    return JacobianLens(matrices, n_prompts=n_prompts, metadata=metadata)


def _count(payload: dict, key: str, where: str, *, default: int | None, low: int) -> int:
    value = payload.get(key, default)
    if value is None:
        raise ValueError(
            f"{where} is a fit checkpoint without 'n_done': its prompt count is needed"
        )
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        need = "a positive int (the mean divides by it)" if low > 0 else "an int of at least 0"
        raise ValueError(f"{where}: {key!r} must be {need}, got {value!r}")
    return int(value)


def _ints(values: Any) -> list[Any]:
    return [
        int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v for v in values
    ]


def _sanitized(metadata: Any, where: str) -> dict[str, Any]:
    """Metadata a weights-only reader can load back and JSON can hold: plain values kept,
    others dropped and named in ``dropped_fields`` (as TransformerLens does for checkpoints)."""
    if not isinstance(metadata, dict):
        raise ValueError(f"{where}: 'metadata' must be a dict, got a {type(metadata).__name__}")
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in metadata.items():
        if not isinstance(key, str) or _plain_problem(value, "metadata"):
            dropped.append(str(key))
        else:
            kept[key] = value
    if dropped:
        kept["dropped_fields"] = dropped
    return kept


def _plain_problem(value: Any, path: str) -> str | None:
    """Why ``value`` is not plain metadata (None, bool, int, finite or not float, str, lists,
    tuples and str-keyed dicts of them), or ``None``."""
    if value is None or type(value) in (bool, int, float, str):
        return None
    if type(value) in (list, tuple):
        for index, item in enumerate(value):
            problem = _plain_problem(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path} has the key {key!r}: metadata keys must be strings"
            problem = _plain_problem(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    return (
        f"{path} is a {type(value).__name__}: metadata holds None, bool, int, float, str, "
        "lists and string-keyed dicts only (what torch.load(weights_only=True) reads back)"
    )


# ---------------------------------------------------------------------------------------------
# Small helpers


def _span(layers: Sequence[int]) -> str:
    """``0..4`` for consecutive layers, else the list."""
    layers = sorted(layers)
    if len(layers) > 2 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}..{layers[-1]}"
    return str(layers)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
