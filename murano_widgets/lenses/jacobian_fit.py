"""Fitting a Jacobian lens: the estimator, its resumable checkpoints and its argument checks.

:meth:`murano_widgets.JacobianLens.fit` is the entry; this module holds what it runs, and the
check of a lens's ``{layer: [d, d]}`` matrices (``check_matrices``) that a checkpoint and the
lens's own file reader share: here, so that the lens imports its fitter and not both ways.

Why plain torch hooks and not an nnsight trace: the estimator is one forward pass, then
``ceil(d_model / dim_batch)`` backward passes through the same retained graph, each asking
autograd for gradients at several block outputs. nnsight keeps a trace's values alive until it
exits and may run the intervention code in a worker thread; the backward passes would have to
run after the trace, on saved tensors whose graph nnsight does not promise to keep. Forward
hooks on the Hugging Face decoder blocks (``MuranoModel._blocks``, the modules whose outputs
``MuranoModel.layer`` reads in a trace) give the same block outputs (tests compare them) and a
graph that plain autograd owns. The forward pass stops at the target block (the final norm and
the unembedding are not needed: at GPT-2's shape and 8 × 128 tokens that skips a
``768 × 50257`` matmul of about 80 GFLOP).
"""

from __future__ import annotations

import datetime
import numbers
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from murano_widgets._checks import check_int
from murano_widgets._files import read_torch, write_file
from murano_widgets._progress import progress_bar
from murano_widgets._version import __version__
from murano_widgets.lenses.base import model_width
from murano_widgets.lenses.train import texts_hash
from murano_widgets.types import check_texts

__all__ = ["FitState", "fit_jacobians", "prompt_jacobians"]

#: The key of this package's run record in a checkpoint (TransformerLens and the reference
#: ignore keys they do not know): what a resumed fit must match.
RUN_KEY = "murano_fit"

TOKENIZE_BATCH = 1024
"""Texts tokenized per call: bounds the tokenizer's transient memory on a large corpus."""


class _Stop(Exception):
    """Raised by the target block's hook: nothing after the target block is needed."""


@dataclass
class FitState:
    """A fit in progress: the running sums, the texts done, and what the run is.

    Attributes:
        sums: ``{layer: Σ_prompts J_l}``, float32 on the CPU.
        n_done: Texts averaged into the sums.
        next_idx: The index of the next text to fit (skipped texts included).
        run: What decides the matrices (model, settings, texts' hash): a resumed fit must
            match it.
        metadata: The lens's metadata (``run`` and how it ran: date, seconds, device).
    """

    sums: dict[int, torch.Tensor]
    n_done: int = 0
    next_idx: int = 0
    run: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def payload(self) -> dict[str, Any]:
        """The checkpoint: the reference's schema (``jacobian_sum``, ``n_done``, ``next_idx``,
        ``source_layers``, ``target_layer``, ``skip_first``, flat ``model_name``,
        ``model_revision``, ``corpus``), the lens's ``metadata``, and this package's run."""
        run = self.run
        payload: dict[str, Any] = {
            "jacobian_sum": self.sums,
            "n_done": self.n_done,
            "next_idx": self.next_idx,
            "source_layers": list(run["source_layers"]),
            "target_layer": run["target_layer"],
            "skip_first": run["skip_first"],
            "model_name": run["model_name"],
            "model_revision": run["model_revision"],
        }
        if self.metadata.get("corpus") is not None:
            payload["corpus"] = self.metadata["corpus"]
        payload["metadata"] = dict(self.metadata)
        payload[RUN_KEY] = {**run, "seconds": self.seconds}
        return payload


def fit_jacobians(
    model: Any,
    texts: Sequence[str],
    *,
    source_layers: Sequence[int] | None,
    target_layer: int | None,
    dim_batch: int,
    max_seq_len: int,
    skip_first: int,
    checkpoint_path: Path | None,
    resume: bool,
    progress: bool,
    corpus: str | None,
) -> FitState:
    """Runs the estimator over ``texts`` (see :meth:`murano_widgets.JacobianLens.fit`).

    Returns:
        The finished state: the sums over ``n_done`` texts and the lens's metadata.
    """
    hf_model, blocks = _plain_modules(model)
    n_layers = int(model.n_layers)
    settings = _check_settings(
        n_layers, source_layers, target_layer, dim_batch, max_seq_len, skip_first
    )
    check_texts(texts)
    skip_first, max_seq_len = settings["skip_first"], settings["max_seq_len"]
    d_model = _width(model)
    if hf_model.training:
        raise ValueError(
            "the model is in training mode (dropout would make every gradient random): call "
            "eval() on it before fitting a Jacobian lens"
        )
    if model.dtype in (torch.float16, torch.bfloat16):
        warnings.warn(
            f"fitting in {str(model.dtype).replace('torch.', '')}: the cotangents and gradients "
            "are in the model's dtype, so each text's matrices keep about 3 significant digits "
            "(2 in bfloat16); load the model in float32 for the reference's precision",
            UserWarning,
            stacklevel=3,
        )
    run = {
        "format": 1,
        "estimator": "jacobian_lens",
        "model_name": getattr(model, "name", None),
        "model_revision": _revision(hf_model),
        "n_layers": n_layers,
        "d_model": d_model,
        "dtype": str(model.dtype).replace("torch.", ""),
        **settings,
        "n_texts": len(texts),
        "texts_sha256": texts_hash(texts),
    }
    if checkpoint_path is not None:
        checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
    state = _start(checkpoint_path, resume, run, d_model)
    if state.next_idx >= len(texts):
        return _finished(state, run, corpus, model)

    prompts, valid, skipped = _fitted_texts(model, texts, max_seq_len, skip_first)
    state.metadata = _metadata(run, corpus, len(skipped), model, state)

    device = torch.device(getattr(model, "device", "cpu"))
    bar = progress_bar(
        total=len(texts),
        initial=state.next_idx,
        desc="Jacobian lens",
        unit="text",
        enabled=progress,
    )
    try:
        with _frozen(hf_model):
            for index in range(state.next_idx, len(texts)):
                began = time.perf_counter()
                if valid[index]:
                    ids = torch.tensor([prompts[index]], dtype=torch.long, device=device)
                    per_prompt = prompt_jacobians(
                        hf_model,
                        blocks,
                        ids,
                        source_layers=settings["source_layers"],
                        target_layer=settings["target_layer"],
                        # More lanes than output dimensions would only copy the text again.
                        dim_batch=min(settings["dim_batch"], d_model),
                        skip_first=skip_first,
                        forward_kwargs=_forward_kwargs(model),
                    )
                    for layer, matrix in per_prompt.items():
                        state.sums[layer] += matrix.cpu()
                    del per_prompt
                    state.n_done += 1
                state.next_idx = index + 1
                state.seconds += time.perf_counter() - began
                state.metadata = _metadata(run, corpus, len(skipped), model, state)
                if checkpoint_path is not None:
                    # After every text, atomically: an interrupt at any point leaves the last
                    # complete checkpoint, never a half-written one.
                    write_file(checkpoint_path, _saver(state.payload()))
                bar.update(1)
    finally:
        bar.close()
    return state


def _fitted_texts(
    model: Any, texts: Sequence[str], max_seq_len: int, skip_first: int
) -> tuple[list[list[int]], list[bool], list[int]]:
    """The texts' token ids, whether each has a valid position (more than ``skip_first + 1``
    tokens) and the indices of those left out, said in a warning.

    Raises:
        ValueError: If no text has a valid position.
    """
    prompts = _tokenize(model, texts, max_seq_len)
    valid = [len(ids) > skip_first + 1 for ids in prompts]
    skipped = [index for index, ok in enumerate(valid) if not ok]
    if not any(valid):
        longest = max(len(ids) for ids in prompts)
        raise ValueError(
            f"every text is too short: a text needs more than skip_first + 1 = {skip_first + 1} "
            f"tokens to have a valid position, and the longest has {longest}; give longer texts "
            "or a smaller skip_first"
        )
    if skipped:
        shown = ", ".join(f"texts[{i}]" for i in skipped[:5]) + (", …" if len(skipped) > 5 else "")
        warnings.warn(
            f"{len(skipped)} of {len(texts)} texts have at most skip_first + 1 = "
            f"{skip_first + 1} tokens and are left out of the fit ({shown})",
            UserWarning,
            stacklevel=4,
        )
    return prompts, valid, skipped


def prompt_jacobians(
    hf_model: torch.nn.Module,
    blocks: Sequence[torch.nn.Module],
    ids: torch.Tensor,
    *,
    source_layers: Sequence[int],
    target_layer: int,
    dim_batch: int,
    skip_first: int,
    forward_kwargs: dict[str, Any] | None = None,
) -> dict[int, torch.Tensor]:
    """One text's ``J_l`` for every source layer, by batched one-hot cotangents.

    The model's parameters must be frozen (``requires_grad=False``): the first source block's
    output then has no history, and requiring its gradient in place roots the graph there, so
    the forward pass keeps only the blocks from the first source to the target.

    Args:
        hf_model: The Hugging Face model.
        blocks: Its decoder blocks.
        ids: ``[1, seq]`` token ids on the model's device; ``seq > skip_first + 1``.
        source_layers: Ascending source layers, all below ``target_layer``.
        target_layer: The block whose output is differentiated.
        dim_batch: Output dimensions per backward pass.
        skip_first: Leading positions that are not valid.
        forward_kwargs: Extra arguments of the forward call (``use_cache=False``).

    Returns:
        ``{layer: [d_model, d_model]}`` float32 on the device of that layer's gradient:
        row ``i`` is ``mean_{t∈V} Σ_{t'∈V} ∂h_target,t',i / ∂h_layer,t``, with
        ``V = [skip_first, seq - 1)``; causality makes the terms with ``t' < t`` zero.
    """
    seq = int(ids.shape[1])
    root = min(source_layers)
    captured: dict[int, torch.Tensor] = {}

    def capture(layer: int) -> Any:
        def hook(_module: Any, _args: Any, output: Any) -> None:
            hidden = output[0] if isinstance(output, tuple) else output
            if layer == root:
                hidden.requires_grad_(True)
            captured[layer] = hidden
            if layer == target_layer:
                raise _Stop

        return hook

    d_model: int | None = None
    handles = [blocks[layer].register_forward_hook(capture(layer)) for layer in source_layers]
    handles.append(blocks[target_layer].register_forward_hook(capture(target_layer)))
    try:
        with torch.inference_mode(False), torch.enable_grad():
            batch = ids.expand(dim_batch, -1) if dim_batch > 1 else ids
            with suppress(_Stop):
                hf_model(
                    input_ids=batch, attention_mask=torch.ones_like(batch), **(forward_kwargs or {})
                )
            target = captured[target_layer]
            sources = [captured[layer] for layer in source_layers]
            d_model = int(target.shape[-1])
            rows = min(dim_batch, d_model)
            positions = torch.arange(skip_first, seq - 1, device=target.device)
            lanes = torch.arange(rows, device=target.device)
            cotangent = torch.zeros_like(target)
            out: dict[int, torch.Tensor] = {}
            n_passes = -(-d_model // rows)
            for index in range(n_passes):
                start = index * rows
                n = min(rows, d_model - start)
                cotangent.zero_()
                # Lane b carries output dimension start + b at every valid target position.
                cotangent[lanes[:n, None], positions[None, :], start + lanes[:n, None]] = 1.0
                grads = torch.autograd.grad(
                    target, sources, cotangent, retain_graph=index < n_passes - 1
                )
                for layer, grad in zip(source_layers, grads, strict=True):
                    where = positions.to(grad.device)
                    block = grad[:n].index_select(1, where).float().mean(dim=1)
                    if layer not in out:
                        out[layer] = torch.zeros(
                            d_model, d_model, dtype=torch.float32, device=grad.device
                        )
                    out[layer][start : start + n] = block
                del grads
    finally:
        for handle in handles:
            handle.remove()
        captured.clear()
    return out


# ---------------------------------------------------------------------------------------------
# Starting, resuming and finishing


def _start(checkpoint: Path | None, resume: bool, run: dict[str, Any], d_model: int) -> FitState:
    """A fresh state, or the checkpoint's when resuming the same run."""
    fresh = FitState(
        sums={
            layer: torch.zeros(d_model, d_model, dtype=torch.float32)
            for layer in run["source_layers"]
        },
        run=run,
    )
    if checkpoint is None or not resume or not checkpoint.exists():
        return fresh
    where = f"the Jacobian lens checkpoint {str(checkpoint)!r}"
    payload = read_torch(checkpoint, "the Jacobian lens checkpoint")
    if not isinstance(payload, dict) or "jacobian_sum" not in payload:
        raise ValueError(
            f"{where} is not a fit checkpoint (no 'jacobian_sum'): pass resume=False to start "
            "over and overwrite it, or another checkpoint_path"
        )
    saved = payload.get(RUN_KEY)
    if not isinstance(saved, dict):
        raise ValueError(
            f"{where} was not written by this package's fit, so it cannot be checked to come "
            "from the same model, texts and settings: read its running mean with "
            "JacobianLens.load, or pass resume=False to start over and overwrite it"
        )
    changed = {
        key: (saved.get(key), value)
        for key, value in run.items()
        if saved.get(key) != value and key != "seconds"
    }
    if changed:
        raise ValueError(
            f"{where} is from another fit: "
            + ", ".join(
                f"{key} was {_brief(old)}, now {_brief(new)}" for key, (old, new) in changed.items()
            )
            + "; give the same inputs to resume, resume=False to start over, or another "
            "checkpoint_path"
        )
    sums = check_matrices(payload["jacobian_sum"], f"{where}: 'jacobian_sum'", d_model, file=True)
    counts: dict[str, int] = {}
    for key in ("n_done", "next_idx"):
        value = payload.get(key)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{where}: {key!r} must be an int of at least 0, got {value!r}")
        counts[key] = int(value)
    n_done, next_idx = counts["n_done"], counts["next_idx"]
    if sorted(sums) != list(run["source_layers"]) or n_done > next_idx or next_idx > run["n_texts"]:
        raise ValueError(
            f"{where} is inconsistent (layers {sorted(sums)}, n_done {n_done}, next_idx "
            f"{next_idx} of {run['n_texts']} texts): it is damaged; pass resume=False to start "
            "over"
        )
    return FitState(
        sums={layer: matrix.float().clone() for layer, matrix in sums.items()},
        n_done=n_done,
        next_idx=next_idx,
        run=run,
        metadata=dict(payload.get("metadata") or {}),
        seconds=float(saved.get("seconds", 0.0) or 0.0),
    )


def _finished(state: FitState, run: dict[str, Any], corpus: str | None, model: Any) -> FitState:
    """A complete checkpoint: nothing left to fit."""
    if state.n_done == 0:
        raise ValueError("the checkpoint holds no fitted text: every text was too short")
    if not state.metadata:
        state.metadata = _metadata(run, corpus, 0, model, state)
    return state


def _metadata(
    run: dict[str, Any], corpus: str | None, n_skipped: int, model: Any, state: FitState
) -> dict[str, Any]:
    """The lens's metadata: TransformerLens's provenance keys where they mean the same thing,
    then this package's run."""
    metadata: dict[str, Any] = {
        "model_name": run["model_name"],
        "model_revision": run["model_revision"],
        "estimator": run["estimator"],
        "fit_dtype": run["dtype"],
        "target_layer": run["target_layer"],
        "dim_batch": run["dim_batch"],
        "max_seq_len": run["max_seq_len"],
        "skip_first_positions": run["skip_first"],
        "fitted_with": f"murano_widgets {__version__} JacobianLens.fit",
        "torch": str(torch.__version__),
        "n_texts": run["n_texts"],
        "texts_sha256": run["texts_sha256"],
        "n_skipped": n_skipped,
        "device": str(getattr(model, "device", "cpu")),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(state.seconds, 1),
    }
    if corpus is not None:
        metadata["corpus"] = corpus
    return metadata


# ---------------------------------------------------------------------------------------------
# Checks and helpers


def _plain_modules(model: Any) -> tuple[torch.nn.Module, list[torch.nn.Module]]:
    """The Hugging Face model and its decoder blocks, or a TypeError saying what is missing."""
    try:
        hf_model, blocks = model._hf_model, list(model._blocks)
    except (AttributeError, NotImplementedError):
        raise TypeError(
            f"fitting a Jacobian lens differentiates through the model's plain torch modules, "
            f"which {type(model).__name__} does not give (_hf_model and _blocks): use a "
            "MuranoModel"
        ) from None
    if len(blocks) != int(model.n_layers):
        raise TypeError(
            f"the model has n_layers={model.n_layers} but {len(blocks)} decoder blocks: its "
            "backend does not describe it consistently"
        )
    return hf_model, blocks


def _check_settings(
    n_layers: int,
    source_layers: Sequence[int] | None,
    target_layer: int | None,
    dim_batch: int,
    max_seq_len: int,
    skip_first: int,
) -> dict[str, Any]:
    """The fit's settings, checked and resolved (negative layers from the end)."""
    if n_layers < 2:
        raise ValueError(f"the model has {n_layers} layer: a Jacobian lens needs at least 2")
    if target_layer is None:
        target = n_layers - 1
    else:
        target = check_int("target_layer", target_layer, -n_layers, n_layers - 1, "the last block")
        target %= n_layers
    if target == 0:
        raise ValueError("target_layer must be above layer 0: every source layer lies below it")
    if source_layers is None:
        sources = list(range(target))
    else:
        if isinstance(source_layers, (str, bytes)) or not isinstance(source_layers, Sequence):
            raise TypeError(
                "source_layers must be None (every layer below the target) or a list of ints, "
                f"got {type(source_layers).__name__} {source_layers!r}"
            )
        if not source_layers:
            raise ValueError("source_layers must not be empty (None fits every layer)")
        sources = []
        for index, layer in enumerate(source_layers):
            value = check_int(f"source_layers[{index}]", layer, -n_layers, n_layers - 1, None)
            sources.append(value % n_layers)
        if len(set(sources)) != len(sources):
            raise ValueError(f"source_layers holds a layer twice: {list(source_layers)}")
        sources.sort()
        above = [layer for layer in sources if layer >= target]
        if above:
            raise ValueError(
                f"source_layers {above} are not below target_layer={target}: a source layer's "
                "matrix maps it to a later block"
            )
    return {
        "source_layers": sources,
        "target_layer": target,
        "dim_batch": check_int("dim_batch", dim_batch, 1, None, None),
        "max_seq_len": check_int("max_seq_len", max_seq_len, 2, None, None),
        "skip_first": check_int("skip_first", skip_first, 0, None, None),
    }


def _tokenize(model: Any, texts: Sequence[str], max_seq_len: int) -> list[list[int]]:
    """Each text's ids as the lens step tokenizes a prompt (the tokenizer's special tokens),
    cut to ``max_seq_len`` (cut after tokenizing, as TransformerLens does)."""
    out: list[list[int]] = []
    for start in range(0, len(texts), TOKENIZE_BATCH):
        chunk = list(texts[start : start + TOKENIZE_BATCH])
        encoded = model.tokenizer(chunk, return_token_type_ids=False)["input_ids"]
        out.extend(list(ids[:max_seq_len]) for ids in encoded)
    return out


def _width(model: Any) -> int:
    width = model_width(model)
    if width is None:
        raise ValueError(
            "cannot read the model's hidden size from its config (hidden_size, n_embd or "
            "d_model), which the lens's matrices need"
        )
    return width


def _forward_kwargs(model: Any) -> dict[str, Any]:
    accepted: frozenset[str] = getattr(model, "forward_kwargs", frozenset())
    # A key/value cache is for generating; here it would only hold keys and values.
    return {"use_cache": False} if "use_cache" in accepted else {}


def _revision(hf_model: torch.nn.Module) -> str | None:
    """The hub commit the weights came from (``None`` for a local folder)."""
    revision = getattr(getattr(hf_model, "config", None), "_commit_hash", None)
    return revision if isinstance(revision, str) and revision else None


@contextmanager
def _frozen(module: torch.nn.Module) -> Iterator[None]:
    """Parameters frozen for the block, their flags restored after (also on interrupt)."""
    saved = [(parameter, parameter.requires_grad) for parameter in module.parameters()]
    try:
        for parameter, _ in saved:
            parameter.requires_grad_(False)
        yield
    finally:
        for parameter, flag in saved:
            parameter.requires_grad_(flag)


def _saver(payload: dict[str, Any]) -> Any:
    """What :func:`write_file` runs to write the checkpoint at the path it is given."""
    return lambda temporary: torch.save(payload, temporary)


def _brief(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_matrices(
    given: Any, where: str, d_model: int | None, *, file: bool = False
) -> dict[int, torch.Tensor]:
    """``{layer: [d, d]}`` checked: int layers from 0, dense finite float square tensors of one
    width (``d_model`` when given). Nothing is allocated before every shape is known."""
    if not isinstance(given, Mapping) or not given:
        what = "an empty dict" if isinstance(given, Mapping) else type(given).__name__
        raise ValueError(
            f"{where} must be a non-empty dict {{layer: [d_model, d_model]}}, got {what}"
        )
    out: dict[int, torch.Tensor] = {}
    width = d_model
    for layer, matrix in given.items():
        if isinstance(layer, bool) or not isinstance(layer, numbers.Integral) or layer < 0:
            raise ValueError(f"{where} has the key {layer!r}: layers must be ints from 0")
        label = f"{where}[{int(layer)}]"
        if not isinstance(matrix, torch.Tensor):
            raise ValueError(f"{label} is a {type(matrix).__name__}, not a tensor")
        if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"{label} is {list(matrix.shape)}, not a square [d_model, d_model]")
        if width is None:
            width = int(matrix.shape[0])
        if matrix.shape[0] != width:
            other = "d_model" if d_model is not None else "the other matrices"
            raise ValueError(f"{label} is {list(matrix.shape)}, but {other} are [{width}, {width}]")
        if matrix.layout != torch.strided or not matrix.is_floating_point():
            raise ValueError(
                f"{label} must be a dense floating-point tensor, got {matrix.dtype} ({matrix.layout})"
            )
        if not bool(torch.isfinite(matrix).all()):
            damage = ": the file is damaged" if file else ""
            raise ValueError(f"{label} holds NaN or infinite values{damage}")
        if int(layer) in out:
            raise ValueError(f"{where} holds layer {int(layer)} twice")
        out[int(layer)] = matrix
    return dict(sorted(out.items()))
