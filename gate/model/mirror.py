"""The models as pydantic models: for their JSON Schema, and as the tests' second opinion.

Built from the very declarations :mod:`gate.model.shapes` validates (types, bounds, keys,
defaults, checks), so the schemas under ``schemas/`` and the validation ``check`` does
cannot drift apart; ``tests/test_model_oracle.py`` validates documents with both. Only
``budget-gate schema`` and the tests import this module (and so pydantic).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

import pydantic

from gate.model.base import Model
from gate.model.compile import model_shape
from gate.model.fields import MISSING, Before, Check, FieldInfo, JsonSchema, Strict

_CONFIG = pydantic.ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
_OWN = frozenset({"__declared__", "__shape__", "__dict__", "__weakref__", "__module__"})


_MIRRORS: dict[type[Model], type[pydantic.BaseModel]] = {}


def mirror(cls: type[Model]) -> type[pydantic.BaseModel]:
    """``cls`` as a pydantic model of the same name, fields, bounds, checks and methods."""
    if cls not in _MIRRORS:
        _MIRRORS[cls] = _build(cls)
    return _MIRRORS[cls]


def _build(cls: type[Model]) -> type[pydantic.BaseModel]:
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "model_config": _CONFIG,
    }
    annotations: dict[str, Any] = {}
    fields = model_shape(cls).fields
    names = {f.name for f in fields}
    for klass in reversed(cls.__mro__[: cls.__mro__.index(Model)]):
        for name, attr in klass.__dict__.items():
            if name in names or name in _OWN or _is_check(attr):
                continue
            if isinstance(attr, types.FunctionType | property | classmethod | staticmethod):
                namespace[name] = attr
    for i, f in enumerate(fields):
        annotations[f.name] = translate(f.type)
        if f.info is not None:
            namespace[f.name] = pydantic.Field(**_options(f.info))
        elif f.default is not MISSING:
            namespace[f.name] = f.default
        for j, check in enumerate(f.checks):
            namespace[f"_field_check_{i}_{j}"] = _field_validator(f.name, check)
    for k, check in enumerate(model_shape(cls).checks):
        namespace[f"_model_check_{k}"] = _model_validator(check)
    namespace["__annotations__"] = annotations
    return type(cls.__name__, (pydantic.BaseModel,), namespace)


def _is_check(attr: Any) -> bool:
    func = getattr(attr, "__func__", attr)
    return hasattr(func, "__field_check__") or hasattr(func, "__model_check__")


def _field_validator(name: str, check: Callable[[Any, dict[str, Any]], Any]) -> Any:
    def validator(cls: Any, value: Any, info: pydantic.ValidationInfo) -> Any:
        check(value, info.data)
        return value

    return pydantic.field_validator(name, mode="after")(classmethod(validator))


def _model_validator(check: Callable[[Any], Any]) -> Any:
    def validator(self: Any) -> Any:
        check(self)
        return self

    return pydantic.model_validator(mode="after")(validator)


def translate(tp: Any) -> Any:
    """An annotation with our metadata and models swapped for pydantic's."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        base, *meta = args
        arguments = (translate(base), *(_metadata(m) for m in meta))
        return Annotated[arguments]
    if origin in (Union, types.UnionType):
        return Union[tuple(translate(a) for a in args)]  # noqa: UP007 - built from a tuple
    if origin is list:
        return list[translate(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[translate(args[0]), translate(args[1])]  # type: ignore[misc]
    if origin is Literal:
        return tp
    if isinstance(tp, type) and issubclass(tp, Model):
        return mirror(tp)
    return tp


def _metadata(meta: Any) -> Any:
    if isinstance(meta, FieldInfo):
        return pydantic.Field(**_options(meta))
    if isinstance(meta, Strict):
        return pydantic.Strict()
    if isinstance(meta, Check):
        return pydantic.AfterValidator(meta.func)
    if isinstance(meta, Before):
        return pydantic.BeforeValidator(meta.func)
    if isinstance(meta, JsonSchema):
        return pydantic.WithJsonSchema(meta.schema)
    return meta


def _options(info: FieldInfo) -> dict[str, Any]:
    return dict(info.options)
