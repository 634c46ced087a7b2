"""Reading and writing the package's files: one clear error per bad file, all-or-nothing saves.

Readers (:func:`read_json`, :func:`read_torch`, :func:`read_npz`) turn every way a file can be
bad (missing, empty, truncated, not UTF-8, not JSON, a pickle that would run code, an object
array) into one ``FileNotFoundError`` or ``ValueError`` that names the file, says what it should
have been and what is wrong. Nothing in a file is ever executed: torch files are read with
``weights_only=True`` and npz files with ``allow_pickle=False``.

The writer (:func:`write_files`) saves a set of files that belong together as one transaction.
It makes one hidden work folder beside the targets, under a fresh random name and with
``mkdir`` (which fails rather than reuse an existing folder), so no file of the user's is ever
opened for writing. The new files are written in it under their final names (``torch.save``
names its archive after the file, so the bytes are those of a direct save); the previous
version of each target is kept there as a hard link (a copy where the file system has none);
then each new file is renamed over its target. If anything goes wrong at any step, an exception
or a ``KeyboardInterrupt``, the targets already replaced get their previous versions back and
the work folder is removed, so the folder holds exactly the previous save. On success the work
folder is removed and the folder holds exactly the new one. (A hard kill of the process, which
runs no cleanup, can still leave the hidden ``.*.tmp`` work folder, never a half-written
target.)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import re
import secrets
import shutil
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from murano_widgets._memory import Need, format_bytes, preflight

__all__ = [
    "Content",
    "check_npz",
    "read_json",
    "read_npz",
    "read_torch",
    "write_file",
    "write_files",
]

Content = bytes | str | Callable[[Path], object]
"""What :func:`write_files` writes to one file: bytes, text (as UTF-8), or a function that
writes the file at the path it is given (in the work folder, under the target's name; the file
does not exist yet)."""


# ---------------------------------------------------------------------------------------------
# Reading


def _check_file(path: Path, what: str) -> int:
    """The size of ``path``, or an error naming it if it is missing or not a file."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist") from None
    if path.is_dir():
        raise IsADirectoryError(f"{what} {str(path)!r} is a folder, not a file")
    return info.st_size


def read_json(path: str | os.PathLike[str], what: str, *, expect: type = dict) -> Any:
    """Reads a JSON file, with one clear error for every way it can be bad.

    Args:
        path: The file.
        what: What the file is, for the messages (``"the tuned lens config"``).
        expect: The type the top-level value must have (``dict`` or ``list``).

    Returns:
        The parsed value.

    Raises:
        FileNotFoundError: If the file does not exist.
        IsADirectoryError: If it is a folder.
        ValueError: If it is empty, not UTF-8, not JSON or holds another type than ``expect``;
            the message names the file and what is wrong.
    """
    path = Path(path)
    _check_file(path, what)
    data = path.read_bytes()
    where = f"{what} {str(path)!r}"
    if not data.strip():
        raise ValueError(f"{where} is empty ({len(data)} bytes): expected a JSON object")
    try:
        # utf-8-sig: a byte-order mark some editors add is not an error.
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{where} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
            f"{error.start}): it is not a JSON file, or it is damaged"
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{where} is not valid JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}): the file is truncated or damaged"
        ) from None
    except (ValueError, RecursionError) as error:
        # Integers beyond Python's digit limit, or arrays nested deeper than the parser goes.
        raise ValueError(f"{where} is not valid JSON for this package ({error})") from None
    if not isinstance(value, expect):
        names: dict[type, str] = {dict: "a JSON object {...}", list: "a JSON array [...]"}
        wanted = names.get(expect, expect.__name__)
        raise ValueError(f"{where} must hold {wanted}, got a {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    names = {dict: "JSON object", list: "JSON array", str: "string", bool: "boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "number")


_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def read_torch(path: str | os.PathLike[str], what: str) -> Any:
    """Reads a file written by ``torch.save`` without ever running code from it.

    The file is loaded with ``weights_only=True``: tensors, numbers, strings and containers
    only. A pickle that would import or call anything else (``os.system``, a class's
    ``__reduce__``) is refused before any of it runs.

    Args:
        path: The file.
        what: What the file is, for the messages (``"the tuned lens parameters"``).

    Returns:
        What was saved, on the CPU.

    Raises:
        FileNotFoundError: If the file does not exist.
        IsADirectoryError: If it is a folder.
        ValueError: If it is empty, truncated, not a torch file, or refused because loading it
            would run code; the message names the file and what is wrong.
    """
    import torch

    path = Path(path)
    size = _check_file(path, what)
    where = f"{what} {str(path)!r}"
    if size == 0:
        # torch's own error for this is an EOFError with an empty message.
        raise ValueError(f"{where} is empty (0 bytes): expected a file written by torch.save")
    # A zip archive (what torch.save writes) is checked before torch reads any of it: every
    # member stored as declared, so nothing is inflated; torch then checks each storage's
    # record against the size data.pkl declares before it allocates (so what it allocates is
    # at most the file's size). Not mmap: a mapped load accepts a storage that declares more
    # than its record and maps the file's following bytes into it.
    if zipfile.is_zipfile(path):
        try:
            with open(path, "rb") as file:
                _checked_members(file, where, size, torch_archive=True)
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise ValueError(
                f"{where} is truncated or damaged: it is not a complete torch.save file ({error})"
            ) from None
    try:
        with warnings.catch_warnings():
            # A foreign pickle protocol draws a warning before the refusal below; the refusal
            # is what the user needs to read.
            warnings.filterwarnings("ignore", message=".*pickle protocol", category=UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        found = _GLOBAL.search(str(error))
        if found:
            raise ValueError(
                f"{where} was refused: loading it would import and call {found.group(1)}, "
                "i.e. run code stored in the file. Nothing in it was run; this package only "
                "reads files of plain tensors (torch.load(..., weights_only=True))"
            ) from None
        detail = _last_line(error)
        raise ValueError(
            f"{where} is not a file written by torch.save, or is damaged: the safe "
            f"(weights-only) reader refused it ({detail}). Nothing in it was run"
        ) from None
    except MemoryError:
        raise
    except RuntimeError as error:
        # PytorchStreamReader's errors: a zip archive cut short or damaged.
        reason = str(error).split(". ", 1)[0]
        raise ValueError(
            f"{where} is truncated or damaged: it is not a complete torch.save file ({reason})"
        ) from None
    except OSError as error:
        # The zip reader's other refusal: torch 2.13 raises EINVAL for an archive cut at half
        # its length (the file itself was found above).
        raise ValueError(
            f"{where} is truncated or damaged: it is not a complete torch.save file "
            f"({error.strerror or error})"
        ) from None
    except Exception as error:  # every other way torch fails on foreign bytes
        raise ValueError(
            f"{where} is not a file written by torch.save (reading it failed with "
            f"{type(error).__name__}: {error})"
        ) from None


def _last_line(error: BaseException) -> str:
    """The informative line of torch's long weights-only message (the rest is boilerplate)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    picked = [line for line in lines if line.startswith(("Unsupported", "Trying"))]
    return (picked or lines or [type(error).__name__])[0].rstrip(".")


def read_npz(
    path: str | os.PathLike[str],
    what: str,
    *,
    data: bytes | None = None,
    max_bytes: int | None = None,
) -> dict:
    """Reads every array of an ``.npz`` file, refusing anything that would need a pickle.

    Before anything is decompressed, every member's declared size (the zip directory's) and
    its ``.npy`` header (shape and dtype, read from the member's first bytes) are checked: a
    member must hold exactly the bytes its header declares, inflate no more than deflate can
    (1032:1), and all of them together no more than ``max_bytes`` (default: 64 times the
    file's size and 16 MiB) nor than the free memory. So a small hostile file (a zip bomb, a
    header declaring a huge shape, a lying length) is refused having cost about its own size.

    Args:
        path: The file (named in the messages; read from disk unless ``data`` is given).
        what: What the file is, for the messages (``"the data set's arrays"``).
        data: The file's bytes when the caller already read them (to hash exactly what it
            parses).
        max_bytes: The most its arrays may hold in all, where the caller knows what the file
            may hold (the shapes its sidecar declares).

    Returns:
        ``{name: array}``, all read into memory.

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If it is empty, truncated, damaged, not an npz archive, or holds arrays of
            Python objects (refused: reading them would unpickle); the message names the file.
    """
    import numpy as np

    path = Path(path)
    if data is None:
        _check_file(path, what)
        data = path.read_bytes()
    where = f"{what} {str(path)!r}"
    if not data:
        raise ValueError(f"{where} is empty (0 bytes): expected an .npz archive of arrays")
    if data[:4] == b"PK\x03\x04":  # a zip archive; numpy's own errors cover the rest
        try:
            _checked_members(io.BytesIO(data), where, len(data), max_bytes=max_bytes)
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise ValueError(
                f"{where} is truncated or damaged: it is not a complete .npz archive ({error})"
            ) from None
    try:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError(f"{where} holds a single .npy array, not an .npz archive of arrays")
        with loaded:
            return {name: loaded[name] for name in loaded.files}
    except ValueError as error:
        message = str(error)
        if message.startswith(where):
            raise
        if "pickled" in message:
            raise ValueError(
                f"{where} is not an .npz archive (it does not begin with a zip header) and was "
                "refused: numpy would read such a file as a pickle, which can run code. Nothing "
                "in it was run"
            ) from None
        if "Object arrays" in message:
            raise ValueError(
                f"{where} holds an array of Python objects and was refused: reading it would "
                "unpickle, which can run code. Nothing in it was run"
            ) from None
        raise ValueError(f"{where} is damaged: {message}") from None
    except MemoryError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(
            f"{where} is truncated or damaged: it is not a complete .npz archive ({error})"
        ) from None
    except Exception as error:  # zlib, struct and the like on damaged members
        raise ValueError(
            f"{where} is damaged: reading it failed with {type(error).__name__}: {error}"
        ) from None


# Deflate expands at most 1032:1: a member that declares more is lying about its size.
_DEFLATE_MAX_RATIO = 1032
# Without a caller's bound, an npz's members may declare this multiple of the file's size in
# all, and this much more (the package's own files compress far less: NaN-filled arrays of a
# data set's missing answers are the most, and the caller bounds those by the sidecar).
_NPZ_EXPANSION = 64
_NPZ_SLACK = 16 * 2**20
# The longest .npy header read (numpy's own default limit).
_NPY_HEADER_MAX = 10_000


def _checked_members(
    source: Any,
    where: str,
    file_size: int,
    *,
    max_bytes: int | None = None,
    torch_archive: bool = False,
) -> int:
    """Checks a zip archive's declared members before any is decompressed; returns the bytes
    they declare in all.

    Every member must be stored or deflated, a stored one as long as it declares, a deflated
    one no more than deflate can expand; an ``.npy`` member (not in a torch archive) must
    hold exactly what its header's shape and dtype say. Python's zip reader never hands out
    more than a member declares, so these bounds hold for what is read afterwards too.

    Raises:
        ValueError: Naming the file, the member and what is wrong.
        MemoryBudgetError: If what the members declare does not fit in the free memory.
        zipfile.BadZipFile: If it is not a readable zip archive.
    """
    total = 0
    with zipfile.ZipFile(source) as archive:
        for info in archive.infolist():
            member = f"{where}: member {info.filename!r}"
            if info.compress_type == zipfile.ZIP_STORED:
                if info.file_size != info.compress_size:
                    raise ValueError(
                        f"{member} is stored uncompressed but declares {info.file_size} bytes "
                        f"in {info.compress_size}: a lying length; the file is damaged or hostile"
                    )
            elif info.compress_type == zipfile.ZIP_DEFLATED and not torch_archive:
                if info.file_size > _DEFLATE_MAX_RATIO * info.compress_size + 1024:
                    raise ValueError(
                        f"{member} declares {info.file_size} bytes from {info.compress_size} "
                        f"compressed, more than deflate can expand ({_DEFLATE_MAX_RATIO}:1): "
                        "the file is damaged or hostile (a zip bomb). Nothing was decompressed"
                    )
            else:
                kind = "compression" if not torch_archive else "compression in a torch file"
                raise ValueError(
                    f"{member} uses {kind} method {info.compress_type}, which this package "
                    "does not read (torch.save stores its members; numpy stores or deflates)"
                )
            if info.file_size > file_size * _DEFLATE_MAX_RATIO + 1024:
                raise ValueError(f"{member} declares {info.file_size} bytes: damaged or hostile")
            if not torch_archive:
                _check_npy_header(archive, info, member)
            total += info.file_size
    limit = max_bytes if max_bytes is not None else _NPZ_EXPANSION * file_size + _NPZ_SLACK
    if torch_archive:
        limit = file_size  # stored members: they cannot declare more than the file holds
    if total > limit:
        raise ValueError(
            f"{where} declares {format_bytes(total)} of arrays in a file of "
            f"{format_bytes(file_size)}, more than it may hold ({format_bytes(limit)}): the "
            "file is damaged or hostile (a zip bomb). Nothing was decompressed"
        )
    if not torch_archive:  # a torch archive's tensors are mapped from the file, not copied
        preflight(
            f"reading {where}",
            [Need(f"its {format_bytes(total)} of arrays", total, "", "Free some memory.")],
        )
    return total


def _check_npy_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, member: str) -> None:
    """Checks an npz member's ``.npy`` header against the bytes the member declares."""
    import numpy as np

    if not info.filename.endswith(".npy"):
        raise ValueError(f"{member} is not an .npy array: this is not an .npz of arrays")
    with archive.open(info) as file:
        try:
            version = np.lib.format.read_magic(file)
            read = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read(file, max_header_size=_NPY_HEADER_MAX)
        except ValueError as error:
            raise ValueError(f"{member} has no valid .npy header ({error})") from None
        header = file.tell()
    if dtype.hasobject:
        raise ValueError(
            f"{member} holds an array of Python objects and was refused: reading it would "
            "unpickle, which can run code. Nothing in it was run"
        )
    count = 1
    for length in shape:
        count *= int(length)
    declared = header + count * dtype.itemsize
    if declared != info.file_size:
        raise ValueError(
            f"{member}'s header declares shape {tuple(shape)} of {dtype} ({declared} bytes with "
            f"the header) but the member holds {info.file_size} bytes: the file is damaged or "
            "hostile. Nothing was read"
        )


def check_npz(path: str | os.PathLike[str], what: str, *, max_bytes: int | None = None) -> int:
    """Checks an ``.npz`` file's members as :func:`read_npz` does, reading none of their data
    (for a caller that then reads one member lazily); returns the bytes they declare.

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If it is not an npz archive, or is damaged or hostile; naming the file.
    """
    path = Path(path)
    size = _check_file(path, what)
    where = f"{what} {str(path)!r}"
    try:
        with open(path, "rb") as file:
            return _checked_members(file, where, size, max_bytes=max_bytes)
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(
            f"{where} is truncated or damaged: it is not a complete .npz archive ({error})"
        ) from None


# ---------------------------------------------------------------------------------------------
# Writing


def write_file(path: str | os.PathLike[str], content: Content) -> Path:
    """Writes one file atomically: :func:`write_files` with one file.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    write_files({path: content})
    return path


def write_files(
    files: Mapping[str | os.PathLike[str], Content],
    *,
    remove: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Replaces a set of files in one folder as one transaction: all new, or all as before.

    Steps: write every new file into a fresh hidden work folder; keep a backup of every
    existing target there (a hard link: no copying); rename each new file over its target and
    delete the files in ``remove``; remove the work folder. Any exception before the last
    step, ``KeyboardInterrupt`` included, puts every target back from its backup (or removes
    it if it is new), removes the work folder, and propagates.

    Args:
        files: ``{target: content}``, all in one existing folder; written in this order.
        remove: Files of the same folder that the new set no longer has (deleted in the same
            transaction; missing ones are fine).

    Raises:
        IsADirectoryError: If a target is a folder.
        FileNotFoundError: If the folder does not exist.
        ValueError: If a path is given twice or the files are in different folders.
        Exception: Whatever a content function or the file system raises, after the rollback.
    """
    targets = {Path(path): content for path, content in files.items()}
    removals = [Path(path) for path in remove]
    every = [*targets, *removals]
    if not targets:
        raise ValueError("write_files needs at least one file to write")
    if len({os.path.abspath(p) for p in every}) != len(every):
        raise ValueError(f"a file is named twice in one save: {[str(p) for p in every]}")
    folder = every[0].parent
    if any(os.path.abspath(p.parent) != os.path.abspath(folder) for p in every):
        raise ValueError(f"the files of one save must share a folder: {[str(p) for p in every]}")
    if not folder.is_dir():
        raise FileNotFoundError(f"{str(every[0])!r}: the folder {str(folder)!r} does not exist")
    for path in every:
        if path.is_dir():
            raise IsADirectoryError(f"{str(path)!r} is a folder; a file of that name is needed")
    transaction = _Transaction(folder, every[0].name)
    try:
        transaction.begin()
        for target, content in targets.items():
            _write(transaction.new(target), content)
            _flush_to_disk(transaction.new(target))
        for path in every:
            transaction.back_up(path)
        for target in targets:
            transaction.started.append(target)
            os.replace(transaction.new(target), target)
        for path in removals:
            transaction.started.append(path)
            if path in transaction.backups:
                os.unlink(path)
        _flush_to_disk(folder)
    except BaseException:
        transaction.roll_back()
        raise
    transaction.clean_up(report=True)


class _Transaction:
    """The bookkeeping of :func:`write_files`, so that it can undo exactly what it did.

    Everything it creates lives in one work folder that ``mkdir`` made for it (``mkdir`` fails
    on an existing name), so removing that folder's known contents never touches a user's file.
    """

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.work: Path | None = None
        self.work_identity: tuple[int, int] | None = None
        self.backups: set[Path] = set()
        self.started: list[Path] = []  # targets whose replacement (or removal) was started
        self.written: list[Path] = []

    def begin(self) -> None:
        while True:
            work = self.folder / f".{self.name}.{secrets.token_hex(8)}.tmp"
            # Recorded before it is made, so an interrupt right after mkdir still finds it; with
            # no identity yet, clean_up only removes it if it is an empty folder.
            self.work, self.work_identity = work, None
            try:
                os.mkdir(work, 0o700)
            except FileExistsError:
                self.work = None
                continue
            self.work_identity = _identity(os.lstat(work))
            for part in ("new", "old"):
                os.mkdir(work / part, 0o700)
            return

    def new(self, target: Path) -> Path:
        assert self.work is not None
        return self.work / "new" / target.name

    def old(self, target: Path) -> Path:
        assert self.work is not None
        return self.work / "old" / target.name

    def back_up(self, path: Path) -> None:
        if not os.path.lexists(path):
            return  # a new file: rolling back removes it
        try:
            os.link(path, self.old(path), follow_symlinks=False)
        except (OSError, NotImplementedError):
            # No hard links on this file system (or not for this file): a copy instead.
            shutil.copy2(path, self.old(path), follow_symlinks=False)
        self.backups.add(path)

    def roll_back(self) -> None:
        """Puts every target started on back as it was, then removes the work folder."""
        for target in reversed(self.started):
            try:
                if target in self.backups:
                    os.replace(self.old(target), target)
                elif not os.path.lexists(self.new(target)):
                    # The new file is gone from the work folder only if it became the target:
                    # a file this save made, which did not exist before.
                    os.unlink(target)
            except BaseException:  # restore the others, whatever happens
                pass
        # The exception that started the rollback is the one to report, not a cleanup's.
        self.clean_up(report=False)

    def clean_up(self, *, report: bool) -> None:
        """Removes the work folder and what this save put in it (new files, backups)."""
        if self.work is None:
            return
        try:
            identity = _identity(os.lstat(self.work))
        except FileNotFoundError:
            return
        if identity != self.work_identity:
            if self.work_identity is None:
                with contextlib.suppress(OSError):
                    os.rmdir(self.work)  # made just before an interrupt: empty
            return
        # Every removal is attempted even if one is interrupted; the first error is re-raised.
        pending: BaseException | None = None
        steps: list[Path] = []
        for part in ("new", "old"):
            with contextlib.suppress(FileNotFoundError):
                steps += [self.work / part / name for name in sorted(os.listdir(self.work / part))]
        steps += [self.work / "new", self.work / "old", self.work]
        for path in steps:
            for _ in range(2):  # a second try, in case an interrupt stopped the first
                try:
                    if path.is_dir() and not path.is_symlink():
                        os.rmdir(path)
                    else:
                        os.unlink(path)
                    break
                except FileNotFoundError:
                    break
                except BaseException as error:
                    pending = pending or error
        if pending is not None and report:
            raise pending


def _identity(info: os.stat_result) -> tuple[int, int]:
    return (info.st_dev, info.st_ino)


def _write(path: Path, content: Content) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        content(path)


def _flush_to_disk(path: Path) -> None:
    """fsync, so that the rename never lands on disk before the data (a power cut then would
    leave an empty file under the final name). Folders cannot be opened for it on Windows."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
