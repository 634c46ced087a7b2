"""Files and provenance of a :class:`~murano_widgets.dataset.LensDataset`: where its numbers came
from, and the npz + JSON pair it is saved as (written atomically, read back with checks)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["model_provenance", "paths", "read_saved", "sha256", "write_temp"]


def model_provenance(model: Any, step: Any, lens: Any) -> dict[str, Any]:
    """Where a data set's numbers came from: model, weights, precision, lens, packages, date.

    The weights are named by the hub revision when the model came from the hub; otherwise by
    the sha256 of its state dict (names, dtypes, shapes and bytes of every tensor), so that a
    local or edited model is identified by what it computes with.
    """
    from importlib.metadata import PackageNotFoundError, version

    module = _torch_module(model)
    config = getattr(module, "config", None)
    revision = getattr(config, "_commit_hash", None)
    versions = {}
    for package in ("torch", "transformers", "nnsight", "nnterp", "murano-widgets", "numpy"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {
        "model_name": getattr(model, "name", None),
        "revision": revision,
        "weights_sha256": None if revision or module is None else _weights_hash(module),
        "dtype": str(getattr(model, "dtype", None)).replace("torch.", ""),
        "device": str(getattr(model, "device", None)),
        "backend": getattr(model, "backend", None),
        "n_model_layers": int(model.n_layers),
        "layers": list(step.layers),
        "lens_kind": "logit" if lens is None else str(getattr(lens, "kind", "custom")),
        "lens_provenance": None if lens is None else getattr(lens, "provenance", None),
        "packages": versions,
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _torch_module(model: Any) -> torch.nn.Module | None:
    """The Hugging Face module behind a backend (nnterp's or nnsight's), if there is one."""
    for path in (("nnterp", "_model"), ("lm", "_module"), ("hf_model",), ()):
        value = model
        for name in path:
            value = getattr(value, name, None)
        if isinstance(value, torch.nn.Module):
            return value
    return None


def _weights_hash(module: torch.nn.Module) -> str | None:
    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        if tensor.is_meta:
            return None  # weights not here (a remote model): nothing to hash
        data = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{data.dtype}:{tuple(data.shape)};".encode())
        digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def paths(path: str | os.PathLike) -> tuple[Path, Path]:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name (str or Path), got {type(path).__name__}")
    base = Path(path)
    if base.suffix in (".npz", ".json"):
        base = base.with_suffix("")
    return base.with_name(base.name + ".npz"), base.with_name(base.name + ".json")


def write_temp(target: Path, write: Any) -> Path:
    """Writes through ``write(file)`` into a temporary file next to ``target``; returns its path."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_saved(
    npz_path: Path,
    json_path: Path,
    fmt: str,
    version: int,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads a saved data set's sidecar and arrays, checking that they are whole and agree.

    Raises:
        FileNotFoundError: If either file is missing.
        ValueError: If the files are not this format, do not belong together, or disagree.
    """
    for path in (npz_path, json_path):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} does not exist: LensDataset.load needs both {npz_path.name} and "
                f"{json_path.name} (written by LensDataset.save)"
            )
    try:
        sidecar = json.loads(json_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{json_path} is not a LensDataset sidecar (not JSON: {error})") from None
    if not isinstance(sidecar, dict) or sidecar.get("format") != fmt:
        raise ValueError(f"{json_path} is not a LensDataset sidecar (no format {fmt!r})")
    if sidecar.get("format_version") != version:
        raise ValueError(
            f"{json_path} has format version {sidecar.get('format_version')!r}; this "
            f"murano_widgets reads version {version}"
        )
    if sha256(npz_path) != sidecar.get("npz_sha256"):
        raise ValueError(
            f"{npz_path} is not the file {json_path.name} was saved with (its sha256 differs): "
            "the pair was changed or mixed up; save the data set again"
        )
    with np.load(npz_path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    for key in ("prompts", "layers", "answer_sets", "answers", "named_sets", "token_strings"):
        if key not in sidecar:
            raise ValueError(f"{json_path} lacks {key!r}")
    shape = (len(sidecar["prompts"]), len(sidecar["layers"]))
    expected = {"entropy": "f", "kl_to_final": "f", "top1": "i"}
    for i, name in enumerate(sidecar["answer_sets"]):
        expected |= {f"prob_{i}": "f", f"rank_{i}": "i"}
        answers = sidecar["answers"].get(name)
        if not isinstance(answers, list) or len(answers) != shape[0]:
            raise ValueError(f"{json_path}: answer set {name!r} does not have {shape[0]} entries")
    for name, kind in expected.items():
        array = arrays.get(name)
        if array is None:
            raise ValueError(f"{npz_path} lacks the array {name!r}")
        if array.shape != shape or array.dtype.kind != kind:
            raise ValueError(
                f"{npz_path}: {name} has shape {array.shape} and dtype {array.dtype}, expected "
                f"{shape} of kind {kind!r} (prompts x layers)"
            )
    return sidecar, arrays
