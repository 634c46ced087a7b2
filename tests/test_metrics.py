"""The metric registry: every metric's field is the result's and its payload section's, and each
colour scale's domain is the one the README and the legend promise."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from murano_widgets.metrics import (
    METRICS,
    REDUCED_FIELDS,
    RESULT_FIELDS,
    SECTIONS,
    metric_domain,
    missing_value,
)
from murano_widgets.result import LogitLensResult


def test_the_registrys_field_list_is_the_results():
    # Its fields, and the answer shortcuts it offers as properties (the first set's).
    fields = {field.name for field in dataclasses.fields(LogitLensResult)} | {
        name for name, value in vars(LogitLensResult).items() if isinstance(value, property)
    }
    for name in RESULT_FIELDS:
        assert name in fields, f"the registry sends {name}, which LogitLensResult lacks"
        assert name in SECTIONS, name
    for metric in METRICS.values():
        assert metric.field in fields and metric.field in SECTIONS, metric.name
    for name in REDUCED_FIELDS:
        assert SECTIONS[name].shape == "cell", name
    assert set(REDUCED_FIELDS) == {
        "entropy",
        "final_token_probs",
        "final_token_ranks",
        "kl_to_final",
    }


def test_a_missing_cell_holds_nan_or_minus_one_by_kind():
    assert missing_value(SECTIONS["final_token_ranks"]) == -1
    assert missing_value(SECTIONS["predicted_tokens"]) == -1
    assert math.isnan(missing_value(SECTIONS["entropy"]))
    assert math.isnan(missing_value(SECTIONS["final_token_probs"]))


@pytest.mark.parametrize(
    ("name", "values", "max_entropy", "expected"),
    [
        ("prob", [0.2, 0.9], None, (0.0, 1.0)),
        ("entropy", [1.0, 3.0], math.log2(50257), (0.0, math.log2(50257))),
        ("kl", [0.013, np.nan], None, (0.0, 0.02)),  # 1, 2 or 5 times a power of ten
        ("kl", [3.2], None, (0.0, 5.0)),
        ("kl", [np.nan], None, (0.0, 1.0)),
        ("final_rank", [0, 3], None, (0.0, 9.0)),  # at least 9
        ("final_rank", [0, 120], None, (0.0, 999.0)),  # a power of ten less one
    ],
)
def test_each_domain_is_the_promised_one(name, values, max_entropy, expected):
    domain = metric_domain(METRICS[name], np.asarray(values, dtype=float), max_entropy)
    assert domain == pytest.approx(expected)
