"""The months a report covers: ``YYYY-MM`` or a range ``YYYY-MM..YYYY-MM``, in UTC (pure).

The default is the last full month before ``now``. A trend looks back a few months before
the first month of the period; the runs of the whole window are read in one search.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from gate.errors import InputError

UTC = dt.timezone.utc
# NOTE: ASCII digits only: a regex's \d and int() take full-width (and other scripts') digits
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
MAX_MONTHS = 36
"""The longest period (and trend window) a report reads."""


@dataclass(frozen=True, slots=True, order=True)
class Month:
    """One calendar month in UTC."""

    year: int
    month: int

    @classmethod
    def of(cls, moment: dt.datetime) -> Month:
        """The month ``moment`` falls in (UTC)."""
        utc = moment.astimezone(UTC)
        return cls(utc.year, utc.month)

    @property
    def start(self) -> dt.datetime:
        """Midnight UTC on the first day."""
        return dt.datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def end(self) -> dt.datetime:
        """Midnight UTC on the first day of the next month (exclusive)."""
        return self.shift(1).start

    def shift(self, months: int) -> Month:
        """The month ``months`` later (earlier when negative)."""
        index = self.year * 12 + self.month - 1 + months
        return Month(index // 12, index % 12 + 1)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


@dataclass(frozen=True, slots=True)
class Period:
    """The months reported, first to last inclusive, and how many months before for trends."""

    first: Month
    last: Month
    trend: int = 2

    @property
    def months(self) -> tuple[Month, ...]:
        """Every month of the period, in order."""
        return _between(self.first, self.last)

    @property
    def window(self) -> tuple[Month, ...]:
        """The trend months before the period, then the period's own."""
        return _between(self.first.shift(-self.trend), self.last)

    @property
    def start(self) -> dt.datetime:
        """Where the period starts (inclusive)."""
        return self.first.start

    @property
    def end(self) -> dt.datetime:
        """Where the period ends (exclusive)."""
        return self.last.end

    def holds(self, moment: dt.datetime) -> bool:
        """Whether ``moment`` is in the period."""
        return self.start <= moment < self.end

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}..{self.last}"


def _between(first: Month, last: Month) -> tuple[Month, ...]:
    months = [first]
    while months[-1] < last:
        months.append(months[-1].shift(1))
    return tuple(months)


def last_full_month(now: dt.datetime, trend: int = 2) -> Period:
    """The month before ``now``'s month (UTC)."""
    month = Month.of(now).shift(-1)
    return Period(month, month, trend)


EARLIEST = Month(1970, 1)
"""The first month a run can start in (MLflow's times count from 1970)."""
LATEST = Month(9999, 11)
"""The last month whose end ``datetime`` can hold (9999-12 ends in the year 10000)."""


def parse_period(text: str, trend: int = 2, now: dt.datetime | None = None) -> Period:
    """``2026-11`` or ``2026-09..2026-11`` (inclusive), as given to ``--month``.

    A month that has not begun at ``now`` is refused: its report would be all zeros,
    forecast "at the pace so far", which reads like a finding.

    Raises:
        gate.errors.InputError: not a month or a range of months in order, or in the future.
    """
    first_text, dots, last_text = text.strip().partition("..")
    first = _month(first_text, text)
    last = _month(last_text, text) if dots else first
    if last < first:
        raise InputError(
            f"--month {text!r} ends before it starts", hint="write the earlier month first"
        )
    if now is not None and last.start > now:
        raise InputError(
            f"--month {text!r}: {last} has not begun (it is {now.astimezone(UTC):%Y-%m-%d} in UTC)",
            hint=f"report months up to {Month.of(now)}; the month in progress is forecast at "
            "its pace so far",
        )
    period = Period(first, last, trend)
    if period.window[0] < EARLIEST or period.window[-1] > LATEST:
        raise InputError(
            f"--month {text!r} with --trend {trend} reaches outside {EARLIEST}..{LATEST}",
            hint="report months from 1970-01 (MLflow's times start there), trend months "
            "included, to 9999-11",
        )
    if len(period.window) > MAX_MONTHS:
        raise InputError(
            f"--month {text!r} with --trend {trend} spans {len(period.window)} months, over "
            f"{MAX_MONTHS}",
            hint="report a shorter range or fewer trend months",
        )
    return period


def _month(text: str, given: str) -> Month:
    match = _MONTH.fullmatch(text)
    month = int(match.group(2)) if match else 0
    if match is None or not 1 <= month <= 12 or int(match.group(1)) < 1:
        raise InputError(
            f"--month {given!r} is not a month", hint="use YYYY-MM, or YYYY-MM..YYYY-MM"
        )
    return Month(int(match.group(1)), month)
