"""A continuous parameter in a grid search.

A grid can only enumerate listed values; brute-forcing a continuous range (learning
rate, weight decay) wastes trials that random search, Bayesian search or Hyperband/ASHA
would spend better. Use ``strategy: random`` (or list the values you mean).

Passes::

    search:
      strategy: random
      max_trials: 24
      parameters: {lr: {low: 1.0e-5, high: 1.0e-2, log: true}}

Fails::

    search:
      strategy: grid
      parameters: {lr: {low: 1.0e-5, high: 1.0e-2}}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.estimate.trials import continuous_in_grid
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG302"
SLUG = "continuous-in-grid"
TITLE = "Continuous parameter in a grid"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield one violation per continuous range in a grid."""
    for name in continuous_in_grid(ctx.spec.search):
        yield Violation(
            f"parameter {name!r} is a continuous range in a grid search",
            ("search", "parameters", name),
        )
