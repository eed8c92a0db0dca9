"""Plain words for cost diffs: ratios, signs, one sentence per driver."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.evaluation.diff import compare
from gate.reporters.change import (
    cost_change,
    explain,
    format_ratio,
    gpu_hours_change,
    signed,
    status,
)
from tests.unit.test_diff import GRID, result


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        ("4", "×4"),
        ("0.25", "×0.25"),
        ("2.0476", "×2.05"),
        ("0.333333", "×0.333"),
        ("1234.5", "×1,235"),
        ("1E+15", "×1,000,000,000,000,000"),
        ("0.0001234", "×0.000123"),
    ],
)
def test_format_ratio(ratio, text):
    assert format_ratio(Decimal(ratio)) == text


def test_signed():
    assert (signed(Decimal("1190.6449")), signed(Decimal("-12"), 1)) == ("+1,190.64", "-12.0")


def test_the_issue_example_grid_grew_from_12_to_48_trials():
    base = result(
        {"search": {"strategy": "grid", "parameters": {"lr": {"values": list(range(12))}}}}
    )
    head = result(
        {"search": {"strategy": "grid", "parameters": {"lr": {"values": list(range(48))}}}}
    )
    diff = compare("s.yaml", base, head)
    assert explain(diff) == ["grid grew from 12 to 48 trials (×4)"]
    worst = diff.scenarios[0]
    assert cost_change(worst, "USD") == "48.00 → 192.00 USD (+144.00 USD, ×4)"
    assert gpu_hours_change(worst) == "12.0 → 48.0 (+36.0, ×4)"
    assert status(diff, "main") == "changed since main"


def test_every_driver_in_words():
    base = result(GRID)
    head = result(
        {
            "resources": {"accelerator": "H100", "gpus_per_trial": 2},
            "workload": {"max_epochs": 5},
            "search": {"strategy": "random", "max_trials": 6},
        },
        price="8",
    )
    assert explain(compare("s.yaml", base, head)) == [
        "search changed from grid (3 trials) to random (6 trials) (×2)",
        "GPUs per trial rose from 1 to 2 (×2)",
        "hours per trial fell from 1.00 to 0.50 (×0.5): 5 epochs per trial, was 10",
        "price per GPU-hour rose from 4.00000 to 8.00000 USD (×2): H100 on-demand, "
        "was A100-80GB on-demand",
    ]


def test_expected_hours_are_explained_when_they_move_differently():
    stop = {"early_stopping": {"monitor": "val_loss", "patience": 1}}
    base = result({"workload": {"max_epochs": 10}, "stopping": stop})
    head = result({"workload": {"max_epochs": 20}, "stopping": stop})
    assert explain(compare("s.yaml", base, head)) == [
        "hours per trial rose from 1.00 to 2.00 (×2): 20 epochs per trial, was 10",
        "expected case: hours per trial rose from 0.60 to 1.10 (×1.83): 11 epochs per trial, was 6",
    ]


@pytest.mark.parametrize(
    ("base", "head", "text"),
    [
        (None, result(), "new: not in main"),
        (result(), None, "deleted: only in main"),
        (result(), result(), "cost unchanged since main"),
        (result(), result(currency="EUR"), "not compared with main: the currency changed"),
    ],
)
def test_status(base, head, text):
    diff = compare("s.yaml", base, head)
    assert status(diff, "main").startswith(text)
    assert explain(diff) == []


def test_added_spec_shows_no_ratio():
    diff = compare("s.yaml", None, result())
    assert cost_change(diff.scenarios[0], "USD") == "0.00 → 16.00 USD (+16.00 USD)"


def test_hours_from_epoch_time_and_price_from_an_override_need_no_detail():
    base = result({"workload": {"epoch_minutes": 6}})
    head = result({"workload": {"epoch_minutes": 12}}, price="5")
    assert explain(compare("s.yaml", base, head)) == [
        "hours per trial rose from 1.00 to 2.00 (×2)",
        "price per GPU-hour rose from 4.00000 to 5.00000 USD (×1.25)",
    ]
