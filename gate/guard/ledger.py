"""The guard's view of the ledger: the approved amount now, re-read when the guard asks.

:class:`LedgerCeiling` is what :class:`gate.guard.core.Guard` calls (at most once a minute)
to refresh its ceiling: the newest approval of the spec's fingerprint that no revocation
names, in the policy's currency. An approval that expired while the search ran still
counts, as in reconcile: it is the amount agreed for runs that started. It is a plain,
picklable object (Ray Tune pickles the stopper that holds it). When MLflow cannot be
reached, the guard keeps the ceiling it has and the failure is logged.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from gate.errors import BackendError
from gate.guard.limits import Ceiling
from gate.integrations import open_ledger
from gate.ledger.records import LedgerQuery, live_approvals

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LedgerCeiling:
    """Reads the current approved amount of one spec version from the MLflow ledger."""

    tracking_uri: str
    fingerprint: str
    currency: str
    last: Ceiling

    def __call__(self) -> Ceiling | None:
        """The newest unrevoked approval, ``None`` when none holds; ``last`` on an outage."""
        try:
            records = open_ledger(self.tracking_uri).query(
                LedgerQuery(fingerprint=self.fingerprint)
            )
        except BackendError as error:
            log.warning("budget-gate guard: ledger not read (%s); keeping the ceiling", error)
            return self.last
        now = dt.datetime.now(dt.timezone.utc)
        approvals = [
            r
            for r in live_approvals(records, now)
            if r.currency == self.currency and r.worst_cost is not None
        ]
        if not approvals:
            return None
        newest = max(approvals, key=lambda r: r.recorded_at)
        assert newest.worst_cost is not None
        return Ceiling(newest.worst_cost, f"approved amount ({newest.record_id})")
