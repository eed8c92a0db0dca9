"""Cost diff by driver: the ratios multiply to the cost ratio; added, deleted, unpriced."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.errors import Problem
from gate.evaluation.diff import Change, Driver, compare
from gate.evaluation.report import SpecResult
from gate.policy.findings import Outcome
from tests.conftest import make_estimate, make_spec

GRID = {"search": {"strategy": "grid", "parameters": {"lr": {"values": [1, 2, 3]}}}}


def result(overrides=None, price="4", currency="USD") -> SpecResult:
    est = make_estimate(make_spec(overrides), price=price)
    return SpecResult("s.yaml", Outcome.PASS, estimate=est, currency=currency)


def test_each_changed_driver_is_reported_and_their_product_is_the_cost_ratio():
    base = result(GRID)
    head = result(
        {
            "resources": {"gpus_per_trial": 2},
            "workload": {"max_epochs": 30},
            "search": {"parameters": {"lr": {"values": [1, 2, 3, 4]}}, "seeds": [0, 1, 2]},
        },
        price="5",
    )
    diff = compare("s.yaml", base, head)
    assert diff.change is Change.CHANGED
    worst = diff.scenarios[0]
    changes = {c.driver: (c.base, c.head, c.ratio) for c in worst.drivers}
    assert changes == {
        Driver.TRIALS: (3, 12, 4),
        Driver.GPUS_PER_TRIAL: (1, 2, 2),
        Driver.HOURS_PER_TRIAL: (1, 3, 3),
        Driver.PRICE_PER_GPU_HOUR: (4, 5, Decimal("1.25")),
    }
    product = Decimal(1)
    for change in worst.drivers:
        assert change.ratio is not None
        product *= change.ratio
    assert worst.head_cost / worst.base_cost == product == 30
    assert (worst.base_cost, worst.head_cost) == (12, 360)
    assert (worst.base_gpu_hours, worst.head_gpu_hours) == (3, 72)


def test_same_drivers_is_unchanged():
    diff = compare("s.yaml", result(), result())
    assert diff.change is Change.UNCHANGED
    assert all(not s.drivers for s in diff.scenarios)


def test_added_spec_costs_nothing_before():
    diff = compare("s.yaml", None, result())
    assert diff.change is Change.ADDED
    worst = diff.scenarios[0]
    assert (worst.base_cost, worst.head_cost, worst.drivers) == (0, 16, ())


def test_deleted_spec_costs_nothing_after():
    diff = compare("s.yaml", result(), None)
    assert diff.change is Change.DELETED
    worst = diff.scenarios[0]
    assert (worst.base_cost, worst.head_cost, worst.base_gpu_hours) == (16, 0, 4)


def test_an_invalid_base_is_reported_not_compared():
    problem = Problem("invalid YAML: mapping values are not allowed here")
    base = SpecResult("s.yaml", Outcome.INVALID, errors=(problem,))
    diff = compare("s.yaml", base, result())
    assert (diff.change, diff.reason, diff.problems) == (
        Change.UNPRICED,
        "the base version is invalid",
        (problem,),
    )
    assert diff.scenarios == ()


def test_an_invalid_head_is_not_compared():
    diff = compare("s.yaml", result(), SpecResult("s.yaml", Outcome.INVALID))
    assert (diff.change, diff.reason) == (Change.UNPRICED, "the new version is invalid")


def test_a_currency_change_is_not_compared():
    diff = compare("s.yaml", result(), result(currency="EUR"))
    assert diff.reason == "the currency changed from USD to EUR"


def test_a_ratio_from_zero_is_none():
    from gate.evaluation.diff import DriverChange

    assert DriverChange(Driver.PRICE_PER_GPU_HOUR, Decimal(0), Decimal(2)).ratio is None


def test_nothing_to_compare_is_a_bug():
    with pytest.raises(ValueError, match="nothing to compare"):
        compare("s.yaml", None, None)
