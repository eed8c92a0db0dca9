"""Shapes of shapes: lists, mappings, ``| None``, unions, checks, and models of fields.

A value that fits no member of a union gets one ``union`` error naming each member's
complaint (pydantic reports every member's, under labels that are no YAML key); a value of
one member's shape that breaks its rules gets that member's errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gate.model.fields import MISSING, Constraints, FieldInfo
from gate.model.values import (
    INVALID,
    AnyShape,
    Errors,
    Loc,
    Shape,
    error,
    value_error,
)


class ListShape(Shape):
    """A list (or tuple) whose every item has one shape, within its lengths."""

    __slots__ = ("c", "item")

    def __init__(self, item: Shape, c: Constraints) -> None:
        self.item, self.c = item, c

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A list of checked items, within its lengths."""
        if not isinstance(value, list | tuple):
            return error(errors, "list_type", loc, "Input should be a valid list", value)
        before = len(errors)
        check = self.item.check
        items = [check(item, (*loc, i), errors) for i, item in enumerate(value)]
        if len(errors) > before:
            return INVALID
        c = self.c
        if c.min_length is not None and len(items) < c.min_length:
            return error(errors, "too_short", loc, _length_msg("least", c.min_length, items), value,
                         {"field_type": "List", "min_length": c.min_length,
                          "actual_length": len(items)})  # fmt: skip
        if c.max_length is not None and len(items) > c.max_length:
            return error(errors, "too_long", loc, _length_msg("most", c.max_length, items), value,
                         {"field_type": "List", "max_length": c.max_length,
                          "actual_length": len(items)})  # fmt: skip
        return items


def _length_msg(bound: str, length: int, items: list[Any]) -> str:
    return (
        f"List should have at {bound} {length} item{'' if length == 1 else 's'} after "
        f"validation, not {len(items)}"
    )


class DictShape(Shape):
    """A mapping whose keys and values each have one shape."""

    __slots__ = ("key", "value")

    def __init__(self, key: Shape, value: Shape) -> None:
        self.key, self.value = key, value

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """A dict of checked keys and values."""
        if not isinstance(value, dict):
            return error(errors, "dict_type", loc, "Input should be a valid dictionary", value)
        before = len(errors)
        out = {}
        for key, item in value.items():
            checked_key = self.key.check(key, (*loc, key, "[key]"), errors)
            checked = self.value.check(item, (*loc, key), errors)
            if checked_key is not INVALID and checked is not INVALID:
                out[checked_key] = checked
        return INVALID if len(errors) > before else out


class NullableShape(Shape):
    """``X | None``."""

    __slots__ = ("inner",)

    def __init__(self, inner: Shape) -> None:
        self.inner = inner

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """None, or the inner shape's value."""
        return None if value is None else self.inner.check(value, loc, errors)


SHAPE_ERRORS = frozenset(
    {
        "float_type",
        "int_type",
        "bool_type",
        "string_type",
        "list_type",
        "dict_type",
        "model_type",
        "decimal_type",
        "decimal_parsing",
        "date_type",
        "date_parsing",
    }
)
"""Errors that say only that a value has the wrong shape, not that it breaks a rule."""


class UnionShape(Shape):
    """The first member the value fits; else the errors of the member it was meant for.

    A value of a member's shape (a mapping for a range) that breaks its rules gets that
    member's errors; a value of no member's shape gets one ``union`` error whose ``kinds``
    list each member's complaint.
    """

    __slots__ = ("members",)

    def __init__(self, members: list[Shape]) -> None:
        self.members = members

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The first member's value that fits, else the meant member's errors."""
        tried: list[Errors] = []
        for member in self.members:
            found: Errors = []
            checked = member.check(value, loc, found)
            if checked is not INVALID:
                return checked
            tried.append(found)
        for found in tried:
            if not all(e["type"] in SHAPE_ERRORS and e["loc"] == loc for e in found):
                errors.extend(found)
                return INVALID
        first = tried[0][0]
        kinds = [found[0]["type"] for found in tried]
        return error(errors, "union", loc, first["msg"], value, {"kinds": kinds})


class HookShape(Shape):
    """A shape with conversions before it and checks after it (ValueError: its message)."""

    __slots__ = ("after", "before", "inner")

    def __init__(
        self, before: list[Callable[[Any], Any]], inner: Shape, after: list[Callable[[Any], Any]]
    ) -> None:
        self.before, self.inner, self.after = before, inner, after

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The value converted, checked, then checked again by each hook."""
        try:
            for convert in self.before:
                value = convert(value)
        except ValueError as exc:  # as pydantic's BeforeValidator: a located error
            return value_error(errors, loc, value, exc)
        checked = self.inner.check(value, loc, errors)
        if checked is INVALID:
            return INVALID
        for func in self.after:
            try:
                checked = func(checked)
            except ValueError as exc:  # noqa: PERF203 - one check, seldom two
                return value_error(errors, loc, value, exc)
        return checked


class FieldShape:
    """One field of a model: its name, its YAML key, its shape and its default."""

    __slots__ = (
        "checks",
        "default",
        "factory",
        "info",
        "instance_of",
        "key",
        "loose",
        "name",
        "required",
        "shape",
        "type",
    )

    def __init__(
        self,
        name: str,
        annotation: Any,
        declared: Any,
        shape: Shape,
        instance_of: type | None = None,
    ) -> None:
        info = declared if isinstance(declared, FieldInfo) else None
        options = info.options if info is not None else {}
        self.name = name
        self.key: str = options.get("alias", name)
        self.info = info
        self.type = annotation
        self.default = options.get("default", MISSING) if info is not None else declared
        self.factory: Callable[[], Any] | None = options.get("default_factory")
        self.shape = shape
        self.checks: list[Callable[[Any, dict[str, Any]], Any]] = []
        self.required = self.default is MISSING and self.factory is None
        """Whether the field has no default."""
        self.loose = _holds_any(self.shape)
        """Whether the field holds values of any type (JSON writes their infinities null)."""
        self.instance_of = instance_of
        """The model class the field holds, whose instances pass as they are (an edit)."""


def _holds_any(shape: Shape) -> bool:
    if isinstance(shape, AnyShape):
        return True
    if isinstance(shape, NullableShape | HookShape):
        return _holds_any(shape.inner)
    if isinstance(shape, ListShape):
        return _holds_any(shape.item)
    if isinstance(shape, DictShape):
        return _holds_any(shape.value)
    if isinstance(shape, UnionShape):
        return any(_holds_any(m) for m in shape.members)
    return False


class ModelShape(Shape):
    """A model: its fields by key, then its checks; unknown keys are errors."""

    __slots__ = ("aliases", "checks", "cls", "fields", "keys")

    def __init__(self, cls: type, fields: list[FieldShape], checks: list[Callable[..., Any]]):
        self.cls, self.fields, self.checks = cls, fields, checks
        self.keys = {f.key for f in fields} | {f.name for f in fields}
        self.aliases = {f.name: f.key for f in fields if f.key != f.name}
        """A field's name is a key too, unless its alias is given (then the name is extra)."""

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """An instance from a mapping (an instance passes as it is)."""
        if isinstance(value, self.cls):
            return value
        if not isinstance(value, dict):
            name = self.cls.__name__
            msg = f"Input should be a valid dictionary or instance of {name}"
            return error(errors, "model_type", loc, msg, value, {"class_name": name})
        before = len(errors)
        values, given = self.fill(value, loc, errors)
        for key in value:
            if key not in self.keys or self.aliases.get(key) in value:
                msg = "Extra inputs are not permitted"
                error(errors, "extra_forbidden", (*loc, key), msg, value[key])
        if len(errors) > before:
            return INVALID
        built = new_instance(self.cls, values, given)
        for check in self.checks:
            try:
                check(built)
            except ValueError as exc:  # noqa: PERF203 - a model has a check or two
                return value_error(errors, loc, value, exc)
        return built

    def fill(self, value: dict[str, Any], loc: Loc, errors: Errors) -> tuple[dict[str, Any], Any]:
        """The fields' values, in order, and the names given (errors appended)."""
        values: dict[str, Any] = {}
        given = set()
        for f in self.fields:
            key = f.key
            if key not in value:
                if f.name not in value:
                    if f.required:
                        error(errors, "missing", (*loc, key), "Field required", value)
                    else:
                        values[f.name] = f.factory() if f.factory is not None else f.default
                    continue
                key = f.name
            given.add(f.name)
            raw = value[key]
            checked = raw if type(raw) is f.instance_of else f.shape.check(raw, (*loc, key), errors)
            if checked is INVALID or not f.checks:
                if checked is not INVALID:
                    values[f.name] = checked
                continue
            for check in f.checks:
                try:
                    check(checked, values)
                except ValueError as exc:  # noqa: PERF203 - a field has one check at most
                    value_error(errors, (*loc, key), value[key], exc)
                    checked = INVALID
                    break
            if checked is not INVALID:
                values[f.name] = checked
        return values, frozenset(given)


_new = object.__new__
_set = object.__setattr__


def new_instance(cls: type, values: dict[str, Any], given: frozenset[str]) -> Any:
    """An instance of a model class holding ``values``, validated already."""
    built: Any = _new(cls)
    _set(built, "__dict__", values)
    _set(built, "model_fields_set", given)
    return built
