"""What a model's field declares: its default, its key, its bounds and its checks (pure data).

The spelling is pydantic's (``Field(ge=0, alias="apiVersion")``, ``Annotated[int, Strict()]``)
so that a reader who knows pydantic reads the models at once; :mod:`gate.model.shapes`
validates them and :mod:`gate.model.mirror` hands the same declarations to pydantic for
the JSON Schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

MISSING: Any = type("Missing", (), {"__repr__": lambda _: "MISSING"})()
"""No default: the field is required."""

_OPTIONS = frozenset(
    {
        "default",
        "default_factory",
        "alias",
        "description",
        "gt",
        "ge",
        "lt",
        "le",
        "min_length",
        "max_length",
        "pattern",
        "allow_inf_nan",
        "decimal_places",
        "strict",
        "json_schema_extra",
    }
)
_BOUNDS = ("gt", "ge", "lt", "le")


class FieldInfo:
    """The options one ``Field(...)`` was given, and only those (the mirror passes them on)."""

    __slots__ = ("options",)

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = set(options) - _OPTIONS
        if unknown:
            raise TypeError(f"Field() takes no {', '.join(sorted(unknown))}")
        self.options = dict(options)

    def __repr__(self) -> str:
        return f"Field({', '.join(f'{k}={v!r}' for k, v in self.options.items())})"


def Field(default: Any = MISSING, **options: Any) -> Any:
    """A field's default and options; typed ``Any`` so it stands where a default stands."""
    if default is not MISSING:
        options["default"] = default
    return FieldInfo(options)


class Strict:
    """``Annotated[int, Strict()]``: no conversions (``true`` and ``"3"`` are not numbers)."""

    __slots__ = ()


class Check:
    """A check after the type's own (pydantic's AfterValidator).

    It returns the value, or raises ValueError with what is wrong.
    """

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func


class Before:
    """A conversion before the type is checked (pydantic's BeforeValidator)."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func


class JsonSchema:
    """The field's JSON Schema, spelled out (pydantic's WithJsonSchema)."""

    __slots__ = ("schema",)

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema


StrictInt = Annotated[int, Strict()]
StrictFloat = Annotated[float, Strict()]
"""A number: an int is a fine float, ``true`` and ``"3"`` are not."""
StrictBool = Annotated[bool, Strict()]


class Constraints:
    """The bounds and lengths of one value, merged from every ``Field`` that annotates it."""

    __slots__ = (
        "allow_inf_nan",
        "bounded",
        "decimal_places",
        "ge",
        "gt",
        "le",
        "lt",
        "max_length",
        "min_length",
        "pattern",
        "strict",
    )

    def __init__(self, infos: list[FieldInfo], strict: bool) -> None:
        merged: dict[str, Any] = {}
        for info in infos:
            merged.update(info.options)
        self.gt = merged.get("gt")
        self.ge = merged.get("ge")
        self.lt = merged.get("lt")
        self.le = merged.get("le")
        self.min_length = merged.get("min_length")
        self.max_length = merged.get("max_length")
        self.pattern = merged.get("pattern")
        self.allow_inf_nan = merged.get("allow_inf_nan")
        self.decimal_places = merged.get("decimal_places")
        self.strict = strict or bool(merged.get("strict"))
        self.bounded = any(merged.get(name) is not None for name in _BOUNDS)
        """Whether any of gt, ge, lt, le is set."""
