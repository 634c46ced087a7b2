"""The golden payloads the JS tests read (js/tests/golden/) are what the encoders write today.

Each widget's payload for a few small results is written by ``tests/golden_payloads.py`` and read
by ``node --test`` (js/tests/golden.test.mjs and the tests built on those files). A change to a
payload that forgets the front end fails here first: regenerate the files, then make the JS
tests agree.
"""

from __future__ import annotations

import json

import pytest
from golden_payloads import GOLDEN_DIR, cases, render

REGENERATE = (
    "run `.venv/bin/python tests/golden_payloads.py` and check the front end (cd js && npm test)"
)


@pytest.fixture(scope="module")
def built():
    return cases()


def test_every_golden_file_is_what_the_encoders_write(built):
    stale = []
    for name, case in built.items():
        path = GOLDEN_DIR / f"{name}.json"
        if not path.exists() or path.read_bytes() != render(case).encode("utf-8"):
            stale.append(path.name)
    assert not stale, f"golden payloads out of date: {', '.join(stale)}; {REGENERATE}"


def test_no_golden_file_is_left_over(built):
    extra = sorted(p.name for p in GOLDEN_DIR.glob("*.json") if p.stem not in built)
    assert not extra, f"golden files no case writes: {', '.join(extra)}; {REGENERATE}"


def test_each_widget_has_cases_with_meta_sections_and_expected(built):
    for widget in ("lens", "lenses", "diff", "dataset"):
        names = [n for n in built if n.startswith(f"{widget}_")]
        assert len(names) >= 2, widget
        for name in names:
            case = built[name]
            assert set(case) == {"meta", "sections", "expected"}, name
            assert case["sections"], name
            # Plain JSON (no NaN): the front end parses it with JSON.parse.
            json.loads(render(case))
