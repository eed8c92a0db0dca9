"""What the backtest scores each experiment against: what ``check`` would have had then.

A review found the backtest calibrated each experiment from the runs that had *started*
before it: a version started while the last one's 40-hour runs still ran was scored
"calibrated", MAPE 0 %, on figures no ``check`` could have had.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal

from gate.calibrate.backtest import CostCase, epoch_case, replays
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


# --- the epoch-time table scores the figure check priced, or none ------------------------


def test_a_label_less_spec_s_epoch_time_is_never_scored_calibrated():
    bare = Key(accelerator="L4", gpus=1, precision="bf16")
    earlier = [replace(run("a", i, 0.5, 4.0), key=bare) for i in range(6)]
    *_, replay = replays([*earlier, replace(run("b", 20, 0.5, 4.0), key=bare)])
    case = epoch_case(replay, 5)
    assert case is not None and case.calibrated is None


def test_without_its_spec_only_the_own_key_s_figure_is_scored():
    one_gpu = [run("a", i, 0.5, 4.0) for i in range(6)]
    two = replace(run("b", 20, 0.5, 8.0), key=KEY.model_copy(update={"gpus": 2}))
    *_, replay = replays([*one_gpu, two])
    case = epoch_case(replay, 5)  # check may price the spec's 8 over the runs' 4
    assert case is not None and case.calibrated is None
    *_, own = replays([*one_gpu, run("b", 20, 0.5, 4.0)])
    found = epoch_case(own, 5)
    assert found is not None and found.calibrated == (4.0, 4.0)


def test_with_its_spec_the_figure_check_priced_is_scored():
    *_, replay = replays([run("a", i, 0.5, 4.0) for i in range(6)] + [run("b", 20, 0.5, 8.0)])
    priced = CostCase("cifar", "b", "a.yaml", "", Decimal(1), None, None, epoch=(8.0, 9.0))
    case = epoch_case(replay, 5, priced)
    assert case is not None and case.calibrated == (8.0, 9.0)
    unpriced = CostCase("cifar", "b", "a.yaml", "", Decimal(1), None, None)
    assert epoch_case(replay, 5, unpriced).calibrated is None  # type: ignore[union-attr]


def test_the_epoch_table_scores_the_figure_check_raised_a_coarser_key_to(lab, monkeypatch):
    """1-GPU runs (3 to 6 min, median 4.5) and a 2-GPU version declaring 5: ``check``
    prices max(4.5, 5) = 5, the figure scored, not the runs' raw 4.5."""
    import json
    import subprocess

    from gate import tracking
    from tests.reconcile_kit import log_run
    from tests.test_calibrate import LOSS, SPEC

    root = lab.team.root
    monkeypatch.chdir(root)

    def commit(gpus: int, declared: float) -> None:
        text = SPEC.format(name=lab.experiment, team=lab.team.name, declared=declared,
                           trials=6, plateau="", experiment=lab.experiment)  # fmt: skip
        (root / "sweep.yaml").write_text(
            text.replace("gpus_per_trial: 1", f"gpus_per_trial: {gpus}")
        )
        for args in (["init", "-q"], ["add", "sweep.yaml"], ["commit", "-qm", "v"]):
            subprocess.run(["git", "-c", "user.email=t@x", "-c", "user.name=t", *args], cwd=root,
                           check=True, capture_output=True)  # fmt: skip

    def log(start: float, minutes: float) -> None:
        log_run(lab.client, lab.experiment_id, start=start, hours=0.5 + minutes / 6,
                tags=tracking.run_tags("sweep.yaml", trial_id=int(start), attempt=1),
                metrics={tracking.TRAIN_SECONDS: minutes * 600},
                history={"val_loss": LOSS})  # fmt: skip

    commit(1, 4)
    for i, minutes in enumerate((3.0, 3.6, 4.2, 4.8, 5.4, 6.0)):
        log(i, minutes)
    commit(2, 5)
    log(20, 5.0)
    code, out, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--backtest",
                                  "--format", "json")  # fmt: skip
    assert code == 0, err
    scored = json.loads(out)["backtest"]["epoch_time"]["overall"]
    assert scored["not_calibrated"] == 1 and scored["calibrated"]["cases"] == 1
    assert scored["calibrated"]["mape"] == 0.0  # 5 against 5, not 4.5
