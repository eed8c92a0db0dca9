"""Model validation with errors that point at a file, line and column and say how to fix it."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any, TypeVar

from gate.errors import InputError, InputErrors
from gate.model import Model, ValidationError
from gate.model.compile import model_of, model_shape, step
from gate.model.shapes import ModelShape
from gate.model.values import Shape
from gate.spec.loader import DataPath, LoadedDoc, SourceMap
from gate.spec.units import percent_fix, unit_fix
from gate.words import closest

M = TypeVar("M", bound=Model)
MAX_REPORTED = 20


def validate(model: type[M], doc: LoadedDoc) -> M:
    """Validate a loaded document, turning every validation error into a located InputError.

    Messages name keys as the YAML does (``workload.epoch_minutes``), never classes or
    patterns; a value that fits no member of a union (a number or a range) gets one error
    saying what it may be.
    """
    if doc.ambiguous:  # a spec or policy is edited with YAML 1.2 tools: never guess
        raise InputErrors(list(doc.ambiguous))
    try:
        return model.model_validate(doc.yaml12())  # NOTE: a plain 7e9 is a number
    except ValidationError as exc:
        # NOTE: only those reported are explained: a key's "did you mean" is a search, and a
        # megabyte of unknown keys took 9 s to refuse
        found = [
            (err, _to_input_error(model, err, doc.source_map))
            for err in exc.errors()[:MAX_REPORTED]
        ]
        errors = [e for err, e in found if not _misspelt(err, found)]
        errors.sort(key=lambda e: (e.location.line, e.location.col) if e.location else (0, 0))
        raise InputErrors(list({str(e): e for e in errors}.values())) from None


def _misspelt(err: Any, found: list[tuple[Any, InputError]]) -> bool:
    """Whether ``err`` misses a key that an unknown key beside it misspells: said there.

    NOTE: ``gpus_per_trail`` gave two lines, the first asking to add the key written.
    """
    if err["type"] != "missing":
        return False
    parent, hint = tuple(err["loc"][:-1]), f"did you mean {err['loc'][-1]!r}?"
    return any(
        other["type"] == "extra_forbidden"
        and tuple(other["loc"][:-1]) == parent
        and error.hint == hint
        for other, error in found
    )


_SHAPE_ERRORS = frozenset(
    {
        "float_type",
        "float_parsing",
        "int_type",
        "int_parsing",
        "int_from_float",
        "bool_type",
        "bool_parsing",
        "string_type",
        "list_type",
        "dict_type",
        "model_type",
        "model_attributes_type",
        "decimal_type",
        "decimal_parsing",
        "date_type",
        "date_parsing",
        "date_from_datetime_parsing",
        "is_instance_of",
    }
)
"""Errors that say only that a value has the wrong shape for one member of a union."""


def _to_input_error(root: type[Model], err: Any, source_map: SourceMap) -> InputError:
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
        return InputError(
            f"unknown key {loc[-1]!r} in {_dotted(loc[:-1]) or 'the top level'}",
            location=source_map.locate(loc, key=True),
            hint=_did_you_mean(root, loc),
        )
    if kind in ("enum", "literal_error"):
        expected = str((err.get("ctx") or {}).get("expected", ""))
        choices = [c.strip(" '") for c in expected.replace(" or ", ",").split(",") if c.strip()]
        meant = closest(str(err["input"]), choices, cutoff=0.5)
        return InputError(
            f"{dotted}: {err['input']!r} is not allowed",
            location=source_map.locate(loc),
            hint=f"did you mean {meant!r}?" if meant else f"use {expected}",
        )
    field = str(loc[-1]) if loc else ""
    fixed = unit_fix(field, err.get("input")) if kind in _SHAPE_ERRORS | {"union"} else None
    if kind in ("less_than_equal", "less_than"):
        fixed = percent_fix(field, err.get("input"))
    if fixed is not None:
        return InputError(f"{dotted}: {fixed[0]}", location=source_map.locate(loc), hint=fixed[1])
    if kind in ("union", "model_type", "model_attributes_type", "dict_type"):
        return _wrong_shape(root, loc, err, source_map)
    if kind == "string_pattern_mismatch":  # of a value, a list's item, or a mapping's key
        key = field == "[key]"
        at = loc[:-1] if key else loc
        name = "the key" if key else (dotted if loc and isinstance(loc[-1], int) else field)
        problem, hint = describe_pattern(name, err)
        where = source_map.locate(at, key=key)
        return InputError(f"{_dotted(at) or 'document'}: {problem}", location=where, hint=hint)
    if kind in ("decimal_type", "is_instance_of"):  # pydantic's words name Python's types
        words = _WORDS.get(kind, "a value of the expected kind")
        return InputError(
            f"{dotted}: {_described(err.get('input'))} is not {words}",
            location=source_map.locate(loc),
            hint=_hint(kind, err),
        )
    message = str(err["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    # NOTE: our model validators phrase errors as "what is wrong — how to fix it".
    message, _, hint = message.partition(" — ")
    return InputError(
        f"{dotted}: {message}", location=source_map.locate(loc), hint=hint or _hint(kind, err)
    )


_WORDS = {
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "decimal_type": "a number",
    "decimal_parsing": "a number",
}


def _wrong_shape(root: type[Model], loc: DataPath, err: Any, source_map: SourceMap) -> InputError:
    """A value that is not the mapping (or any member of the union) the key takes."""
    keys = _allowed_keys(root, loc)
    name = str(loc[-1]) if loc else "document"
    kinds = (err.get("ctx") or {}).get("kinds", [err["type"]])
    words = list(dict.fromkeys(_WORDS.get(k, "a mapping") for k in kinds))
    fixes = [w for w in words if w != "a mapping"]
    if "a mapping" in words:
        shown = ", ".join(f"{key}: ..." for key in keys[:2]) + (", ..." if len(keys) > 2 else "")
        fixes.append(f"{name}: {{{shown}}}" if keys else "a mapping (key: value)")
    return InputError(
        f"{_dotted(loc) or 'document'}: {_described(err.get('input'))} is not {' or '.join(words)}",
        location=source_map.locate(loc),
        hint="write " + ", or ".join(fixes),
    )


def _described(value: Any) -> str:
    """A value as the YAML wrote it: ``true``, ``'30s'``, ``a list``, ``nothing``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


_PATTERNS: dict[str, tuple[str, Callable[[str], str]]] = {
    r"^[a-z0-9][a-z0-9_-]*$": (
        "a name of lower case letters, digits, - and _",
        lambda v: re.sub(r"[^a-z0-9_-]+", "-", v.strip().lower()).strip("-_"),
    ),
    r"^[A-Z]{3}$": ("a three-letter ISO 4217 code such as USD or EUR", lambda v: v.strip().upper()),
    r"^BG\d{3}$": ("a rule id such as BG104", lambda v: v.strip().upper()),
    r"^[1-7]g\.[0-9]+gb$": ("a MIG profile such as 1g.10gb", lambda v: v.strip().lower()),
}


def describe_pattern(field: str, err: Any) -> tuple[str, str]:
    """What a string that misses its key's pattern should look like, and the fix, in words."""
    value = err.get("input")
    pattern = str((err.get("ctx") or {}).get("pattern", ""))
    if isinstance(value, str) and any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
        # NOTE: before any mending: "vi\x1b[2Jsion" mended read "write team: vi-2jsion"
        return "contains a control character", "remove it (specs reach terminals and logs)"
    if pattern not in _PATTERNS:
        return f"{_described(value)} is not in the expected form", "see budget-gate schema"
    words, fix = _PATTERNS[pattern]
    if isinstance(value, str) and not value.isascii():
        return _not_ascii(field, value, pattern, words, fix)
    mended = fix(value) if isinstance(value, str) else ""
    if mended and re.fullmatch(pattern, mended):
        return f"{_described(value)} is not {words}", f"write {field}: {mended}"
    return f"{_described(value)} is not {words}", f"write {field} as {words}"


_LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁһԛԝӏвкмнтАВЕКМНОРСТХУІЈЅαβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhqwlbkmhtABEKMHOPCTXYIJSabeikvoptuxABEZHIKMNOPTYX",
)
"""Cyrillic and Greek letters drawn as Latin ones: ``nlр`` (a Cyrillic er) reads ``nlp``."""


def _not_ascii(
    field: str, value: str, pattern: str, words: str, fix: Callable[[str], str]
) -> tuple[str, str]:
    """A value with a letter outside ASCII: named, and its ASCII twin where it looks like one.

    NOTE: the mender dropped the letter, so ``team: nlр`` (Cyrillic ``р``) was told "write
    team: nl", another team's name or none; now the letter is named and ``nlp`` suggested.
    """
    import unicodedata  # NOTE: here, not at the top: only a mistake needs it

    char = next(c for c in value if not c.isascii())
    name = unicodedata.name(char, "unnamed")
    problem = f"{_described(value)} holds U+{ord(char):04X} {name}, which is not ASCII"
    twin = unicodedata.normalize("NFKC", value).translate(_LOOKALIKES)
    if twin.isascii() and re.fullmatch(pattern, fix(twin)):  # each letter has a Latin twin
        return problem, f"write {field}: {fix(twin)} (the same name typed in ASCII)"
    return problem, f"write {field} in ASCII as {words}"


def _hint(kind: str, err: Any) -> str:
    if isinstance(err.get("input"), bool) and kind.startswith(("int", "float", "decimal")):
        return "write a number, not true/false"
    given = err.get("input")
    # NOTE: "without quotes" only where it was quoted: an unquoted date reads as a date
    unquote = " without quotes" if isinstance(given, str) else ""
    if isinstance(given, (dt.date, dt.datetime)):
        unquote = ", not a date"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"write a whole number{unquote}"
    if kind in ("float_type", "float_parsing", "decimal_type", "decimal_parsing"):
        return f"write a number{unquote}"
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


def _did_you_mean(root: type[Model], loc: DataPath) -> str:
    """The key meant: the same key in another section, else a close one here, else one there."""
    name, here, allowed = str(loc[-1]), loc[:-1], _allowed_keys(root, loc[:-1])
    elsewhere = [(path, key) for path, key in _every_key(root) if path != here]
    exact = [path for path, key in elsewhere if key == name]
    if exact:
        return f"{name} belongs under {_dotted(exact[0]) or 'the top level'}: move it there"
    close = closest(name, allowed)
    if close:
        return f"did you mean {close!r}?"
    near = closest(name, [key for _, key in elsewhere], cutoff=0.8)
    if near:
        path = next(p for p, key in elsewhere if key == near)
        return f"did you mean {_dotted((*path, near))!r}?"
    if allowed:
        return "allowed keys: " + ", ".join(sorted(allowed))
    return "remove it"


def _every_key(root: type[Model]) -> list[tuple[DataPath, str]]:
    """Every key of the model's nested mappings, with the path of its mapping.

    Mappings under lists and dicts (a quality-gate condition, a parameter) are left out:
    a key meant for one of them is seldom misplaced at a fixed path.
    """
    found: list[tuple[DataPath, str]] = []
    pending: list[tuple[DataPath, ModelShape]] = [((), model_shape(root))]
    while pending:
        path, model = pending.pop(0)
        for field in model.fields:
            found.append((path, field.key))
            inner = model_of(field.shape)
            if inner is not None and len(path) < 4:
                pending.append(((*path, field.key), inner))
    return found


def _dotted(loc: DataPath) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _allowed_keys(root: type[Model], loc: DataPath) -> list[str]:
    """Walk the model's shapes along ``loc`` and list the keys the mapping there accepts."""
    current: Shape | None = model_shape(root)
    for part in loc:
        current = step(current, part) if current is not None else None
    model = model_of(current) if current is not None else None
    return [field.key for field in model.fields] if model is not None else []
