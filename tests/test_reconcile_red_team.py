"""Red-team reproductions against reconcile's pure core and the report's spot figure.

A submission tagged after the run's start (a skewed submit-host clock, or the job's own
tag) made the time to the first qualified model negative; a run logging only its setup
seconds printed a 0 % effective-training ratio as ``0.000E+29 %`` and priced its epochs
after the plateau at 0.00 without a word; an H100 spot run on an L4 on-demand spec was a
"net saving" against H100 on-demand though it cost more than its spec's price.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from gate.estimate.prices import Quote
from gate.ledger import tracking
from gate.money import fixed, format_amount
from gate.reconcile.reconciler import ReconcileReport, reconcile
from gate.reconcile.waste import WasteKind
from gate.report.commitments import commitments
from gate.report.compute import ReportInputs, build_report
from gate.report.period import Month, Period
from gate.report.runs import MonthRuns, Priced
from gate.reporters.reconcile_json import render as render_json
from gate.reporters.reconcile_text import render as render_text
from gate.spec.trial import Capacity
from tests.reconcile_kit import at, facts, make_plan

PLATEAU = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.03125, 0.03125, 0.03125, 0.03125)


def test_a_submission_tagged_after_the_start_does_not_make_the_time_negative():
    """Submitted 61 h after its start, finished 10 h after it: 10 h to the first model."""
    late = (at(0) + dt.timedelta(hours=61)).isoformat()
    run = facts("r", hours=10, tags={tracking.SUBMITTED_AT: late})
    result = reconcile(make_plan(), [run])
    assert result.hours_to_first_qualified == Decimal(10)
    (priced,) = result.runs
    assert priced.submitted == priced.start
    assert any("after the run's start" in note for note in priced.notes)


def test_a_submission_before_the_start_still_counts_the_queue():
    early = (at(0) - dt.timedelta(hours=2)).isoformat()
    result = reconcile(make_plan(), [facts("r", hours=10, tags={tracking.SUBMITTED_AT: early})])
    assert result.hours_to_first_qualified == Decimal(12)
    assert not result.runs[0].notes


def test_zero_with_a_large_exponent_prints_as_zero():
    zero = Decimal(0) / Decimal("1E-26")
    assert str(zero) == "0E+26"
    assert fixed(zero, 1) == 0 and str(fixed(zero, 1)) == "0.0"
    assert format_amount(zero * 100, 1) == "0.0"
    assert format_amount(Decimal("1E+30")) == "1.000E+30"  # astronomically large: kept


def _report(result) -> ReconcileReport:
    return ReconcileReport("s.yaml", "e", "p", "e", "test", result, "0")


def test_setup_seconds_without_train_seconds_is_said_and_the_plateau_still_priced():
    """10 epochs over 10 h, flat after 6 (patience 2 by default): 4 epochs after it are
    wasted whether or not the launcher timed its training."""
    timed = facts("r", hours=10, metrics={tracking.SETUP_SECONDS: 60.0}, history=PLATEAU)
    result = reconcile(make_plan(price="10"), [timed])
    (run,) = result.runs
    assert run.epochs_after_plateau > 0
    assert any(tracking.TRAIN_SECONDS in note for note in run.notes)
    plateau = next(w for w in result.waste if w.kind is WasteKind.PLATEAU)
    assert plateau.cost == run.plateau_cost > 0
    text, document = render_text(_report(result)), render_json(_report(result))
    assert "E+" not in text and "E+" not in document
    assert "Epochs after the plateau: 0.00" not in text


def test_a_zero_effective_training_ratio_is_plain_zero():
    """Training logged as 0 s of 10 h held: the ratio is 0, not 0E+26."""
    idle = facts("r", hours=10, metrics={tracking.TRAIN_SECONDS: 0.0, tracking.SETUP_SECONDS: 1e-9})
    result = reconcile(make_plan(), [idle])
    assert result.effective_ratio == 0
    ratio = result.effective_ratio
    assert ratio is not None and ratio.as_tuple().exponent <= 0
    text, document = render_text(_report(result)), render_json(_report(result))
    assert "effective-training ratio: 0.0 %" in text
    assert "E+" not in text and "E+" not in document


NOVEMBER = Period(Month(2026, 11), Month(2026, 11), trend=0)
PRICES = {
    ("A100-80GB", Capacity.ON_DEMAND): "10",
    ("H100", Capacity.SPOT): "20",
    ("H100", Capacity.ON_DEMAND): "40",
}


def _requote(accelerator: str, capacity: Capacity) -> Quote | None:
    price = PRICES.get((accelerator, capacity))
    return None if price is None else Quote(accelerator, capacity, Decimal(price), "USD", "test")


def test_a_dearer_accelerator_on_spot_is_no_saving_against_the_specs_price():
    """An A100 on-demand spec at 10; the run tags H100 spot (20, charged as the dearer): it
    is compared with the spec's A100 on-demand, 10, so it lost 10, not saved 20."""
    plan = make_plan(price="10", requote=_requote)
    tags = {tracking.ACCELERATOR: "H100", tracking.CAPACITY: "spot"}
    runs = MonthRuns(lambda f: Priced(plan, "t", "m", "s.yaml", "e"), NOVEMBER)
    runs.add(facts("r", hours=1, tags=tags))
    report = build_report(
        ReportInputs(
            period=NOVEMBER,
            now=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc),
            currency="USD",
            where="test",
            experiments=runs.experiments,
            commitments=commitments([], NOVEMBER, "USD"),
            budgets={},
        )
    )
    spot = report.spot
    assert spot.runs == 1 and spot.comparison.spot_cost == 20
    assert spot.comparison.on_demand_cost == 10
    assert spot.comparison.net_saving == -10


def test_one_spec_version_is_one_experiment_however_its_runs_spell_the_path():
    """Half of a version's runs tagged ``./experiments/a.yaml``: the report scored two
    experiments, each at the whole estimate, so a 2x overrun read as the worst case held
    twice. A spec version in its MLflow experiment is one experiment."""
    plan = make_plan(price="10")
    runs = MonthRuns(lambda f: Priced(plan, "t", "m", f.tags[tracking.SPEC], "e", tracked_in="e"),
                     NOVEMBER)  # fmt: skip
    for i, path in enumerate(
        ("experiments/a.yaml", "./experiments/a.yaml", "/r/experiments/a.yaml")
    ):
        tags = {tracking.SPEC: path, tracking.FINGERPRINT: plan.fingerprint}
        runs.add(facts(f"r{i}", hours=1, tags=tags))
    (experiment,) = runs.experiments
    assert len(experiment.lines) == 3
