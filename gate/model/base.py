"""The strict, immutable base of every spec, policy and calibration model.

It keeps pydantic's surface that the code uses (``Model(**data)``, ``model_validate``,
``model_dump``, ``model_copy``, ``model_fields_set``) over :mod:`gate.model.shapes`, so a
``check`` never imports pydantic; unknown keys are errors and instances cannot change.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from decimal import Decimal
from enum import Enum
from typing import Any, ClassVar, Literal, TypeVar

from gate.model.compile import model_shape
from gate.model.shapes import FieldShape, new_instance
from gate.model.values import Error

M = TypeVar("M", bound="Model")
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class ValidationError(ValueError):
    """What was wrong with a document, as pydantic's error dicts (``errors()``)."""

    def __init__(self, title: str, errors: list[Error]) -> None:
        super().__init__(title)
        self.title, self._errors = title, errors

    def errors(self, *, include_url: bool = False) -> list[Error]:
        """Every error: ``type``, ``loc``, ``msg``, ``input`` and, for some, ``ctx``."""
        return [dict(e) for e in self._errors]

    def __str__(self) -> str:
        count = len(self._errors)
        lines = [f"{count} validation error{'' if count == 1 else 's'} for {self.title}"]
        for e in self._errors:
            lines.append(".".join(str(part) for part in e["loc"]) or self.title)
            lines.append(f"  {e['msg']} [type={e['type']}, input_value={e['input']!r:.80}]")
        return "\n".join(lines)


class Model:
    """A strict, immutable model: declared fields only, validated on construction."""

    __slots__ = ("__dict__", "model_fields_set")
    __declared__: ClassVar[dict[str, Any]]
    """Each subclass's own field defaults, taken off the class when it is made."""
    model_fields_set: frozenset[str]
    """The fields the document gave (the rest hold their defaults)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = {}
        for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063 - see shapes
            if name in cls.__dict__ and not name.startswith("_"):
                declared[name] = cls.__dict__[name]
                delattr(cls, name)
        cls.__declared__ = declared

    def __init__(self, **data: Any) -> None:
        shape = model_shape(type(self))
        errors: list[Error] = []
        built = shape.check(data, (), errors)
        if errors:
            raise ValidationError(type(self).__name__, errors)
        object.__setattr__(self, "__dict__", built.__dict__)
        object.__setattr__(self, "model_fields_set", built.model_fields_set)

    @classmethod
    def model_validate(cls: type[M], data: Any) -> M:
        """``data`` (a mapping, or an instance already) as a validated instance."""
        errors: list[Error] = []
        built = model_shape(cls).check(data, (), errors)
        if errors:
            raise ValidationError(cls.__name__, errors)
        return built  # type: ignore[no-any-return]

    def model_copy(self: M, *, update: dict[str, Any] | None = None) -> M:
        """A copy with ``update``'s fields replaced, unvalidated (as pydantic's)."""
        values = {**self.__dict__, **(update or {})}
        return new_instance(type(self), values, self.model_fields_set | set(update or ()))  # type: ignore[no-any-return]

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        by_alias: bool = False,
        exclude_unset: bool = False,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The fields as plain data; ``mode="json"`` turns enums, decimals and dates to JSON's."""
        return _dump_model(self, _Dump(mode == "json", by_alias, exclude_unset, exclude_none))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return new_instance, (type(self), self.__dict__, self.model_fields_set)


def edited(model: M, changes: Iterable[tuple[tuple[str, ...], Any]]) -> M:
    """``model`` with the value at each key path replaced, validated again.

    Equal to dumping the fields given, setting the values and validating it all, but only
    the mappings along the paths are validated again: the models beside them are kept as
    they are (validated already). A path through an unset mapping makes it. Raises
    :class:`ValidationError`.
    """
    changes = list(changes)
    if len(changes) == 1:
        # NOTE: a fix's search edits one number a few thousand times a batch: only that
        # field is validated again, and every check of the models along its path. Anything
        # else, or an edit it refuses, goes the whole way, which says what is wrong.
        path, value = changes[0]
        quick = _edit_field(model, path, value)
        if quick is not None:
            return quick
    data = _given(model)
    for path, value in changes:
        node = data
        for key in path[:-1]:
            child = node.get(key)
            opened = _given(child) if isinstance(child, Model) else dict(child or {})
            node[key] = opened
            node = opened
        node[path[-1]] = value
    return type(model).model_validate(data)


def _edit_field(model: M, path: tuple[str, ...], value: Any) -> M | None:
    """``model`` with the field at ``path`` replaced, it and every model check on the way run.

    ``None`` when the path takes another way (through an unset model or a mapping, by a
    field's name rather than its key) or the edit is not valid: the whole way decides.
    """
    shape = model_shape(type(model))
    field = next((f for f in shape.fields if f.key == path[0]), None)
    if field is None:
        return None
    if len(path) > 1:
        child = model.__dict__[field.name]
        if type(child) is not field.instance_of or field.name not in model.model_fields_set:
            return None  # NOTE: a union or a hook around the model: its own shape decides
        value = _edit_field(child, path[1:], value)
        if value is None:
            return None
    elif type(value) is not field.instance_of:
        errors: list[Error] = []
        value = field.shape.check(value, path, errors)
        if errors:
            return None
    values = {**model.__dict__, field.name: value}
    given = model.model_fields_set | {field.name}
    before: dict[str, Any] = {}  # NOTE: each field check sees the fields before its own
    try:
        for f in shape.fields:
            if f.checks and f.name in given:
                for check in f.checks:
                    check(values[f.name], before)
            before[f.name] = values[f.name]
        built: M = new_instance(type(model), values, given)
        for check in shape.checks:
            check(built)
    except ValueError:
        return None
    return built


def _given(model: Model) -> dict[str, Any]:
    """The fields the model was given, by key (what ``model_dump(exclude_unset)`` keeps)."""
    values, given = model.__dict__, model.model_fields_set
    return {f.key: values[f.name] for f in model_shape(type(model)).fields if f.name in given}


def fields_of(cls: type[Model]) -> dict[str, FieldShape]:
    """A model's fields by name, in declaration order (each with its key and shape)."""
    return {f.name: f for f in model_shape(cls).fields}


def model_check(func: F) -> F:
    """Mark a method that checks the whole model after its fields (raise ValueError)."""
    func.__model_check__ = True  # type: ignore[attr-defined]
    return func


def field_check(field: str) -> Callable[[T], T]:
    """Mark a static method ``(value, data)`` that checks ``field`` once it is valid.

    ``data`` holds the fields before it that are valid (pydantic's ``info.data``).
    """

    def mark(method: T) -> T:
        func: Any = getattr(method, "__func__", method)
        func.__field_check__ = field
        return method

    return mark


class _Dump:
    __slots__ = ("by_alias", "exclude_none", "exclude_unset", "json")

    def __init__(self, json: bool, by_alias: bool, exclude_unset: bool, exclude_none: bool):
        self.json, self.by_alias = json, by_alias
        self.exclude_unset, self.exclude_none = exclude_unset, exclude_none


def _dump_model(model: Model, how: _Dump) -> dict[str, Any]:
    out: dict[str, Any] = {}
    values = model.__dict__
    for f in model_shape(type(model)).fields:
        if how.exclude_unset and f.name not in model.model_fields_set:
            continue
        value = values[f.name]
        if how.exclude_none and value is None:
            continue
        out[f.key if how.by_alias else f.name] = _dump(value, how, f.loose)
    return out


_PLAIN = frozenset({str, int, bool, type(None)})
"""What every mode dumps as it is (the spec fingerprint dumps a few hundred of them)."""


def _dump(value: Any, how: _Dump, loose: bool) -> Any:
    kind = type(value)
    if kind in _PLAIN or (kind is float and not (loose and how.json)):
        return value
    if isinstance(value, Model):
        return _dump_model(value, how)
    if isinstance(value, list | tuple):
        return [_dump(v, how, loose) for v in value]
    if isinstance(value, dict):
        return {
            _dump(k, how, loose): _dump(v, how, loose)
            for k, v in value.items()
            if not (how.exclude_none and v is None)
        }
    if not how.json:
        return value
    if loose and isinstance(value, float) and not math.isfinite(value):
        return None  # as pydantic: an untyped infinity is null in JSON, a float field's stays
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return _iso_datetime(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return value


def _iso_datetime(value: dt.datetime) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
