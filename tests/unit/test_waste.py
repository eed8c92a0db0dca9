"""Waste advice by case, the variance's reference and limit, and the verdict's reasons."""

from __future__ import annotations

from decimal import Decimal

from gate.reconcile.quality import Monitor
from gate.reconcile.waste import (
    FAILED_ADVICE,
    IDLE_ADVICE,
    RunWaste,
    Variance,
    change,
    decide,
    failed_waste,
    idle_waste,
    percent,
    plateau_waste,
)

D = Decimal


def run(epochs=None, plateau=None, *, failed=False, utilization=None, cost="10"):
    return RunWaste(
        failed=failed,
        cost=D(cost),
        gpu_hours=D(cost) / 10,
        epochs=epochs,
        plateau=plateau,
        plateau_cost=D(0) if epochs is None else D(cost) * (epochs - plateau) / epochs,
        plateau_gpu_hours=D(0),
        utilization=utilization,
    )


def test_plateau_advice_without_early_stopping_names_a_max_epochs():
    runs = [run(100, p) for p in (10, 20, 30, 40, 50, 60, 70, 80, 90, 95)]
    waste = plateau_waste(runs, Monitor("val_loss"))
    assert waste.advice == (
        "add stopping.early_stopping on val_loss with a patience of a few epochs, or cut "
        "max_epochs to about 95 (90 % of the runs had plateaued by then)"
    )
    assert waste.runs == 10


def test_plateau_advice_with_early_stopping_that_works_is_about_patience():
    monitor = Monitor("val_loss", patience=5, source="stopping.early_stopping")
    waste = plateau_waste([run(25, 20), run(30, 25)], monitor)
    assert waste.advice.startswith("these are mostly the 5 patience epochs early stopping waits")


def test_plateau_advice_when_early_stopping_is_not_applied():
    monitor = Monitor("val_f1", "max", 0.01, patience=3)
    waste = plateau_waste([run(100, 20)], monitor)
    assert waste.advice == (
        "early stopping (patience 3) should stop a run about 3 epochs after its plateau, yet "
        "runs went on 80.0 epochs on average: check that the launcher applies it to val_f1 "
        "(name, mode, min_delta)"
    )
    assert (
        "val_f1 (max, must gain the larger of 0.1 % of its value and min_delta 0.01 per 3 "
        "epochs) stopped paying after epoch 20" in waste.detail
    )


def test_runs_that_stopped_at_the_plateau_waste_nothing():
    waste = plateau_waste([run(10, 10)], Monitor("val_loss"))
    assert waste.cost == 0 and waste.runs == 0 and waste.measured
    assert waste.advice == "none: every run stopped at its plateau"


def test_unmeasured_waste_says_what_to_log():
    plateau = plateau_waste([run(), run(10, 5, failed=True)], Monitor("val_loss"))
    assert not plateau.measured
    assert plateau.advice == "log val_loss once per epoch with step=epoch to measure this"
    idle = idle_waste([run(utilization=D("0.5"), failed=True)])
    assert not idle.measured and idle.upper_bound and idle.cost == 0
    assert "log_system_metrics=True" in idle.advice


def test_failed_and_idle_advice_are_domain_md_section_4():
    assert "fix the cause before retrying" in FAILED_ADVICE
    assert "checkpoint" in FAILED_ADVICE
    assert IDLE_ADVICE.startswith("an upper bound")
    assert failed_waste([run(), run(failed=True)], 0, 0).cost == D(10)


def variance(actual, approved=None, tolerance="0.1"):
    return Variance(
        currency="USD",
        actual=D(actual),
        actual_gpu_hours=D(0),
        expected=D(40),
        expected_gpu_hours=D(4),
        worst=D(80),
        worst_gpu_hours=D(8),
        tolerance=D(tolerance),
        approved=None if approved is None else D(approved),
    )


def test_the_tolerance_applies_to_the_approved_amount_else_the_worst_case():
    assert variance("88").limit == D("88.0") and not variance("88").over
    assert variance("88.01").over
    assert not variance("55", approved="50").over
    assert variance("55.01", approved="50").over
    assert variance("55.01", approved="50").reference_name == "approved"


def test_a_zero_reference_fails_any_spend_without_dividing_by_zero():
    v = variance("1", approved="0", tolerance="0.5")
    verdict = decide(1, 1, v, 0)
    assert verdict.reasons == (
        "actual 1.00 USD exceeds the approved 0.00 USD by more than the tolerance of 50.0 %",
    )


def test_percent_and_change():
    assert percent(D("0.1")) == "10 %"
    assert percent(D("0.125")) == "12.5 %"
    assert change(D(50), D(40)) == D("0.25")
    assert change(D(50), D(0)) is None


def test_the_verdict_lists_every_reason_and_is_provisional_while_runs_run():
    verdict = decide(2, 0, variance("100"), running=1)
    assert len(verdict.reasons) == 2 and verdict.provisional and verdict.exit_code == 1
    assert decide(2, 1, variance("10"), 0).passed


def test_small_amounts_keep_three_significant_digits():
    from gate.money import format_small

    assert format_small(D("0.0032149")) == "0.00321"
    assert format_small(D("0.5")) == "0.500"
    assert format_small(D("0.05")) == "0.0500"
    assert format_small(D(0)) == "0.00" and format_small(D("1234.5")) == "1,234.50"
    assert format_small(D("0.000012345"), 1) == "0.0000123"
