"""Which runs ``calibrate`` learns together: one model's runs under every spelling of its label.

The lookup matches labels folded (case, zero-width characters, fullwidth letters) and takes
the entry with the most runs of those that fold alike. A review found calibrate keyed runs
by the label as tagged: 3 runs of ``ResNet18`` and 3 of ``resnet18`` never reached
``min_runs`` 5 (a 0.5 min spec passed, no BG308), and 21 fast runs tagged ``RESNET18`` or
``resnet18`` with a zero-width space replaced 20 real ones (worst case 913 → 90 USD). The
backtest's replays grouped runs by the raw label too.
"""

from __future__ import annotations

import datetime as dt

import pytest

from gate.calibrate.backtest import replays
from gate.calibrate.learn import learn
from gate.calibrate.lookup import EPOCH_LEVELS, by_key, epoch_minutes, finest, fold
from gate.calibrate.model import Key
from gate.calibrate.observe import Observation

T0 = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.timezone.utc)
L4 = {"accelerator": "L4", "gpus": 1, "precision": "bf16"}


def run(label: str, minutes: float, hour: float, experiment: str = "e", **key: str) -> Observation:
    return Observation(
        run_id=f"{label}-{hour}", key=Key(**{**L4, "model": label, **key}),
        experiment=experiment, spec=experiment, team="", start=T0 + dt.timedelta(hours=hour),
        status="FINISHED", epoch_minutes=minutes, setup_minutes=None, plateau_fraction=None,
        failure_point=None, retry=False, preempted=False,
    )  # fmt: skip


def priced(runs: list[Observation], label: str = "resnet18") -> tuple[float, float, int] | None:
    """The epoch time (median, p90, runs) a ``label`` spec on L4 × 1 bf16 is priced at."""
    calibration = learn(runs, dt.date(2026, 12, 1), fold=fold)
    found = finest(by_key(calibration), Key(**L4, model=label), epoch_minutes, 5, EPOCH_LEVELS)
    return None if found is None else (found[1].median, found[1].p90, found[1].runs)


def test_two_spellings_of_a_label_are_one_model_s_runs():
    runs = [run("ResNet18", 4.0, i) for i in range(3)] + [run("resnet18", 4.0, i) for i in range(3)]
    assert priced(runs) == (4.0, 4.0, 6)
    [model] = {
        e.key.model for e in learn(runs, dt.date(2026, 12, 1), fold=fold).entries if e.key.model
    }
    assert model == "ResNet18"  # of equals, the first in code-point order


@pytest.mark.parametrize("lookalike", ["RESNET18", "resnet18\u200b", "ｒesnet18", "resnet18\u00a0"])
def test_more_fast_runs_under_a_lookalike_label_never_replace_the_real_ones(lookalike):
    real = [run("resnet18", 3.8 + 0.02 * i, i) for i in range(20)]
    fast = [run(lookalike, 0.4, 30 + i) for i in range(21)]
    found = priced(real + fast)
    assert found is not None and found[2] == 41 and found[1] >= 3.8  # the p90 holds


def test_a_spelling_with_an_invisible_character_is_never_the_one_kept():
    runs = [run("resnet18", 4.0, i) for i in range(2)] + [
        run("resnet18\u200b", 4.0, i) for i in range(9)
    ]
    models = {
        e.key.model for e in learn(runs, dt.date(2026, 12, 1), fold=fold).entries if e.key.model
    }
    assert models == {"resnet18"}


def test_accelerator_spellings_are_learned_together_as_the_lookup_folds_them():
    runs = [run("resnet18", 4.0, i) for i in range(3)] + [
        run("resnet18", 4.0, i, accelerator="l4") for i in range(3)
    ]
    assert priced(runs) == (4.0, 4.0, 6)


def test_the_backtest_replays_a_model_s_runs_under_every_spelling():
    earlier = [run("ResNet18", 4.0, i, experiment="a") for i in range(6)]
    later = run("resnet18", 4.0, 50, experiment="b")
    *_, replay = replays([*earlier, later])
    assert replay.experiment == "b" and replay.calibration.runs == 6
