"""Shared fixtures: tiny offline models of several architectures, built once per session."""

from __future__ import annotations

import os

import pytest
from tiny_models import ARCHITECTURES, build_tiny_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# Suites that need a venv of their own (nnsight 0.8 with a local NDIF server; the real
# tuned-lens package; the real TransformerLens; Colab's runtime): .ci/remote.sh, .ci/tuned_lens.sh,
# .ci/transformer_lens.sh and .ci/colab.sh run them with -m NAME.
SEPARATE_SUITES = {
    "remote": "remote",
    "tuned_lens_interop": "tuned_lens_interop",
    "transformer_lens_interop": "transformer_lens_interop",
    "docs_site": "docs",  # the built documentation site: .ci/docs.sh
    "colab": "colab",  # in a venv frozen to Google Colab's runtime: .ci/colab.sh
}


# The suites that compare numbers with an independent computation or with each other: CI runs
# them once more on each emulated CPU kernel (.ci/test, MURANO_CPU_PATHS), -m numeric.
NUMERIC = {
    "test_answers.py",
    "test_attribution.py",
    "test_backend_contract.py",
    "test_compare.py",
    "test_dataset.py",
    "test_dataset_contributions.py",
    "test_dataset_stream.py",
    "test_generation.py",
    "test_golden_payloads.py",
    "test_jacobian_lens.py",
    "test_lenses.py",
    "test_logit_lens.py",
    "test_logit_transforms.py",
    "test_live.py",
    "test_metrics.py",
    "test_nnsight_backend.py",
    "test_non_finite.py",
    "test_patching.py",
    "test_reductions.py",
    "test_side_by_side.py",
    "test_tuned_lens.py",
}


def pytest_collection_modifyitems(config, items):
    """Marks and selections that follow from where a test lives.

    Everything under tests/browser needs Chromium, so `pytest -m "not browser"` runs without
    one; the files of ``NUMERIC`` are marked numeric. The separate suites are left out unless their marker is asked for with -m.
    """
    chosen = config.getoption("markexpr") or ""
    kept, dropped = [], []
    left_out: dict[str, int] = {}
    for item in items:
        parts = item.path.parts
        if "browser" in parts or "jupyterlab" in item.keywords:
            item.add_marker(pytest.mark.browser)
        if item.path.name in NUMERIC:
            item.add_marker(pytest.mark.numeric)
        suite = next(
            (marker for folder, marker in SEPARATE_SUITES.items() if folder in parts), None
        )
        if suite is not None:
            item.add_marker(getattr(pytest.mark, suite))
            if suite not in chosen:
                dropped.append(item)
                left_out[suite] = left_out.get(suite, 0) + 1
                continue
        kept.append(item)
    config.stash[LEFT_OUT] = left_out
    kept, dropped = _shard(kept, dropped)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# Where each separate suite runs, for the line that says what "deselected" left out.
SUITE_SCRIPTS = {
    "remote": ".ci/remote.sh",
    "tuned_lens_interop": ".ci/tuned_lens.sh",
    "transformer_lens_interop": ".ci/transformer_lens.sh",
    "docs": ".ci/docs.sh",
    "colab": ".ci/colab.sh",
}
# Every separate suite names the script that runs it (the summary line below reads it).
assert set(SEPARATE_SUITES.values()) <= set(SUITE_SCRIPTS), "a separate suite without its script"
LEFT_OUT = pytest.StashKey[dict]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Says what pytest's "N deselected" holds: the suites that need a venv or a site of their
    own, which .ci/run runs with their scripts (a bare count of deselected tests reads as tests
    that were lost)."""
    left_out = config.stash.get(LEFT_OUT, {})
    if left_out:
        parts = ", ".join(
            f"{count} {suite} ({SUITE_SCRIPTS[suite]})" for suite, count in left_out.items()
        )
        terminalreporter.write_line(
            f"deselected here, by design: {parts}; they need a venv (or a built site) of their "
            "own, and `bash .ci/run` runs each with its script"
        )


def _shard(kept: list, dropped: list) -> tuple[list, list]:
    """``MURANO_SHARD=K/N`` keeps the K-th of N shards (K from 1), whole files each: .ci/test
    runs the numeric suites' emulated CPU paths as two processes of one torch thread at once,
    on CI's 2 cores. Files go to the shard with the fewest tests so far, the largest file
    first: every process collects the same files, so the shards are disjoint and cover all."""
    shard = os.environ.get("MURANO_SHARD", "")
    if not shard:
        return kept, dropped
    try:
        k, n = (int(part) for part in shard.split("/"))
        if not 1 <= k <= n:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(
            f"MURANO_SHARD: expected K/N with 1 <= K <= N, got {shard!r}"
        ) from None
    counts: dict[str, int] = {}
    for item in kept:
        counts[str(item.path)] = counts.get(str(item.path), 0) + 1
    load, owner = [0] * n, {}
    for path in sorted(counts, key=lambda path: (-counts[path], path)):
        owner[path] = min(range(n), key=load.__getitem__)
        load[owner[path]] += counts[path]
    mine = [item for item in kept if owner[str(item.path)] == k - 1]
    return mine, dropped + [item for item in kept if owner[str(item.path)] != k - 1]


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory):
    """A folder per architecture with a saved tiny model and tokenizer."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {arch: build_tiny_model(arch, root / arch) for arch in ARCHITECTURES}


@pytest.fixture(scope="session")
def load_tiny(tiny_model_dirs):
    """Loads a tiny model through the public path (a local folder), cached per architecture."""
    from murano_widgets import MuranoModel

    cache = {}

    def load(arch: str):
        if arch not in cache:
            cache[arch] = MuranoModel(tiny_model_dirs[arch])
        return cache[arch]

    return load


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole session: Playwright's sync API allows one per thread."""
    from chromium import launch_chromium
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()
