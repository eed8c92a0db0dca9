"""Pydantic validation with errors that point at a file, line and column and say how to fix it."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, TypeVar, Union

from pydantic import BaseModel, ValidationError

from gate.errors import InputError, InputErrors
from gate.spec.loader import DataPath, LoadedDoc, SourceMap

M = TypeVar("M", bound=BaseModel)
MAX_REPORTED = 20


def validate(model: type[M], doc: LoadedDoc) -> M:
    """Validate a loaded document, turning every pydantic error into a located InputError."""
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        errors = [
            _to_input_error(model, err, doc.source_map)
            for err in exc.errors(include_url=False)[:MAX_REPORTED]
        ]
        errors.sort(key=lambda e: (e.location.line, e.location.col) if e.location else (0, 0))
        raise InputErrors(errors) from None


def _to_input_error(root: type[BaseModel], err: Any, source_map: SourceMap) -> InputError:
    loc: DataPath = tuple(err["loc"])
    kind: str = err["type"]
    dotted = _dotted(loc) or "document"
    if kind == "missing":
        parent = _dotted(loc[:-1]) or "the top level"
        return InputError(
            f"missing required key {loc[-1]!r} in {parent}",
            location=source_map.locate(loc[:-1], key=True),
            hint=f"add {loc[-1]}: under {parent}",
        )
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc[:-1])
        return InputError(
            f"unknown key {loc[-1]!r} in {_dotted(loc[:-1]) or 'the top level'}",
            location=source_map.locate(loc, key=True),
            hint=_did_you_mean(str(loc[-1]), allowed),
        )
    if kind in ("enum", "literal_error"):
        expected = str((err.get("ctx") or {}).get("expected", ""))
        choices = [c.strip(" '") for c in expected.replace(" or ", ",").split(",") if c.strip()]
        close = difflib.get_close_matches(str(err["input"]), choices, n=1, cutoff=0.5)
        return InputError(
            f"{dotted}: {err['input']!r} is not allowed",
            location=source_map.locate(loc),
            hint=f"did you mean {close[0]!r}?" if close else f"use {expected}",
        )
    message = str(err["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    # NOTE: our model validators phrase errors as "what is wrong — how to fix it".
    message, _, hint = message.partition(" — ")
    return InputError(
        f"{dotted}: {message}", location=source_map.locate(loc), hint=hint or _hint(kind, err)
    )


def _hint(kind: str, err: Any) -> str:
    if isinstance(err.get("input"), bool) and kind.startswith(("int", "float", "decimal")):
        return "write a number, not true/false"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "write a whole number without quotes"
    if kind in ("float_type", "float_parsing", "decimal_type", "decimal_parsing"):
        return "write a number without quotes"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return "change the value to fit the bound"
    if kind == "decimal_max_places":
        return "round it to at most six decimals"
    if kind in ("string_type", "string_pattern_mismatch"):
        return "write a string in the expected form"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "write a mapping (key: value) here"
    if kind == "list_type":
        return "write a list here, e.g. [a, b]"
    if kind == "too_short":
        return "add at least one item"
    return "fix this value"


def _did_you_mean(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    if allowed:
        return "allowed keys: " + ", ".join(sorted(allowed))
    return "remove it"


def _dotted(loc: DataPath) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _allowed_keys(root: type[BaseModel], loc: DataPath) -> list[str]:
    """Walk the model classes along ``loc`` and list the keys the mapping there accepts."""
    current: Any = root
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    current = _unwrap_model(current)
    if current is None:
        return []
    return [field.alias or name for name, field in current.model_fields.items()]


def _step(annotation: Any, part: str | int) -> Any:
    model = _unwrap_model(annotation)
    if model is not None:
        for name, field in model.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return None
    for arg in _args(annotation):
        origin = typing.get_origin(arg)
        if origin is list and isinstance(part, int):
            return typing.get_args(arg)[0]
        if origin is dict and isinstance(part, str):
            return typing.get_args(arg)[1]
    return None


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    for arg in _args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _args(annotation: Any) -> list[Any]:
    """Flatten Optional/Union/Annotated into the plain types they wrap."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _args(arg)]
    return [annotation]
