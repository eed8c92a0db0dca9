"""Experiment would use most of the monthly budget of its team or cost center.

A warning before the budget is gone (warn and escalate first): it fires when
the spend so far this month plus this experiment's cost (enforced scenario) passes
``limits.budget_warn_at`` (80 % by default) of ``limits.monthly_budget``, but still fits in
what is left. Past what is left, BG120 fires instead.

Passes (policy ``monthly_budget: 10000``, 6,000 spent this month)::

    search: {strategy: random, max_trials: 10}   # 1,500 worst case: 75 % after it

Fails (warning, the same month)::

    search: {strategy: random, max_trials: 20}   # 3,000 worst case: 90 % after it
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.money import format_amount
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money

ID = "BG121"
SLUG = "monthly-budget-warning"
TITLE = "Monthly budget nearly used"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Warn when the spend after this experiment passes the policy's threshold."""
    budget = ctx.budget
    scenario = ctx.enforced
    if budget is None or scenario.cost > budget.remaining:
        return
    after = budget.spent + scenario.cost
    if after <= budget.warn_at * budget.budget:
        return
    share = format_amount(after / budget.budget * 100, 0)
    threshold = format_amount(budget.warn_at * 100, 0)
    yield Violation(
        f"{budget.scope} would use {share} % of its monthly budget "
        f"{money(budget.budget, ctx)} for {budget.month} (spent {money(budget.spent, ctx)} "
        f"+ {scenario.name}-case cost {money(scenario.cost, ctx)}; warn_at {threshold} %)",
        ("search",),
    )
