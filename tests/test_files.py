"""Every file the package reads fails with one clear error; every save is all-or-nothing.

Readers are fed damaged files (empty, cut short, garbage, not UTF-8, the wrong JSON type, wrong
shapes, pickles that would run code) and must raise a ``ValueError`` that names the file, with
nothing in the file ever run. Writers are interrupted at every file-system step a save makes
(counted by a first run that only watches), before and after the step, and the folder must then
hold exactly the previous save or the new one, byte for byte, and nothing else.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import secrets
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from murano_widgets.dataset.lens_dataset import LensDataset
from murano_widgets.export import write_html
from murano_widgets.lenses.tuned import TunedLens

# ---------------------------------------------------------------------------------------------
# Small objects to save


def small_lens(seed: int = 0, layers: int = 3, width: int = 4, state: bool = False) -> TunedLens:
    generator = torch.Generator().manual_seed(seed)
    lens = TunedLens(
        torch.randn(layers, width, width, generator=generator) * 0.1,
        torch.randn(layers, width, generator=generator) * 0.1,
        {"base_model_name_or_path": f"small-{seed}"},
        {"note": f"lens {seed}"},
    )
    if state:
        lens.training_state = {
            "run": {"seed": seed},
            "step": 2,
            "seconds": 1.5,
            "losses": [[0.5, 0.25]],
            "optimizer": None,
        }
    return lens


def small_dataset(seed: int = 0, n: int = 5) -> LensDataset:
    rng = np.random.default_rng(seed)
    shape = (3, n)  # [n_layers, n_prompts]
    return LensDataset(
        prompts=[f"prompt {i} of {seed}" for i in range(n)],
        layers=[0, 1, 2],
        answers={"answer": [[f" a{i}"] if i % 3 else None for i in range(n)]},
        answer_probs={"answer": rng.random(shape).astype(np.float32)},
        answer_ranks={"answer": rng.integers(0, 5, shape)},
        entropy=rng.random(shape).astype(np.float32),
        kl_to_final=rng.random(shape).astype(np.float32),
        top1_tokens=rng.integers(0, 2, shape),
        token_strings={0: " x", 1: " y"},
        provenance={"model_name": "synthetic", "seed": seed},
        named_sets=False,
    )


def assert_same_lens(loaded: TunedLens, saved: TunedLens) -> None:
    assert torch.equal(loaded.weight, saved.weight) and torch.equal(loaded.bias, saved.bias)
    assert loaded.config == saved.config
    assert loaded.training_state == saved.training_state


def assert_same_dataset(loaded: LensDataset, saved: LensDataset) -> None:
    assert loaded.prompts == saved.prompts and loaded.answers == saved.answers
    np.testing.assert_array_equal(loaded.entropy, saved.entropy)
    np.testing.assert_array_equal(loaded.answer_ranks["answer"], saved.answer_ranks["answer"])


def listing(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` (hidden ones included) with its bytes."""
    if not folder.exists():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# ---------------------------------------------------------------------------------------------
# Payloads that would run code if they were ever unpickled


class RunsCode:
    """Unpickling this calls ``os.system("touch <marker>")``: the marker shows it ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def torch_bytes(value, *, zipped: bool = True) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer, _use_new_zipfile_serialization=zipped)
    return buffer.getvalue()


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), "a file's pickle ran code"


def test_the_payload_really_runs_code_when_unpickled_unsafely(tmp_path):
    """The check that makes the refusals below mean something: the payload is live."""
    ran = tmp_path / "ran"
    pickle.loads(pickle.dumps(RunsCode(ran)))
    assert ran.exists()


# ---------------------------------------------------------------------------------------------
# Readers


def refused(call: Callable[[], object], path: Path, *words: str) -> str:
    """Runs ``call``, which must raise a ValueError naming ``path`` and saying ``words``."""
    with pytest.raises(ValueError) as raised:
        call()
    assert type(raised.value) is ValueError, f"a raw {type(raised.value).__name__} got through"
    message = str(raised.value)
    assert str(path) in message, f"the message does not name the file: {message}"
    for word in words:
        assert word in message, f"{word!r} not in: {message}"
    return message


def cuts(data: bytes) -> list[int]:
    """Lengths to cut a file to: a few bytes, a quarter, a half, all but a little."""
    return sorted({10, 40, len(data) // 4, len(data) // 2, len(data) - 20, len(data) - 2})


@pytest.fixture
def lens_folder(tmp_path):
    return small_lens(state=True).save(tmp_path / "lens")


@pytest.mark.parametrize("name", ["config.json", "provenance.json"])
def test_tuned_lens_json_files_that_are_damaged(lens_folder, name, marker):
    path = lens_folder / name
    good = path.read_bytes()
    damaged = {
        b"": "empty",
        b"  \n": "empty",
        b"\xff\xfe garbage \x00\x81": "not UTF-8",
        good.replace(b'"', b'"\xe9', 1): "not UTF-8",
        b"[1, 2, 3]": "must hold a JSON object",
        b'"a string"': "must hold a JSON object",
        b"null": "must hold a JSON object",
        b"[" * 100_000: "not valid JSON",
    }
    damaged |= {good[:cut]: "not valid JSON" for cut in cuts(good)}
    for data, words in damaged.items():
        path.write_bytes(data)
        refused(lambda: TunedLens.load(lens_folder, None), path, words)


def test_tuned_lens_config_with_wrong_field_types(lens_folder):
    path = lens_folder / "config.json"
    config = json.loads(path.read_text())
    for key, value in [
        ("d_model", "4"),
        ("d_model", 0),
        ("num_hidden_layers", True),
        ("bias", "yes"),
        ("base_model_name_or_path", ["a"]),
        ("lens_type", "logit_lens"),
    ]:
        path.write_text(json.dumps({**config, key: value}))
        refused(lambda: TunedLens.load(lens_folder, None), path, repr(value))


@pytest.mark.parametrize("name", ["params.pt", "training_state.pt"])
def test_tuned_lens_torch_files_that_are_damaged(lens_folder, name, marker):
    path = lens_folder / name
    good = path.read_bytes()
    damaged = {
        b"": "empty",
        b"garbage bytes, not a checkpoint": "not a file written by torch.save",
        b"PK\x03\x04 a zip header and then nothing": "truncated or damaged",
        b"\x80\x02 a pickle header and then garbage": "refused",
    }
    damaged |= {good[:cut]: "truncated or damaged" for cut in cuts(good)}
    for data, words in damaged.items():
        path.write_bytes(data)
        refused(lambda: TunedLens.load(lens_folder, None), path, words)


@pytest.mark.parametrize("name", ["params.pt", "training_state.pt"])
@pytest.mark.parametrize(
    "payload",
    [
        "raw pickle",
        "raw pickle, protocol 0",
        "torch zip",
        "torch zip, inside a dict",
        "torch legacy format",
    ],
)
def test_pickles_that_would_run_code_are_refused_and_never_run(lens_folder, name, payload, marker):
    evil = RunsCode(marker)
    data = {
        "raw pickle": lambda: pickle.dumps(evil, protocol=2),
        "raw pickle, protocol 0": lambda: pickle.dumps(evil, protocol=0),
        "torch zip": lambda: torch_bytes(evil),
        "torch zip, inside a dict": lambda: torch_bytes({"0.weight": evil, "step": 1}),
        "torch legacy format": lambda: torch_bytes({"0.weight": evil}, zipped=False),
    }[payload]()
    path = lens_folder / name
    path.write_bytes(data)
    message = refused(lambda: TunedLens.load(lens_folder, None), path, "refused")
    assert "run" in message
    assert not marker.exists()


def test_tuned_lens_params_with_wrong_keys_shapes_or_values(lens_folder):
    path = lens_folder / "params.pt"
    good = torch.load(path, weights_only=True)
    cases = {
        "a tensor": (torch.zeros(3, 4, 4), "must hold a state dict"),
        "a list": ([torch.zeros(4, 4)], "must hold a state dict"),
        "missing key": ({k: v for k, v in good.items() if k != "2.bias"}, "missing ['2.bias']"),
        "extra key": ({**good, 7: torch.zeros(1)}, "unexpected [7]"),
        "wrong shape": ({**good, "1.weight": torch.zeros(4, 5)}, "'1.weight' must be [4, 4]"),
        "not a tensor": ({**good, "0.bias": [0.0] * 4}, "'0.bias' must be [4]"),
        "integers": ({**good, "0.weight": torch.zeros(4, 4, dtype=torch.int64)}, "floating"),
        "NaN": ({**good, "2.weight": torch.full((4, 4), float("nan"))}, "NaN"),
    }
    for value, words in cases.values():
        torch.save(value, path)
        refused(lambda: TunedLens.load(lens_folder, None), path, words)


def test_training_state_of_the_wrong_shape(lens_folder):
    path = lens_folder / "training_state.pt"
    for value, words in [
        ([1, 2], "must hold a dict"),
        ({"run": {}, "step": 1, "seconds": 0.0}, "'losses' is missing"),
        ({"run": {}, "step": "1", "seconds": 0.0, "losses": []}, "'step' is str"),
        ({"run": {}, "step": -1, "seconds": 0.0, "losses": []}, "'step' must be at least 0"),
    ]:
        torch.save(value, path)
        refused(lambda: TunedLens.load(lens_folder, None), path, words)


@pytest.fixture(scope="module")
def demo_model():
    from murano_widgets import load_demo_model

    return load_demo_model()


def test_a_lens_folder_for_another_model_is_named(demo_model, tmp_path):
    good = TunedLens.identity(demo_model).save(tmp_path / "good")
    assert TunedLens.load(good, demo_model).d_model == 128
    narrow = small_lens(layers=demo_model.n_layers, width=8).save(tmp_path / "narrow")
    refused(lambda: TunedLens.load(narrow, demo_model), narrow, "d_model=8", "hidden size 128")
    deep = small_lens(layers=9, width=128).save(tmp_path / "deep")
    refused(lambda: TunedLens.load(deep, demo_model), deep, "9 layer translators")


@pytest.fixture
def dataset_files(tmp_path):
    small_dataset().save(tmp_path / "data")
    return tmp_path / "data.npz", tmp_path / "data.json"


def rewrite_pair(npz: Path, sidecar: Path, arrays: dict[str, np.ndarray]) -> None:
    """Writes new arrays and records their sha256 in the sidecar, as a consistent pair."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    npz.write_bytes(buffer.getvalue())
    fields = json.loads(sidecar.read_text(encoding="utf-8"))
    fields["npz_sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
    sidecar.write_text(json.dumps(fields), encoding="utf-8")


def test_dataset_npz_that_is_damaged(dataset_files, marker):
    npz, sidecar = dataset_files
    good = npz.read_bytes()
    damaged = {
        b"": "empty",
        b"garbage, not an archive": "refused",
        pickle.dumps(RunsCode(marker)): "refused",
        b"PK\x03\x04 and nothing": "truncated or damaged",
    }
    damaged |= {good[:cut]: "truncated or damaged" for cut in cuts(good)}
    for data, words in damaged.items():
        npz.write_bytes(data)
        refused(lambda: LensDataset.load(npz), npz, words)
    flipped = bytearray(good)
    flipped[len(good) // 3] ^= 0xFF
    npz.write_bytes(bytes(flipped))
    refused(lambda: LensDataset.load(npz), npz)
    # Arrays of Python objects: numpy would unpickle them.
    arrays = {"entropy": np.array([RunsCode(marker)], dtype=object)}
    rewrite_pair(npz, sidecar, arrays)
    refused(lambda: LensDataset.load(npz), npz, "refused")
    # One .npy array where an archive belongs.
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3))
    npz.write_bytes(buffer.getvalue())
    refused(lambda: LensDataset.load(npz), npz, "single .npy array")


def test_dataset_npz_with_wrong_shapes_or_kinds(dataset_files):
    npz, sidecar = dataset_files
    with np.load(npz) as data:
        good = {name: data[name] for name in data.files}
    for change, words in [
        ({"entropy": good["entropy"][:2]}, "entropy has shape (2, 3)"),
        ({"top1": good["top1"].astype(np.float32)}, "top1 has shape"),
    ]:
        rewrite_pair(npz, sidecar, {**good, **change})
        refused(lambda: LensDataset.load(npz), npz, words)
    rewrite_pair(npz, sidecar, {k: v for k, v in good.items() if k != "rank_0"})
    refused(lambda: LensDataset.load(npz), npz, "lacks the array 'rank_0'")


def test_dataset_sidecar_that_is_damaged(dataset_files):
    npz, sidecar = dataset_files
    good = sidecar.read_bytes()
    damaged = {
        b"": "empty",
        good.replace(b"prompt 0", b"prompt \xff", 1): "not UTF-8",
        b"[]": "must hold a JSON object",
    }
    damaged |= {good[:cut]: "not valid JSON" for cut in cuts(good)}
    for data, words in damaged.items():
        sidecar.write_bytes(data)
        refused(lambda: LensDataset.load(npz), sidecar, words)
    fields = json.loads(good)
    for key, value in [
        ("prompts", "one prompt"),
        ("prompts", [1, 2, 3, 4, 5]),
        ("layers", [0, True, 2]),
        ("layers", "all"),
        ("answer_sets", ["answer", "answer"]),
        ("answers", {"other": []}),
        ("answers", {"answer": [[" a"]] * 2}),
        ("answers", {"answer": [7] * 5}),
        ("named_sets", "no"),
        ("token_strings", {"zero": " x"}),
        ("token_strings", {"0": 5}),
        ("provenance", None),
        ("npz_sha256", 12),
    ]:
        sidecar.write_text(json.dumps({**fields, key: value}), encoding="utf-8")
        refused(lambda: LensDataset.load(npz), sidecar, "answer" if key == "answers" else key)
    sidecar.write_text(json.dumps({k: v for k, v in fields.items() if k != "layers"}))
    refused(lambda: LensDataset.load(npz), sidecar, "lacks 'layers'")


# ---------------------------------------------------------------------------------------------
# Writers, interrupted at every step

SPIED = [
    (os, "mkdir"),
    (os, "rmdir"),
    (os, "open"),
    (os, "replace"),
    (os, "rename"),
    (os, "link"),
    (os, "unlink"),
    (os, "fsync"),
    (torch, "save"),
    (np, "savez_compressed"),
    (Path, "write_text"),
    (Path, "write_bytes"),
]
"""The steps a save may take: every file-system call that creates, moves, removes or flushes a
file, and the calls that write a file's contents."""


class Interrupt:
    """Counts the steps a save takes; interrupts it (Ctrl-C) before or after step ``at``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: int = 0, after: bool = False):
        self.calls: list[str] = []
        self.at, self.after = at, after
        for owner, name in SPIED:
            monkeypatch.setattr(owner, name, self.spy(getattr(owner, name), name))

    def spy(self, real: Callable, name: str) -> Callable:
        def step(*args, **kwargs):
            self.calls.append(name)
            hit = len(self.calls) == self.at
            if hit and not self.after:
                raise KeyboardInterrupt(f"before step {self.at} ({name})")
            try:
                result = real(*args, **kwargs)
            except Exception:
                if hit:  # the step failed by itself (mkdir of an existing folder): still stop
                    raise KeyboardInterrupt(f"after step {self.at} ({name})") from None
                raise
            if hit:
                if name == "open":
                    os.close(result)  # the caller never gets the descriptor
                raise KeyboardInterrupt(f"after step {self.at} ({name})")
            return result

        return step


def interrupt_everywhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: Callable[[Path], object] | None,
    save: Callable[[Path], object],
    check_old: Callable[[Path], None],
    check_new: Callable[[Path], None],
    decoys: list[str] = (),
) -> None:
    """Saves, interrupting the save before and after each of its steps in turn.

    ``first`` makes the previous save (or nothing if ``None``); ``save`` the new one, into a
    folder. Files named in ``decoys`` are the user's and hold text the test wrote. After every
    interruption the folder must be byte for byte the folder of an uninterrupted previous save
    or of an uninterrupted new one, and load as that.
    """

    def fresh(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for decoy in decoys:
            (folder / decoy).write_text(f"the user's own {decoy}")
        if first is not None:
            first(folder)
        return folder

    old = listing(fresh("reference-old"))
    new_folder = fresh("reference-new")
    save(new_folder)
    new = listing(new_folder)
    assert old != new
    watched = fresh("count")
    with monkeypatch.context() as patch:
        steps = Interrupt(patch)
        save(watched)
    assert listing(watched) == new
    assert "replace" in steps.calls or "rename" in steps.calls, steps.calls
    outcomes = []
    for at in range(1, len(steps.calls) + 1):
        for after in (False, True):
            folder = fresh(f"at-{at}-{'after' if after else 'before'}")
            with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
                Interrupt(patch, at, after)
                save(folder)
            found = listing(folder)
            where = f"interrupted {'after' if after else 'before'} step {at} of {steps.calls}"
            assert found in (old, new), f"{where}: the folder holds {sorted(found)}"
            if found == old:
                check_old(folder)
            else:
                check_new(folder)
            outcomes.append(found == new)
    # An interrupt anywhere before the save returns may roll it back; one in the first step
    # always does.
    assert not outcomes[0]


@pytest.mark.parametrize("old_state, new_state", [(True, False), (False, True)])
def test_tuned_lens_save_interrupted_at_every_step(tmp_path, monkeypatch, old_state, new_state):
    old, new = small_lens(1, state=old_state), small_lens(2, state=new_state)
    interrupt_everywhere(
        tmp_path,
        monkeypatch,
        lambda folder: old.save(folder),
        lambda folder: new.save(folder),
        lambda folder: assert_same_lens(TunedLens.load(folder, None), old),
        lambda folder: assert_same_lens(TunedLens.load(folder, None), new),
        decoys=["params.pt.part", ".config.json.tmp", "config.json~", ".params.pt.bak"],
    )


def test_first_tuned_lens_save_interrupted_leaves_no_file(tmp_path, monkeypatch):
    new = small_lens(3, state=True)

    def nothing_there(folder: Path) -> None:
        with pytest.raises(FileNotFoundError):
            TunedLens.load(folder, None)

    interrupt_everywhere(
        tmp_path,
        monkeypatch,
        None,
        lambda folder: new.save(folder),
        nothing_there,
        lambda folder: assert_same_lens(TunedLens.load(folder, None), new),
    )


@pytest.mark.parametrize("first", [True, False])
def test_dataset_save_interrupted_at_every_step(tmp_path, monkeypatch, first):
    old, new = small_dataset(1, n=4), small_dataset(2, n=6)

    def no_dataset(folder: Path) -> None:
        with pytest.raises(FileNotFoundError):
            LensDataset.load(folder / "d")

    interrupt_everywhere(
        tmp_path,
        monkeypatch,
        (lambda folder: old.save(folder / "d")) if first else None,
        lambda folder: new.save(folder / "d"),
        (lambda folder: assert_same_dataset(LensDataset.load(folder / "d"), old))
        if first
        else no_dataset,
        lambda folder: assert_same_dataset(LensDataset.load(folder / "d"), new),
        decoys=["d.npz.part", ".d.json.tmp", "d.json.tmp"],
    )


@pytest.mark.parametrize("first", [True, False])
def test_write_html_interrupted_at_every_step(tmp_path, monkeypatch, first):
    def same_text(text: str | None) -> Callable[[Path], None]:
        def check(folder: Path) -> None:
            path = folder / "lens.html"
            assert (path.read_text(encoding="utf-8") if path.exists() else None) == text

        return check

    interrupt_everywhere(
        tmp_path,
        monkeypatch,
        (lambda folder: write_html(folder / "lens.html", "<p>old page</p>")) if first else None,
        lambda folder: write_html(folder / "lens.html", "<p>new page — ünïcode</p>"),
        same_text("<p>old page</p>" if first else None),
        same_text("<p>new page — ünïcode</p>"),
        decoys=["lens.html.part", ".lens.html.tmp", ".lens.html.part"],
    )


def test_a_failing_content_writer_leaves_the_old_save(tmp_path, monkeypatch):
    """An ordinary exception (a full disk) mid-write, not only an interrupt, rolls back."""
    old = small_lens(1, state=True)
    folder = old.save(tmp_path / "lens")
    before = listing(folder)

    def disk_full(value, path, *args, **kwargs):
        Path(path).write_bytes(b"half a checkpoint")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        small_lens(2).save(folder)
    monkeypatch.undo()
    assert listing(folder) == before
    assert_same_lens(TunedLens.load(folder, None), old)


# ---------------------------------------------------------------------------------------------
# Files of the user's that look like temporaries


def test_files_with_the_names_a_save_would_use_are_never_touched(tmp_path, monkeypatch):
    """A save creates files under names it picks; if the user has files under exactly those
    names, the save must pick others and leave the user's files as they were."""
    counter = iter(range(10**6))
    monkeypatch.setattr(secrets, "token_hex", lambda n=None: f"{next(counter):0{2 * (n or 16)}x}")

    def names_used(folder: Path, save: Callable[[Path], object]) -> set[str]:
        """The names the save creates directly in ``folder``, whatever kind of file."""
        created: set[str] = set()
        real = {name: getattr(os, name) for name in ("open", "mkdir", "link")}

        def note(path) -> None:
            if Path(path).parent == folder:
                created.add(Path(path).name)

        def watch_open(path, flags, *args, **kwargs):
            if flags & os.O_CREAT:
                note(path)
            return real["open"](path, flags, *args, **kwargs)

        def watch_mkdir(path, *args, **kwargs):
            note(path)
            return real["mkdir"](path, *args, **kwargs)

        def watch_link(source, target, *args, **kwargs):
            note(target)
            return real["link"](source, target, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(os, "open", watch_open)
            patch.setattr(os, "mkdir", watch_mkdir)
            patch.setattr(os, "link", watch_link)
            save(folder)
        return created

    writers = {
        "lens": lambda folder: small_lens(2, state=True).save(folder),
        "data": lambda folder: small_dataset(2).save(folder / "d"),
        "html": lambda folder: write_html(folder / "lens.html", "<p>new</p>"),
    }
    firsts = {
        "lens": lambda folder: small_lens(1).save(folder),
        "data": lambda folder: small_dataset(1).save(folder / "d"),
        "html": lambda folder: write_html(folder / "lens.html", "<p>old</p>"),
    }
    for kind, save in writers.items():
        probe = tmp_path / f"{kind}-probe"
        probe.mkdir()
        firsts[kind](probe)
        counter = iter(range(10**6))  # the same names again in the next folder
        used = names_used(probe, save) - set(listing(probe))
        assert used, "the save made no temporary or backup file under a name of its own"
        folder = tmp_path / kind
        folder.mkdir()
        firsts[kind](folder)
        for name in used:
            (folder / name).write_text(f"the user's {name}")
        before = {name: data for name, data in listing(folder).items() if name in used}
        counter = iter(range(10**6))
        save(folder)
        after = listing(folder)
        assert {name: after.get(name) for name in used} == before
        assert set(after) - set(before) == set(listing(probe))
