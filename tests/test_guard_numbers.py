"""Seconds held as the numbers training code has at hand: numpy's, not only Python's.

A loop that times its epochs with numpy (``np.sum(epoch_times)``) hands the guard a
``numpy.float64`` or ``numpy.float32``; so does an objective that passes such a figure to
the Optuna guard."""

from __future__ import annotations

import os
import re
import time
from decimal import Decimal
from typing import Any

import numpy as np
import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.loop import LoopGuard
from gate.guard.model import GPU_SECONDS_ATTR, STOPPED_BY
from gate.guard.optuna import OptunaGuard
from tests.guard_kit import Clock, approved_limits

NUMBERS = {"numpy.float64": np.float64, "numpy.float32": np.float32, "numpy.int64": np.int64}


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.mark.parametrize("kind", list(NUMBERS))
def test_a_loop_that_times_its_epochs_with_numpy_stops_at_the_ceiling(kind):
    """``numpy.float64`` seconds reached ``Decimal(repr(...))`` as ``'np.float64(360.0)'``:
    the first step raised decimal.InvalidOperation, and the guard, holding the figure,
    raised at every later step and check. 40 epochs of 1.60 USD reach the 64 USD ceiling."""
    number: Any = NUMBERS[kind]
    clock = Clock()
    guard = Guard(approved_limits(), clock=clock)
    loop = LoopGuard(guard, "0", clock=clock)
    decisions = [
        loop.step(epoch, {"val_loss": 1.0 / epoch}, held_seconds=number(epoch * 360))
        for epoch in range(1, 41)
    ]
    assert [d.stop for d in decisions] == [False] * 39 + [True]
    assert decisions[-1].stop_search and guard.spend == Decimal(64)
    assert type(guard.gpu_seconds) is float


@pytest.mark.parametrize("kind", list(NUMBERS))
def test_an_objective_that_times_its_epochs_with_numpy_stops_at_the_ceiling(tmp_path, kind):
    """Stored on the trial, a ``numpy.float32`` is no JSON (TypeError) and a
    ``numpy.float64`` crashed the guard's count: every trial failed at its first report."""
    number: Any = NUMBERS[kind]
    guard = OptunaGuard(Guard(approved_limits(), clock=time.monotonic))
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'numbers.db'}")

    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        for epoch in range(1, 11):
            loss = np.float32(1.0 / epoch)
            guard.step(trial, epoch, {"val_loss": loss}, held_seconds=number(epoch * 360))
        return 0.0

    study.optimize(objective, n_trials=8, callbacks=[guard.callback])
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3 + ["PRUNED"]
    assert trials[-1].user_attrs[STOPPED_BY] == "budget-gate guard (stop-search)"
    assert [t.user_attrs[GPU_SECONDS_ATTR] for t in trials] == [28800.0] * 4
    assert guard.guard.spend == Decimal(64)


@pytest.fixture
def local_time():
    """Set the process's local time zone; the one it had is restored after the test."""
    before = os.environ.get("TZ")

    def set_zone(zone: str) -> None:
        os.environ["TZ"] = zone
        time.tzset()

    yield set_zone
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_a_wall_clock_set_back_does_not_fail_the_trial(local_time):
    """Optuna stamps a trial's start in local time. By default the guard measured the time
    held as local now minus that start: once the clock went back an hour (the autumn change
    of summer time), every report of a running trial was a negative figure, refused with
    ValueError, and the trial failed. The time held is counted on a clock that never goes
    back, from when the guard first saw the trial."""
    local_time("Etc/GMT-1")  # an hour ahead of UTC
    guard = OptunaGuard(Guard(approved_limits(), clock=time.monotonic))
    study = optuna.create_study()
    held: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        for epoch in range(1, 4):
            time.sleep(0.05)
            guard.step(trial, epoch, {"val_loss": 1.0 / epoch})
            held.append(trial.study.trials[trial.number].user_attrs[GPU_SECONDS_ATTR])
            local_time("Etc/GMT+1")  # the clock goes back two hours
        return 0.0

    study.optimize(objective, n_trials=1, callbacks=[guard.callback])
    assert study.trials[0].state.name == "COMPLETE"
    assert len(held) == 3 and 0 < held[0] < held[1] < held[2]


@pytest.mark.parametrize(
    ("epoch", "metrics", "said"),
    [
        (None, {"val_loss": 0.5}, "epoch None"),
        ("3", {"val_loss": 0.5}, "epoch '3'"),
        (3, {"val_loss": "abc"}, "val_loss 'abc'"),
        (3, {"val_loss": [0.5]}, "val_loss [0.5]"),
    ],
)
def test_a_report_that_is_no_number_is_refused_and_leaves_the_guard_whole(epoch, metrics, said):
    """An epoch of None or ``'3'`` entered the trial's curve and raised TypeError at that
    report and at every later one: the trial's guard was broken for good. A metric of
    ``'abc'`` raised ``could not convert string to float``, naming neither trial nor metric.
    Each is refused with what was reported, and the next good report decides as before."""
    clock = Clock()
    guard = Guard(approved_limits(), clock=clock)
    loop = LoopGuard(guard, "0", clock=clock)
    with pytest.raises(ValueError, match=rf"trial 0 reported {re.escape(said)}"):
        loop.step(epoch, metrics, held_seconds=360.0)
    stops = [loop.step(e, {"val_loss": 0.5}, held_seconds=e * 360.0).stop for e in range(1, 12)]
    assert stops == [False] * 10 + [True]  # the plateau at epoch 1 plus its window


def test_a_refused_report_still_counts_its_spend_and_stops_at_the_ceiling():
    """A loop that reports no epoch and swallows the error still holds its GPUs: the spend
    it reported counts, and the search stops at the approved amount all the same."""
    clock = Clock()
    guard = Guard(approved_limits(), clock=clock)
    loop = LoopGuard(guard, "0", clock=clock)
    with pytest.raises(ValueError, match="reported epoch None"):
        loop.step(None, {"val_loss": 0.5}, held_seconds=360.0)  # type: ignore[arg-type]
    assert guard.gpu_seconds == pytest.approx(360.0 * float(guard.limits.gpus))
    over = loop.step(None, {"val_loss": 0.5}, held_seconds=10**9)  # type: ignore[arg-type]
    assert over.stop_search


def test_an_objective_reporting_text_hears_which_metric():
    guard = OptunaGuard(Guard(approved_limits(), clock=time.monotonic))
    trial = optuna.create_study().ask()
    with pytest.raises(ValueError, match=r"trial 0 reported val_loss 'abc' at epoch 2"):
        guard.step(trial, 2, {"val_loss": "abc"}, held_seconds=720.0)
