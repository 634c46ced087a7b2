"""Files and provenance of a :class:`~murano_widgets.dataset.lens_dataset.LensDataset`: where its numbers came
from, and the npz + JSON pair it is saved as (written together, all or nothing, and read back
with checks that name the file and what is wrong)."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from murano_widgets._files import read_json, read_npz, write_files
from murano_widgets.dataset.table import LEGACY_FIELDS, check_fields, disk_kinds
from murano_widgets.lenses import as_lens, named_lenses

__all__ = [
    "lens_fingerprint",
    "model_provenance",
    "paths",
    "read_saved",
    "sha256",
    "tensors_fingerprint",
    "write_saved",
]


def model_provenance(model: Any, step: Any, lens: Any) -> dict[str, Any]:
    """Where a data set's numbers came from: model, weights, precision, lens, packages, date.

    The weights are named by the hub revision when the model came from the hub, and always (a
    hub model edited in memory computes with other weights) by ``weights_fingerprint``
    (:func:`tensors_fingerprint` of its state dict), so that a local or edited model is
    identified by what it computes with. A lens with tensors of its own (a tuned or Jacobian
    lens) is identified by the fingerprint of those too (``lens_fingerprint``).
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
        "weights_fingerprint": None if module is None else _weights_fingerprint(module),
        "dtype": str(getattr(model, "dtype", None)).replace("torch.", ""),
        "device": str(getattr(model, "device", None)),
        "backend": getattr(model, "backend", None),
        # Why that backend (backend="auto" may fall back), and what the lens does after lm_head.
        "backend_choice": getattr(model, "backend_choice", None),
        "logit_transform": _describe_transform(model),
        "n_model_layers": int(model.n_layers),
        "layers": list(step.layers),
        **_lens_fields(lens),
        "packages": versions,
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _lens_fields(lens: Any) -> dict[str, Any]:
    """The lens's kind, title and provenance; with lenses side by side, ``lenses``: each one's
    name, kind, title and provenance, in order."""
    named = named_lenses(lens)
    if named is None:
        one = as_lens(lens)
        return {
            "lens_kind": one.kind,
            "lens_title": one.title,
            "lens_provenance": one.provenance,
            "lens_fingerprint": lens_fingerprint(one),
        }
    return {
        "lenses": [
            {
                "name": name,
                "kind": one.kind,
                "title": one.title,
                "provenance": one.provenance,
                "fingerprint": lens_fingerprint(one),
            }
            for name, one in named.items()
        ]
    }


def lens_fingerprint(lens: Any) -> str | None:
    """The :func:`tensors_fingerprint` of the tensors a lens computes with (its public
    attributes' tensors, in dicts and lists too: a tuned lens's ``weight`` and ``bias``, a
    Jacobian lens's ``jacobians``; a module's state dict), and its class; ``None`` for a lens
    that holds no tensor (the logit lens).

    Two lenses of one kind and provenance but other contents (retrained, edited) differ here,
    so a data set's folder does not mix their numbers."""
    if isinstance(lens, torch.nn.Module):
        named = list(lens.state_dict().items())
    else:
        named = []

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, torch.Tensor):
                named.append((prefix, value))
            elif isinstance(value, dict):
                for key in sorted(value, key=str):
                    walk(f"{prefix}.{key}", value[key])
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    walk(f"{prefix}.{i}", item)

        for key, value in sorted(vars(lens).items()) if hasattr(lens, "__dict__") else ():
            if not key.startswith("_"):  # caches (``_operands``) are not contents
                walk(key, value)
    if not named:
        return None
    kind = f"{type(lens).__module__}.{type(lens).__qualname__}"
    return tensors_fingerprint(named, kind)


def _describe_transform(model: Any) -> str | None:
    transform = getattr(model, "logit_transform", None)
    return None if transform is None else transform.describe()


def _torch_module(model: Any) -> torch.nn.Module | None:
    """The Hugging Face module behind a backend (nnterp's or nnsight's), if there is one."""
    for path in (("nnterp", "_model"), ("lm", "_module"), ("hf_model",), ()):
        value = model
        for name in path:
            value = getattr(value, name, None)
        if isinstance(value, torch.nn.Module):
            return value
    return None


#: Elements read from each tensor by :func:`tensors_fingerprint`, evenly spaced over it. With
#: 65,536 a tensor of up to 65,536 rows has at least one element of every row read, so an edit
#: of one row (an embedding, a ROME-style rank-one update of a matrix) changes the fingerprint.
FINGERPRINT_SAMPLE = 1 << 16


def tensors_fingerprint(named: Any, kind: str = "") -> str | None:
    """A cheap, stable fingerprint of named tensors: the sha256 of every tensor's name, dtype
    and shape, and the bytes of ``FINGERPRINT_SAMPLE`` elements of it, evenly spaced (all of a
    smaller tensor's); ``None`` if a tensor is on the meta device (a remote model's weights are
    not here).

    Why a sample, not every byte: the full sha256 of a model's state dict reads (and copies to
    the CPU) every weight, on every ``lens_dataset`` call. Measured here (``bench/lens_dataset.py
    --fingerprint``, 2 cores at load average 5.5): the GPT-2-shaped model's 124 M float32
    parameters (0.5 GB) took 1.5 s to hash whole and 0.11 s sampled; at that rate a 7B model's
    14 GB would take about 40 s whole, and its 291 tensors about 0.3 s sampled. The sample
    still tells apart other weights of one architecture, a fine-tune, a merged adapter or a
    one-row edit (see ``FINGERPRINT_SAMPLE``); an edit of a few single elements can escape it,
    which is the price of not reading 14 GB.

    Args:
        named: ``(name, tensor)`` pairs, in a stable order (a state dict's).
        kind: Mixed into the digest (what the tensors are, e.g. a lens's class).
    """
    digest = hashlib.sha256(kind.encode())
    for name, tensor in named:
        if tensor.is_meta:
            return None
        data = tensor.detach()
        digest.update(f"{name}:{data.dtype}:{tuple(data.shape)};".encode())
        # As integers of the element's size: the bytes, whatever the dtype (bfloat16 has no
        # numpy type).
        flat = data.reshape(-1).view(_SAME_SIZE_INT[data.element_size()])
        n = flat.numel()
        picks = None
        if n > FINGERPRINT_SAMPLE:
            # Integer places (a float linspace rounds differently from one device to another).
            picks = np.arange(FINGERPRINT_SAMPLE, dtype=np.int64) * (n - 1)
            picks //= FINGERPRINT_SAMPLE - 1
        if flat.device.type == "cpu":
            # numpy's gather: torch's indexing cost 10-27 ms a tensor here on 2 busy cores
            # (its thread pool), numpy's about 1 ms for 65,536 elements.
            values = flat.numpy() if picks is None else flat.numpy()[picks]
        else:
            # Gathered where the tensor lives: only the sample travels to the CPU.
            index = None if picks is None else torch.from_numpy(picks).to(flat.device)
            values = (flat if index is None else flat[index]).cpu().numpy()
        digest.update(np.ascontiguousarray(values).tobytes())
    return digest.hexdigest()


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _weights_fingerprint(module: torch.nn.Module) -> str | None:
    """The :func:`tensors_fingerprint` of a model's state dict."""
    return tensors_fingerprint(module.state_dict().items(), "weights")


def weights_sha256(module: torch.nn.Module) -> str | None:
    """The sha256 of every byte of a model's state dict (names, dtypes, shapes and bytes): what
    :func:`tensors_fingerprint` is measured against (bench/lens_dataset.py --fingerprint)."""
    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        if tensor.is_meta:
            return None
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


def write_saved(
    npz_path: Path,
    json_path: Path,
    header: dict[str, Any],
    arrays: dict[str, np.ndarray],
    fields: dict[str, Any],
) -> None:
    """Writes a data set's npz and JSON sidecar as one all-or-nothing save.

    The npz is built in memory first, so the sidecar can record its sha256 (the check that
    the two files belong together) before either file is touched; then both replace the old
    pair together (:func:`murano_widgets._files.write_files`).

    Args:
        npz_path, json_path: The pair's paths (from :func:`paths`).
        header: The sidecar's first fields (format and version); ``npz_sha256`` follows them.
        arrays: The arrays of the npz.
        fields: The rest of the sidecar.
    """
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    data = buffer.getvalue()
    sidecar = {**header, "npz_sha256": hashlib.sha256(data).hexdigest(), **fields}
    text = json.dumps(sidecar, ensure_ascii=False, indent=1)
    npz_path.parent.mkdir(parents=True, exist_ok=True)
    write_files({npz_path: data, json_path: text.encode("utf-8")})


def sha256(path: Path) -> str:
    """The sha256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_saved(
    npz_path: Path,
    json_path: Path,
    fmt: str,
    versions: tuple[int, ...],
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reads a saved data set's sidecar and arrays, checking that they are whole and agree.

    Every field the data set is rebuilt from is checked for its type, and every array for its
    shape and kind, so a damaged or edited pair fails here, naming the file, rather than later
    in a plot.

    Raises:
        FileNotFoundError: If either file is missing.
        ValueError: If the files are not this format, are damaged, do not belong together, or
            disagree.
    """
    for path in (npz_path, json_path):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} does not exist: LensDataset.load needs both {npz_path.name} and "
                f"{json_path.name} (written by LensDataset.save)"
            )
    sidecar = read_json(json_path, "the LensDataset sidecar")
    if sidecar.get("format") != fmt:
        raise ValueError(f"{json_path} is not a LensDataset sidecar (no format {fmt!r})")
    if sidecar.get("format_version") not in versions:
        raise ValueError(
            f"{json_path} has format version {sidecar.get('format_version')!r}; this "
            f"murano_widgets reads versions {', '.join(map(str, versions))}"
        )
    _check_sidecar(sidecar, json_path)
    expected_shapes = _expected_shapes(sidecar, json_path)
    # What the arrays may hold, from the sidecar's shapes (8 bytes an entry at most, and the
    # headers): a larger archive is refused before anything in it is decompressed.
    most = sum(8 * math.prod(wanted) + 256 for wanted, _, _ in expected_shapes.values())
    # One read: the bytes hashed are the bytes parsed, even if the file is replaced meanwhile.
    data = npz_path.read_bytes()
    arrays = read_npz(npz_path, "the LensDataset arrays", data=data, max_bytes=most + 4096)
    if hashlib.sha256(data).hexdigest() != sidecar["npz_sha256"]:
        raise ValueError(
            f"{npz_path} is not the file {json_path.name} was saved with (its sha256 differs): "
            "the pair was changed or mixed up; save the data set again"
        )
    for name, (wanted, kind, what) in expected_shapes.items():
        array = arrays.get(name)
        if array is None:
            raise ValueError(f"{npz_path} lacks the array {name!r}")
        if array.shape != wanted or array.dtype.kind != kind:
            raise ValueError(
                f"{npz_path}: {name} has shape {array.shape} and dtype {array.dtype}, expected "
                f"{wanted} of kind {kind!r} ({what})"
            )
    return sidecar, arrays


def _expected_shapes(
    sidecar: dict[str, Any], json_path: Path
) -> dict[str, tuple[tuple[int, ...], str, str]]:
    """Every array a data set's npz must hold, by name: its shape, kind and what it is."""
    shape = (len(sidecar["prompts"]), len(sidecar["layers"]))
    held = check_fields(sidecar.get("fields", LEGACY_FIELDS), str(json_path))
    lenses = sidecar.get("lenses")
    prefixes = [""] if lenses is None else [f"l{k}_" for k in range(len(lenses))]
    expected = {
        name: kind
        for prefix in prefixes
        for name, kind in disk_kinds(
            prefix, held, len(sidecar["answer_sets"]), len(sidecar.get("groups") or ())
        ).items()
    }
    expected_shapes: dict[str, tuple[tuple[int, ...], str, str]] = {
        name: (shape, kind, "prompts x layers") for name, kind in expected.items()
    }
    # The direct logit attribution (decompose=True): absent from data sets made without it.
    kept = sidecar.get("contributions")
    if kept is not None:
        n_components = len(kept["component_labels"])
        expected_shapes |= {
            "contributions": ((shape[0], n_components), "f", "prompts x components"),
            "contribution_bias": ((shape[0],), "f", "one per prompt"),
        }
    return expected_shapes


def _check_sidecar(sidecar: dict[str, Any], json_path: Path) -> None:
    """Checks the type of every sidecar field that :meth:`LensDataset.load` uses."""

    def fail(key: str, wanted: str) -> None:
        raise ValueError(
            f"{json_path}: {key!r} must be {wanted}, got {_describe(sidecar.get(key))}; the "
            "sidecar is damaged or was edited"
        )

    for key in (
        "npz_sha256",
        "prompts",
        "layers",
        "answer_sets",
        "answers",
        "named_sets",
        "token_strings",
        "provenance",
    ):
        if key not in sidecar:
            raise ValueError(f"{json_path} lacks {key!r}")
    if not isinstance(sidecar["npz_sha256"], str):
        fail("npz_sha256", "a hex string")
    if not _list_of(sidecar["prompts"], str):
        fail("prompts", "a list of strings")
    layers = sidecar["layers"]
    if not _list_of(layers, int) or not layers or any(isinstance(x, bool) for x in layers):
        fail("layers", "a non-empty list of layer indices")
    names = sidecar["answer_sets"]
    if not _list_of(names, str) or len(set(names)) != len(names):
        fail("answer_sets", "a list of distinct names")
    answers = sidecar["answers"]
    if not isinstance(answers, dict) or set(answers) != set(names):
        fail("answers", f"an object with one entry per answer set {names}")
    n_prompts = len(sidecar["prompts"])
    for name in names:
        entries = answers[name]
        if not isinstance(entries, list) or len(entries) != n_prompts:
            raise ValueError(f"{json_path}: answer set {name!r} does not have {n_prompts} entries")
        for entry in entries:
            if entry is not None and (not _list_of(entry, str) or not entry):
                raise ValueError(
                    f"{json_path}: answer set {name!r} has {_describe(entry)}, expected a list "
                    "of accepted strings or null per prompt"
                )
    if not isinstance(sidecar["named_sets"], bool):
        fail("named_sets", "true or false")
    strings = sidecar["token_strings"]
    if not isinstance(strings, dict) or not all(
        key.lstrip("-").isdecimal() and isinstance(value, str) for key, value in strings.items()
    ):
        fail("token_strings", "an object from token ids to strings")
    if not isinstance(sidecar["provenance"], dict):
        fail("provenance", "an object")
    lenses = sidecar.get("lenses")
    if sidecar.get("format_version") == 2 and (
        not isinstance(lenses, list)
        or not lenses
        or not all(
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and entry["name"]
            and isinstance(entry.get("provenance"), dict)
            for entry in lenses
        )
        or len({entry["name"] for entry in lenses}) != len(lenses)
    ):
        fail("lenses", "a list of distinct lens names, each with its provenance")
    kept = sidecar.get("contributions")
    if kept is not None:
        labels = kept.get("component_labels") if isinstance(kept, dict) else None
        foils = kept.get("foils") if isinstance(kept, dict) else None
        if (
            not isinstance(kept, dict)
            or not _list_of(labels, str)
            or not labels
            or len(set(labels)) != len(labels)
            or not (
                foils is None
                or (
                    isinstance(foils, list)
                    and len(foils) == n_prompts
                    and all(foil is None or (isinstance(foil, str) and foil) for foil in foils)
                )
            )
        ):
            fail(
                "contributions",
                "an object with component_labels (distinct strings) and foils (null, or a "
                "string or null per prompt)",
            )


def _list_of(value: Any, kind: type) -> bool:
    return isinstance(value, list) and all(isinstance(item, kind) for item in value)


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
