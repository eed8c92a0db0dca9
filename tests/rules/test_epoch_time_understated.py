"""BG308 epoch-time-understated: a declared epoch time or plateau below what runs measured."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from gate.calibrate.lookup import measured_for
from gate.calibrate.model import Calibration, Entry, FractionStat, Key, TimeStat
from gate.estimate.scenarios import estimate
from gate.policy.model import Policy, Severity
from gate.policy.rules import epoch_time_understated
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.experiment import Experiment
from tests.conftest import TODAY, make_policy, make_quote, make_spec

KEY = Key(model="resnet18", accelerator="A100-80GB", gpus=1, precision="bf16")
CALIBRATION = Calibration(
    api_version="budget-gate/v1",
    kind="Calibration",
    created=dt.date(2026, 12, 1),
    entries=[
        Entry(
            key=KEY,
            runs=23,
            finished=23,
            failed=0,
            first=dt.date(2026, 11, 20),
            last=dt.date(2026, 11, 30),
            epoch_minutes=TimeStat(runs=23, p10=3.8, median=4.1, p90=4.6),
            plateau_fraction=FractionStat(runs=23, p10=0.5, median=0.6, p90=0.7),
        )
    ],
)


def _spec(minutes: float, plateau: int | None = None, model: str = "resnet18") -> Experiment:
    early = {"monitor": "val_loss", "patience": 3}
    if plateau is not None:
        early["expected_plateau_epoch"] = plateau
    return make_spec(
        {
            "metadata": {"labels": {"model": model}},
            "workload": {"max_epochs": 20, "epoch_minutes": minutes},
            "stopping": {"early_stopping": early},
        }
    )


def _run(spec: Experiment, policy: Policy | None = None) -> list[Violation]:
    policy = policy or make_policy()
    measured = measured_for(CALIBRATION, spec, policy.calibration, 0.0)
    est = estimate(spec, policy, make_quote(), measured=measured)
    ctx = RuleContext(spec, est, policy, "exp/spec.yaml", TODAY)
    return list(epoch_time_understated.check(ctx))


def test_constants():
    assert (epoch_time_understated.ID, epoch_time_understated.SLUG) == (
        "BG308",
        "epoch-time-understated",
    )
    assert epoch_time_understated.DEFAULT_SEVERITY is Severity.APPROVAL


def test_a_figure_near_the_measured_one_passes():
    assert _run(_spec(4)) == []
    assert _run(_spec(3.1)) == []  # 3.8 × (1 − 0.2) = 3.04: within the tolerance


def test_an_understated_epoch_time_fails_at_epoch_minutes():
    [violation] = _run(_spec(0.5))
    assert violation.path == ("workload", "epoch_minutes")
    assert violation.message == (
        "epoch time 0.5 min is below the measured 3.80 (10th percentile of 23 runs of "
        "resnet18 on A100-80GB × 1 bf16, 2026-11-20 … 11-30) by more than the tolerance of "
        "20%: priced at the measured median 4.10 min instead"
    )


def test_the_policy_sets_the_tolerance():
    loose = make_policy({"calibration": {"tolerance": 0.9}})
    assert _run(_spec(0.5), loose) == []


def test_an_early_declared_plateau_fails():
    [violation] = _run(_spec(4, plateau=2))
    assert violation.path == ("stopping", "early_stopping", "expected_plateau_epoch")
    assert "expected_plateau_epoch 2 is earlier than the measured 10" in violation.message
    assert _run(_spec(4, plateau=9)) == []


def test_no_calibrated_key_no_finding_but_a_note():
    spec = _spec(0.5, model="gpt2")
    assert _run(spec) == []
    policy = make_policy()
    measured = measured_for(CALIBRATION, spec, policy.calibration, 0.0)
    notes = estimate(spec, policy, make_quote(), measured=measured).expected.assumptions
    assert any("fewer than 5 runs of gpt2 on A100-80GB × 1 bf16" in n for n in notes)


def test_the_estimate_prices_the_measured_median_and_high_quantile():
    policy = make_policy()
    spec = _spec(0.5)
    measured = measured_for(CALIBRATION, spec, policy.calibration, 0.0)
    est = estimate(spec, policy, make_quote(), measured=measured)
    plain = estimate(spec, policy, make_quote())
    # worst: 20 epochs × 4.6 min; expected: (plateau 12 + patience 3) × 4.1 min
    nano = Decimal("1e-9")
    assert est.worst.hours_per_trial == (20 * Decimal("4.6") / 60).quantize(nano)
    assert est.expected.hours_per_trial == (15 * Decimal("4.1") / 60).quantize(nano)
    assert plain.worst.hours_per_trial == (20 * Decimal("0.5") / 60).quantize(nano)


def test_a_label_a_typo_from_a_measured_model_is_held_to_its_epoch_time():
    """``resnet-18`` (or ``resnet18-v2``) found no runs: 0.5 min an epoch passed, priced 9x
    below the measured model it is a hyphen from. A label far from any (``vit-b16``), or a
    size apart (``resnet19`` is 0.875 alike), is a model of its own: no finding."""
    for label in ("resnet-18", "resnet18-v2", "ResNet_18"):
        (found,) = _run(_spec(0.5, model=label))
        assert found.path == ("metadata", "labels", "model")
        assert f"the model label {label!r} has no measured epoch time, but 'resnet18'" in (
            found.message
        )
        assert "below its measured 3.80 (10th percentile of 23 runs of resnet18" in found.message
    for label in ("vit-b16", "resnet19", "resnet"):
        assert _run(_spec(0.5, model=label)) == []
    assert _run(_spec(4.0, model="resnet-18")) == []  # within the tolerance of the near one
