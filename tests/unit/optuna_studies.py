"""Real Optuna studies for the validation grid, and the data file that caches their epochs.

Each trial samples an asymptote ``a`` and a time constant ``tau`` and reports a loss at
epochs 1..R, asking the pruner after every report; the epochs a trial consumed are the
steps it reported. Two objectives:

- ``crossing``: ``a + exp(-epoch/tau) + noise``: slow learners start worse and may end
  better, so ranks at one rung and the last differ;
- ``keeping``: ``a · (1 + 4 exp(-4 epoch/R)) + noise``: every curve has the same shape, so a
  trial keeps its rank from rung to rung (up to the noise).

``python -m tests.unit.optuna_studies`` regenerates ``optuna_validation.json`` on one core
(pinned with ``sched_setaffinity``) and records how long it took; the validation tests
read it, or regenerate it first when ``BUDGET_GATE_REGENERATE_OPTUNA=1``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import optuna

DATA = Path(__file__).with_name("optuna_validation.json")
SEEDS = (0, 1, 2)
PRUNERS = ("successive_halving", "hyperband")
SAMPLERS = ("random", "tpe")
OBJECTIVES = ("crossing", "keeping")
NOISE = 0.005


@dataclass(frozen=True)
class Setting:
    """A search shape: n trials, rungs from r to R epochs, reduction factor η."""

    trials: int
    min_epochs: int
    max_epochs: int
    eta: int

    def __str__(self) -> str:
        return f"n={self.trials} r={self.min_epochs} R={self.max_epochs} η={self.eta}"


GRID = tuple(
    Setting(n, r, big_r, eta)
    for n, r, big_r, eta in itertools.product(
        (27, 50, 100, 200), (1, 3), (27, 81, 100, 243), (2, 3, 4)
    )
)


@dataclass(frozen=True)
class Case:
    """One cell of the validation table: a pruner on a setting with a sampler and objective."""

    pruner: str
    setting: Setting
    sampler: str
    objective: str

    @property
    def key(self) -> str:
        """The cell's key in the data file."""
        s = self.setting
        return (
            f"{self.pruner}/n{s.trials}/r{s.min_epochs}/R{s.max_epochs}/eta{s.eta}"
            f"/{self.sampler}/{self.objective}"
        )


CASES = tuple(
    Case(p, s, sampler, objective)
    for p in PRUNERS
    for s in GRID
    for sampler in SAMPLERS
    for objective in OBJECTIVES
)


def _pruner(name: str, setting: Setting) -> optuna.pruners.BasePruner:
    if name == "successive_halving":
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


def _loss(objective: str, a: float, tau: float, epoch: int, big_r: int) -> float:
    if objective == "crossing":
        return a + math.exp(-epoch / tau)
    return a * (1 + 4 * math.exp(-4 * epoch / big_r))


def study_epochs(case: Case, seed: int) -> int:
    """Epochs Optuna's pruner let the trials of one real study consume, summed over trials."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    big_r = case.setting.max_epochs

    def objective(trial: optuna.Trial) -> float:
        a = trial.suggest_float("a", 0.05, 0.5)
        tau = trial.suggest_float("tau", 1.0, big_r / 2)
        noise = random.Random(seed * 1_000_003 + trial.number)
        value = math.inf
        for epoch in range(1, big_r + 1):
            value = _loss(case.objective, a, tau, epoch, big_r) + noise.gauss(0, NOISE)
            trial.report(value, step=epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    # HyperbandPruner assigns trials to brackets by a hash of the study name: fix it.
    study = optuna.create_study(
        study_name=f"validation-{case.pruner}-{seed}",
        direction="minimize",
        pruner=_pruner(case.pruner, case.setting),
        sampler=_sampler(case.sampler, seed),
    )
    study.optimize(objective, n_trials=case.setting.trials, n_jobs=1)
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == case.setting.trials
    finished = {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    assert all(t.state in finished for t in trials)
    return sum(len(t.intermediate_values) for t in trials)


def regenerate(path: Path = DATA) -> dict[str, object]:
    """Run every study of the grid on one core and write the data file; returns its content."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    started = time.perf_counter()
    epochs = {case.key: [study_epochs(case, seed) for seed in SEEDS] for case in CASES}
    data: dict[str, object] = {
        "optuna": optuna.__version__,
        "seeds": list(SEEDS),
        "studies": len(CASES) * len(SEEDS),
        "seconds_on_one_core": round(time.perf_counter() - started, 1),
        "epochs": epochs,
    }
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return data


def load(path: Path = DATA) -> dict[str, object]:
    """The cached measurements, regenerated first when BUDGET_GATE_REGENERATE_OPTUNA=1."""
    if os.environ.get("BUDGET_GATE_REGENERATE_OPTUNA") == "1":
        return regenerate(path)
    loaded: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


if __name__ == "__main__":
    result = regenerate()
    print(f"{result['studies']} studies in {result['seconds_on_one_core']} s on one core")
