"""Annotations compiled into shapes, once per model class, on first use.

A model's fields are its annotations (with ``from __future__ import annotations``, strings
resolved in the module's namespace), its bases' first; their ``Annotated`` metadata
(:mod:`gate.model.fields`) sets bounds and checks. ``int``, ``float`` and ``bool`` fields
must be strict: a spec's ``true`` is no number.
"""

from __future__ import annotations

import datetime as dt
import sys
import types
import typing
from collections.abc import Callable, Iterator
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal, Union

from gate.model.fields import MISSING, Before, Check, Constraints, FieldInfo, Strict
from gate.model.shapes import (
    DictShape,
    FieldShape,
    HookShape,
    ListShape,
    ModelShape,
    NullableShape,
    UnionShape,
)
from gate.model.values import (
    AnyShape,
    BoolShape,
    DateShape,
    DecimalShape,
    EnumShape,
    Errors,
    FloatShape,
    IntShape,
    LiteralShape,
    Loc,
    Shape,
    StrShape,
)


class ModelRef(Shape):
    """A model class, compiled when first checked (models refer to models declared later)."""

    __slots__ = ("cls", "compiled")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.compiled: ModelShape | None = None

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        """The model's value, compiled on first use."""
        if self.compiled is None:
            self.compiled = model_shape(self.cls)
        return self.compiled.check(value, loc, errors)


def shape_of(annotation: Any) -> Shape:
    """Compile one annotation (with its ``Annotated`` metadata) into a shape."""
    meta: tuple[Any, ...] = ()
    if typing.get_origin(annotation) is Annotated:
        annotation, *rest = typing.get_args(annotation)
        meta = tuple(rest)
    infos = [m for m in meta if isinstance(m, FieldInfo)]
    strict = any(isinstance(m, Strict) for m in meta)
    shape = _base_shape(annotation, Constraints(infos, strict))
    before = [m.func for m in meta if isinstance(m, Before)]
    after = [m.func for m in meta if isinstance(m, Check)]
    if before or after:
        return HookShape(before, shape, after)
    return shape


def _base_shape(tp: Any, c: Constraints) -> Shape:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        inner = (
            shape_of(members[0])
            if len(members) == 1
            else UnionShape([shape_of(a) for a in members])
        )
        return NullableShape(inner) if len(members) < len(args) else inner
    if origin is list:
        return ListShape(shape_of(args[0]), c)
    if origin is dict:
        return DictShape(shape_of(args[0]), shape_of(args[1]))
    if origin is Literal:
        return LiteralShape(args)
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        if tp in (int, float, bool) and not c.strict:
            strict = {int: "StrictInt", float: "StrictFloat", bool: "StrictBool"}[tp]
            raise TypeError(f"{tp.__name__} fields are strict: annotate them {strict}")
        return scalar(c)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return EnumShape(tp)
    if isinstance(tp, type) and hasattr(tp, "model_fields_set"):
        return ModelRef(tp)
    raise TypeError(f"no shape for {tp!r}")


_SCALARS: dict[Any, Callable[[Constraints], Shape]] = {
    int: IntShape,
    float: FloatShape,
    bool: lambda _: BoolShape(),
    str: StrShape,
    Decimal: DecimalShape,
    dt.date: lambda _: DateShape(),
    Any: lambda _: AnyShape(),
}


def model_shape(cls: type) -> ModelShape:
    """The compiled shape of a model class (compiled on first use, then kept on the class)."""
    found: ModelShape | None = cls.__dict__.get("__shape__")
    if found is None:
        found = _compile(cls)
        type.__setattr__(cls, "__shape__", found)
    return found


def declared_fields(cls: type) -> Iterator[tuple[str, Any, Any]]:
    """Each field's name, resolved annotation and declared default, bases first."""
    seen: dict[str, tuple[Any, Any]] = {}
    for klass in reversed(cls.__mro__):
        # NOTE: the class's own annotations, as inspect.get_annotations reads them (inspect
        # itself costs a cold check 7 ms).
        own = klass.__dict__.get("__annotations__", {})  # noqa: RUF063
        if "__declared__" not in klass.__dict__:
            continue
        namespace = vars(sys.modules[klass.__module__])
        defaults = klass.__dict__["__declared__"]
        for name, annotation in own.items():
            if name.startswith("_") or "ClassVar" in str(annotation):
                continue
            resolved = eval(annotation, namespace) if isinstance(annotation, str) else annotation
            default = defaults.get(name, seen.get(name, (None, MISSING))[1])
            seen[name] = (resolved, default)
    for name, (annotation, default) in seen.items():
        yield name, annotation, default


def _compile(cls: type) -> ModelShape:
    fields = [_field(name, tp, default) for name, tp, default in declared_fields(cls)]
    by_name = {f.name: f for f in fields}
    checks = []
    for klass in reversed(cls.__mro__):
        for attr in klass.__dict__.values():
            func = getattr(attr, "__func__", attr)
            target = getattr(func, "__field_check__", None)
            if target is not None:
                by_name[target].checks.append(func)
            elif getattr(func, "__model_check__", False):
                checks.append(func)
    return ModelShape(cls, fields, checks)


_NOT_BOUNDS = frozenset({"default", "default_factory", "alias", "description", "json_schema_extra"})


def _field(name: str, annotation: Any, declared: Any) -> FieldShape:
    """A field, with the bounds its ``Field(...)`` default gives added to its type's."""
    options = declared.options if isinstance(declared, FieldInfo) else {}
    bounds = {k: v for k, v in options.items() if k not in _NOT_BOUNDS}
    shape = shape_of(Annotated[annotation, FieldInfo(bounds)] if bounds else annotation)
    inner = shape.inner if isinstance(shape, NullableShape) else shape
    held = inner.cls if isinstance(inner, ModelRef) else None
    return FieldShape(name, annotation, declared, shape, held)


def step(shape: Shape, part: str | int) -> Shape | None:
    """The shape of the child ``part`` (a key or an index) of a value of ``shape``, if any."""
    if isinstance(shape, ModelRef):
        shape = model_shape(shape.cls)
    if isinstance(shape, NullableShape | HookShape):
        return step(shape.inner, part)
    if isinstance(shape, ListShape):
        return shape.item if isinstance(part, int) else None
    if isinstance(shape, DictShape):
        return shape.value if isinstance(part, str) else None
    if isinstance(shape, UnionShape):
        found = (step(member, part) for member in shape.members)
        return next((s for s in found if s is not None), None)
    if isinstance(shape, ModelShape):
        return next((f.shape for f in shape.fields if part in (f.key, f.name)), None)
    return None


def model_of(shape: Shape) -> ModelShape | None:
    """The model a value of ``shape`` is (through ``| None``, unions and checks), if any."""
    if isinstance(shape, ModelRef):
        return model_shape(shape.cls)
    if isinstance(shape, NullableShape | HookShape):
        return model_of(shape.inner)
    if isinstance(shape, UnionShape):
        found = (model_of(member) for member in shape.members)
        return next((m for m in found if m is not None), None)
    return shape if isinstance(shape, ModelShape) else None
