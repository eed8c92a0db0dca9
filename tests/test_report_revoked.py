"""The report lists the approvals revoked in the period instead of dropping them unsaid.

Newcomer report, finding 6: an approval recorded and revoked in the month left "no
approvals recorded in the period". Revoked approvals still hold nothing (every figure is
as before); they are listed with who revoked them and when, in the text and the JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal

from gate.ledger.records import LedgerRecord, RecordKind
from gate.report.commitments import commitments
from gate.report.compute import ReportInputs, build_report
from gate.report.model import MonthReport
from gate.report.period import Month, Period
from gate.reporters.report_json import SCHEMA_VERSION
from gate.reporters.report_json import render as as_json
from gate.reporters.report_markdown import render as as_markdown
from gate.reporters.report_text import render as as_text

UTC = dt.timezone.utc
NOVEMBER = Period(Month(2026, 11), Month(2026, 11), trend=0)


def _at(month: int, day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, tzinfo=UTC)


def _approval(when: dt.datetime, worst: str, rid: str, by: str = "bob") -> LedgerRecord:
    return LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec="exp/sweep.yaml",
        fingerprint="sha256:old",
        experiment="sweep",
        recorded_at=when,
        currency="USD",
        worst_cost=Decimal(worst),
        team="t",
        by=by,
        record_id=rid,
    )


def _revocation(when: dt.datetime, by: str, *ids: str) -> LedgerRecord:
    return LedgerRecord(
        kind=RecordKind.REVOCATION,
        spec="exp/sweep.yaml",
        fingerprint="sha256:old",
        experiment="sweep",
        recorded_at=when,
        currency="USD",
        team="t",
        by=by,
        revokes=ids,
        record_id=f"revokes-{'-'.join(ids)}",
    )


def _report(records: list[LedgerRecord], team: str | None = None) -> MonthReport:
    return build_report(
        ReportInputs(
            period=NOVEMBER,
            now=_at(12, 1),
            currency="USD",
            where="test",
            experiments=[],
            commitments=commitments(records, NOVEMBER, "USD"),
            budgets={},
            team_filter=team,
        )
    )


def test_an_approval_revoked_in_the_month_is_said_not_hidden():
    report = _report([_approval(_at(11, 3), "300", "a1"), _revocation(_at(11, 4), "carol", "a1")])
    assert report.approvals == ()
    assert sum(t.approved for t in report.teams) == 0  # it still holds nothing
    [row] = report.revoked
    assert (row.by, row.approved, row.revoked_by, row.revoked_at) == (
        "bob",
        Decimal(300),
        "carol",
        _at(11, 4),
    )
    text = as_text(report)
    assert "no approvals recorded in the period" not in text
    assert "no approval counts in the period: 1 approval recorded, 1 revoked" in text
    assert "revoked by carol on 2026-11-04 00:00 UTC" in text
    assert "revoked by carol on 2026-11-04 00:00 UTC" in as_markdown(report)


def test_the_json_adds_revoked_approvals_and_keeps_approvals_as_they_were():
    records = [
        _approval(_at(11, 2), "100", "kept"),
        _approval(_at(11, 3), "300", "a1"),
        _revocation(_at(11, 4), "carol", "a1"),
    ]
    document = json.loads(as_json(_report(records)))
    assert document["schema_version"] == SCHEMA_VERSION == "1"
    assert [a["approved"] for a in document["approvals"]] == ["100"]
    assert document["revoked_approvals"] == [
        {
            "recorded_at": "2026-11-03T00:00:00+00:00",
            "team": "t",
            "experiment": "sweep",
            "spec": "exp/sweep.yaml",
            "fingerprint": "sha256:old",
            "by": "bob",
            "source": "local",
            "approved": "300",
            "revoked_by": "carol",
            "revoked_at": "2026-11-04T00:00:00+00:00",
        }
    ]
    assert [t["approved"] for t in document["teams"]] == ["100"]


def test_a_month_without_revocations_reads_as_before():
    report = _report([])
    assert report.revoked == ()
    assert "no approvals recorded in the period" in as_text(report)
    assert "revoked" not in as_text(report)
    assert json.loads(as_json(report))["revoked_approvals"] == []


def test_a_revocation_after_the_period_or_of_an_earlier_month_lists_nothing():
    october = _approval(_at(10, 20), "50", "oct")
    late = _approval(_at(11, 3), "300", "a1")
    records = [
        october,
        late,
        _revocation(_at(11, 5), "bob", "oct"),
        _revocation(_at(12, 2), "bob", "a1"),
    ]
    report = _report(records)
    assert report.revoked == ()  # October's is October's; December's does not reach back
    assert [a.approved for a in report.approvals] == [Decimal(300)]


def test_team_filter_keeps_other_teams_revocations_out():
    records = [_approval(_at(11, 3), "300", "a1"), _revocation(_at(11, 4), "carol", "a1")]
    assert _report(records, team="other").revoked == ()
    assert len(_report(records, team="t").revoked) == 1


def test_a_range_approves_what_its_months_approved_a_later_revocation_included():
    """September held 400 (revoked in October), October 200: the range said 200, not 600,
    since a revocation by the range's end took the approval out of every month."""
    september = _approval(_at(9, 16), "400", "sep")
    october = dataclasses.replace(
        _approval(_at(10, 16), "200", "oct"), spec="exp/other.yaml", fingerprint="sha256:y"
    )
    records = [september, october, _revocation(_at(10, 2), "bob", "sep")]

    def approved(first: int, last: int) -> Decimal:
        period = Period(Month(2026, first), Month(2026, last), trend=0)
        return commitments(records, period, "USD").approved["t"]

    assert (approved(9, 9), approved(10, 10)) == (Decimal(400), Decimal(200))
    assert approved(9, 10) == Decimal(600)  # the sum of its months
    range_ = Period(Month(2026, 9), Month(2026, 10), trend=0)
    both = commitments(records, range_, "USD")
    assert both.revoked_approvals == []  # it held its month's money: not "holding nothing"
    assert "sha256:old" not in both.newest_approval  # but no variance is scored against it
    report = build_report(
        ReportInputs(
            period=range_, now=_at(12, 1), currency="USD", where="test", experiments=[],
            commitments=both, budgets={},
        )
    )  # fmt: skip
    [note] = [n for n in report.notes if "revoked after the month" in n]
    assert "1 approval revoked after the month it was recorded in" in note
    assert "sweep, revoked by bob on 2026-10-02" in note  # said, not dropped
