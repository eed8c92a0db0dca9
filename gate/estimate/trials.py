"""How many trials a search runs, computed from its shape and never enumerated."""

from __future__ import annotations

import math
from decimal import Decimal

from gate.estimate.schedule import hyperband_brackets, optuna_brackets
from gate.spec.search import Scheduler, Search, Strategy


def count_trials(search: Search, max_epochs: int) -> int:
    """Trials the search launches (configurations × seeds).

    Grid: product of value counts. Random, Bayesian and the halving family: max_trials.
    Hyperband without max_trials: the configurations of its brackets (Li et al. 2018, or
    Optuna's budgets when asynchronous).
    A continuous range in a grid cannot be enumerated; it counts as one value here and the
    ``continuous-in-grid`` rule reports it.
    """
    seeds = len(search.seeds)
    if search.strategy is Strategy.GRID:
        sizes = (len(p.values) if p.values is not None else 1 for p in search.parameters.values())
        return math.prod(sizes) * seeds
    if search.max_trials is None:
        assert search.strategy is Strategy.HYPERBAND  # the Search model requires it otherwise
        scheduler = search.scheduler or Scheduler()
        top = min(scheduler.max_epochs or max_epochs, max_epochs)
        eta = Decimal(str(scheduler.reduction_factor))
        # Asynchronous Hyperband lays its brackets out as Optuna does (schedule.optuna_brackets).
        layout = optuna_brackets if scheduler.synchronous is False else hyperband_brackets
        brackets = layout(scheduler.min_epochs, top, eta, scheduler.brackets)
        return sum(n for n, _ in brackets) * seeds
    return search.max_trials * seeds


def continuous_in_grid(search: Search) -> list[str]:
    """Names of continuous parameters in a grid search (a grid needs a list of values)."""
    if search.strategy is not Strategy.GRID:
        return []
    return [name for name, p in search.parameters.items() if p.is_continuous]
