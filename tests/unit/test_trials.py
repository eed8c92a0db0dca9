"""Trial counts: grid = product of value counts × seeds, computed even at 10^15."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.estimate.trials import continuous_in_grid, count_trials
from gate.spec.search import Search


def _grid(sizes: list[int], seeds: int) -> Search:
    parameters = {f"p{i}": {"values": list(range(n))} for i, n in enumerate(sizes)}
    return Search.model_validate(
        {"strategy": "grid", "parameters": parameters, "seeds": list(range(seeds))}
    )


@given(st.lists(st.integers(1, 12), max_size=8), st.integers(1, 5))
def test_grid_count_is_the_product_of_value_counts_times_seeds(sizes, seeds):
    assert count_trials(_grid(sizes, seeds), 10) == math.prod(sizes) * seeds


def test_a_10_to_the_15_grid_is_counted_without_enumerating():
    # 15 parameters × 10 values would take years to enumerate; the count is instant.
    assert count_trials(_grid([10] * 15, 3), 10) == 3 * 10**15


@pytest.mark.parametrize("strategy", ["random", "bayesian", "asha", "hyperband"])
def test_sampled_searches_run_max_trials_times_seeds(strategy):
    search = Search.model_validate({"strategy": strategy, "max_trials": 24, "seeds": [0, 1, 2]})
    assert count_trials(search, 10) == 72


def test_a_continuous_range_in_a_grid_counts_once_and_is_reported():
    search = Search.model_validate(
        {
            "strategy": "grid",
            "parameters": {"lr": {"values": [1, 2, 3]}, "dropout": {"low": 0.0, "high": 0.5}},
        }
    )
    assert count_trials(search, 10) == 3
    assert continuous_in_grid(search) == ["dropout"]


def test_continuous_ranges_are_fine_outside_a_grid():
    search = Search.model_validate(
        {"strategy": "random", "max_trials": 5, "parameters": {"lr": {"low": 0.1, "high": 1.0}}}
    )
    assert continuous_in_grid(search) == []


def test_an_empty_grid_is_one_trial_per_seed():
    assert count_trials(Search.model_validate({"strategy": "grid", "seeds": [1, 2]}), 10) == 2
