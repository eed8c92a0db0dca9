"""Run a monthly-budget rule with a given spend so far (shared by BG120 and BG121 tests)."""

from __future__ import annotations

from decimal import Decimal
from types import ModuleType

from gate.ledger.budget import BudgetScope, BudgetStatus
from gate.policy.rules.base import RuleContext, Violation
from tests.conftest import TODAY, make_estimate, make_policy, make_spec

VISION = BudgetScope("team", "vision")


def status(
    spent: str = "6000", budget: str = "10000", warn_at: str = "0.8", actual: str = "0"
) -> BudgetStatus:
    committed = Decimal(spent) - Decimal(actual)
    return BudgetStatus(
        VISION, "2026-11", Decimal(budget), committed, Decimal(actual), "USD", Decimal(warn_at)
    )


def run_budget_rule(
    rule: ModuleType,
    trials: int,
    budget: BudgetStatus | None,
    *,
    price: str = "150",
    policy_overrides: dict | None = None,
    spec_overrides: dict | None = None,
) -> list[Violation]:
    """``trials`` random trials of 1 GPU × 1 h at ``price`` per GPU-hour."""
    spec = make_spec({"search": {"max_trials": trials}, **(spec_overrides or {})})
    policy = make_policy(policy_overrides)
    est = make_estimate(spec, policy, price)
    ctx = RuleContext(spec, est, policy, "exp/spec.yaml", TODAY, budget)
    return list(rule.check(ctx))
