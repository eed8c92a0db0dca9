"""A continuous parameter in a grid search.

A grid can only enumerate listed values; brute-forcing a continuous range (learning
rate, weight decay) wastes trials that random search, Bayesian search or Hyperband/ASHA
would spend better. Use ``strategy: random`` (or list the values you mean). The finding
prices the same budget both ways: random search with the grid's trial count, which samples
the range for the same cost, and ASHA with those trials (expected case).

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
from gate.policy.counterfactual import configurations, reprice
from gate.policy.findings import Edit
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money, plural

ID = "BG302"
SLUG = "continuous-in-grid"
TITLE = "Continuous parameter in a grid"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield one violation per continuous range in a grid."""
    names = continuous_in_grid(ctx.spec.search)
    priced = _priced(ctx) if names else ""
    for name in names:
        yield Violation(
            f"parameter {name!r} is a continuous range in a grid search{priced}",
            ("search", "parameters", name),
        )


def _priced(ctx: RuleContext) -> str:
    """``: random search with the same 64 trials samples it for 100.00 USD; ASHA ...``."""
    n = configurations(ctx.spec, ctx.estimate.worst.trials)
    trials = [Edit(("search", "max_trials"), n)]
    random = reprice(
        ctx.spec,
        ctx.policy,
        ctx.estimate.quote,
        [Edit(("search", "strategy"), "random"), *trials],
        ctx.estimate.measured,
    )
    asha = reprice(
        ctx.spec,
        ctx.policy,
        ctx.estimate.quote,
        [Edit(("search", "strategy"), "asha"), *trials],
        ctx.estimate.measured,
    )
    if random is None or asha is None:
        return ""
    return (
        f": random search with the same {plural(random.expected.trials, 'trial')} samples it "
        f"for {money(random.expected.cost, ctx)}, ASHA for {money(asha.expected.cost, ctx)} "
        f"(expected case; the grid: {money(ctx.estimate.expected.cost, ctx)})"
    )
