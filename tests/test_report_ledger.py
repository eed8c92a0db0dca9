"""The report's ledger figures agree with the gate's, and a past period's do not move.

Red-team reproductions (the report's pure core, no MLflow): two approvals of one spec in
a month were both counted as approved, and the runs after the second were paid by both;
a revocation or an approval recorded after the period changed its figures; a spec that
also broke a hard limit was "not over the triggers"; ``--team`` notes counted other
teams' records and trend months' runs; an empty month showed raw waste ids, and 1,000.25
of a 1,000 budget read "100 %". Every expected figure is worked out here by hand (runs of
1 GPU at 10 an hour), or by the gate's own monthly budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import types
from decimal import Decimal
from typing import Any

import pytest

from gate import tracking
from gate.ledger.budget import month_spend
from gate.ledger.records import LedgerRecord, RecordKind
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.policy.verdict import decide
from gate.report.commitments import commitments
from gate.report.compute import ReportInputs, build_report
from gate.report.model import MonthReport
from gate.report.period import Month, Period
from gate.report.runs import MonthRuns, Priced, asks_approval
from gate.reporters.report_tables import against_budget
from gate.reporters.report_text import render as text
from tests.reconcile_kit import T0, facts, make_plan

UTC = dt.timezone.utc
SPEC = "exp/sweep.yaml"
OLD, NEW = "sha256:old", "sha256:new"
NOVEMBER = Period(Month(2026, 11), Month(2026, 11), trend=0)
DECEMBER_1 = dt.datetime(2026, 12, 1, tzinfo=UTC)
PRICE = Decimal(10)


def _approval(
    when: dt.datetime, worst: str, rid: str, *, fingerprint: str = OLD, **kw: object
) -> LedgerRecord:
    fields: dict[str, object] = {
        "kind": RecordKind.APPROVAL,
        "spec": SPEC,
        "fingerprint": fingerprint,
        "experiment": "sweep",
        "recorded_at": when,
        "currency": "USD",
        "worst_cost": Decimal(worst),
        "team": "t",
        "by": rid,
        "record_id": rid,
    }
    fields.update(kw)
    return LedgerRecord(**fields)  # type: ignore[arg-type]


def _revocation(when: dt.datetime, *ids: str) -> LedgerRecord:
    return LedgerRecord(
        kind=RecordKind.REVOCATION,
        spec=SPEC,
        fingerprint=OLD,
        experiment="sweep",
        recorded_at=when,
        currency="USD",
        team="t",
        revokes=ids,
        record_id=f"revokes-{'-'.join(ids)}",
    )


def _priced(currency: str = "USD", team: str = "t") -> Priced:
    plan = make_plan(price=str(PRICE))
    plan = dataclasses.replace(plan, quote=dataclasses.replace(plan.quote, currency=currency))
    return Priced(plan, team, "m", SPEC, "sweep")


def _runs(
    period: Period, *runs: tuple[str, float, float], priced: Priced | None = None
) -> MonthRuns:
    """``(fingerprint, start, hours)``: hours after T0 (2026-11-02 08:00 UTC), 1 GPU each."""
    plans: dict[str, Priced] = {}
    month_runs = MonthRuns(
        lambda f: plans.setdefault(f.tags[tracking.SPEC], priced or _priced()), period
    )
    for i, (fingerprint, start, hours) in enumerate(runs):
        tags = {tracking.SPEC: SPEC, tracking.FINGERPRINT: fingerprint}
        month_runs.add(facts(f"r{i}", start=start, hours=hours, tags=tags))
    return month_runs


def _report(
    period: Period,
    runs: MonthRuns,
    records: list[LedgerRecord],
    **kw: object,
) -> MonthReport:
    return build_report(
        ReportInputs(
            period=period,
            now=kw.pop("now", DECEMBER_1),  # type: ignore[arg-type]
            currency="USD",
            where="test",
            experiments=runs.experiments,
            commitments=commitments(records, period, "USD"),
            budgets=kw.pop("budgets", {}),  # type: ignore[arg-type]
            **kw,  # type: ignore[arg-type]
        )
    )


def _at(month: int, day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, tzinfo=UTC)


# 1. approved counts each spec path once a month, as the gate does


def test_approved_counts_each_months_newest_approval_of_a_spec_as_the_gate_does():
    period = Period(Month(2026, 10), Month(2026, 11), trend=0)
    other = "exp/other.yaml"
    records = [
        _approval(_at(10, 5), "100", "a1"),
        _approval(_at(10, 20), "150", "a2", fingerprint=NEW),  # supersedes a1 in October
        _approval(_at(11, 3), "120", "a3", fingerprint=NEW),
        _approval(_at(11, 4), "80", "a4", fingerprint=NEW),  # supersedes a3 in November
        _approval(_at(11, 10), "30", "b1", spec=other, fingerprint="sha256:b"),
        _approval(_at(11, 12), "500", "eur", currency="EUR"),  # not added up, replaces nothing
        _approval(_at(11, 14), "999", "gone"),
        _revocation(_at(11, 15), "gone"),  # a revoked approval replaces nothing either
    ]
    report = _report(period, _runs(period), records)
    (team,) = report.teams
    by_hand = Decimal(150) + Decimal(80) + Decimal(30)
    gate = Decimal(0)
    for month in period.months:  # the gate's own committed spend at each month's last moment
        spend = month_spend(records, month.end - dt.timedelta(microseconds=1))
        gate += spend.totals("USD", spec="(none)", fingerprint="(none)").committed
    assert team.approved == by_hand == gate == Decimal(260)
    # every approval is still a row: each is someone's decision
    assert [a.by for a in report.approvals] == ["a1", "a2", "a3", "a4", "b1"]


def test_two_approvals_of_one_spec_never_pay_for_the_same_run():
    """The red team's case: bob approved at 100, alice again at 100 that month: 100, not 200.

    Each approval's runs are its version's from its time until the next approval of the
    version: r0 ran before both, r1 and r2 after x1, r3 and r4 after x2.
    """
    runs = _runs(
        NOVEMBER,
        (OLD, -2, 1),  # r0: before any approval, 10
        (OLD, 1, 2),  # r1: x1's, 20
        (OLD, 5, 3),  # r2: x1's, 30
        (OLD, 12, 4),  # r3: x2's, 40
        (OLD, 20, 1),  # r4: x2's, 10
    )
    records = [
        _approval(T0, "100", "x1"),
        _approval(T0 + dt.timedelta(hours=10), "100", "x2"),
    ]
    report = _report(NOVEMBER, runs, records)
    (team,) = report.teams
    assert team.approved == Decimal(100)
    assert team.actual == (1 + 2 + 3 + 4 + 1) * PRICE
    rows = {a.by: (a.actual, a.runs) for a in report.approvals}
    assert rows == {"x1": ((2 + 3) * PRICE, 2), "x2": ((4 + 1) * PRICE, 2)}
    assert sum(a.actual for a in report.approvals) == (2 + 3 + 4 + 1) * PRICE


def test_an_older_versions_runs_after_a_newer_versions_approval_stay_in_its_row():
    """x1 approves OLD, x2 approves NEW of the same path; OLD runs on (the gate clears them
    with x1): the run after x2 is x1's, not in no row (the second read's case)."""
    runs = _runs(NOVEMBER, (OLD, 1, 2), (OLD, 12, 4), (NEW, 13, 1))
    records = [
        _approval(T0, "100", "x1"),
        _approval(T0 + dt.timedelta(hours=10), "100", "x2", fingerprint=NEW),
    ]
    report = _report(NOVEMBER, runs, records)
    rows = {a.by: (a.actual, a.runs) for a in report.approvals}
    assert rows == {"x1": ((2 + 4) * PRICE, 2), "x2": (1 * PRICE, 1)}
    assert sum(a.actual for a in report.approvals) == report.teams[0].actual


# 2. a period's figures are cut at its end


def test_records_after_the_period_do_not_change_it():
    """A revocation and a launch written in December leave November as it was at its end."""
    runs = _runs(NOVEMBER, (OLD, 1, 3))
    records = [
        _approval(_at(11, 5), "100", "n1", fingerprint="sha256:n"),
        _revocation(_at(12, 2), "n1"),
        dataclasses.replace(
            _approval(_at(12, 3), "70", "l1"), kind=RecordKind.LAUNCH, approval="n1"
        ),
    ]
    report = _report(NOVEMBER, runs, records)
    (team,) = report.teams
    assert team.approved == Decimal(100)
    assert [a.by for a in report.approvals] == ["n1"]
    assert team.launched is None  # the ledger held no launch record by November's end


def test_the_variance_does_not_score_a_period_against_an_approval_recorded_after_it():
    runs = _runs(NOVEMBER, (OLD, 1, 3))  # 30, finished in November
    actual = 3 * PRICE
    later = _approval(DECEMBER_1, "400", "dec", expected_cost=Decimal(300))
    (team,) = _report(NOVEMBER, runs, [later]).teams
    spec_estimate = make_plan(price=str(PRICE)).estimate.expected.cost  # none approved by then
    assert team.accuracy is not None and team.cases == 1
    assert team.accuracy.mape == pytest.approx(abs(float((spec_estimate - actual) / actual)))
    within = _approval(_at(11, 20), "90", "nov", expected_cost=Decimal(60))
    (team,) = _report(NOVEMBER, runs, [within, later]).teams
    assert team.accuracy is not None
    assert team.accuracy.mape == pytest.approx(float((Decimal(60) - actual) / actual))  # 1.0


# 3. over the triggers is read from the findings, not the outcome


def test_a_spec_over_the_triggers_that_also_breaks_a_limit_is_over_the_triggers():
    limit = Finding("BG102", Severity.ERROR, "worst-case cost over the limit", None)
    trigger = Finding("BG501", Severity.APPROVAL, "6 trials over 4", None)
    assert decide([limit, trigger]) is Outcome.VIOLATION
    assert asks_approval([limit, trigger])
    assert asks_approval([dataclasses.replace(trigger, approved_by="alice")])
    assert not asks_approval([limit])
    assert not asks_approval([dataclasses.replace(trigger, waived_by="until March")])


POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {L4: {on-demand: 10}}}
limits: {max_experiment_cost: 100}
approval: {trials_over: 4, approvers: {users: [alice]}}
"""
SPEC_YAML = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: big, team: t, owner: carol}}
resources: {{accelerator: L4, gpus_per_trial: 16, precision: bf16}}
workload: {{max_epochs: 10, epoch_minutes: 60}}
search: {{strategy: random, max_trials: {trials}}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""


@pytest.mark.parametrize(("trials", "over"), [(6, True), (2, False)])
def test_the_command_reads_over_the_triggers_from_the_findings(tmp_path, trials, over):
    """6 trials of 16 GPUs for 10 h cost 9,600, over the 100 limit: a violation that is
    over the triggers (6 > 4) too; 2 trials break the limit alone."""
    from gate.commands.common import make_evaluator
    from gate.commands.report_plans import SpecPlans
    from gate.spec.experiment import Experiment
    from gate.spec.fingerprint import fingerprint
    from gate.spec.loader import load_file
    from gate.spec.validation import validate

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").write_text(POLICY, encoding="utf-8")
    spec = tmp_path / "big.yaml"
    spec.write_text(SPEC_YAML.format(trials=trials), encoding="utf-8")
    args = argparse.Namespace(policy_dir=str(tmp_path / "policies"), as_of=None)
    evaluator = make_evaluator(args, calibrated=False)
    assert evaluator.evaluate(str(spec)).outcome is Outcome.VIOLATION
    plans = SpecPlans(evaluator, DECEMBER_1)
    priced = plans.find(str(spec), fingerprint(validate(Experiment, load_file(str(spec)))))
    assert isinstance(priced, Priced), priced
    assert priced.needs_approval is over


# 4. --team counts its own records; the period's runs apart from the trend's


def test_one_teams_notes_count_only_its_records_and_the_periods_runs():
    period = Period(Month(2026, 11), Month(2026, 11), trend=1)
    unknown: Any = types.SimpleNamespace(value="snapshot-x")  # a kind not defined yet
    records = [
        _approval(_at(11, 5), "100", "t1"),
        _approval(_at(11, 6), "7", "o1", team="other", currency="EUR"),
        dataclasses.replace(_approval(_at(11, 7), "1", "o2", team="other"), kind=unknown),
    ]
    euro = _priced("EUR")
    runs = _runs(period, (OLD, -24 * 10, 1), (OLD, 1, 1), (OLD, 3, 1), priced=euro)
    mine = "\n".join(_report(period, runs, records, team_filter="t").notes)
    assert "another currency" not in mine and "snapshot-x" not in mine
    everyone = "\n".join(_report(period, runs, records).notes)
    assert "1 ledger record of the period in another currency than USD" in everyone
    assert "1 ledger record of a kind the report does not know: snapshot-x" in everyone
    assert "2 runs of the period priced in EUR, not USD: left out of every figure" in mine
    assert "1 run of the trend months priced in EUR, not USD: left out of the trend" in mine


# 5. an empty month, and a budget just overrun


def test_an_empty_month_names_its_waste_and_counts_no_experiments():
    report = _report(NOVEMBER, _runs(NOVEMBER), [])
    assert [w.title for w in report.waste] == [
        "Failed or killed runs",
        "Epochs after the plateau",
        "Idle GPU time (upper bound)",
    ]
    shown = text(report)
    assert "failed-runs" not in shown and "epochs-after-plateau" not in shown
    assert "The 0 costliest" not in shown
    assert "The costliest experiments and their waste (USD)\n  no experiment ran" in shown


def test_a_budget_overrun_by_a_quarter_never_reads_100_percent():
    runs = _runs(NOVEMBER, (OLD, 1, 100.025))  # 1,000.25
    report = _report(NOVEMBER, runs, [], budgets={"t": Decimal(1000)})
    (team,) = report.teams
    assert team.forecast == Decimal("1000.25")
    row = next(line for line in text(report).splitlines() if line.strip().startswith("t "))
    assert row.rstrip().endswith("> 100 %"), row
    assert against_budget(Decimal("999.75"), Decimal(1000)) == "< 100 %"
    assert against_budget(Decimal(1000), Decimal(1000)) == "100 %"
    assert against_budget(Decimal(1010), Decimal(1000)) == "101 %"
    assert against_budget(Decimal(1), None) == "—"


def test_idle_time_no_run_measured_is_not_measured_rather_than_zero():
    """No run logged GPU utilization: a 0.00 read as "no idle"; reconcile says "not measured"."""
    from gate.reporters.report_json import render as as_json

    report = _report(NOVEMBER, _runs(NOVEMBER, (OLD, 1, 2)), [])
    idle = next(w for w in report.waste if w.title.startswith("Idle"))
    assert not idle.measured
    failed = next(w for w in report.waste if w.title.startswith("Failed"))
    assert failed.measured
    shown = text(report)
    assert "Idle GPU time (upper bound): not measured (no run logged it)" in shown
    rows = json.loads(as_json(report))["waste"]
    assert [r["measured"] for r in rows] == [True, False, False]  # no history: no plateau


def test_runs_charged_above_their_specs_gpus_and_open_ends_are_noted():
    """A GPU tag above the spec, and an end its job dated after now, are the job's word."""
    month_runs = MonthRuns(lambda f: _priced(), NOVEMBER)
    tags = {tracking.SPEC: SPEC, tracking.FINGERPRINT: OLD}
    month_runs.add(facts("big", start=1, hours=2, gpus=8, tags=tags))
    month_runs.add(facts("later", start=1, hours=10**6, tags=tags))  # ends in the year 2140
    report = _report(NOVEMBER, month_runs, [])
    assert "1 run charged for more GPUs than their spec's gpus_per_trial" in " ".join(report.notes)
    assert any(
        "1 run still running (or dated by the job to end after now)" in n for n in report.notes
    )
