"""A data set as a folder of shards: written batch by batch as a run goes, resumed after an
interruption, refused when the inputs or settings changed, read back without the model.

``lens_dataset(..., path=folder)`` writes:

- ``run.json``: the run's **fingerprint** (everything that decides its numbers: the model and
  its weights, dtype and device type, the lens, layers, answer sets, options and batching), its
  provenance, and, once it is done, ``finished`` (the number of prompts and windows and the
  stream's hashes).
- one ``wWWWWWWW-bBBB.npz`` per batch: window ``W``'s batch ``B`` (see
  :mod:`murano_widgets.dataset.stream`): the batch's per-prompt numbers (layers first, as in
  memory), each prompt's index in the stream, and a ``meta`` entry (JSON as bytes) with the
  prompts, answers, foils, top-1 token strings, the running sha256 of the stream's prompts,
  answers and foils through the window's end, and the run that wrote it: the **run digest**
  (the sha256 of the run's fingerprint) and the fingerprint itself (to name what differs).

Every shard is checked against the run's record by one function, :func:`check_window`, whether
a resumed run or :meth:`LensDataset.load` reads it: the run digest (a shard of another model,
other weights, dtype, lens, layers, options or batching is refused, naming what differs), its
place (the window and batch its name says), the window's inputs (its shards must agree with
each other and with the inputs: the stream's, for a resumed run; the texts the shards hold, for
``load``, which also checks the last window against ``run.json``'s finished hashes). A resumed
run checks every shard's run digest and every window's agreement before any model work and
before it writes anything.

Each shard is written whole or not at all (:func:`murano_widgets._files.write_file`), so an
interrupted run loses at most the batch it was running. Called again with the same inputs and
folder, the run reads the stream from the start (a generator cannot seek), checks each window's
hashes against its shards', reads the batches it has and runs those it lacks; the windows and
batches are cut the same way, so the result equals an uninterrupted run's exactly. A different
fingerprint is refused before any model work, naming each setting that changed; different
inputs are refused at the first window whose hashes differ, naming which input changed and the
prompts of that window.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from murano_widgets._files import check_npz, read_json, read_npz, write_file
from murano_widgets.dataset.table import from_disk, on_disk

__all__ = ["RUN_FILE", "ShardStore", "check_window", "is_run_folder", "read_folder", "run_digest"]

RUN_FORMAT = "murano_widgets.LensDatasetRun"
#: Version 2: each shard records the run that wrote it (``run``, ``fingerprint``); version 1's
#: shards did not, so a foreign one could not be told apart (they are refused: run again).
RUN_FORMAT_VERSION = 2
RUN_FILE = "run.json"
_SHARD = re.compile(r"w(\d{7})-b(\d{4})\.npz")


def shard_name(window: int, batch: int) -> str:
    return f"w{window:07d}-b{batch:04d}.npz"


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` is a folder written by ``lens_dataset(..., path=...)``."""
    return path.is_dir() and (path / RUN_FILE).is_file()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ShardStore:
    """The shards of one run in one folder (see the module's description).

    Args:
        folder: The folder (made if missing; an existing one must hold this run or nothing).
        fingerprint: What decides the run's numbers (compared with a previous run's).
        provenance: The data set's provenance (kept from the first session).

    Raises:
        ValueError: If the folder holds another run (naming what differs), or files that are
            not a run's.
    """

    def __init__(
        self, folder: Path, fingerprint: dict[str, Any], provenance: dict[str, Any]
    ) -> None:
        self.folder = folder
        self.fingerprint = _plain(fingerprint)
        run_path = folder / RUN_FILE
        if folder.exists() and not folder.is_dir():
            raise ValueError(
                f"path {str(folder)!r} is a file; lens_dataset(path=...) takes a folder"
            )
        if run_path.is_file():
            self.run = read_run(run_path)
            changed = _differences(self.run["fingerprint"], self.fingerprint)
            if changed:
                raise ValueError(
                    f"the folder {str(folder)!r} holds a run with other settings, so its results "
                    f"cannot be resumed or mixed with these: {'; '.join(changed)}. Use another "
                    "folder, or call lens_dataset with that run's settings"
                )
        else:
            if folder.is_dir():
                visible = [p.name for p in folder.iterdir() if not p.name.startswith(".")]
                if visible:
                    raise ValueError(
                        f"the folder {str(folder)!r} is not empty and holds no lens_dataset run "
                        f"(no {RUN_FILE}; it has {', '.join(sorted(visible)[:3])}"
                        f"{', ...' if len(visible) > 3 else ''}): give a new or empty folder"
                    )
            self.run = {
                "format": RUN_FORMAT,
                "format_version": RUN_FORMAT_VERSION,
                "fingerprint": self.fingerprint,
                "provenance": _plain(provenance),
                "finished": None,
                "sessions": [],
            }
        self.digest = run_digest(self.fingerprint)
        self.found = shard_numbers(folder) if folder.is_dir() else {}
        # Every shard against the run's record before any model work and before anything is
        # written: a foreign shard fails here, not after the windows before it have run.
        for number, batches in sorted(self.found.items()):
            metas = [(folder / shard_name(number, b), read_meta(folder / shard_name(number, b)))
                     for b in sorted(batches)]  # fmt: skip
            check_window(folder, number, metas, self.fingerprint)
        self.resumed = sum(len(batches) for batches in self.found.values())
        folder.mkdir(parents=True, exist_ok=True)
        self.run.setdefault("sessions", []).append({"date_utc": _now()})
        write_file(run_path, _json_bytes(self.run))

    @property
    def provenance(self) -> dict[str, Any]:
        return self.run["provenance"]

    def window(self, window: Any, n_batches: int) -> dict[int, tuple[Path, dict[str, Any]]]:
        """The shards this folder already has for ``window`` (batch number → its path and
        contents), checked against the window's hashes.

        Raises:
            ValueError: If the window's inputs differ from those its shards were made from, or
                its shards do not match its batches.
        """
        have = self.found.get(window.number, set())
        records = {}
        for batch in sorted(have):
            path = self.folder / shard_name(window.number, batch)
            records[batch] = (path, read_shard(path))
        expected = {
            "window_start": window.start,
            "window_stop": window.stop,
            "hashes": window.hashes,
            "n_batches": n_batches,
        }
        check_window(
            self.folder,
            window.number,
            [(path, record["meta"]) for path, record in records.values()],
            self.fingerprint,
            expected,
        )
        return records

    def write(self, window: Any, batch: int, n_batches: int, record: dict[str, Any]) -> None:
        """Writes one batch's record as its shard (whole or not at all)."""
        meta = {
            "run": self.digest,
            "fingerprint": self.fingerprint,
            "window": window.number,
            "batch": batch,
            "n_batches": n_batches,
            "window_start": window.start,
            "window_stop": window.stop,
            "hashes": window.hashes,
            "prompts": record["prompts"],
            "answers": record["answers"],
            "foils": record["foils"],
            "token_strings": {str(k): v for k, v in record["token_strings"].items()},
            "component_labels": record["component_labels"],
            "tokens": record["tokens"],
            "padded": record["padded"],
        }
        arrays = shard_arrays(record)
        arrays["meta"] = np.frombuffer(_json_bytes(meta), dtype=np.uint8)
        buffer = _npz_bytes(arrays)
        write_file(self.folder / shard_name(window.number, batch), buffer)

    def finish(self, n_prompts: int, n_windows: int, hashes: dict[str, str], extra: dict) -> None:
        """Marks the run finished, after checking that no shard lies past the stream's end.

        Raises:
            ValueError: If the folder has shards of windows the inputs did not reach (the
                inputs are shorter than those of the run that wrote them).
        """
        beyond = sorted(w for w in self.found if w >= n_windows)
        if beyond:
            path = self.folder / shard_name(beyond[0], min(self.found[beyond[0]]))
            start = read_shard(path)["meta"]["window_start"]
            raise ValueError(
                f"the inputs ended after {n_prompts} prompts, but the folder "
                f"{str(self.folder)!r} holds results from prompts[{start}] on ({path.name}): "
                "the prompts are not those of the run that wrote it; use another folder"
            )
        finished = {"n_prompts": n_prompts, "n_windows": n_windows, "hashes": hashes}
        previous = self.run.get("finished")
        if previous is not None and {k: previous.get(k) for k in finished} != finished:
            raise ValueError(
                f"the folder {str(self.folder)!r} holds a finished run of "
                f"{previous.get('n_prompts')} prompts that these inputs do not match"
            )
        if previous is None:
            self.run["provenance"].update(extra)
            self.run["finished"] = {**finished, "date_utc": _now()}
        write_file(self.folder / RUN_FILE, _json_bytes(self.run))


def run_digest(fingerprint: dict[str, Any]) -> str:
    """The sha256 of a run's fingerprint (keys sorted, as JSON reads it back): what every shard
    of the run records, so that a shard of another run is known for one."""
    text = json.dumps(_plain(fingerprint), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: What a window's shards must agree on, with each other and with the inputs.
_PLACE = ("window_start", "window_stop", "n_batches", "hashes")


def check_window(
    folder: Path,
    number: int,
    shards: list[tuple[Path, dict[str, Any]]],
    fingerprint: dict[str, Any],
    expected: dict[str, Any] | None = None,
    expected_from: str = "stream",
) -> None:
    """Checks a window's shards against the run's record: the one check of a resumed run and of
    :meth:`LensDataset.load`.

    In order: each shard was written by this run (its run digest is the fingerprint's; else
    the error names the file and each setting that differs), it is the window and batch its
    file name says, the window's shards agree with each other on their place and inputs (a
    shard that disagrees with the others, or with ``expected``, is named as another run's),
    and, with ``expected``, they agree with it.

    Args:
        folder: The run's folder (for the messages).
        number: The window's number.
        shards: Its shards' paths and ``meta`` entries.
        fingerprint: The run's fingerprint (``run.json``'s, which a resumed run's equals).
        expected: The window's ``window_start``, ``window_stop``, ``hashes`` and ``n_batches``
            as the inputs give them, or ``None`` (only the shards' own agreement is checked).
        expected_from: Where ``expected`` comes from: ``"stream"`` (the inputs of a resumed
            run: a difference means they changed) or ``"texts"`` (the prompts, answers and
            foils the shards hold, read back by ``load``: a difference means the folder was
            edited or mixed).

    Raises:
        ValueError: For the first shard that does not belong, naming its file and what differs.
    """
    digest = run_digest(fingerprint)
    for path, meta in shards:
        if meta.get("run") != digest:
            raise ValueError(_foreign_run(folder, path, meta, fingerprint))
        match = _SHARD.fullmatch(path.name)
        named = (int(match[1]), int(match[2])) if match else None
        if named != (meta.get("window"), meta.get("batch")):
            raise ValueError(
                f"{path} is named window {number}'s batch {named[1] if named else '?'} but holds "
                f"window {meta.get('window')!r}'s batch {meta.get('batch')!r}: it was renamed or "
                "copied from another place; the folder is damaged"
            )
    if not shards:
        return
    places = [_place(meta) for _, meta in shards]
    counts = Counter(places)
    if len(counts) > 1:
        # The run's own place: the inputs', when one of the shards' agrees with them; else the
        # most shards' (ties: batch 0's side).
        wanted = _place(expected) if expected is not None and _place(expected) in counts else None
        if wanted is None:
            wanted = max(counts, key=lambda place: (counts[place], -places.index(place)))
        good = next(
            meta for (_, meta), place in zip(shards, places, strict=True) if place == wanted
        )
        path, meta = next(
            (path, meta) for (path, meta), place in zip(shards, places, strict=True)
            if place != wanted
        )  # fmt: skip
        raise ValueError(
            f"{path} was written by another run: its {_what_differs(meta, good)} differ from "
            f"those of window {number}'s other shards in the folder {str(folder)!r}. A run's "
            "folder holds one run's shards; remove it (the batch runs again on resume) or use "
            "another folder"
        )
    if expected is None:
        return
    meta = shards[0][1]
    if _place(meta) == _place(expected):
        return
    if expected_from == "texts":
        raise ValueError(
            f"the shards of window {number} in the folder {str(folder)!r} ("
            f"{', '.join(path.name for path, _ in shards)}) record {_what_differs(meta, expected)} "
            "other than those they hold: the folder was edited or mixed with another run's"
        )
    if meta["hashes"] == expected["hashes"] and meta["window_start"] == expected["window_start"]:
        raise ValueError(
            f"{shards[0][0]} is batch {meta.get('batch')} of {meta['n_batches']} of window "
            f"{number}, but these inputs cut that window into {expected['n_batches']} batches: "
            "the inputs or the batching changed; use another folder"
        )
    raise ValueError(_changed(folder, meta, number, expected))


def _place(meta: dict[str, Any]) -> tuple:
    return tuple(json.dumps(meta.get(key), sort_keys=True) for key in _PLACE)


def _what_differs(meta: dict[str, Any], other: dict[str, Any]) -> str:
    """Which of a window's place and inputs two shards (or a shard and the inputs) differ in."""
    kinds = [
        k for k in ("prompts", "answers", "foils")
        if (meta.get("hashes") or {}).get(k) != (other.get("hashes") or {}).get(k)
    ]  # fmt: skip
    if meta.get("window_start") != other.get("window_start") or meta.get(
        "window_stop"
    ) != other.get("window_stop"):
        kinds.insert(0, "window's prompts")
    if meta.get("n_batches") != other.get("n_batches"):
        kinds.append("batches")
    return " and ".join(kinds) or "inputs"


def _foreign_run(
    folder: Path, path: Path, meta: dict[str, Any], fingerprint: dict[str, Any]
) -> str:
    """Why a shard's run digest is not this run's: each setting that differs, or why it has
    none."""
    theirs = meta.get("fingerprint")
    if "run" not in meta or not isinstance(theirs, dict):
        return (
            f"{path} does not record the run that wrote it (a shard of murano_widgets before "
            f"run format {RUN_FORMAT_VERSION}, or damaged), so it cannot be told apart from "
            f"another run's: run again into a new folder"
        )
    changed = _differences(theirs, fingerprint, labels=("is", "the run's"))
    detail = "; ".join(changed) if changed else "its run digest differs from its fingerprint's"
    return (
        f"{path} was written by another run than the one the folder {str(folder)!r} records "
        f"(the shard's {detail}): its numbers are not this run's. A run's folder holds one "
        "run's shards; remove it (the batch runs again on resume) or use another folder"
    )


def _changed(folder: Path, meta: dict[str, Any], number: int, window: dict[str, Any]) -> str:
    """Why a window's shard does not belong to these inputs: which of them changed, where."""
    start, stop = meta["window_start"], meta.get("window_stop", window["window_stop"])
    where = f"at or before prompts[{start}:{stop}] (window {number}; the earlier windows matched)"
    if stop != window["window_stop"] or start != window["window_start"]:
        what = (
            f"the inputs differ from those the folder {str(folder)!r} was made from {where}: "
            f"that window held prompts[{start}:{stop}] then and holds "
            f"prompts[{window['window_start']}:{window['window_stop']}] now (prompts were "
            "added, removed or changed length)"
        )
    else:
        kinds = [
            k for k in ("prompts", "answers", "foils") if meta["hashes"][k] != window["hashes"][k]
        ]
        # Prompts added or removed shift the answers and foils too: then the prompts are named.
        kinds = kinds[:1] if "prompts" in kinds else kinds
        what = (
            f"the {' and '.join(kinds) or 'prompts'} differ from those the folder "
            f"{str(folder)!r} was made from, {where}"
        )
    return what + ": a run's folder holds one data set; use another folder for other inputs"


def _differences(
    old: dict[str, Any],
    new: dict[str, Any],
    prefix: str = "",
    labels: tuple[str, str] = ("was", "now"),
) -> list[str]:
    """Each setting that differs, as ``"key was X, now Y"`` (or with other ``labels``)."""
    out = []
    for key in dict.fromkeys([*old, *new]):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.", labels)
        elif a != b:
            out.append(f"{prefix}{key} {labels[0]} {_short(a)}, {labels[1]} {_short(b)}")
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 70 else text[:67] + "..."


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8")


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def shard_arrays(record: dict[str, Any]) -> dict[str, np.ndarray]:
    """A record's arrays as a shard holds them: ``l{k}_`` per lens."""
    arrays: dict[str, np.ndarray] = {"index": record["index"]}
    for k, lens in enumerate(record["lenses"]):
        arrays |= on_disk(lens, f"l{k}_", list(lens["answer_probs"]))
    if record["contributions"] is not None:
        arrays["contributions"] = record["contributions"]
        arrays["contribution_bias"] = record["contribution_bias"]
    return arrays


def read_run(path: Path) -> dict[str, Any]:
    """A run's ``run.json``, checked.

    Raises:
        ValueError: If it is not a run file of this format (naming the file).
    """
    run = read_json(path, "the lens_dataset run file")
    if run.get("format") != RUN_FORMAT:
        raise ValueError(f"{path} is not a lens_dataset run file (no format {RUN_FORMAT!r})")
    if run.get("format_version") != RUN_FORMAT_VERSION:
        raise ValueError(
            f"{path} has format version {run.get('format_version')!r}; this murano_widgets "
            f"reads version {RUN_FORMAT_VERSION}"
        )
    for key, kind in (("fingerprint", dict), ("provenance", dict)):
        if not isinstance(run.get(key), kind):
            raise ValueError(
                f"{path}: {key!r} must be an object; the file is damaged or was edited"
            )
    finished = run.get("finished")
    if finished is not None and not (
        isinstance(finished, dict)
        and isinstance(finished.get("n_prompts"), int)
        and isinstance(finished.get("n_windows"), int)
    ):
        raise ValueError(f"{path}: 'finished' is damaged (no n_prompts and n_windows)")
    return run


def shard_numbers(folder: Path) -> dict[int, set[int]]:
    """The shards in a folder, by their names: window number → its batch numbers."""
    found: dict[int, set[int]] = {}
    for path in folder.iterdir():
        match = _SHARD.fullmatch(path.name)
        if match:
            found.setdefault(int(match[1]), set()).add(int(match[2]))
    return found


def read_meta(path: Path) -> dict[str, Any]:
    """A shard's ``meta`` entry alone (its arrays are not read): what a resumed run checks
    every shard by before any model work.

    Raises:
        ValueError: If the shard is damaged or not a shard, naming the file.
    """
    check_npz(path, "the data set shard")  # before any member is decompressed
    try:
        with np.load(path, allow_pickle=False) as loaded:
            raw = loaded["meta"] if "meta" in loaded.files else None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(
            f"the data set shard {str(path)!r} is truncated or damaged ({error})"
        ) from None
    return _parse_meta(path, raw)


def _parse_meta(path: Path, raw: Any) -> dict[str, Any]:
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError(f"{path} lacks its 'meta' entry: it is not a lens_dataset shard")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: its 'meta' entry is not JSON ({error})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: its 'meta' entry is not an object: the shard is damaged")
    return meta


def read_shard(path: Path) -> dict[str, Any]:
    """One shard as a record (the arrays of :func:`shard_arrays` and its ``meta``).

    Raises:
        ValueError: If the shard is damaged, naming the file and what is wrong.
    """
    arrays = read_npz(path, "the data set shard")
    meta = _parse_meta(path, arrays.pop("meta", None))
    index = arrays.get("index")
    n = len(meta.get("prompts", ())) if isinstance(meta, dict) else -1
    if (
        not isinstance(meta, dict)
        or index is None
        or index.ndim != 1
        or index.dtype.kind != "i"
        or len(index) != n
        or not isinstance(meta.get("hashes"), dict)
        or not isinstance(meta.get("answers"), dict)
    ):
        raise ValueError(f"{path} is damaged: its index, prompts and answers disagree")
    return {"arrays": arrays, "meta": meta}


def record_of(
    shard: dict[str, Any],
    lens_names: list[str],
    set_names: list[str],
    path: Any,
    fields: tuple[str, ...],
    groups: list[str] = (),
) -> dict:
    """A shard read back as the record :func:`lens_dataset` keeps for a batch, with the metric
    ``fields`` its run keeps (and its token ``groups``' probabilities).

    Raises:
        ValueError: If the shard's arrays do not have the shapes its lenses and sets need.
    """
    arrays, meta = shard["arrays"], shard["meta"]
    n = len(arrays["index"])

    def take(name: str, kind: str, rows: int | None = None) -> np.ndarray:
        array = arrays.get(name)
        if array is None:
            raise ValueError(f"{path} lacks the array {name!r}")
        shape_ok = array.shape[-1] == n and (rows is None or array.shape == (rows, n))
        if array.dtype.kind != kind or not shape_ok:
            raise ValueError(
                f"{path}: {name} has shape {array.shape} and dtype {array.dtype}, expected "
                f"[..., {n}] of kind {kind!r}"
            )
        return array

    lenses = []
    for k, _ in enumerate(lens_names):
        rows = take(f"l{k}_top1", "i").shape[0]
        lenses.append(
            from_disk(
                lambda name, kind: take(name, kind, rows),  # noqa: B023 (called at once)
                f"l{k}_",
                fields,
                set_names,
                groups=list(groups),
            )
        )
    labels = meta.get("component_labels")
    record = {
        "index": arrays["index"].astype(np.int64),
        "lenses": lenses,
        "contributions": None,
        "contribution_bias": None,
        "component_labels": labels,
        "token_strings": {int(k): v for k, v in meta["token_strings"].items()},
        "prompts": meta["prompts"],
        "answers": meta["answers"],
        "foils": meta["foils"],
        "tokens": int(meta.get("tokens", 0)),
        "padded": int(meta.get("padded", 0)),
    }
    if labels is not None:
        record["contributions"] = take("contributions", "f", len(labels))
        record["contribution_bias"] = take("contribution_bias", "f")
    return record


def read_folder(folder: Path) -> tuple[dict[str, Any], list[tuple[Path, dict[str, Any]]]]:
    """A finished run's ``run.json`` and its shards, in order, each checked against the run's
    record by :func:`check_window`, as a resumed run checks them.

    The inputs a window was made from are the texts its shards hold: their running hashes,
    recomputed window by window, must be those every shard of the window records, and, at the
    end, those ``run.json`` records for the finished run.

    Raises:
        ValueError: If the run is not finished, a shard is missing, damaged or another run's,
            or the shards' texts are not the run's (naming the file and what differs).
    """
    from murano_widgets.dataset.stream import Item, _Hashes

    run = read_run(folder / RUN_FILE)
    finished = run.get("finished")
    found = shard_numbers(folder)
    if finished is None:
        done = sum(len(b) for b in found.values())
        raise ValueError(
            f"the folder {str(folder)!r} holds an unfinished lens_dataset run ({done} batches "
            "written): call lens_dataset again with the same inputs and path to finish it, "
            "then load it"
        )
    beyond = sorted(w for w in found if w >= finished["n_windows"])
    if beyond:
        raise ValueError(
            f"{folder / shard_name(beyond[0], min(found[beyond[0]]))} lies past the run's "
            f"{finished['n_windows']} windows: it is another run's; remove it"
        )
    fingerprint = run["fingerprint"]
    sets = list(fingerprint.get("answer_sets") or [])
    hashes = _Hashes()
    shards = []
    for window in range(finished["n_windows"]):
        batches = sorted(found.get(window, []))
        if not batches:
            raise ValueError(f"the folder {str(folder)!r} lacks window {window}'s shards")
        records = [(folder / shard_name(window, b), read_shard(folder / shard_name(window, b)))
                   for b in batches]  # fmt: skip
        metas = [(path, shard["meta"]) for path, shard in records]
        check_window(folder, window, metas, fingerprint)
        first = metas[0][1]
        if first["n_batches"] != len(batches):
            raise ValueError(
                f"the folder {str(folder)!r} has {len(batches)} of window {window}'s "
                f"{first['n_batches']} shards"
            )
        items: dict[int, Any] = {}
        for path, shard in records:
            meta = shard["meta"]
            foils = meta.get("foils")
            try:
                for k, index in enumerate(shard["arrays"]["index"].tolist()):
                    answers = tuple(meta["answers"][name][k] for name in sets)
                    foil = None if foils is None else foils[k]
                    items[index] = Item(index, meta["prompts"][k], answers, foil)
            except (KeyError, IndexError, TypeError):
                raise ValueError(
                    f"{path} is damaged: its prompts, answers and foils do not match its index"
                ) from None
        start, stop = first["window_start"], first["window_stop"]
        if sorted(items) != list(range(start, stop)):
            raise ValueError(
                f"the shards of window {window} in the folder {str(folder)!r} do not hold "
                f"exactly prompts[{start}:{stop}]: the folder is damaged or mixed"
            )
        for index in range(start, stop):
            hashes.add(items[index])
        expected = {
            "window_start": start,
            "window_stop": stop,
            "n_batches": len(batches),
            "hashes": hashes.now(),
        }
        check_window(folder, window, metas, fingerprint, expected, expected_from="texts")
        shards.extend(records)
    if finished.get("hashes") != hashes.now():
        raise ValueError(
            f"the shards of the folder {str(folder)!r} hold other prompts, answers or foils "
            f"than the run its {RUN_FILE} records finished: the folder was edited or mixed "
            "with another run's"
        )
    return run, shards


def fingerprint_of(provenance: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """What decides a run's numbers: the model (name, weights, dtype, device type, backend,
    logit transform), the lens, the layers and the options; not the date or package versions."""
    keep = (
        "model_name",
        "revision",
        "weights_fingerprint",
        "dtype",
        "backend",
        "logit_transform",
        "n_model_layers",
        "layers",
        "lens_kind",
        "lens_title",
        "lens_provenance",
        "lens_fingerprint",
        "lenses",
    )
    model = {key: provenance.get(key) for key in keep if key in provenance}
    device = str(provenance.get("device"))
    model["device_type"] = device.split(":")[0]
    return {"model": model, **options}


def os_path(path: Any) -> Path:
    return Path(os.fspath(path))
