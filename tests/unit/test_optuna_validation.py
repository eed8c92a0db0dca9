"""Our successive-halving estimates against Optuna's own pruners on synthetic learning curves.

Each trial samples an asymptote ``a`` and a time constant ``tau`` and reports
``a + exp(-epoch/tau) + noise`` (a loss, minimised) at epochs 1..R, asking the pruner after
every report. The epochs a trial consumed are the steps it reported. Under the spec used here
(1 GPU, 60-minute epochs, no setup or evaluation overhead) our GPU-hours are epoch totals, so
the two can be compared directly.

``python -m tests.unit.test_optuna_validation`` prints the comparison as a Markdown table.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
import time
from dataclasses import dataclass
from decimal import Decimal

import optuna
import pytest

from gate.estimate.schedule import expected_promotions
from tests.conftest import make_estimate, make_policy, make_spec

SEEDS = (0, 1, 2)
STRATEGIES = ("successive_halving", "hyperband")
SAMPLERS = ("random", "tpe")

# Our expected case for asynchronous halving follows ASHA's rule with ranks in random order
# (gate.estimate.schedule.expected_promotions). With RandomSampler, Optuna's mean over 3
# seeds divided by our expected case is 1.30-1.74 for SuccessiveHalvingPruner and 0.84-1.32 for
# HyperbandPruner on the settings below (before the rank rule, over seeds 0-19, it was up to
# 1.71 with a 3-seed standard error of 0.23). Optuna still runs above us because learning
# curves keep their ranking across rungs: a trial promoted once is likely promoted again,
# which independent ranks do not capture. One run's standard deviation is 12-34% of the
# mean, so the tests compare the 3-seed mean; 2.5 leaves three standard errors of room.
OPTUNA_ABOVE_EXPECTED = 2.5
# Our expected case came out above a 3-seed mean by at most 12% (the asynchronous pruner does
# not prune harder than the rule). 1.5 leaves room for noise and still fails if the expected
# case collapsed to the worst case (worst / Optuna's mean is 2.1 or more here).
EXPECTED_ABOVE_OPTUNA = 1.5
# NOTE: with TPESampler later trials are better, so they are promoted more often still: the
# ratio reached 3.4 on average (SH, N=81) and 5.5 in one run. The expected-case factor is
# therefore checked for RandomSampler only; the worst case bounds every sampler.

NOISE = 0.005


@dataclass(frozen=True)
class Setting:
    """A search shape: N trials, rungs from r to R epochs, reduction factor η."""

    trials: int
    min_epochs: int
    max_epochs: int
    eta: int

    def __str__(self) -> str:
        return f"N={self.trials} r={self.min_epochs} R={self.max_epochs} η={self.eta}"


SETTINGS = (
    Setting(27, 1, 27, 3),
    Setting(50, 2, 40, 2),
    Setting(81, 1, 81, 3),
    Setting(30, 5, 60, 3),
)


def _pruner(strategy: str, setting: Setting) -> optuna.pruners.BasePruner:
    if strategy == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=setting.min_epochs,
            reduction_factor=setting.eta,
            min_early_stopping_rate=0,
        )
    return optuna.pruners.HyperbandPruner(
        min_resource=setting.min_epochs,
        max_resource=setting.max_epochs,
        reduction_factor=setting.eta,
    )


def _sampler(kind: str, seed: int) -> optuna.samplers.BaseSampler:
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


@functools.cache
def optuna_epochs(strategy: str, setting: Setting, seed: int, sampler: str = "random") -> int:
    """Epochs Optuna's pruner let the trials of one study consume, summed over trials."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    big_r = setting.max_epochs

    def objective(trial: optuna.Trial) -> float:
        asymptote = trial.suggest_float("a", 0.05, 0.5)
        tau = trial.suggest_float("tau", 1.0, big_r / 2)
        noise = random.Random(seed * 1_000_003 + trial.number)
        value = math.inf
        for epoch in range(1, big_r + 1):
            value = asymptote + math.exp(-epoch / tau) + noise.gauss(0, NOISE)
            trial.report(value, step=epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    # HyperbandPruner assigns trials to brackets by a hash of the study name: fix it.
    study = optuna.create_study(
        study_name=f"validation-{strategy}-{seed}",
        direction="minimize",
        pruner=_pruner(strategy, setting),
        sampler=_sampler(sampler, seed),
    )
    study.optimize(objective, n_trials=setting.trials, n_jobs=1)
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == setting.trials
    finished = {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    assert all(t.state in finished for t in trials)
    return sum(len(t.intermediate_values) for t in trials)


@functools.cache
def our_epochs(strategy: str, setting: Setting) -> tuple[Decimal, Decimal]:
    """Our worst and expected GPU-hours, which are epochs under this spec."""
    spec = make_spec(
        {
            "workload": {"max_epochs": setting.max_epochs, "epoch_minutes": 60},
            "search": {
                "strategy": strategy,
                "max_trials": setting.trials,
                "seeds": [0],
                "scheduler": {
                    "min_epochs": setting.min_epochs,
                    "max_epochs": setting.max_epochs,
                    "reduction_factor": setting.eta,
                    "resume": True,
                    "synchronous": False,
                },
            },
        }
    )
    est = make_estimate(spec, make_policy(), price="1")
    return est.worst.gpu_hours, est.expected.gpu_hours


def _mean_epochs(strategy: str, setting: Setting, sampler: str = "random") -> float:
    return statistics.mean(optuna_epochs(strategy, setting, s, sampler) for s in SEEDS)


CASES = [
    pytest.param(
        strategy,
        setting,
        id=f"{strategy}-N{setting.trials}-r{setting.min_epochs}-R{setting.max_epochs}"
        f"-eta{setting.eta}",
    )
    for strategy in STRATEGIES
    for setting in SETTINGS
]


def test_gpu_hours_are_epochs_under_these_settings():
    # 3 random trials × 5 epochs of 60 min on 1 GPU: 15 GPU-hours in both cases.
    spec = make_spec(
        {
            "workload": {"max_epochs": 5, "epoch_minutes": 60},
            "search": {"strategy": "random", "max_trials": 3, "seeds": [0]},
        }
    )
    est = make_estimate(spec, make_policy(), price="1")
    assert est.worst.gpu_hours == est.expected.gpu_hours == Decimal(15)
    # Asynchronous halving, N=27, r=1, R=27, η=3: worst 27 × 27; expected rungs at 1/3/9/27
    # epochs where ASHA's rule promotes n1, n2, n3 trials training 2/6/18 more epochs.
    worst, expected = our_epochs("successive_halving", SETTINGS[0])
    n1 = expected_promotions(Decimal(27), Decimal(3))
    n2 = expected_promotions(n1, Decimal(3))
    n3 = expected_promotions(n2, Decimal(3))
    assert worst == Decimal(729)
    assert abs(expected - (27 + 2 * n1 + 6 * n2 + 18 * n3)) < Decimal("1e-6")


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize(("strategy", "setting"), CASES)
def test_our_worst_case_is_never_below_what_optuna_ran(strategy, setting, sampler):
    worst, _ = our_epochs(strategy, setting)
    for seed in SEEDS:
        assert worst >= optuna_epochs(strategy, setting, seed, sampler), f"seed {seed}"


@pytest.mark.parametrize(("strategy", "setting"), CASES)
def test_our_expected_case_is_near_optuna_with_a_random_sampler(strategy, setting):
    _, expected = our_epochs(strategy, setting)
    actual = _mean_epochs(strategy, setting)
    assert actual / float(expected) <= OPTUNA_ABOVE_EXPECTED
    assert float(expected) / actual <= EXPECTED_ABOVE_OPTUNA


def comparison_table() -> str:
    """A Markdown table: Optuna's epochs per seed and mean, our worst and expected, ratio."""
    lines = [
        "| pruner | setting | sampler | Optuna epochs per seed | Optuna mean "
        "| our worst | our expected | mean / expected |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for strategy in STRATEGIES:
        for setting in SETTINGS:
            worst, expected = our_epochs(strategy, setting)
            for sampler in SAMPLERS:
                runs = [optuna_epochs(strategy, setting, s, sampler) for s in SEEDS]
                mean = statistics.mean(runs)
                lines.append(
                    f"| {strategy} | {setting} | {sampler} | {' / '.join(map(str, runs))} "
                    f"| {mean:.1f} | {worst:.0f} | {expected:.1f} | {mean / float(expected):.2f} |"
                )
    return "\n".join(lines)


if __name__ == "__main__":
    started = time.perf_counter()
    print(comparison_table())
    print(
        f"\nSeeds {', '.join(map(str, SEEDS))}; limits: mean/expected ≤ {OPTUNA_ABOVE_EXPECTED}, "
        f"expected/mean ≤ {EXPECTED_ABOVE_OPTUNA} (random sampler); "
        f"{time.perf_counter() - started:.1f} s"
    )
