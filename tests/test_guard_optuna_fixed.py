"""Optuna's way to retrain the best parameters, ``objective(FixedTrial(study.best_params))``,
runs the guarded objective on a trial that belongs to no study."""

from __future__ import annotations

import time

import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.optuna import OptunaGuard
from tests.guard_kit import approved_limits


@pytest.mark.parametrize("call", ["admit", "step", "report"])
def test_a_fixed_trial_is_refused_with_what_to_do(call):
    """The guard read ``trial.study``, which a FixedTrial lacks: an AttributeError from
    inside the guard, and nothing about what to do. It is refused with how to guard it."""
    guard = OptunaGuard(Guard(approved_limits(), clock=time.monotonic))
    trial = optuna.trial.FixedTrial({"x": 0.5})
    args = () if call == "admit" else (1, {"val_loss": 0.5})
    with pytest.raises(TypeError, match=r"FixedTrial.*LoopGuard.*enqueue_trial"):
        getattr(guard, call)(trial, *args)
    assert guard.guard.gpu_seconds == 0
