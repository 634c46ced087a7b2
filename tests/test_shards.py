"""MURANO_SHARD (tests/conftest.py): .ci/test runs the numeric suites' emulated CPU paths as two
processes at once; their shards must split whole files, miss none and repeat none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


def _shard(kept: list, dropped: list) -> tuple[list, list]:
    """tests/conftest.py's own, read from its file: ``import conftest`` may give another
    folder's conftest (tests/remote has one), whichever pytest imported first."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tests_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._shard(kept, dropped)


class Item:
    def __init__(self, path: str, name: str) -> None:
        self.path = Path(path)
        self.name = name


def _items() -> list[Item]:
    sizes = {"a.py": 7, "b.py": 1, "c.py": 4, "d.py": 4, "e.py": 2}
    return [Item(path, f"t{k}") for path, n in sizes.items() for k in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_shards_split_whole_files_and_cover_every_test_once(monkeypatch, n):
    items = _items()
    shards = []
    for k in range(1, n + 1):
        monkeypatch.setenv("MURANO_SHARD", f"{k}/{n}")
        kept, dropped = _shard(list(items), [])
        assert len(kept) + len(dropped) == len(items)
        shards.append(kept)
    every = [id(item) for shard in shards for item in shard]
    assert sorted(every) == sorted(id(item) for item in items)
    files = [{item.path for item in shard} for shard in shards]
    assert all(a.isdisjoint(b) for i, a in enumerate(files) for b in files[i + 1 :])
    # Largest file first to the emptiest shard: 18 tests in two shards are 9 and 9.
    if n == 2:
        assert sorted(len(shard) for shard in shards) == [9, 9]


@pytest.mark.parametrize("bad", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_malformed_shard_is_refused_with_what_was_given(monkeypatch, bad):
    monkeypatch.setenv("MURANO_SHARD", bad)
    with pytest.raises(pytest.UsageError, match=f"MURANO_SHARD.*{bad!r}"):
        _shard(_items(), [])


def test_the_real_numeric_shards_partition_the_numeric_suites():
    """Collected as .ci/test runs them: the two shards' test ids together are the whole."""

    def collect(shard: str | None) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k != "MURANO_SHARD"}
        if shard:
            env["MURANO_SHARD"] = shard
        return subprocess.Popen(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "numeric",
             "-p", "no:cacheprovider", str(TESTS)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=TESTS.parent,
        )  # fmt: skip

    def ids(run: subprocess.Popen) -> set[str]:
        out, err = run.communicate()
        assert run.returncode == 0, err
        return {line for line in out.splitlines() if "::" in line}

    # The three collections at once: each is mostly importing torch and the test modules
    # (55 s one after another on a 2-core machine).
    whole, one, two = (ids(run) for run in [collect(None), collect("1/2"), collect("2/2")])
    assert len(whole) > 100
    assert one.isdisjoint(two) and one | two == whole
