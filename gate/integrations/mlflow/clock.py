"""This machine's clock against the tracking server's: the ledger is ordered by writers' clocks.

A record's time is its writer's clock at the write, and budget snapshots split the month
by those times (:mod:`gate.integrations.mlflow.snapshots`); a reader judges expiry and the
month by its own clock. Both hold only while every clock is within
:data:`gate.ledger.records.MAX_CLOCK_SKEW` of the server's, which every HTTP answer states in
its ``Date`` header. Beyond the bound a command refuses, naming the offset.
"""

from __future__ import annotations

import datetime as dt
import email.utils

from gate.errors import BackendError
from gate.ledger.records import MAX_CLOCK_SKEW


def skew_error(server: dt.datetime, local: dt.datetime, where: str) -> BackendError | None:
    """The error for a local clock further than the bound from the server's, else ``None``.

    The ``Date`` header has whole seconds, so a second of slack is allowed on top.
    """
    offset = (local - server).total_seconds()
    if abs(offset) <= MAX_CLOCK_SKEW.total_seconds() + 1:
        return None
    side = "ahead of" if offset > 0 else "behind"
    return BackendError(
        f"this machine's clock is {abs(offset):,.0f} s {side} the tracking server at {where} "
        f"(the ledger allows {MAX_CLOCK_SKEW.total_seconds():.0f} s): fix the clock (NTP) "
        "before reading or writing the ledger, whose records are ordered by their writers' "
        "clocks"
    )


def date_header(value: str | None) -> dt.datetime | None:
    """An HTTP ``Date`` header as a UTC time, ``None`` when absent or unreadable."""
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)
