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
    TARGET_METRIC,
    metric_domain,
    missing_value,
)
from murano_widgets.results.result import LogitLensResult


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
        assert metric.per_target or metric.per_group or SECTIONS[metric.field].shape == "cell"
    for name in REDUCED_FIELDS:
        assert SECTIONS[name].shape == "cell", name
    assert set(REDUCED_FIELDS) == {
        "entropy",
        "final_token_probs",
        "final_token_ranks",
        "kl_to_final",
        "logit_diff",
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


def test_the_target_metric_reads_one_tracked_token_at_a_time():
    # Every metric but the tracked token's reads an [L, T] section; that one an [L, T, n]
    # section of which the widget's `target` picks one, and its label names the token.
    per_target = [m.name for m in METRICS.values() if m.per_target]
    assert per_target == [TARGET_METRIC] == ["target"]
    metric = METRICS[TARGET_METRIC]
    assert SECTIONS[metric.field].shape == "cell_target" and metric.unit == "probability"
    for other in METRICS.values():
        if other.per_group:  # a token group's: test_the_group_metric_reads_one_group_at_a_time
            continue
        assert other.per_target == (other.target_label is not None), other.name
        assert SECTIONS[other.field].shape == ("cell_target" if other.per_target else "cell")
        assert other.as_json()["per_target"] is other.per_target
        assert other.label_for(" Tokyo") == (
            other.label if not other.per_target else "Probability of “␣Tokyo”"
        )
    assert metric.label_for(None) == metric.label == "Probability of a tracked token"
    # The token as text, shown as the package shows tokens: "{target}" inside it stays text.
    assert metric.label_for("{target}\n") == "Probability of “{target}↵”"


def test_every_view_sends_its_metrics_from_the_one_registry():
    """The heatmap's, the diff's and a data set's payloads send their view's entries of the one
    registry (``VIEWS``), whole and in order; a data set's summary has every column they read;
    and each reduced metric's field is a plain cell of the result, its section made from it."""
    from murano_widgets import compare, lens_dataset, load_demo_model, run_logit_lens
    from murano_widgets.metrics import VIEWS
    from murano_widgets.payload.diff import diff_payload
    from murano_widgets.payload.lens import LensPayload
    from murano_widgets.results.result import SPECS
    from murano_widgets.widgets.dataset import LensDatasetWidget

    demo = load_demo_model()
    prompts = ["The capital of France is", "Monday, Tuesday,"]
    # With answers and foils, so that every metric exists (the logit difference needs foils; the
    # group metric, groups: b has none, so the diff shows no group's change beside the registry's).
    pair = {"answers": [" Paris", " Wednesday"], "foils": [" Rome", " Thursday"]}
    a = run_logit_lens(demo, prompts, groups={"paris": "Paris"}, **pair)
    b = run_logit_lens(demo, prompts, layers=[0, 2, 5], **pair)

    def names(sent):
        return [entry["name"] for entry in sent]

    assert names(LensPayload.from_result(a).meta["metrics"]) == list(VIEWS["lens"])
    assert names(diff_payload(compare(a, b))[0]["metrics"]) == list(VIEWS["diff"])
    data = lens_dataset(
        demo, prompts, pair["answers"], foils=pair["foils"], decompose=True, progress=False
    )
    chart = LensDatasetWidget(data, n_boot=50, seed=0).chart
    sent = chart._meta["metrics"]
    assert sent == [metric.as_json() for metric in VIEWS["dataset"].values()]
    summary = data.summary(n_boot=50, seed=0)
    for entry in sent:
        for column in [entry["field"], *(entry["interval"] or [])]:
            assert column in summary.columns, column
            assert column in chart._meta["sets"][0]["summary"], column
    for metric in VIEWS["lens"].values():
        if metric.reduced:
            spec = SPECS[metric.field]
            assert spec.role == "tensor" and spec.axes == ("layer", "prompt", "seq"), metric.name
            assert SECTIONS[metric.field].kind == metric.unit and SECTIONS[metric.field].reduced
    assert {m.field for m in VIEWS["lens"].values() if m.reduced} == set(REDUCED_FIELDS)


def test_the_group_metric_reads_one_group_at_a_time():
    # One metric reads an [L, T, n_groups] section of which the widget's `group` picks one; its
    # label names the group as given (a name, not a token: no space marks).
    per_group = [m.name for m in METRICS.values() if m.per_group]
    assert per_group == ["group"]
    metric = METRICS["group"]
    assert SECTIONS[metric.field].shape == "cell_group" and metric.unit == "probability"
    assert metric.as_json()["per_group"] is True and metric.as_json()["per_target"] is False
    assert metric.needs == "groups" and not metric.reduced
    assert metric.label_for(" Tokyo <b>") == "Probability of group “ Tokyo <b>”"
    assert all("per_group" not in m.as_json() for m in METRICS.values() if not m.per_group)
