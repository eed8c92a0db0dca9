"""Rung-by-rung counts of successive halving and Hyperband (Li et al., JMLR 2018)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.estimate.schedule import (
    SIMULATION_STEPS,
    expected_promotions,
    halving,
    hyperband_brackets,
    no_pruning,
    optuna_brackets,
    rung_marks,
    simulation_shares,
    split,
)

D = Decimal


def test_hyperband_brackets_match_the_paper_for_r81_eta3():
    # Li et al. 2018, Table 1 (R = 81, η = 3): n = 81, 34, 15, 8, 5 with r_i as below.
    brackets = hyperband_brackets(1, 81, D(3), None)
    assert brackets == [
        (81, [1, 3, 9, 27, 81]),
        (34, [3, 9, 27, 81]),
        (15, [9, 27, 81]),
        (8, [27, 81]),
        (5, [81]),
    ]
    survivors = [
        [int(r.trials) for r in halving(D(n), m, D(3), resume=True, exact=True, barrier=True).rungs]
        for n, m in brackets
    ]
    assert survivors == [[81, 27, 9, 3, 1], [34, 11, 3, 1], [15, 5, 1], [8, 2], [5]]


def test_hyperband_bracket_limit_keeps_the_most_exploratory_first():
    assert [n for n, _ in hyperband_brackets(1, 81, D(3), 2)] == [81, 34]


def test_rung_marks_when_r_over_R_is_not_a_power_of_eta():
    # 5, 15, 45 are below 60, 135 is not: a last rung at max_epochs follows 45.
    assert rung_marks(5, 60, D(3)) == [5, 15, 45, 60]
    assert rung_marks(1, 27, D(3)) == [1, 3, 9, 27]
    assert rung_marks(10, 10, D(3)) == [10]
    assert rung_marks(20, 10, D(3)) == [10]  # min above max: one rung at max


def test_fractional_eta_rounds_epochs_up():
    # 1, 2.5 → 3, 6.25 → 7, then 15.6 is past 10.
    assert rung_marks(1, 10, D("2.5")) == [1, 3, 7, 10]


def test_a_larger_max_epochs_never_removes_a_rung():
    assert rung_marks(1, 20, D(3)) == [1, 3, 9, 20]
    assert rung_marks(1, 27, D(3)) == [1, 3, 9, 27]


def test_resume_trains_the_increment_and_restart_retrains():
    marks = [1, 3, 9]
    resume = halving(D(9), marks, D(3), resume=True, exact=True, barrier=True)
    restart = halving(D(9), marks, D(3), resume=False, exact=True, barrier=True)
    assert [(r.trials, r.epochs) for r in resume.rungs] == [(9, 1), (3, 2), (1, 6)]
    assert [(r.trials, r.epochs) for r in restart.rungs] == [(9, 1), (3, 3), (1, 9)]
    # 9×1 + 3×2 + 1×6 = 21 epochs resuming, 9 + 9 + 9 = 27 restarting.
    assert sum(r.trials * r.epochs for r in resume.rungs) == 21
    assert sum(r.trials * r.epochs for r in restart.rungs) == 27


def test_more_rungs_than_trials_keeps_the_best_trial_going():
    stage = halving(D(2), [1, 3, 9, 27], D(3), resume=True, exact=True, barrier=True)
    assert [int(r.trials) for r in stage.rungs] == [2, 1, 1, 1]


def test_asha_promotes_by_rank_among_earlier_arrivals():
    # j-th arrival promoted with probability max(1, ⌊j/3⌋)/j, for j = 1..10:
    # 1 + 1/2 + 1/3 + 1/4 + 1/5 + 2/6 + 2/7 + 2/8 + 3/9 + 3/10.
    ones = [D(1), D(1) / 2, D(1) / 3, D(1) / 4, D(1) / 5]
    by_hand = sum([*ones, D(2) / 6, D(2) / 7, D(2) / 8, D(3) / 9, D(3) / 10])
    assert expected_promotions(D(10), D(3)) == by_hand
    assert D(10) / 3 < by_hand < D(4)  # a little more than 1/η go on
    # A fractional arrival counts by its fraction: 2.5 arrivals → 1 + 1/2 + 0.5 × 1/3.
    assert expected_promotions(D("2.5"), D(3)) == D(1) + D(1) / 2 + D("0.5") / 3


def test_expected_asynchronous_survivors_are_real_valued():
    stage = halving(D(10), [1, 3, 9], D(3), resume=True, exact=False, barrier=False)
    first = expected_promotions(D(10), D(3))
    assert [r.trials for r in stage.rungs] == [D(10), first, expected_promotions(first, D(3))]


def test_asynchronous_worst_case_promotes_everyone():
    assert [(r.trials, r.epochs) for r in no_pruning(D(5), [1, 3, 9], resume=True).rungs] == [
        (5, 9)
    ]
    restart = no_pruning(D(5), [1, 3, 9], resume=False)
    assert sum(r.trials * r.epochs for r in restart.rungs) == 5 * (1 + 3 + 9)


@pytest.mark.parametrize(
    ("total", "weights", "expected"),
    [(10, [81, 34, 15, 8, 5], [6, 2, 1, 1, 0]), (143, [81, 34, 15, 8, 5], [81, 34, 15, 8, 5])],
)
def test_split_shares_exactly(total, weights, expected):
    assert split(total, weights) == expected
    assert sum(split(total, weights)) == total


@pytest.mark.parametrize("seed", [20_181_201, 7])
def test_the_simulations_draw_the_very_normals_random_gauss_draws(seed):
    # the ASHA simulation's faster draws must leave every estimate as it was
    import random

    from gate.estimate.schedule import _normals

    reference, draws = random.Random(seed), _normals(random.Random(seed))
    assert [next(draws) for _ in range(10_001)] == [
        reference.gauss(0.0, 1.0) for _ in range(10_001)
    ]


def test_hyperband_brackets_share_one_simulation_bound():
    # trials × (rungs − 1): 10 × 2, 5 × 1 and 2 × 0 of 25 → 4/5 and 1/5 of the bound
    shares = simulation_shares([(10, [1, 3, 9]), (5, [3, 9]), (2, [9])])
    assert shares == [SIMULATION_STEPS * 4 // 5, SIMULATION_STEPS // 5, 0]
    assert simulation_shares([(30, [1, 3, 9, 27])]) == [SIMULATION_STEPS]  # ASHA keeps it whole
    # η = 1.1 from 1 to 81 epochs lays out 47 brackets; together they simulate one bound
    brackets = optuna_brackets(1, 81, D("1.1"), None)
    assert len(brackets) == 47
    assert SIMULATION_STEPS - len(brackets) < sum(simulation_shares(brackets)) <= SIMULATION_STEPS
