"""One value's shape: a number, a string, an amount, a date, one of a few choices.

Each checks a value with pydantic's rules and, when it is wrong, appends pydantic's error
dict (``type``, ``loc``, ``msg``, ``input``, ``ctx``), so that :mod:`gate.spec.validation`
words it at file:line:col. One rule differs on purpose: a date is a date or ``YYYY-MM-DD``
(pydantic reads a number as a Unix time). ``tests/test_model_oracle.py`` holds the rest to
pydantic itself.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any

from gate.model.fields import Constraints

INVALID: Any = type("Invalid", (), {"__repr__": lambda _: "INVALID"})()
"""What a shape returns for a value it refused (its errors are appended)."""

Loc = tuple[str | int, ...]
Error = dict[str, Any]
Errors = list[Error]


def error(errors: Errors, kind: str, loc: Loc, msg: str, value: Any, ctx: Any = None) -> Any:
    """Append one of pydantic's error dicts; return :data:`INVALID`."""
    found: Error = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx is not None:
        found["ctx"] = ctx
    errors.append(found)
    return INVALID


class Shape:
    """One value's validator."""

    __slots__ = ()

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The validated value, or :data:`INVALID` with its errors appended."""
        raise NotImplementedError


def _plain(number: Any) -> str:
    """A bound as pydantic prints it: ``0.000001``, ``1000000000000``, never ``1e-06``."""
    if isinstance(number, float):
        number = Decimal(repr(number))
    if isinstance(number, Decimal):
        text = f"{number:f}"
        return text[:-2] if text.endswith(".0") else text
    return str(number)


def _bounds(value: Any, c: Constraints, loc: Loc, errors: Errors) -> Any:
    """``value`` within c's bounds, in pydantic's order (le, lt, ge, gt), or its error."""
    if c.le is not None and not value <= c.le:
        msg = f"Input should be less than or equal to {_plain(c.le)}"
        return error(errors, "less_than_equal", loc, msg, value, {"le": c.le})
    if c.lt is not None and not value < c.lt:
        msg = f"Input should be less than {_plain(c.lt)}"
        return error(errors, "less_than", loc, msg, value, {"lt": c.lt})
    if c.ge is not None and not value >= c.ge:
        msg = f"Input should be greater than or equal to {_plain(c.ge)}"
        return error(errors, "greater_than_equal", loc, msg, value, {"ge": c.ge})
    if c.gt is not None and not value > c.gt:
        msg = f"Input should be greater than {_plain(c.gt)}"
        return error(errors, "greater_than", loc, msg, value, {"gt": c.gt})
    return value


class _Constrained(Shape):
    """A value with bounds, lengths or a pattern."""

    __slots__ = ("c",)

    def __init__(self, c: Constraints) -> None:
        self.c = c


class IntShape(_Constrained):
    """A strict whole number (``true`` and ``5.0`` are not)."""

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """An int within the bounds; a bool or a float is no int."""
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            return error(errors, "int_type", loc, "Input should be a valid integer", value)
        return _bounds(int(value), self.c, loc, errors) if self.c.bounded else int(value)


class FloatShape(_Constrained):
    """A strict number: an int is a fine float, ``true`` and ``"3"`` are not."""

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A float within the bounds; an int becomes one."""
        if type(value) is float:
            number = value
        else:
            # NOTE: pydantic's strict float takes any real number (Decimal, numpy's) but no
            # text or bool, and refuses an int past a float (a 400-digit one) as no number.
            try:
                if isinstance(value, str | bytes | bool) or not hasattr(value, "__float__"):
                    raise TypeError
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                return error(errors, "float_type", loc, "Input should be a valid number", value)
        if self.c.allow_inf_nan is False and not math.isfinite(number):
            return error(errors, "finite_number", loc, "Input should be a finite number", value)
        return _bounds(number, self.c, loc, errors) if self.c.bounded else number


class BoolShape(Shape):
    """``true`` or ``false``, nothing else."""

    __slots__ = ()

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A bool, as given."""
        if type(value) is bool:
            return value
        return error(errors, "bool_type", loc, "Input should be a valid boolean", value)


def _anchored(pattern: str) -> re.Pattern[str]:
    """The pattern as pydantic's Rust engine reads it: ``$`` is the end, not a final newline."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


class StrShape(_Constrained):
    """A string, within its lengths and pattern."""

    __slots__ = ("regex",)

    def __init__(self, c: Constraints) -> None:
        super().__init__(c)
        self.regex = _anchored(c.pattern) if c.pattern is not None else None

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A str within its lengths and pattern."""
        if type(value) is not str:
            if not isinstance(value, str):
                return error(errors, "string_type", loc, "Input should be a valid string", value)
            value = str.__str__(value)
        c = self.c
        if c.min_length is not None and len(value) < c.min_length:
            unit = "character" if c.min_length == 1 else "characters"
            msg = f"String should have at least {c.min_length} {unit}"
            return error(errors, "string_too_short", loc, msg, value, {"min_length": c.min_length})
        if c.max_length is not None and len(value) > c.max_length:
            unit = "character" if c.max_length == 1 else "characters"
            msg = f"String should have at most {c.max_length} {unit}"
            return error(errors, "string_too_long", loc, msg, value, {"max_length": c.max_length})
        if self.regex is not None and self.regex.search(value) is None:
            msg = f"String should match pattern '{c.pattern}'"
            return error(errors, "string_pattern_mismatch", loc, msg, value, {"pattern": c.pattern})
        return value


class DecimalShape(_Constrained):
    """An exact amount from an int, a float (as it prints), a string or a Decimal."""

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A finite Decimal within the bounds and places."""
        if isinstance(value, Decimal):
            number = value
        elif isinstance(value, bool):
            msg = "Decimal input should be an integer, float, string or Decimal object"
            return error(errors, "decimal_type", loc, msg, value)
        elif isinstance(value, int):
            number = Decimal(value)
        elif isinstance(value, float):
            number = Decimal(repr(value))
        elif isinstance(value, str):
            try:
                number = Decimal(value.strip())  # as pydantic: 1_000 and ١٢ are numbers too
            except InvalidOperation:
                return error(
                    errors, "decimal_parsing", loc, "Input should be a valid decimal", value
                )
        else:
            msg = "Decimal input should be an integer, float, string or Decimal object"
            return error(errors, "decimal_type", loc, msg, value)
        c = self.c
        if not number.is_finite():
            if c.allow_inf_nan is False:
                return error(errors, "finite_number", loc, "Input should be a finite number", value)
            return number
        if c.decimal_places is not None and _places(number) > c.decimal_places:
            places = c.decimal_places
            msg = f"Decimal input should have no more than {places} decimal place{_s(places)}"
            return error(errors, "decimal_max_places", loc, msg, value, {"decimal_places": places})
        return _bounds(number, c, loc, errors) if c.bounded else number


def _places(number: Decimal) -> int:
    """Decimal places after trailing zeros are dropped (``1.10`` has one)."""
    try:
        exponent = number.normalize().as_tuple().exponent
    except InvalidOperation:  # pragma: no cover - finite decimals always normalize
        return 0
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _s(count: int) -> str:
    return "" if count == 1 else "s"


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class DateShape(Shape):
    """A date: YAML's ``2026-01-31``, or the same quoted; a datetime only at midnight."""

    __slots__ = ()

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A date."""
        if isinstance(value, dt.datetime):
            if value.time() == dt.time(0) and value.tzinfo is None:
                return value.date()
            msg = "Datetimes provided to dates should have zero time - e.g. be exact dates"
            return error(errors, "date_from_datetime_inexact", loc, msg, value)
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            text = value.strip()
            if _ISO_DATE.fullmatch(text):
                try:
                    return dt.date.fromisoformat(text)
                except ValueError as exc:
                    reason = str(exc)
            else:
                reason = "expected YYYY-MM-DD"
            msg = f"Input should be a valid date in the format YYYY-MM-DD, {reason}"
            return error(errors, "date_parsing", loc, msg, value, {"error": reason})
        return error(errors, "date_type", loc, "Input should be a valid date", value)


def _either(values: list[str]) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``: pydantic's list of what is allowed."""
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


class LiteralShape(Shape):
    """One of a few exact values."""

    __slots__ = ("expected", "values")

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.expected = _either([repr(v) for v in values])

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The allowed value it equals, of the same type."""
        for allowed in self.values:
            if type(value) is type(allowed) and value == allowed:
                return allowed
        msg = f"Input should be {self.expected}"
        return error(errors, "literal_error", loc, msg, value, {"expected": self.expected})


class EnumShape(Shape):
    """A member of a string enum, given as its value."""

    __slots__ = ("enum", "expected", "members")

    def __init__(self, enum: type[Enum]) -> None:
        self.enum = enum
        self.members = {member.value: member for member in enum}
        self.expected = _either([repr(v) for v in self.members])

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The member whose value it is."""
        if isinstance(value, self.enum):
            return value
        if type(value) is str and value in self.members:
            return self.members[value]
        msg = f"Input should be {self.expected}"
        return error(errors, "enum", loc, msg, value, {"expected": self.expected})


class AnyShape(Shape):
    """Anything at all."""

    __slots__ = ()

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The value, unchecked."""
        return value


def value_error(errors: Errors, loc: Loc, value: Any, exc: ValueError) -> Any:
    """A check's ValueError as pydantic reports it: ``Value error, <message>``."""
    return error(errors, "value_error", loc, f"Value error, {exc}", value, {"error": exc})
