"""Quality gate with wildcards, the plateau of a metric history, the monitor and chart metric."""

from __future__ import annotations

import math
import sys

import pytest

from gate.estimate.settings import Returns
from gate.reconcile.quality import (
    ChartMetric,
    Monitor,
    better,
    chart_metric,
    evaluate_gate,
    matching,
    monitor_for,
    plateau_epoch,
)
from gate.spec.experiment import Condition
from tests.conftest import make_spec

F1 = Condition(metric="val_macro_f1", op=">=", value=0.8)
RECALL = Condition(metric="val_recall_class_*", op=">=", value=0.65)


def test_a_wildcard_matches_every_metric_with_any_text_for_the_star():
    keys = ["val_recall_class_0", "val_recall_class_10", "val_recall", "xval_recall_class_1"]
    assert matching("val_recall_class_*", keys) == ["val_recall_class_0", "val_recall_class_10"]
    assert matching("val_*_class_*", ["val_recall_class_1", "val_prec_class_2"]) == [
        "val_prec_class_2",
        "val_recall_class_1",
    ]
    assert matching("val.f1", ["valxf1"]) == []  # only * is special
    assert matching("val_f1", ["val_f1", "val_f1_macro"]) == ["val_f1"]


def test_every_matching_metric_must_pass():
    metrics = {"val_macro_f1": 0.85, "val_recall_class_0": 0.9, "val_recall_class_1": 0.7}
    assert evaluate_gate([F1, RECALL], metrics).passed
    metrics["val_recall_class_2"] = 0.61
    result = evaluate_gate([F1, RECALL], metrics)
    assert not result.passed
    assert result.failures == ("val_recall_class_2 = 0.61, needs >= 0.65",)


def test_no_matching_metric_fails_and_says_so():
    result = evaluate_gate([F1, RECALL], {"val_macro_f1": 0.9})
    assert result.failures == ("no metric matches 'val_recall_class_*'",)
    assert evaluate_gate([F1], {}).failures == ("no metric matches 'val_macro_f1'",)


@pytest.mark.parametrize(
    ("op", "value", "passes"),
    [
        (">=", 0.8, True),
        (">", 0.8, False),
        ("<=", 0.8, True),
        ("<", 0.8, False),
        ("==", 0.8, True),
        ("==", 0.7, False),
        (">", 0.7, True),
        ("<", 0.9, True),
    ],
)
def test_each_operator(op, value, passes):
    condition = Condition(metric="m", op=op, value=value)
    assert evaluate_gate([condition], {"m": 0.8}).passed is passes


def test_nan_never_passes():
    assert not evaluate_gate([Condition(metric="m", op="<=", value=1)], {"m": math.nan}).passed


@pytest.mark.parametrize(
    ("op", "value"),
    [(">=", math.inf), ("<=", -math.inf), (">=", sys.float_info.max), ("<", -sys.float_info.max)],
)
def test_an_infinite_metric_is_no_model(op, value):
    """A job that logs val_f1 = inf would make a qualified model of any run; MLflow stores
    a logged inf as float max, which read back as a huge finite value and passed."""
    assert not evaluate_gate([Condition(metric="m", op=op, value=0.8)], {"m": value}).passed


def test_no_conditions_pass():
    assert evaluate_gate([], {}).passed


def test_the_plateau_is_where_the_metric_stops_paying():
    # 400 epochs, flat after 60: the DESIGN's motivating case.
    history = [1.0 - 0.01 * e for e in range(60)] + [0.4101 - 0.000001 * e for e in range(340)]
    assert len(history) == 400
    spec = make_spec({"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 5}}})
    assert plateau_epoch(history, monitor_for(spec, min_delta=0.001)) == 60
    # The policy's relative floor (0.1 % of 0.41 per window) holds with min_delta 0 too.
    assert plateau_epoch(history, monitor_for(spec)) == 60
    # With neither, every tiny gain pays: the last epoch.
    free = monitor_for(spec, returns=Returns(min_relative_gain=0.0))
    assert plateau_epoch(history, free) == 400


def test_nan_in_a_history_is_skipped_and_an_empty_one_has_no_plateau():
    monitor = Monitor("val_loss")
    assert plateau_epoch([math.nan, 1.0, 0.5, math.nan], monitor) == 3
    assert plateau_epoch([], monitor) is None
    assert plateau_epoch([math.nan], monitor) is None


def test_the_monitor_comes_from_early_stopping_else_defaults_and_flags_win():
    stopping = {"early_stopping": {"monitor": "val_acc", "mode": "max", "patience": 3}}
    spec = make_spec({"stopping": stopping})
    assert monitor_for(spec) == Monitor("val_acc", "max", 0.0, 3, "stopping.early_stopping")
    plain = make_spec()
    assert monitor_for(plain).metric == "val_loss"
    assert monitor_for(plain).patience is None
    assert monitor_for(plain).source.startswith("default")
    flagged = monitor_for(spec, min_delta=0.01)
    assert flagged == Monitor("val_acc", "max", 0.01, 3, "command line")
    assert monitor_for(spec, metric="val_f1", mode="min").mode == "min"


def test_the_chart_metric_is_the_first_directed_named_gate_metric():
    gate = [
        {"metric": "val_recall_class_*", "op": ">=", "value": 0.6},
        {"metric": "exact", "op": "==", "value": 1},
        {"metric": "val_loss", "op": "<", "value": 0.3},
        {"metric": "val_f1", "op": ">=", "value": 0.8},
    ]
    spec = make_spec({"quality_gate": gate})
    assert chart_metric(spec, monitor_for(spec)) == ChartMetric("val_loss", "min", 0.3)
    none = make_spec({"quality_gate": []})
    assert chart_metric(none, monitor_for(none)) == ChartMetric("val_loss", "min")


def test_better():
    assert better(0.5, None, "max")
    assert better(0.6, 0.5, "max") and not better(0.5, 0.5, "max")
    assert better(0.4, 0.5, "min") and not better(0.6, 0.5, "min")
    assert not better(math.nan, None, "max")


def test_a_value_that_rounds_to_the_bound_it_failed_is_shown_in_full():
    """0.7999999999999999 printed as 0.8 read as "0.8, needs >= 0.8": a fail without reason."""
    result = evaluate_gate([F1], {"val_macro_f1": 0.7 + 0.1})  # 0.7999999999999999
    assert not result.passed
    assert result.failures == ("val_macro_f1 = 0.7999999999999999, needs >= 0.8",)
    assert evaluate_gate([F1], {"val_macro_f1": 0.5}).failures == (
        "val_macro_f1 = 0.5, needs >= 0.8",
    )
