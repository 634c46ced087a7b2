"""Published Jacobian lenses: the registry of ``neuronpedia/jacobian-lens`` and where a name,
a hub file or a local copy resolves to.

The registry (:file:`jacobian_registry.json`, package data) holds facts copied from
TransformerLens 4.3.0's own: each published lens's short name, the Hugging Face model ids that
name the same model, its file in the repo, the corpus it was fitted on, and the repo commit
every entry is fetched at. :meth:`murano_widgets.JacobianLens.from_pretrained` is the entry.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from murano_widgets._checks import check_path, check_str
from murano_widgets._files import read_json
from murano_widgets.backends import loading

__all__ = ["REGISTRY_PATH", "lookup", "registry", "resolve"]

REGISTRY_PATH = Path(__file__).resolve().with_name("jacobian_registry.json")

_REGISTRY: dict[str, Any] | None = None


def registry() -> dict[str, Any]:
    """The registry: ``{"revision": ..., name: {"aliases", "repo_id", "filename", "corpus"}}``
    (keys starting with ``_`` are notes)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = read_json(REGISTRY_PATH, "the Jacobian lens registry")
    return _REGISTRY


def entries() -> dict[str, dict[str, Any]]:
    """The published lenses by short name."""
    return {name: entry for name, entry in registry().items() if isinstance(entry, dict)}


def lookup(name: str) -> tuple[str, dict[str, Any]] | None:
    """``(short name, entry)`` for a short name or a Hugging Face model id, else ``None``.

    Exact matches first (TransformerLens's rule), then the same ignoring case.
    """
    published = entries()
    if name in published:
        return name, published[name]
    for key, entry in published.items():
        if name in entry.get("aliases", []):
            return key, entry
    folded = name.casefold()
    for key, entry in published.items():
        if folded == key.casefold() or folded in (a.casefold() for a in entry.get("aliases", [])):
            return key, entry
    return None


def resolve(
    name_or_hub_id: Any, filename: Any, revision: Any, model: Any
) -> tuple[Path, dict[str, Any]]:
    """The local file a :meth:`~murano_widgets.JacobianLens.from_pretrained` call means, and
    where it came from (``source``, and for hub files ``repo_id``, ``filename``, ``revision``,
    ``registry_name``, ``corpus``).

    Raises:
        TypeError, ValueError, FileNotFoundError: As ``from_pretrained`` documents.
    """
    check_path("name_or_hub_id", name_or_hub_id)
    filename = check_str("filename", filename, optional=True)
    revision = check_str("revision", revision, optional=True)
    text = os.fsdecode(os.fspath(name_or_hub_id))
    path = Path(text).expanduser()
    if path.is_file():
        if filename is not None:
            raise ValueError(
                f"name_or_hub_id {text!r} is a file: filename={filename!r} is for a folder or a "
                "hub repo; leave it out"
            )
        return path, {"source": str(path)}
    if path.is_dir():
        file = path / filename if filename is not None else _pick_in_folder(path, model)
        if not file.is_file():
            found = _lens_files(path)
            raise FileNotFoundError(
                f"the folder {str(path)!r} has no {filename!r}"
                + (
                    f"; its lens files: {_listing(found, path)}"
                    if found
                    else "; it has no .pt file"
                )
            )
        return file, {"source": str(file)}
    if isinstance(name_or_hub_id, os.PathLike) or text.startswith((".", "/", "~", "\\")):
        raise FileNotFoundError(f"name_or_hub_id {text!r} is not an existing file or folder")

    registered = lookup(text)
    if registered is not None:
        key, entry = registered
        repo_id = entry["repo_id"]
        file_in_repo = filename or entry["filename"]
        pinned = revision or registry()["revision"]
        origin = {
            "registry_name": key,
            "repo_id": repo_id,
            "filename": file_in_repo,
            "revision": pinned,
            "corpus": entry.get("corpus"),
        }
    elif filename is not None and "/" in text:
        repo_id, file_in_repo, pinned = text, filename, revision
        origin = {"repo_id": repo_id, "filename": filename, "revision": revision}
    else:
        names = sorted(entries())
        close = difflib.get_close_matches(text, names + _aliases(), n=3, cutoff=0.5)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise ValueError(
            f"name_or_hub_id {text!r} is not a published Jacobian lens{hint}: the registry has "
            f"{len(names)} ({', '.join(names[:6])}, …; murano_widgets.lenses.jacobian_hub."
            "entries() lists them). For a lens file in another hub repo give filename=; for a "
            "local file or folder give its path"
        )
    local = _fetch(repo_id, file_in_repo, pinned)
    where = f"hf://{repo_id}/{file_in_repo}" + (f"@{pinned}" if pinned else "")
    return local, {"source": where, **origin}


def _fetch(repo_id: str, filename: str, revision: str | None) -> Path:
    """The file from the Hugging Face cache, or downloaded; offline and not cached, an error
    naming what to fetch and how to pass the copy."""
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo_id, filename, revision=revision, local_files_only=True))
    except Exception:  # not cached (LocalEntryNotFoundError, or an offline-mode refusal)
        pass

    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}
    if offline or not loading.hub_reachable():
        why = "HF_HUB_OFFLINE is set" if offline else "the Hugging Face hub cannot be reached"
        at = f" --revision {revision}" if revision else ""
        raise FileNotFoundError(
            f"the Jacobian lens {filename!r} of the hub repo {repo_id!r}"
            + (f" at revision {revision}" if revision else "")
            + f" is not in the local Hugging Face cache and {why}. Fetch it where you are "
            f"online (`hf download {repo_id} {filename}{at} --local-dir DIR`, or "
            "huggingface_hub.hf_hub_download), bring DIR here, then "
            f"JacobianLens.from_pretrained('DIR', filename={filename!r}) or "
            f"JacobianLens.load('DIR/{filename}')"
        )
    return Path(hf_hub_download(repo_id, filename, revision=revision))


def _pick_in_folder(folder: Path, model: Any) -> Path:
    """The lens file of a folder laid out like the hub repo, when no filename is given: the
    registry's file for ``model`` if there, else the only ``.pt`` file."""
    if model is not None:
        for name in _model_names(model):
            found = lookup(name)
            if found is not None and (folder / found[1]["filename"]).is_file():
                return folder / found[1]["filename"]
    files = _lens_files(folder)
    if len(files) == 1:
        return files[0]
    if not files:
        raise FileNotFoundError(f"the folder {str(folder)!r} holds no .pt file")
    for_model = " (none is the registry's file for the model given)" if model is not None else ""
    raise ValueError(
        f"the folder {str(folder)!r} holds {len(files)} lens files{for_model}: "
        f"{_listing(files, folder)}; choose one with filename=, or pass model= to take the "
        "registry's file for it"
    )


def _model_names(model: Any) -> list[str]:
    """Names the registry may know a model by: its name, and a folder's last part."""
    names = []
    for value in (
        getattr(model, "name", None),
        getattr(getattr(model, "config", None), "_name_or_path", None),
    ):
        if isinstance(value, str) and value:
            names += [value, Path(value).name]
    return list(dict.fromkeys(names))


def _lens_files(folder: Path) -> list[Path]:
    """The ``.pt`` files under ``folder``, hidden folders (``.cache``, ``.git``) left out."""
    return sorted(
        path
        for path in folder.rglob("*.pt")
        if path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    )


def _listing(files: list[Path], folder: Path, limit: int = 6) -> str:
    shown = [str(path.relative_to(folder)) for path in files[:limit]]
    return ", ".join(shown) + (f", … ({len(files)} in all)" if len(files) > limit else "")


def _aliases() -> list[str]:
    return [alias for entry in entries().values() for alias in entry.get("aliases", [])]
