"""A search setting the strategy ignores.

A grid runs every point of its grid (× seeds), whatever ``max_trials`` says, only the
successive-halving family (successive_halving, hyperband, asha) reads ``scheduler:``, and
only hyperband its ``brackets``. A
setting the plan ignores is priced as if it were not there, so a spec that reads as 4
trials is priced at 12: the finding says so, with the fix. Remove the setting, or choose
the strategy that honours it (``strategy: random`` samples ``max_trials`` points).

Passes::

    search:
      strategy: random
      max_trials: 4
      parameters: {lr: {values: [1.0e-4, 3.0e-4, 1.0e-3]}, wd: {values: [0, 0.01]}}

Fails (12 trials priced: 6 points × 2 seeds)::

    search:
      strategy: grid
      max_trials: 4
      seeds: [0, 1]
      parameters: {lr: {values: [1.0e-4, 3.0e-4, 1.0e-3]}, wd: {values: [0, 0.01]}}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, plural
from gate.spec.search import HALVING, Strategy

ID = "BG309"
SLUG = "ignored-setting"
TITLE = "Search setting the strategy ignores"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag max_trials on a grid and a scheduler outside the successive-halving family."""
    search = ctx.spec.search
    strategy = search.strategy.value
    if search.strategy is Strategy.GRID and search.max_trials is not None:
        trials = ctx.estimate.worst.trials
        yield Violation(
            f"max_trials {search.max_trials} is ignored by strategy grid, which runs every "
            f"point of its grid: {plural(trials, 'trial')} priced — remove max_trials, or "
            f"sample {search.max_trials} points with strategy: random",
            ("search", "max_trials"),
        )
    if search.scheduler is not None and search.strategy not in HALVING:
        yield Violation(
            f"scheduler: is ignored by strategy {strategy} (only successive_halving, "
            "hyperband and asha read it) — remove it, or use strategy: asha",
            ("search", "scheduler"),
        )
    scheduler = search.scheduler
    halving = search.strategy in HALVING and search.strategy is not Strategy.HYPERBAND
    if halving and scheduler is not None and scheduler.brackets is not None:
        yield Violation(  # NOTE: priced as its one bracket, the most aggressive
            f"scheduler.brackets {scheduler.brackets} is ignored by strategy {strategy}, "
            "which runs one bracket, the most aggressive; an engine that runs brackets runs "
            "the costlier ones too — remove brackets, or use strategy: hyperband",
            ("search", "scheduler", "brackets"),
        )
