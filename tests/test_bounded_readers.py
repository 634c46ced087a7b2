"""Readers refuse a small hostile file before it makes the process allocate much.

Each hostile file is built here (a zip bomb member, an .npy header declaring a huge shape, a zip
directory lying about a member's length, a torch archive with an inflating member) and read by
the package in a subprocess, which reports its peak memory growth (``ru_maxrss``): the refusal
must name the file and what is wrong, and the growth stay a bounded multiple of the file's size.
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
BOMB_BYTES = 64 * 2**20  # what the zip bomb's member inflates to
# The most a refused read may grow the process by: a few times the (sub-megabyte) files here
# and the interpreter's own noise; far below the 64 MiB the bomb would inflate to.
GROWTH_LIMIT = 24 * 2**20

# Reads each (reader, file) given on the command line in turn and prints, per read, what
# happened and how far the peak memory (a high-water mark) rose: one interpreter start for
# all, since importing the package is most of the cost.
READ = """
import sys, json
from pathlib import Path
import murano_widgets._files as files
import murano_widgets.dataset.shards as shards
reader = {"npz": lambda p: files.read_npz(p, "the test file"), "shard": shards.read_shard,
          "meta": shards.read_meta, "torch": lambda p: files.read_torch(p, "the test file")}

def status(field):
    with open("/proc/self/status") as lines:
        return next(int(l.split()[1]) * 1024 for l in lines if l.startswith(field + ":"))

reports = []
for kind, path in zip(sys.argv[1::2], sys.argv[2::2]):
    # The peak (VmHWM) is reset to the present size first: the imports' own transient peak
    # would otherwise hide a growth below it.
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    before = status("VmRSS")
    try:
        kept = reader[kind](Path(path))
        outcome = "read"
    except Exception as error:
        outcome = f"{type(error).__name__}: {error}"
    reports.append({"outcome": outcome, "growth": status("VmHWM") - before})
    kept = None
print(json.dumps(reports))
"""


def read_in_subprocess(reads: list[tuple[str, Path]]) -> list[tuple[str, int]]:
    """What reading each file with the package's reader of that kind did, and the growth of
    the peak memory it caused."""
    arguments = [str(part) for kind, path in reads for part in (kind, path)]
    done = subprocess.run(
        [sys.executable, "-c", READ, *arguments],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    reports = json.loads(done.stdout.strip().splitlines()[-1])
    return [(report["outcome"], report["growth"]) for report in reports]


def write_npy_member(archive: zipfile.ZipFile, name: str, shape, body_bytes: int) -> None:
    """A member whose header declares ``shape`` (float64), then ``body_bytes`` zero bytes,
    streamed through the compressor a megabyte at a time."""
    with archive.open(name, "w", force_zip64=True) as member:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f8", "fortran_order": False, "shape": shape}
        )
        member.write(header.getvalue())
        chunk = bytes(2**20)
        left = body_bytes
        while left > 0:
            member.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)


def zip_bomb(path: Path) -> Path:
    """An npz whose one member is consistent (its header's shape matches its length) and
    inflates 256 MiB of zeros from a few hundred kilobytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        write_npy_member(archive, "entropy.npy", (BOMB_BYTES // 8,), BOMB_BYTES)
    return path


def huge_shape(path: Path) -> Path:
    """An npz whose member's header declares 10**12 float64 but holds 80 bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        write_npy_member(archive, "entropy.npy", (10**12,), 80)
    return path


def lying_length(path: Path, method: int) -> Path:
    """A valid npz whose zip directory then claims its member is 2 GiB long."""
    with zipfile.ZipFile(path, "w", method) as archive:
        buffer = io.BytesIO()
        np.save(buffer, np.zeros(100))
        archive.writestr("entropy.npy", buffer.getvalue())
    data = bytearray(path.read_bytes())
    directory = data.rindex(b"PK\x01\x02")  # the central directory's entry
    data[directory + 24 : directory + 28] = struct.pack("<I", 2**31)  # uncompressed size
    path.write_bytes(bytes(data))
    return path


def torch_with_inflating_member(path: Path) -> Path:
    """A torch.save archive rewritten with its members deflated (torch stores them)."""
    buffer = io.BytesIO()
    torch.save({"weight": torch.zeros(64, 64)}, buffer)
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for name in source.namelist():
            archive.writestr(name, source.read(name))
    return path


def torch_lying_length(path: Path) -> Path:
    buffer = io.BytesIO()
    torch.save({"weight": torch.zeros(64, 64)}, buffer)
    data = bytearray(buffer.getvalue())
    directory = data.rindex(b"PK\x01\x02")
    data[directory + 24 : directory + 28] = struct.pack("<I", 2**31)
    path.write_bytes(bytes(data))
    return path


CASES = {
    "zip bomb": (zip_bomb, "zip bomb"),
    "huge shape": (huge_shape, "header declares shape (1000000000000,)"),
    "lying stored length": (lambda p: lying_length(p, zipfile.ZIP_STORED), "lying length"),
    "lying deflated length": (
        lambda p: lying_length(p, zipfile.ZIP_DEFLATED),
        "more than deflate can expand",
    ),
}


TORCH_CASES = {
    "torch deflated": (torch_with_inflating_member, "compression in a torch file"),
    "torch lying length": (torch_lying_length, "lying length"),
}


def test_hostile_files_are_refused_at_a_bounded_cost(tmp_path):
    reads, expected = [], []
    for number, (case, (build, words)) in enumerate(CASES.items()):
        path = build(tmp_path / f"hostile{number}.npz")
        for reader in ("npz", "shard", "meta"):
            reads.append((reader, path))
            expected.append((case, reader, path, words))
    for number, (case, (build, words)) in enumerate(TORCH_CASES.items()):
        path = build(tmp_path / f"params{number}.pt")
        reads.append(("torch", path))
        expected.append((case, "torch", path, words))
    # A control: an honest uncompressed 32 MiB array does grow the process by its size, so
    # the measurement sees what a read allocates.
    honest = tmp_path / "honest.npz"
    np.savez(honest, entropy=np.random.default_rng(0).random(4 * 2**20))
    reports = read_in_subprocess([*reads, ("npz", honest)])
    outcome, growth = reports.pop()
    assert outcome == "read" and growth >= 32 * 2**20, (outcome, growth)
    for (outcome, growth), (case, reader, path, words) in zip(reports, expected, strict=True):
        assert outcome.startswith("ValueError"), (case, reader, outcome)
        assert str(path) in outcome and words in outcome, (case, reader, outcome)
        assert growth < GROWTH_LIMIT, (case, reader, growth, path.stat().st_size)


def test_an_honest_npz_still_reads(tmp_path):
    """The same readers read the package's own kind of file (compressed, NaN-filled arrays
    compress about 1000:1 and stay within the default bound)."""
    from murano_widgets._files import read_npz

    arrays = {"entropy": np.full((256, 64), np.nan, np.float32), "ranks": np.arange(10)}
    np.savez_compressed(tmp_path / "good.npz", **arrays)
    read = read_npz(tmp_path / "good.npz", "the test file")
    assert read.keys() == arrays.keys()
    np.testing.assert_array_equal(read["ranks"], arrays["ranks"])
    # A caller that knows the file may hold less refuses it before decompressing.
    with pytest.raises(ValueError, match="more than it may hold"):
        read_npz(tmp_path / "good.npz", "the test file", max_bytes=1000)
