"""Recording a launch: it commits the worst case to the month and uses its approval up.

Every launch path (``budget-gate verify``, ``gate.require_approval``/``gate.open_guard``,
the SkyPilot and Kueue admission) records one ``launch`` after the spec is cleared. The
*launch key* makes one launch of many processes one record: the workers of a search, or a
task that the SkyPilot policy admitted and whose guard opens inside it, pass the same key
(``BUDGET_GATE_LAUNCH_KEY``), and a key already recorded for the spec version is not
recorded again, for :data:`gate.ledger.approvals.JOIN_WITHIN` after its launch.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from decimal import Decimal

from gate.errors import ApprovalRequired, InputError
from gate.evaluation.evaluate import Evaluation
from gate.ledger.approvals import commits, joins, launch_group, launches_of
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind
from gate.ledger.signing import Signer
from gate.ledger.tracking import COST_CENTER_LABEL
from gate.ledger.view import LedgerView
from gate.money import format_money
from gate.words import counted

LAUNCH_KEY_ENV = "BUDGET_GATE_LAUNCH_KEY"
"""The environment variable that carries a launch's key to the processes it starts."""
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def checked_key(key: str, where: str = LAUNCH_KEY_ENV) -> str:
    """A launch key as given, or an input error naming what a key may hold."""
    if not _KEY.fullmatch(key):
        raise InputError(
            f"{where} {key[:40]!r} is not a launch key",
            hint="use up to 128 letters, digits, '.', '_', ':' or '-' (a UUID works)",
        )
    return key


def launch_record(
    evaluation: Evaluation,
    *,
    now: dt.datetime,
    launch_key: str,
    by: str | None,
    approval: LedgerRecord | None,
) -> LedgerRecord:
    """The launch of an evaluated, cleared spec at ``now``: its worst case, approval and key."""
    result, spec = evaluation.result, evaluation.spec
    assert spec is not None and result.fingerprint is not None and result.estimate is not None
    return LedgerRecord(
        kind=RecordKind.LAUNCH,
        spec=evaluation.path or result.file,
        fingerprint=result.fingerprint,
        experiment=spec.metadata.name,
        recorded_at=now,  # the store stamps the write time
        currency=result.currency,
        worst_cost=result.estimate.worst.cost,
        expected_cost=result.estimate.expected.cost,
        team=spec.metadata.team,
        cost_center=spec.metadata.labels.get(COST_CENTER_LABEL),
        by=by,
        approval=approval.record_id if approval is not None else None,
        launch_key=launch_key,
    )


def prepare_launch(
    view: LedgerView, evaluation: Evaluation, *, launch_key: str, by: str | None
) -> tuple[LedgerRecord, bool]:
    """The launch to record, and whether it is new (``False``: its key joins a recorded one).

    Nothing is written: a caller that decides many launches in one pass (the Kueue
    controller) counts each at once and writes them concurrently.

    Raises:
        gate.errors.ApprovalRequired: the launch the key names committed less than this
            one's worst case: it is no launch of this one to join.
    """
    result = evaluation.result
    assert result.fingerprint is not None
    for record in view.records(LedgerQuery(fingerprint=result.fingerprint)):
        if record.kind is RecordKind.LAUNCH and joins(record, launch_key, view.now):
            _refuse_a_cheap_join(evaluation, record)
            _refuse_a_join_of_no_approval(view, evaluation, record)
            return record, False
    approval = result.approval.approval if result.approval else None
    record = launch_record(
        evaluation, now=view.now, launch_key=launch_key, by=by, approval=approval
    )
    return record, True


def record_launch(
    view: LedgerView,
    evaluation: Evaluation,
    *,
    launch_key: str,
    by: str | None,
    signer: Signer | None,
) -> LedgerRecord:
    """Record the launch unless its key is already recorded for this spec version.

    Returns the launch record (the one found, or the new one, with its run id).
    """
    return launch_or_join(view, evaluation, launch_key=launch_key, by=by, signer=signer)[0]


def launch_or_join(
    view: LedgerView,
    evaluation: Evaluation,
    *,
    launch_key: str,
    by: str | None,
    signer: Signer | None,
) -> tuple[LedgerRecord, bool]:
    """:func:`record_launch`, and whether the launch is new (``False``: it joined one).

    A caller that tells its user what happened needs the difference: a join writes
    nothing, uses no launch of the approval and commits nothing more to the month.
    """
    record, new = prepare_launch(view, evaluation, launch_key=launch_key, by=by)
    if not new:
        return record, False
    run_id = view.store().append(record, signer)
    record = dataclasses.replace(record, run_id=run_id)
    _refuse_a_lost_race(view, evaluation, record)
    return record, True


def _refuse_a_cheap_join(evaluation: Evaluation, launch: LedgerRecord) -> None:
    """Refuse to join a launch that committed less than this launch's worst case.

    NOTE: a launch's worst case is its signer's word, and any listed key signs launches: a
    launch of the spec at 0 USD written by hand under a key of its own, then joined with
    that key, ran the search with nothing committed to the month (on every launch path).
    """
    result = evaluation.result
    assert result.estimate is not None
    worst = result.estimate.worst.cost
    if commits(launch, worst, result.currency):
        return
    committed = format_money(launch.worst_cost or Decimal(0), launch.currency)
    raise ApprovalRequired(
        f"{result.file}: launch key {launch.launch_key} names a launch that committed "
        f"{committed}, below this launch's worst case {format_money(worst, result.currency)}: "
        "it is no launch of this one to join",
        reasons=(f"launch with no key (unset {LAUNCH_KEY_ENV}), or with a new one",),
    )


def _refuse_a_join_of_no_approval(
    view: LedgerView, evaluation: Evaluation, launch: LedgerRecord
) -> None:
    """Refuse to join a launch that used no approval that holds for this one.

    NOTE: any listed key signs launches: a launch of the spec at its full worst case that
    names no approval (or a revoked, expired or smaller one), written under a key of the
    launcher's own and joined with that key, launched a one-launch approval any number of
    times, never using it. A join stands only where the approval it used would clear this
    launch now; one that needs no approval joins any launch that committed enough.
    """
    found = evaluation.result.approval
    if found is None or found.approval is None or launch.approval == found.approval.record_id:
        return
    if launch.approval is not None and _holds(view, evaluation, launch):
        return
    result = evaluation.result
    used = "no approval" if launch.approval is None else "an approval that no longer clears it"
    raise ApprovalRequired(
        f"{result.file}: launch key {launch.launch_key} names a launch that used {used}: "
        "it is no launch of this one to join",
        reasons=(f"launch with no key (unset {LAUNCH_KEY_ENV}), or with a new one",),
    )


def _holds(view: LedgerView, evaluation: Evaluation, launch: LedgerRecord) -> bool:
    """Whether the approval ``launch`` used would clear this launch, joining it, now."""
    from gate.ledger.approvals import Requirement, check_approvals

    result, spec, policy = evaluation.result, evaluation.spec, evaluation.policy
    assert result.fingerprint is not None and result.estimate is not None
    assert spec is not None and policy is not None
    records = [
        r
        for r in view.records(LedgerQuery(fingerprint=result.fingerprint))
        if (r.kind is not RecordKind.APPROVAL or r.record_id == launch.approval)
        and not (view.withdrawn and view.withdrawn(r))
    ]
    need = Requirement(
        result.fingerprint,
        result.estimate.worst.cost,
        policy.currency,
        policy.approval.approvers,
        spec.metadata.owner,
        tuple(policy.approval.sources),
        spec=evaluation.path or result.file,
        launches=policy.approval.launches,
        launch_key=launch.launch_key,
        repository=view.here(),
    )
    return check_approvals(records, need, view.now).approval is not None


def _refuse_a_lost_race(view: LedgerView, evaluation: Evaluation, launch: LedgerRecord) -> None:
    """Refuse a launch when, read again after writing, others have used the approval up.

    NOTE: launchers read, decide, then write: two at once both saw one launch left. A record's
    time is its writer's to set, so no order of records can pick a winner; every launch that
    finds the approval's launches used up by others once its own is written is refused (two
    at once: both), its record kept (failing closed). Launch again under a new approval.
    """
    policy = evaluation.policy
    if launch.approval is None or policy is None:
        return
    fresh = view.store().query(LedgerQuery(fingerprint=launch.fingerprint))
    approval = next(
        (r for r in fresh if r.kind is RecordKind.APPROVAL and r.record_id == launch.approval),
        None,
    )
    if approval is None:
        return
    others = [r for r in launches_of(approval, fresh) if not _same_launch(r, launch)]
    if len(others) >= policy.approval.launches:
        raise ApprovalRequired(
            f"{launch.spec} was cleared, but launches written at the same moment used "
            f"{approval.summary()} up",
            (
                f"it covers {counted(policy.approval.launches, 'launch', 'launches')} "
                f"(approval.launches): approve again to launch again; the worker processes "
                f"of one search are one launch when they share a {LAUNCH_KEY_ENV}",
            ),
        )


def _same_launch(record: LedgerRecord, launch: LedgerRecord) -> bool:
    group = launch_group(launch)
    return record.run_id == launch.run_id or (group is not None and launch_group(record) == group)
