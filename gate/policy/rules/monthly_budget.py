"""Experiment would overspend the monthly budget of its team or cost center.

``limits.monthly_budget`` is per team (``metadata.team``), or per ``cost-center`` label with
``limits.budget_scope: cost-center``. Spend so far this month comes from the approvals
ledger: approvals not yet reconciled at their approved worst case, plus reconciled actual
costs. The experiment fails when its cost (enforced scenario, worst unless the policy says
otherwise) is more than what is left. ``check`` reads the ledger only when a policy sets a
monthly budget; specs without the team or label are charged to no budget.

Passes (policy ``monthly_budget: 10000``, 6,000 spent this month)::

    search: {strategy: random, max_trials: 20}   # 3,000 worst case

Fails (the same month)::

    search: {strategy: random, max_trials: 40}   # 6,000 worst case, 4,000 left
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money

ID = "BG120"
SLUG = "monthly-budget"
TITLE = "Monthly budget exceeded"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the enforced cost with what is left of this month's budget."""
    budget = ctx.budget
    scenario = ctx.enforced
    if budget is None or scenario.cost <= budget.remaining:
        return
    left = max(budget.remaining, Decimal(0))
    yield Violation(
        f"{scenario.name}-case cost {money(scenario.cost, ctx)} exceeds the "
        f"{money(left, ctx)} left of {budget.scope}'s monthly budget "
        f"{money(budget.budget, ctx)} for {budget.month} (spent {money(budget.spent, ctx)})",
        ("search",),
    )
