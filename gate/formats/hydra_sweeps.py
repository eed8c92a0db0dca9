"""Hydra's sweep overrides, as budget-gate reads them: lists, ``choice``, ``range``, ``interval``.

``hydra.sweeper.params`` values are Hydra's override grammar (``1,2,3``, ``choice(a, b)``,
``range(1, 10, step=2)``, ``interval(0.1, 1.0)``, ``tag(log, interval(...))``); each becomes
a search parameter (values, or a low/high range) and the count of jobs it makes. Functions
Hydra evaluates against the config groups on disk (``glob``) are refused: their values are
not in the file.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from gate.errors import InputError
from gate.formats.model import whole_epochs

MAX_SWEEP_VALUES = 100_000
"""Values one swept range may have: past it, a typo (and a list too large to hold)."""
_CALL = re.compile(r"^\s*(\w+)\s*\((.*)\)\s*$", re.S)


def sweep(text: str, name: str, where: Any) -> tuple[dict[str, Any], int]:
    """One sweep override (``1,2,3``, ``choice(...)``, ``range(...)``, ``interval(...)``)."""
    call = _CALL.match(text)
    if call is None:
        values = [_scalar(v) for v in _split(text)]
        return {"values": values}, len(values)
    func, args = call.group(1), call.group(2)
    if func == "tag":
        parts = _split(args)
        value, count = sweep(parts[-1], name, where)
        if "log" in parts[:-1] and "low" in value:
            value = {**value, "log": True}
        return value, count
    if func == "shuffle":  # NOTE: the same jobs, in another order
        return sweep(args, name, where)
    if func == "glob":
        raise InputError(
            f"hydra.sweeper.params.{name}: glob({args}) depends on the files of a config group",
            location=where,
            hint=f"list the options instead, e.g. {name}: a,b",
        )
    if func == "choice":
        values = [_scalar(v) for v in _split(args)]
        return {"values": values}, len(values)
    numbers, keywords = _arguments(args, name, where)
    if func == "range":
        start, stop, step = _range_bounds(numbers, keywords) or (None, None, None)
        if start is None or stop is None or not step:
            raise InputError(
                f"hydra.sweeper.params.{name}: range needs start, stop",
                location=where,
                hint="write range(start, stop, step=s)",
            )
        span = (stop - start) / step
        if not math.isfinite(span) or span > MAX_SWEEP_VALUES:
            raise InputError(
                f"hydra.sweeper.params.{name}: range({start}, {stop}, step={step}) has over "
                f"{MAX_SWEEP_VALUES:,} values",
                location=where,
                hint="sweep fewer values (a larger step), or use interval() for a range",
            )
        if all(isinstance(v, int) for v in (start, stop, step)):
            return {"values": list(range(start, stop, step))}, max(0, math.ceil(span))
        values = _float_range(start, stop, step)
        return {"values": values}, len(values)
    bound = _bind(("start", "end"), numbers, keywords) if func == "interval" else None
    if bound is not None and len(bound) == 2:
        return {"low": float(bound["start"]), "high": float(bound["end"])}, 1
    raise InputError(
        f"hydra.sweeper.params.{name}: {func}() is not a sweep budget-gate reads",
        location=where,
        hint="use a comma list, choice(), range() or interval()",
    )


def _split(text: str) -> list[str]:
    """Top-level comma split (not inside brackets or quotes)."""
    parts, depth, current, quote = [], 0, "", ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    parts.append(current.strip())
    return [p for p in parts if p]


def _scalar(text: str) -> Any:
    text = text.strip().strip("'\"")
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def _arguments(args: str, name: str, where: Any) -> tuple[list[Any], dict[str, Any]]:
    numbers: list[Any] = []
    keywords: dict[str, Any] = {}
    for part in _split(args):
        key, eq, value = part.partition("=")
        number = _scalar(value if eq else key)
        if not isinstance(number, (int, float)):
            raise InputError(
                f"hydra.sweeper.params.{name}: {part!r} is not a number",
                location=where,
                hint="write numbers, e.g. range(1, 10, step=2)",
            )
        if eq:
            keywords[key.strip()] = number
        else:
            numbers.append(number)
    return numbers, keywords


def _float_range(start: float, stop: float, step: float) -> list[float]:
    """A float ``range`` as Hydra's ``FloatRange`` steps it: exact binary values added up.

    ``range(0, 0.2, 0.1)`` is 0, 0.1 and 0.2 there (0.1 + 0.1 falls a hair below 0.2 in
    exact arithmetic), where (stop − start) ÷ step counts two.
    """
    at, end, by = Decimal(start), Decimal(stop), Decimal(step)
    values = []
    while (at < end) if by > 0 else (at > end):
        values.append(float(at))
        at += by
    return values


def range_top(text: str) -> tuple[int, Any, str] | None:
    """The top of ``range(start, stop, step=s)``, its stop included, as Optuna draws it.

    With its start, and the range written for another stop (``range(1, {}, step=2)``).
    """
    call = _CALL.match(text)
    if call is None or call.group(1) != "range":
        return None
    try:
        numbers, keywords = _arguments(call.group(2), "", None)
    except InputError:
        return None
    bounds = _range_bounds(numbers, keywords)
    if bounds is None:
        return None
    start, stop, step = bounds
    if not step or step < 0 or stop < start:
        return None
    try:
        top = whole_epochs(start + ((stop - start) // step) * step)
    except OverflowError:  # range(1, 1e400): no top a trial could train to
        return None
    return None if top is None else (top, start, f"range({start}, {{}}, step={step})")


def _range_bounds(numbers: list[Any], keywords: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """``range``'s start, stop and step as Hydra binds them, or None where Hydra refuses.

    ``range(start, stop=None, step=1)``: a start alone is the stop.
    """
    bound = _bind(("start", "stop", "step"), numbers, keywords)
    if bound is None or "start" not in bound:
        return None
    start, stop = bound["start"], bound.get("stop")
    if stop is None:
        start, stop = 0, start
    return start, stop, bound.get("step", 1)


def _bind(
    names: tuple[str, ...], numbers: list[Any], keywords: dict[str, Any]
) -> dict[str, Any] | None:
    """Arguments bound to ``names`` as Python binds them (None: too many, unknown, repeated).

    NOTE: Hydra's sweep functions are Python functions; ``range(1, stop=1000)`` is theirs.
    """
    if len(numbers) > len(names) or set(keywords) - set(names):
        return None
    bound = dict(zip(names, numbers, strict=False))
    if set(bound) & set(keywords):
        return None
    return bound | keywords
