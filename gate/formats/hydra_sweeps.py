"""Hydra's sweep overrides, as budget-gate reads them: lists, ``choice``, ``range``, ``interval``.

``hydra.sweeper.params`` values are Hydra's override grammar (``1,2,3``, ``choice(a, b)``,
``range(1, 10, step=2)``, ``interval(0.1, 1.0)``, ``tag(log, interval(...))``,
``shuffle(sweep=range(1, 1000))``), parsed by :mod:`gate.formats.hydra_grammar` and bound as
Hydra's sweep functions bind their arguments, keyword forms too; each becomes a search
parameter (values, or a low/high range) and the count of jobs it makes. Any other call
(``glob``, whose values are the config group's files, ``sort``, a cast other than ``int`` and
``float``, an unknown name) is refused, never read as one literal value: it could hide a sweep.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from gate.errors import InputError
from gate.formats.hydra_grammar import Call, Container, GrammarError, Node, Primitive, parse
from gate.formats.model import whole_epochs

MAX_SWEEP_VALUES = 100_000
"""Values one swept range may have: past it, a typo (and a list too large to hold)."""


@dataclass(frozen=True, slots=True)
class _Sweep:
    """What Hydra's sweep functions return: a choice, a range or an interval, and its jobs."""

    value: dict[str, Any]
    """``{"values": [...]}``, or an interval's ``{"low": a, "high": b}``."""
    count: int
    kind: str
    shuffled: bool = False
    bounds: tuple[Any, Any, Any] | None = None
    """A range's start, stop and step."""


class _Refused(ValueError):
    """A sweep budget-gate does not read, or Hydra refuses: said with the fix."""

    def __init__(self, said: str, hint: str = "use a comma list, choice(), range() or interval()"):
        super().__init__(said)
        self.hint = hint


def sweep(text: str, name: str, where: Any) -> tuple[dict[str, Any], int]:
    """One sweep override (``1,2,3``, ``choice(...)``, ``range(...)``, ``interval(...)``)."""
    try:
        found = _evaluate_value(text)
    except (GrammarError, _Refused) as error:
        raise InputError(
            f"hydra.sweeper.params.{name}: {error}",
            location=where,
            hint=getattr(error, "hint", "write the value in Hydra's override grammar").replace(
                "{name}", name
            ),
        ) from None
    if isinstance(found, _Sweep):
        return found.value, found.count
    return {"values": [found]}, 1


def _evaluate_value(text: str) -> Any:
    """A value as Hydra reads it: a :class:`_Sweep`, or the one value of a single job."""
    elements = [_evaluate(node) for node in parse(text)]
    if len(elements) == 1:
        return elements[0]
    return _choice(elements, {})


def _evaluate(node: Node) -> Any:
    if isinstance(node, Primitive):
        return _scalar(node.text)
    if isinstance(node, Container):
        for item in node.items:
            _evaluate(item)  # NOTE: a call inside must be one Hydra knows
        return node.text
    if node.name == "glob":
        raise _Refused(
            f"{node.text} depends on the files of a config group",
            hint="list the options instead, e.g. {name}: a,b",
        )
    function = _FUNCTIONS.get(node.name)
    if function is None:
        raise _Refused(f"{node.name}() is not a sweep budget-gate reads")
    args = [_evaluate(arg) for key, arg in node.args if key is None]
    keywords: dict[str, Any] = {}
    for key, arg in node.args:
        if key is not None and key in keywords:
            raise _Refused(f"{node.name}() is given {key}= twice")
        if key is not None:
            keywords[key] = _evaluate(arg)
    return function(args, keywords)


def _plain(args: list[Any], function: str) -> list[Any]:
    """Values of a choice: no sweep among them (Hydra refuses, or runs a sweep as a value)."""
    if any(isinstance(arg, _Sweep) for arg in args):
        raise _Refused(f"{function} has a sweep among its values", hint="write one sweep")
    return args


def _choice(args: list[Any], keywords: dict[str, Any]) -> _Sweep:
    if keywords or not args:
        raise _Refused("choice() takes its values only, one or more")
    values = _plain(args, "choice()")
    return _Sweep({"values": values}, len(values), "choice")


def _range(args: list[Any], keywords: dict[str, Any]) -> _Sweep:
    numbers = [*args, *keywords.values()]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
        raise _Refused(
            f"range() takes numbers, not {numbers}", hint="write numbers, e.g. range(1, 10, step=2)"
        )
    bounds = _range_bounds(args, keywords)
    if bounds is None or not bounds[2]:
        raise _Refused("range needs start, stop", hint="write range(start, stop, step=s)")
    start, stop, step = bounds
    span = (stop - start) / step
    if not math.isfinite(span) or span > MAX_SWEEP_VALUES:
        raise _Refused(
            f"range({start}, {stop}, step={step}) has over {MAX_SWEEP_VALUES:,} values",
            hint="sweep fewer values (a larger step), or use interval() for a range",
        )
    if all(isinstance(v, int) for v in bounds):
        values: list[Any] = list(range(start, stop, step))
        return _Sweep({"values": values}, max(0, math.ceil(span)), "range", bounds=bounds)
    values = _float_range(start, stop, step)
    return _Sweep({"values": values}, len(values), "range", bounds=bounds)


def _interval(args: list[Any], keywords: dict[str, Any]) -> _Sweep:
    bound = _bind(("start", "end"), args, keywords)
    ends = list(bound.values()) if bound is not None and len(bound) == 2 else []
    if not ends or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ends):
        raise _Refused("interval() takes two numbers", hint="write interval(low, high)")
    return _Sweep({"low": float(ends[0]), "high": float(ends[1])}, 1, "interval")


def _tag(args: list[Any], keywords: dict[str, Any]) -> _Sweep:
    """``tag(log, sweep)``: the sweep; ``log`` makes an interval log-scaled."""
    if set(keywords) - {"sweep"}:
        raise _Refused("tag() takes tags and a sweep (sweep=) only")
    args = [*args, keywords["sweep"]] if "sweep" in keywords else args
    if not args or not isinstance(args[-1], _Sweep):
        raise _Refused("tag()'s last argument must be a choice(), range() or interval()")
    tags, swept = args[:-1], args[-1]
    if not all(isinstance(t, str) for t in tags):
        raise _Refused(f"tag()'s tags must be words, not {tags}")
    if "log" in tags and swept.kind == "interval":
        return replace(swept, value={**swept.value, "log": True})
    return swept


def _shuffle(args: list[Any], keywords: dict[str, Any]) -> Any:
    """The same jobs in another order; ``shuffle(list=[...])`` and ``shuffle([..])`` one list."""
    if set(keywords) - {"sweep", "list"}:
        raise _Refused("shuffle() takes values, sweep= or list= only")
    if "list" in keywords or "sweep" in keywords:
        args = [keywords.get("list", keywords.get("sweep"))]
    if len(args) == 1 and isinstance(args[0], _Sweep):
        if args[0].kind == "interval":
            raise _Refused("shuffle() does not take an interval()")
        return replace(args[0], shuffled=True)
    if len(args) == 1:
        return args[0]  # NOTE: a list, shuffled, or [value]: one job's value
    return replace(_choice(args, {}), shuffled=True)


def _cast(kind: type[int] | type[float]) -> Any:
    """``int(interval(16, 256))``, ``float(choice(1, 2))``: the sweep, its values cast.

    The Optuna sweeper's documented integer range; a cast changes no count of jobs.
    """

    def one(value: Any) -> Any:
        try:
            return kind(value) if not isinstance(value, bool) else _bad(value)
        except (TypeError, ValueError, OverflowError):
            return _bad(value)

    def _bad(value: Any) -> Any:
        raise _Refused(f"{kind.__name__}() of {value!r} is no number")

    def cast(args: list[Any], keywords: dict[str, Any]) -> Any:
        if keywords or len(args) != 1:
            raise _Refused(f"{kind.__name__}() takes one value or sweep")
        (arg,) = args
        if not isinstance(arg, _Sweep):
            return one(arg)
        value = dict(arg.value)
        for key in ("low", "high"):
            if key in value:
                value[key] = one(value[key])
        if isinstance(value.get("values"), list):
            value["values"] = [one(v) for v in value["values"]]
        return replace(arg, value=value)

    return cast


_FUNCTIONS = {
    "choice": _choice,
    "range": _range,
    "interval": _interval,
    "tag": _tag,
    "shuffle": _shuffle,
    "int": _cast(int),
    "float": _cast(float),
}


def swept_dicts(text: str) -> list[dict[str, Any]]:
    """The dicts a sweep hands its key (``{max_epochs: 1000},{max_epochs: 10}``), as values.

    Hydra merges such a dict into the config under the key: the epochs inside it count.
    """
    try:
        nodes = parse(text)
    except GrammarError:
        return []
    found: list[dict[str, Any]] = []
    while nodes:
        node = nodes.pop()
        if isinstance(node, Call):  # NOTE: choice({...}, {...}), shuffle(...): each one
            nodes.extend(arg for _, arg in node.args)
        elif isinstance(node, Container) and not node.is_list:
            found.append(_as_given(node))
    return found


def _as_given(node: Node) -> Any:
    """A value as Hydra hands it: a dict, a list, a number, text, or None (``null``)."""
    if isinstance(node, Container):
        items = [_as_given(item) for item in node.items]
        return items if node.is_list else dict(zip(node.keys, items, strict=False))
    if isinstance(node, Call):
        return node.text
    if node.quoted:
        return node.text
    return None if node.text.lower() == "null" else _scalar(node.text)


def _scalar(text: str) -> Any:
    """A primitive as a number where it spells one (``1_000`` too, as Hydra's ``INT``)."""
    if re.fullmatch(r"[+-]?\d(?:_?\d)*", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


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
    try:
        found = _evaluate_value(text)
    except (GrammarError, _Refused):
        return None
    if not isinstance(found, _Sweep) or found.bounds is None or found.shuffled:
        return None  # NOTE: Optuna draws a shuffled range from its values, as a choice
    start, stop, step = found.bounds
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
