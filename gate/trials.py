"""How many trials a search runs, computed from its shape and never enumerated."""

from __future__ import annotations

import math

from gate.spec import Search, Strategy


def count_trials(search: Search) -> int:
    """Trials the search launches: grid = product of value counts × seeds, else max_trials × seeds.

    A continuous range in a grid cannot be enumerated; it counts as one value here and the
    ``continuous-in-grid`` rule reports it.
    """
    seeds = len(search.seeds)
    if search.strategy is Strategy.GRID:
        sizes = (len(p.values) if p.values is not None else 1 for p in search.parameters.values())
        return math.prod(sizes) * seeds
    assert search.max_trials is not None  # the Search model requires it off-grid
    return search.max_trials * seeds


def continuous_in_grid(search: Search) -> list[str]:
    """Names of continuous parameters in a grid search (a grid needs a list of values)."""
    if search.strategy is not Strategy.GRID:
        return []
    return [name for name, p in search.parameters.items() if p.is_continuous]
