"""What the backtest scores each experiment against: what ``check`` would have had then.

A review found the backtest calibrated each experiment from the runs that had *started*
before it: a version started while the last one's 40-hour runs still ran was scored
"calibrated", MAPE 0 %, on figures no ``check`` could have had.
"""

from __future__ import annotations

import datetime as dt

from gate.calibrate.backtest import replays
from gate.calibrate.model import Key
from gate.calibrate.observe import Observation

T0 = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.timezone.utc)
KEY = Key(model="resnet18", accelerator="L4", gpus=1, precision="bf16")


def run(spec: str, start: float, hours: float, minutes: float = 60.0) -> Observation:
    return Observation(
        run_id=f"{spec}-{start}", key=KEY, experiment="cifar", spec=spec, team="",
        start=T0 + dt.timedelta(hours=start), end=T0 + dt.timedelta(hours=start + hours),
        status="FINISHED", epoch_minutes=minutes, setup_minutes=None, plateau_fraction=None,
        failure_point=None, retry=False, preempted=False,
    )  # fmt: skip


def test_runs_still_running_when_an_experiment_started_do_not_calibrate_it():
    a = [run("a", 0.1 * i, 40.0) for i in range(6)]  # end about h40
    b = [run("b", 1 + 0.1 * i, 40.0) for i in range(6)]  # start at h1
    first, second = replays([*a, *b])
    assert (first.fingerprint, second.fingerprint) == ("a", "b")
    assert second.calibration.runs == 0


def test_runs_that_had_ended_when_an_experiment_started_calibrate_it():
    ended = [run("a", 0.1 * i, 0.5) for i in range(6)]  # end by h1.0
    going = [run("a", 0.7, 40.0)]
    later = [run("b", 1.2, 1.0)]
    *_, replay = replays([*ended, *going, *later])
    assert replay.fingerprint == "b" and replay.calibration.runs == 6


def test_a_run_is_observed_with_its_end():
    from gate.calibrate.observe import observe
    from gate.estimate.settings import Returns
    from tests.reconcile_kit import at, facts

    seen = observe(facts("r", start=1.0, hours=40.0), "cifar", Returns())
    assert seen is not None and seen.end == at(41.0)
