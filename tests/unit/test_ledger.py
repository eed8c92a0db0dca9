"""gate.ledger.records: record encoding, approver authorization, freshness, expiry, tracking URI."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from gate.errors import InputError
from gate.integrations.mlflow.tracking_uri import default_tracking_uri, resolve_tracking_uri
from gate.ledger.approvals import (
    Requirement,
    authorize,
    check_approvals,
    explain_changed,
    revoker_refusal,
)
from gate.ledger.approvers import Approvers
from gate.ledger.encoding import PAYLOAD, Malformed, from_tags, payload, to_tags
from gate.ledger.records import LedgerRecord, RecordKind, Source, parse_expiry

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
FP = "sha256:" + "a" * 64
OLD_FP = "sha256:" + "b" * 64
NEED = Requirement(FP, Decimal("611.31"), "USD", Approvers(users=["alice", "bob"]), "carol")


def approval(**changes) -> LedgerRecord:
    base = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec="experiments/sweep.yaml",
        fingerprint=FP,
        experiment="sweep",
        recorded_at=NOW - dt.timedelta(days=1),
        currency="USD",
        worst_cost=Decimal("611.31"),
        expected_cost=Decimal("400"),
        team="vision",
        by="alice",
        reason="worth it",
        expires_at=NOW + dt.timedelta(days=13),
        record_id="r1",
    )
    return dataclasses.replace(base, **changes)


def revocation(at: dt.datetime, revokes: tuple[str, ...] = ("r1",)) -> LedgerRecord:
    return approval(
        kind=RecordKind.REVOCATION,
        revokes=revokes,
        record_id="rv",
        recorded_at=at,
        by="bob",
        reason="budget cut",
        worst_cost=None,
        expected_cost=None,
        expires_at=None,
    )


def _read(record: LedgerRecord, run_id: str) -> LedgerRecord:
    """What a reader gets back: the record, with its payload and the run that holds it."""
    tags = to_tags(record)
    return dataclasses.replace(record, payload=tags[PAYLOAD], run_id=run_id)


def test_tags_round_trip_exactly():
    record = approval(
        cost_center="cc-1",
        source=Source.GITHUB_COMMENT,
        pr_number=42,
        worst_cost=Decimal("0.10"),
        event_at=NOW - dt.timedelta(days=2),
        head_sha="c" * 40,
        event_id="comment-9",
    )
    revoking = revocation(NOW, revokes=("a1", "b2"))
    assert to_tags(revoking)["budget_gate.revokes"] == "a1,b2"
    assert from_tags(to_tags(revoking), "rv-run") == _read(revoking, "rv-run")
    tags = to_tags(record)
    assert tags["budget_gate.kind"] == "approval"
    assert tags["budget_gate.worst_cost"] == "0.10"
    assert tags["budget_gate.fingerprint"] == FP
    assert tags["budget_gate.pr_number"] == "42"
    assert tags["budget_gate.record_version"] == "2"
    assert from_tags(tags, "r1-run") == _read(record, "r1-run")


def test_the_payload_is_canonical_and_carries_every_field():
    record = approval(launch_key="k", approval="a0", signer="alice", event_id="review-3")
    text = payload(record)
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    body = json.loads(text)
    assert (body["id"], body["launch_key"], body["approval"], body["signer"]) == (
        "r1",
        "k",
        "a0",
        "alice",
    )
    assert body["recorded_at"] == "2026-11-28T12:00:00.000000+00:00"  # UTC, to the µs


def test_unset_fields_are_not_tagged():
    record = approval(team=None, expires_at=None, expected_cost=None)
    tags = to_tags(record)
    assert "budget_gate.team" not in tags
    assert "budget_gate.expires_at" not in tags
    assert "budget_gate.actual_cost" not in tags
    assert "budget_gate.revokes" not in tags
    assert '"team"' not in tags[PAYLOAD]
    assert from_tags(tags, "r9") == _read(record, "r9")


def test_a_record_written_before_payloads_is_read_from_its_tags():
    tags = {
        k: v for k, v in to_tags(approval()).items() if k not in (PAYLOAD, "budget_gate.record_id")
    }
    old = from_tags(tags, "run-1")
    assert (old.record_id, old.run_id, old.payload, old.worst_cost) == (
        "run-1",
        "run-1",
        None,
        Decimal("611.31"),
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("budget_gate.worst_cost", "lots"),  # a v1 record's tags
        ("budget_gate.worst_cost", "NaN"),
        ("budget_gate.kind", "bribe"),
        ("budget_gate.recorded_at", "2026-11-29T12:00:00"),
        ("budget_gate.currency", None),
    ],
)
def test_malformed_old_records_do_not_read(key, value):
    tags = {k: v for k, v in to_tags(approval()).items() if k != PAYLOAD}
    if value is None:
        del tags[key]
    else:
        tags[key] = value
    with pytest.raises(Malformed):
        from_tags(tags, "run-7")


@pytest.mark.parametrize(
    "change",
    [
        {"budget_gate.team": "nlp"},  # a searched tag that says other than the payload
        {"budget_gate.fingerprint": "sha256:" + "f" * 64},
        {PAYLOAD: "{not json"},
        {PAYLOAD: json.dumps({"v": 1})},
    ],
)
def test_a_payload_its_tags_contradict_does_not_read(change):
    tags = to_tags(approval()) | change
    with pytest.raises(Malformed):
        from_tags(tags, "run-7")


def test_a_listed_user_may_approve():
    assert authorize("alice", Source.LOCAL, NEED) is None


def test_an_unlisted_user_may_not():
    assert authorize("mallory", Source.LOCAL, NEED) == (
        "mallory is not an approver (approval.approvers.users: alice, bob)"
    )


def test_without_listed_users_local_approval_is_impossible():
    need = dataclasses.replace(NEED, approvers=Approvers(teams=["ml-platform"]))
    refusal = authorize("alice", Source.LOCAL, need)
    assert refusal is not None and "lists no approval.approvers.users" in refusal


def test_github_approvals_were_authorized_by_the_github_flow():
    need = dataclasses.replace(NEED, approvers=Approvers(teams=["ml-platform"]))
    assert authorize("dave", Source.GITHUB_REVIEW, need) is None


def test_self_approval_needs_the_policy_to_allow_it():
    owner = dataclasses.replace(NEED, owner="alice")
    assert authorize("alice", Source.LOCAL, owner) == (
        "alice owns the spec and the policy does not allow self-approval"
    )
    assert authorize("alice", Source.GITHUB_REVIEW, owner) is not None
    allowed = dataclasses.replace(
        owner, approvers=Approvers(users=["alice"], allow_self_approval=True)
    )
    assert authorize("alice", Source.LOCAL, allowed) is None


def test_a_fresh_approval_is_found():
    found = check_approvals([approval()], NEED, NOW)
    assert found.approval == approval()
    assert found.stale == ()


def test_the_newest_fresh_approval_wins_and_stale_ones_are_explained():
    older = approval(record_id="old", recorded_at=NOW - dt.timedelta(days=3))
    newest = approval(record_id="new", recorded_at=NOW - dt.timedelta(hours=1), by="mallory")
    found = check_approvals([newest, older], NEED, NOW)
    assert found.approval is not None and found.approval.record_id == "old"
    [why] = found.stale
    assert why.startswith("approval by mallory on 2026-11-29 11:00 UTC no longer counts:")


def test_nothing_recorded():
    found = check_approvals([], NEED, NOW)
    assert found.approval is None
    assert found.stale == ("no approval is recorded for this version (sha256:aaaaaaaaaaaa)",)


def test_another_fingerprint_does_not_count():
    assert check_approvals([approval(fingerprint=OLD_FP)], NEED, NOW).approval is None


def test_expired():
    found = check_approvals([approval(expires_at=NOW)], NEED, NOW)
    assert found.approval is None
    assert found.stale == (
        "approval by alice on 2026-11-28 12:00 UTC expired on 2026-11-29 12:00 UTC",
    )
    assert check_approvals([approval(expires_at=None)], NEED, NOW).approval is not None


def test_amount_below_the_current_worst_case():
    found = check_approvals([approval(worst_cost=Decimal("611.30"))], NEED, NOW)
    assert found.stale == (
        "approval by alice on 2026-11-28 12:00 UTC covers 611.30 USD, below the current "
        "worst case 611.31 USD",
    )
    higher = approval(worst_cost=Decimal("700"))
    assert check_approvals([higher], NEED, NOW).approval == higher


def test_other_currency():
    found = check_approvals([approval(currency="EUR")], NEED, NOW)
    assert found.stale == (
        "approval by alice on 2026-11-28 12:00 UTC is in EUR, the policy now prices in USD",
    )


def test_revoked_by_a_record_naming_it():
    revoked = [approval(), revocation(NOW - dt.timedelta(hours=2))]
    found = check_approvals(revoked, NEED, NOW)
    assert found.approval is None
    assert found.stale == (
        "approval by alice on 2026-11-28 12:00 UTC was revoked "
        "(revocation by bob on 2026-11-29 10:00 UTC: budget cut)",
    )


def test_a_revocation_touches_only_the_approvals_it_names():
    same_instant = approval(record_id="r2", recorded_at=NOW - dt.timedelta(hours=2))
    other = revocation(NOW - dt.timedelta(hours=2), revokes=("r0", "r3"))
    mine = revocation(NOW - dt.timedelta(hours=2))
    found = check_approvals([approval(), same_instant, other, mine], NEED, NOW)
    assert found.approval == same_instant


def test_records_after_now_are_ignored():
    later = approval(recorded_at=NOW + dt.timedelta(minutes=1))
    assert check_approvals([later], NEED, NOW).approval is None
    revoked_later = [approval(), revocation(NOW + dt.timedelta(minutes=1))]
    assert check_approvals(revoked_later, NEED, NOW).approval == approval()


def test_explain_changed_names_the_last_approval_of_another_version():
    old = approval(fingerprint=OLD_FP, recorded_at=NOW - dt.timedelta(days=5))
    assert explain_changed([old, approval()], FP) == (
        "the spec changed since its last approval by alice on 2026-11-24 12:00 UTC "
        "(sha256:bbbbbbbbbbbb); approve this version again"
    )
    assert explain_changed([approval()], FP) is None


@pytest.mark.parametrize(
    ("text", "hours"), [("12h", 12), ("14d", 14 * 24), ("2w", 14 * 24), ("366d", 366 * 24)]
)
def test_parse_expiry(text, hours):
    assert parse_expiry(text) == dt.timedelta(hours=hours)


@pytest.mark.parametrize("text", ["", "14", "0d", "1y", "-1d", "1.5d", "d14"])
def test_parse_expiry_rejects(text):
    with pytest.raises(InputError, match="is not a duration"):
        parse_expiry(text)


def test_parse_expiry_caps_at_a_year():
    with pytest.raises(InputError, match="over a year"):
        parse_expiry("53w")


def test_tracking_uri_flag_then_environment_then_sqlite():
    env = {"MLFLOW_TRACKING_URI": "http://mlflow:5000"}
    assert resolve_tracking_uri("http://flag:1", env) == "http://flag:1"
    assert resolve_tracking_uri(None, env) == "http://mlflow:5000"
    assert resolve_tracking_uri(None, {}) == default_tracking_uri(Path.cwd())


def test_default_ledger_is_at_the_repository_root_else_in_the_directory(tmp_path: Path):
    nested = tmp_path / "repo" / "experiments" / "deep"
    nested.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    assert default_tracking_uri(nested) == f"sqlite:///{(tmp_path / 'repo').as_posix()}/mlflow.db"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert default_tracking_uri(outside) == f"sqlite:///{outside.as_posix()}/mlflow.db"


def test_a_launch_key_joins_its_launch_for_a_day_only():
    from gate.ledger.approvals import JOIN_WITHIN, joins

    launch = approval(kind=RecordKind.LAUNCH, launch_key="k", recorded_at=NOW)
    assert joins(launch, "k", NOW + JOIN_WITHIN)
    assert not joins(launch, "k", NOW + JOIN_WITHIN + dt.timedelta(seconds=1))
    assert not joins(launch, "other", NOW) and not joins(launch, None, NOW)


def test_a_launch_dated_ahead_of_the_clock_is_joined_by_no_key():
    """A launcher who signs a launch dated 20 days ahead gets no join until that date (and a
    day past it): a launch joined then would use no launch of the approval."""
    from gate.ledger.approvals import joins
    from gate.ledger.records import MAX_CLOCK_SKEW

    ahead = approval(
        kind=RecordKind.LAUNCH, launch_key="k", recorded_at=NOW + dt.timedelta(days=20)
    )
    assert not joins(ahead, "k", NOW)
    assert not joins(
        ahead, "k", NOW + dt.timedelta(days=20) - MAX_CLOCK_SKEW - dt.timedelta(seconds=1)
    )
    assert joins(ahead, "k", NOW + dt.timedelta(days=20) - MAX_CLOCK_SKEW)  # a clock just behind


def test_a_key_kept_past_the_join_window_is_a_launch_each_time_it_is_recorded():
    """An exported ``BUDGET_GATE_LAUNCH_KEY`` kept for days: each record past the window is
    a launch of its own, using the approval and committing its worst case to the month."""
    from gate.ledger.approvals import check_approvals
    from gate.ledger.spend import Spend

    need = dataclasses.replace(NEED, launches=2, launch_key="K")
    first = NOW - dt.timedelta(days=2, hours=23)
    records = [approval(recorded_at=first - dt.timedelta(hours=1), expires_at=NOW)]
    cleared = []
    for day in range(4):
        moment = first + dt.timedelta(hours=25 * day)
        cleared.append(check_approvals(records, need, moment).approval is not None)
        if cleared[-1]:
            records.append(
                approval(kind=RecordKind.LAUNCH, launch_key="K", approval="r1",
                         record_id=f"L{day}", recorded_at=moment, expires_at=None)
            )  # fmt: skip
    assert cleared == [True, True, False, False]  # launches: 2
    worst = records[0].worst_cost
    assert worst is not None
    spend = Spend().add_all(records)
    assert spend.totals("USD", spec="other.yaml", fingerprint="x").launched == 2 * worst
    racing = approval(kind=RecordKind.LAUNCH, launch_key="K", approval="r1", record_id="L0b",
                      recorded_at=first + dt.timedelta(seconds=3), expires_at=None)  # fmt: skip
    again = Spend().add_all([*records, racing])  # a worker that raced the first: one launch
    assert again.totals("USD", spec="other.yaml", fingerprint="x").launched == 2 * worst


def test_a_clock_off_the_servers_is_refused_and_a_close_one_is_not():
    from gate.integrations.mlflow.clock import date_header, skew_error

    server = date_header("Tue, 01 Dec 2026 12:00:00 GMT")
    assert server == dt.datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert skew_error(server, server + dt.timedelta(seconds=90), "http://m") is None
    error = skew_error(server, server - dt.timedelta(minutes=5), "http://m")
    assert error is not None and "300 s behind the tracking server at http://m" in str(error)
    assert date_header("not a date") is None and date_header(None) is None


def test_an_approval_that_names_no_expiry_expires_after_the_longest_one():
    """A v1 record, or one written through the store's API, holds at most MAX_EXPIRY."""
    young = approval(expires_at=None, recorded_at=NOW - dt.timedelta(days=10))
    assert check_approvals([young], NEED, NOW).approval == young
    old = approval(expires_at=None, recorded_at=NOW - dt.timedelta(days=400))
    found = check_approvals([old], NEED, NOW)
    assert found.approval is None
    assert "expired on 2026-10-26 12:00 UTC (it names no expiry" in found.stale[0]


def test_the_owner_revokes_whatever_the_case():
    approvers = Approvers(users=["alice", "bob"])
    assert revoker_refusal("Carol", approvers, "carol") is None
    assert revoker_refusal("mallory", approvers, "carol") is not None


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2026-11-29T12:00:00"]
)
def test_a_time_with_no_utc_moment_does_not_read(moment):
    tags = to_tags(approval())
    body = json.loads(tags[PAYLOAD])
    body["recorded_at"] = moment
    tags[PAYLOAD] = json.dumps(body)
    with pytest.raises(Malformed):
        from_tags(tags, "r1-run")


def test_a_time_is_read_in_utc():
    tags = to_tags(approval())
    body = json.loads(tags[PAYLOAD])
    body["recorded_at"] = "2026-11-29T13:00:00+01:00"
    tags[PAYLOAD] = json.dumps(body)
    read = from_tags(tags, "r1-run").recorded_at
    assert read == NOW and read.utcoffset() == dt.timedelta(0)
