"""Cost of the whole experiment over the team limit.

The experiment cap is the last line of defence against a search that grew: trials × GPUs
× hours × price, in the enforced scenario (worst unless ``limits.scenario: expected``).

Passes (policy ``max_experiment_cost: 20000``)::

    search: {strategy: random, max_trials: 16}

Fails::

    search:
      strategy: grid
      parameters: {lr: {values: [1e-4, 3e-4, 1e-3, 3e-3]}, wd: {values: [0, 1e-4, 1e-2]}}
      seeds: [0, 1, 2, 3, 4]                              # 60 trials of 8 × H100 for 40 h
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money

ID = "BG104"
SLUG = "experiment-cost"
TITLE = "Experiment cost over the limit"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the enforced scenario's total cost with the limit."""
    limit = ctx.policy.limits.max_experiment_cost
    scenario = ctx.enforced
    if limit is not None and scenario.cost > limit:
        yield Violation(
            f"{scenario.name}-case cost {money(scenario.cost, ctx)} exceeds "
            f"max_experiment_cost {money(limit, ctx)}",
            ("search",),
        )
