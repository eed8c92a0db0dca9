"""The Optuna guard in multi-objective studies (``directions=[...]``), where Optuna refuses
``trial.report`` and ``trial.should_prune`` (NotImplementedError)."""

from __future__ import annotations

import time
from decimal import Decimal

import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.model import STOPPED_BY
from gate.guard.optuna import OptunaGuard, spend_of
from tests.guard_kit import guard_spec_4_trials, make_limits


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _guard() -> OptunaGuard:
    return OptunaGuard(Guard(make_limits(guard_spec_4_trials()), clock=time.monotonic))


def _objective(guard: OptunaGuard, how: str):
    def objective(trial: optuna.Trial) -> tuple[float, float]:
        guard.admit(trial)
        x = trial.suggest_float("x", 0.0, 1.0)
        for epoch in range(1, 11):
            metrics = {"val_loss": x + 1.0 / epoch}
            getattr(guard, how)(trial, epoch, metrics, held_seconds=epoch * 360.0)
        return x, 1.0 - x

    return objective


@pytest.mark.parametrize("pruned_by", ["the guard's pruner", "Optuna's default pruner"])
@pytest.mark.parametrize("how", ["step", "report"])
def test_a_multi_objective_study_is_guarded_not_crashed(tmp_path, how, pruned_by):
    """Each report called ``trial.report``, which Optuna refuses in a multi-objective study:
    every trial failed at its first epoch (NotImplementedError) and no search could run
    under the guard. ``should_prune`` is refused there too, so ``report`` raises the stop
    itself even with the guard's pruner. 4 trials of 10 epochs reach the 64 USD ceiling."""
    guard = _guard()
    pruner = guard.pruner() if pruned_by == "the guard's pruner" else None
    study = optuna.create_study(
        directions=["minimize", "minimize"],
        pruner=pruner,
        storage=f"sqlite:///{tmp_path / 'multi.db'}",
    )
    study.optimize(_objective(guard, how), n_trials=8, callbacks=[guard.callback])
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3 + ["PRUNED"]
    assert trials[-1].user_attrs[STOPPED_BY] == "budget-gate guard (stop-search)"
    seconds = sum(spend_of(study).values())
    assert guard.guard.spend == Decimal(repr(seconds)) / 3600 * 2 == Decimal(64)
