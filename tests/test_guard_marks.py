"""A guard whose MLflow is down still stops in time: the marks never hold back a decision.

``LoopGuard.step`` and ``OptunaGuard.report`` mark the trial's MLflow run after deciding.
Against a tracking server that refuses connections or never answers, under MLflow's own
retry defaults (about four minutes, then an exception), the stop comes back within
seconds, the failure is logged once, and later steps do not wait on MLflow again.
"""

from __future__ import annotations

import logging
import time
from decimal import Decimal

import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.loop import LoopGuard
from gate.guard.marks import RETRY_AFTER_S, RunMarks
from gate.guard.model import STOPPED_BY, Action, Decision
from gate.guard.optuna import OptunaGuard
from tests.guard_kit import Clock, approved_limits
from tests.ledger_down import MLFLOW_DEFAULTS, ledger_down

OVER_THE_CEILING_S = 5 * 3600.0  # 5 h × 8 GPUs × 2 USD: 80 USD against an approved 64
QUICK_S = 4.0
"""Well under MLflow's defaults (minutes) and the 10 s every enforcement path keeps to."""


@pytest.fixture
def mlflow_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's own retry defaults, stated, and the ledger's timeout at 1 s.

    MLflow is imported first, as a loop that made its run has: the time measured is the
    wait on the server, not the import's 2-3 s of CPU on a busy machine.
    """
    import mlflow.tracking  # noqa: F401

    for key, value in MLFLOW_DEFAULTS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("BUDGET_GATE_LEDGER_TIMEOUT", "1")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gate.guard.marks"]


@pytest.mark.parametrize("outage", ["refused", "blackhole"])
def test_a_loop_gets_its_stop_in_seconds_when_mlflow_is_down(
    outage: str, mlflow_defaults: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "gate.guard.marks")
    with ledger_down(outage) as uri:
        loop = LoopGuard(
            Guard(approved_limits(), clock=Clock()), "0", mlflow_run_id="r1", tracking_uri=uri
        )
        started = time.monotonic()
        decision = loop.step(1, {"val_loss": 1.0}, held_seconds=OVER_THE_CEILING_S)
        first = time.monotonic() - started
        started = time.monotonic()
        again = loop.step(2, {"val_loss": 0.9}, held_seconds=OVER_THE_CEILING_S + 360)
        second = time.monotonic() - started
    assert decision.stop_search and again.stop_search, decision
    assert first < QUICK_S, f"the stop took {first:.1f} s"
    assert second < 0.5, f"the next step waited {second:.1f} s on MLflow again"
    (warning,) = _warnings(caplog)
    assert warning.startswith(f"budget-gate guard: MLflow at {uri} not marked (")


@pytest.mark.parametrize("outage", ["refused", "blackhole"])
def test_an_optuna_trial_is_pruned_in_seconds_when_mlflow_is_down(
    outage: str, mlflow_defaults: None, caplog: pytest.LogCaptureFixture
) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    caplog.set_level(logging.WARNING, "gate.guard.marks")
    with ledger_down(outage) as uri:
        guard = OptunaGuard(Guard(approved_limits(), clock=Clock()), tracking_uri=uri)

        def objective(trial: optuna.Trial) -> float:
            guard.step(trial, 1, {"val_loss": 1.0}, OVER_THE_CEILING_S, f"run-{trial.number}")
            return 1.0

        study = optuna.create_study()
        started = time.monotonic()
        study.optimize(objective, n_trials=3)
        seconds = time.monotonic() - started
    (trial,) = study.get_trials()  # the stop of the search stopped the study
    assert trial.state is optuna.trial.TrialState.PRUNED
    assert trial.user_attrs[STOPPED_BY] == "budget-gate guard (stop-search)"
    assert seconds < QUICK_S, f"the stop took {seconds:.1f} s"
    assert len(_warnings(caplog)) == 1


def test_marks_are_tried_again_once_the_pause_after_a_failure_is_over(
    mlflow_defaults: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "gate.guard.marks")
    clock = Clock()
    stop = Decision(Action.STOP_TRIAL, spend=Decimal(0), reason="x")
    with ledger_down("blackhole") as uri:
        marks = RunMarks(uri, clock=clock)
        assert not marks.write("r1", 1, Decimal(0), stop)
        started = time.monotonic()
        assert not marks.write("r1", 2, Decimal(0), stop)
        assert time.monotonic() - started < 0.5  # not tried: no wait
        clock.now += RETRY_AFTER_S
        started = time.monotonic()
        assert not marks.write("r1", 3, Decimal(0), stop)
        assert time.monotonic() - started >= 0.5  # tried, and waited for the timeout again
    assert len(_warnings(caplog)) == 1
