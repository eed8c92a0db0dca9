"""``json.dumps(value, indent=2, ensure_ascii=False)``, the same text, twice as fast.

With ``indent`` the standard library leaves its C encoder for a pure-Python generator; a
report of a thousand specs spent a fifth of a second there. This writer takes the plain
types a report holds (dicts with string keys, lists, strings, ints, floats, booleans,
``None``) and hands anything else to ``json.dumps``, so its output is always the same.
A part rendered already (:class:`Raw`, a result rendered by the worker that made it) is
written as it is.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

_FLOAT = float.__repr__
_INT = int.__repr__


class _Unplain(Exception):
    """A value of a type this writer leaves to ``json.dumps``."""


class Raw:
    """JSON text rendered already by :func:`dumps` at the depth where it is to stand."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def dumps(value: Any, depth: int = 0) -> str:
    """``value`` as ``json.dumps(value, indent=2, ensure_ascii=False)`` writes it.

    ``depth``: the text's lines indented as they stand that many levels into a document.
    """
    out: list[str] = []
    newline = "\n" + "  " * depth
    try:
        _write(value, newline, out.append)
    except _Unplain:
        text = json.dumps(_parsed(value), indent=2, ensure_ascii=False)
        return text.replace("\n", newline)  # NOTE: a JSON string holds no raw line break
    return "".join(out)


def _parsed(value: Any) -> Any:
    """``value`` with each :class:`Raw` part read back, for ``json.dumps``."""
    if type(value) is Raw:
        return json.loads(value.text)
    if type(value) is dict:
        return {key: _parsed(item) for key, item in value.items()}
    if type(value) is list:
        return [_parsed(item) for item in value]
    return value


def _write(value: Any, newline: str, emit: Any) -> None:
    kind = type(value)
    if kind is str:
        emit(encode_basestring(value))
    elif kind is dict:
        if not value:
            emit("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _Unplain
            # NOTE: most values are strings or null: written with their key, no call deeper
            if type(item) is str:
                emit(separator + encode_basestring(key) + ": " + encode_basestring(item))
            elif item is None:
                emit(separator + encode_basestring(key) + ": null")
            else:
                emit(separator + encode_basestring(key) + ": ")
                _write(item, inner, emit)
            separator = "," + inner
        emit(newline + "}")
    elif kind is list:
        if not value:
            emit("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            if type(item) is str:
                emit(separator + encode_basestring(item))
            else:
                emit(separator)
                _write(item, inner, emit)
            separator = "," + inner
        emit(newline + "]")
    elif value is None:
        emit("null")
    elif value is True:
        emit("true")
    elif value is False:
        emit("false")
    elif kind is int:
        emit(_INT(value))
    elif kind is float and value == value and value not in (float("inf"), float("-inf")):
        emit(_FLOAT(value))
    elif kind is Raw:
        emit(value.text)
    else:
        raise _Unplain
