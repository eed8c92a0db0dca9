"""BG121 monthly-budget-warning: spend after this experiment past budget_warn_at."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import monthly_budget_warning
from tests.rules.budget_helpers import run_budget_rule, status

PATH = ("search",)


def test_constants():
    assert (monthly_budget_warning.ID, monthly_budget_warning.SLUG) == (
        "BG121",
        "monthly-budget-warning",
    )
    assert monthly_budget_warning.DEFAULT_SEVERITY is Severity.WARN


def test_docstring_passing_example():
    # 6,000 + 10 × 150 = 7,500: 75 % ≤ 80 %.
    assert run_budget_rule(monthly_budget_warning, 10, status("6000")) == []


def test_docstring_failing_example():
    # 6,000 + 20 × 150 = 9,000: 90 % > 80 %, and 3,000 fits in the 4,000 left.
    [violation] = run_budget_rule(monthly_budget_warning, 20, status("6000"))
    assert violation.message == (
        "team vision would use 90 % of its monthly budget 10,000.00 USD for 2026-11 "
        "(spent 6,000.00 USD + worst-case cost 3,000.00 USD; warn_at 80 %)"
    )
    assert violation.path == PATH


def test_exactly_at_the_threshold_passes():
    # 6,500 + 1,500 = 8,000 = 80 %.
    assert run_budget_rule(monthly_budget_warning, 10, status("6500")) == []
    assert run_budget_rule(monthly_budget_warning, 10, status("6500.01")) != []


def test_the_policy_threshold_is_used():
    assert run_budget_rule(monthly_budget_warning, 20, status("6000", warn_at="0.95")) == []
    [violation] = run_budget_rule(monthly_budget_warning, 20, status("6000", warn_at="0.5"))
    assert violation.message.endswith("warn_at 50 %)")


def test_past_what_is_left_it_leaves_the_finding_to_bg120():
    assert run_budget_rule(monthly_budget_warning, 40, status("6000")) == []


def test_zero_budget_and_zero_cost_does_not_divide_by_zero():
    assert run_budget_rule(monthly_budget_warning, 1, status("0", budget="0"), price="0") == []


def test_no_budget_reports_nothing():
    assert run_budget_rule(monthly_budget_warning, 10_000, None, price="1000") == []
