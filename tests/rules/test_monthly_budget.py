"""BG120 monthly-budget: the enforced cost over what is left of this month's budget."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import monthly_budget
from tests.rules.budget_helpers import run_budget_rule, status

PATH = ("search",)


def test_constants():
    assert (monthly_budget.ID, monthly_budget.SLUG) == ("BG120", "monthly-budget")
    assert monthly_budget.DEFAULT_SEVERITY is Severity.ERROR


def test_docstring_passing_example():
    # 20 trials × 1 GPU × 1 h × 150 = 3,000 ≤ 10,000 − 6,000 left.
    assert run_budget_rule(monthly_budget, 20, status("6000")) == []


def test_docstring_failing_example():
    # 40 trials × 150 = 6,000 > 4,000 left.
    [violation] = run_budget_rule(monthly_budget, 40, status("6000"))
    assert violation.message == (
        "worst-case cost 6,000.00 USD exceeds the 4,000.00 USD left of team vision's "
        "monthly budget 10,000.00 USD for 2026-11 (spent 6,000.00 USD)"
    )
    assert violation.path == PATH


def test_exactly_what_is_left_passes():
    # 40 × 150 = 6,000 = 10,000 − 4,000.
    assert run_budget_rule(monthly_budget, 40, status("4000")) == []
    [violation] = run_budget_rule(monthly_budget, 40, status("4000.01"))
    assert "exceeds the 5,999.99 USD left" in violation.message


def test_overspent_budget_shows_nothing_left():
    [violation] = run_budget_rule(monthly_budget, 1, status("12000", actual="12000"))
    assert "exceeds the 0.00 USD left" in violation.message
    assert "(spent 12,000.00 USD)" in violation.message


def test_expected_scenario_when_the_policy_enforces_it():
    # Early stopping at epoch 5 + 2 = 7 of 10: expected 40 × 0.7 h × 150 = 4,200; worst 6,000.
    spec = {"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 2}}}
    expected = {"limits": {"scenario": "expected"}}
    [worst] = run_budget_rule(monthly_budget, 40, status("5000"), spec_overrides=spec)
    assert worst.message.startswith("worst-case cost 6,000.00 USD exceeds the 5,000.00")
    assert (
        run_budget_rule(
            monthly_budget, 40, status("5000"), spec_overrides=spec, policy_overrides=expected
        )
        == []
    )
    [violation] = run_budget_rule(
        monthly_budget, 40, status("5900"), spec_overrides=spec, policy_overrides=expected
    )
    assert violation.message.startswith("expected-case cost 4,200.00 USD exceeds the 4,100.00")


def test_no_budget_reports_nothing():
    assert run_budget_rule(monthly_budget, 10_000, None, price="1000") == []
