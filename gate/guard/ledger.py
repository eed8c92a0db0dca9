"""The guard's view of the ledger: the approved amount now, re-read when the guard asks.

:class:`LedgerCeiling` is what :class:`gate.guard.core.Guard` calls (at most once a minute)
to refresh its ceiling: the approval the launch was cleared with, while no revocation names
it. Only that one: an approval recorded later was never checked for its approver, source,
path or launches (a spec owner's own, say), so it cannot raise the ceiling of a running
search; it counts from the next launch, which checks it. An approval that expired while
the search ran still counts, as in reconcile: it is the amount agreed for runs that
started. It is a plain, picklable object (Ray Tune pickles the stopper that holds it).
When MLflow cannot be reached, the guard keeps the ceiling it has and the failure is
logged; a ledger that answers without the approval's record (deleted, emptied, renamed)
stops the search, saying so, as a revocation does.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from gate.errors import BackendError
from gate.guard.limits import Ceiling
from gate.integrations import open_ledger
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.approvals import live_approvals, may_revoke, revoked_by
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind
from gate.ledger.signing import Trust

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LedgerCeiling:
    """Reads the current approved amount of one spec version from the MLflow ledger."""

    tracking_uri: str
    trust: Trust
    fingerprint: str
    approval: str
    """The record id of the approval the launch was cleared with."""
    last: Ceiling
    revokers: tuple[Approvers, str | None] | None = None
    """The policy's approvers and the spec's owner: only their revocations stop the search."""
    history: Callable[[], frozenset[str]] | None = None
    """Who the policies' git history lists as approvers (read when a revocation names the
    approval): a revocation stays in force after its author leaves the list."""

    def __call__(self) -> Ceiling | str:
        """The launch's approval while it holds, else why not; ``last`` on an outage."""
        try:
            records = open_ledger(self.tracking_uri, self.trust).query(
                LedgerQuery(fingerprint=self.fingerprint)
            )
        except BackendError as error:
            log.warning("budget-gate guard: ledger not read (%s); keeping the ceiling", error)
            return self.last
        now = dt.datetime.now(dt.timezone.utc)
        named = any(self.approval in r.revokes for r in records)
        # NOTE: judged by the current list alone, a revocation by an approver since removed
        # let a running search go on, though verify refuses the next launch for it
        former = self.history() if named and self.history is not None else frozenset()
        live = live_approvals(records, now, self.revokers, former)
        mine = [r for r in live if r.record_id == self.approval]
        if mine and mine[0].worst_cost is not None:
            return Ceiling(mine[0].worst_cost, f"approved amount ({mine[0].record_id})")
        return self._withdrawn(records, former)

    def _withdrawn(self, records: list[LedgerRecord], former: frozenset[str]) -> str:
        """Why the approval no longer holds: a revocation, or its record gone from the ledger.

        NOTE: every such case read "revoked in the ledger", and a ledger deleted or renamed
        under a running search sent its operator looking for a revoker who did not exist.
        """
        approval = next(
            (r for r in records if r.kind is RecordKind.APPROVAL and r.record_id == self.approval),
            None,
        )
        if approval is None:
            return (
                f"its record {self.approval or '(none)'} is no longer in the ledger at "
                f"{redact(self.tracking_uri)}: deleted, emptied or renamed"
            )
        allowed = [
            r
            for r in records
            if self.revokers is None or may_revoke(r, approval, *self.revokers, former)
        ]
        revocation = revoked_by(approval, allowed)
        if revocation is None:
            return "its record names no amount"
        why = f": {revocation.reason}" if revocation.reason else ""
        return f"revoked in the ledger, {revocation.summary()}{why}"
