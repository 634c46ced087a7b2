"""The overview's pooling fixture (js/tests/fixtures/overview_pool.json) is what numpy writes today."""

from __future__ import annotations

from overview_pool_fixture import FIXTURE, render


def test_the_overview_pool_fixture_is_fresh():
    assert FIXTURE.read_text(encoding="utf-8") == render(), (
        "js/tests/fixtures/overview_pool.json is stale: run "
        "`.venv/bin/python tests/overview_pool_fixture.py` and `cd js && npm test`"
    )
