"""Numbers written with a unit (``30s``, ``2h``, ``10%``), turned into what the field holds.

A spec's times are plain numbers in the unit the key names (``epoch_minutes``,
``max_trial_hours``) and its fractions are plain fractions (``eval_overhead: 0.1``); a
value written ``30s`` or ``10%`` is refused, and the fix this module computes says the
number to write instead (pure).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_WITH_UNIT = re.compile(
    r"^\s*(?P<number>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>[a-zA-Z%]+)\s*$"
)
_SECONDS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
}
_FIELD_UNITS = {"_minutes": ("minutes", 60), "_hours": ("hours", 3600)}
_FRACTIONS = ("eval_overhead", "plateau_fraction", "failure_rate", "failure_point")


def unit_fix(field: str, value: object) -> tuple[str, str] | None:
    """What is wrong with ``value`` written with a unit, and the fix, for the key ``field``.

    ``epoch_minutes: 30s`` → ``("'30s' has a unit: epoch_minutes is a number of minutes",
    "write epoch_minutes: 0.5 (30 s)")``; ``None`` when ``value`` is not a number with a unit
    or the unit does not fit the field.
    """
    if not isinstance(value, str):
        return None
    found = _WITH_UNIT.match(value)
    if found is None:
        return None
    try:
        number = Decimal(found["number"])
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        return None
    unit = found["unit"]
    if unit == "%" and field in _FRACTIONS:
        fraction = _plain(number / 100)
        return (
            f"{value!r} is a percentage: {field} is a fraction (0.1 = 10 %)",
            f"write {field}: {fraction}",
        )
    for suffix, (name, seconds) in _FIELD_UNITS.items():
        factor = _SECONDS.get(unit.lower())
        if field.endswith(suffix) and factor is not None:
            converted = _plain(number * factor / seconds)
            return (
                f"{value!r} has a unit: {field} is a plain number of {name}",
                f"write {field}: {converted} ({_plain(number)} {unit})",
            )
    return None


def percent_fix(field: str, value: object) -> tuple[str, str] | None:
    """``eval_overhead: 10`` (meant 10 %) over a fraction's bound of 1: the fraction to write.

    ``None`` when ``field`` is no fraction or ``value`` could not be a percentage (above 100).
    """
    if field not in _FRACTIONS or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 1 < value <= 100:
        return None
    number = Decimal(str(value))
    return (
        f"{_plain(number)} is over 1: {field} is a fraction, not a percentage (0.1 = 10 %), "
        f"so {_plain(number)} would mean {_plain(number * 100)} %",
        f"write {field}: {_plain(number / 100)} for {_plain(number)} %",
    )


def _plain(number: Decimal) -> str:
    """``0.5``, ``90``, ``0.0083333`` — never ``5E-1`` or a 28-digit tail."""
    rounded = round(number, 7).normalize()
    return f"{rounded:f}" if rounded else "0"
