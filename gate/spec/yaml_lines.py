"""The YAML specs are written in, read a line at a time: what libyaml reads, in a third of the time.

A spec or a policy is a block mapping of plain keys whose values fit on their line: plain,
quoted or flow values, nested blocks, lists of them. For a text made only of such lines
(ASCII, no tabs, anchors, tags, block scalars, escapes, multi-line or empty values),
:func:`read_lines` builds the very data and :class:`~gate.spec.loader.SourceMap` that the
loader builds from libyaml's node tree, with one regular expression per line; for any
other text it returns ``None`` and the loader reads it the full way, which also says
what is wrong with a broken one. Every line form it does not know is left to libyaml,
so the two readings cannot drift apart: ``tests/unit/test_yaml_lines.py`` compares them
on every YAML file of the project and on generated texts.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

from gate.errors import Location
from gate.spec.yaml_tags import (
    ENGINE_FLOAT,
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    STR,
    YAML12_ONLY_INT,
    resolve,
)

DataPath = tuple[str | int, ...]

_MARKERS = ("%", "---", "...")
"""A directive, a document's start or end: at the start of a line, only libyaml reads them."""
_SKIP = re.compile(r" *(?:#.*)?")
"""A blank line, or one that holds a comment only."""

_PLAIN_CHAR = r"[^\x00-\x20!\"#&',:;<>?\[\\\]`{|}]"
"""Letters, digits, ``_./+~()=$^@%*-`` and any character past ASCII (the safe ones only
are left): none that YAML reads as an indicator, a separator or a quote."""
_PLAIN_FIRST = r"(?:[^\x00-\x20!\"#&',:;<>?\[\\\]`{|}@%*)-]|-(?=[A-Za-z0-9_.]))"
_BLOCK_PLAIN = rf"{_PLAIN_FIRST}(?:{_PLAIN_CHAR}|:(?=[^ ])| +(?=[^ #]))*"
"""A plain value in a block: no ``: ``, no `` #``, none of the indicators ``,[]{}``."""
_FLOW_PLAIN = rf"{_PLAIN_FIRST}(?:{_PLAIN_CHAR}| +(?={_PLAIN_CHAR}))*"
"""A plain value in a flow: no ``:``, no ``#``, no ``,[]{}``."""
_QUOTED = r"\"(?P<dq>[^\"\\]*)\"|'(?P<sq>[^']*)'"
"""A quoted value with nothing escaped in it."""
_KEY = r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,1023}"
"""A plain key: libyaml takes one of up to 1,024 characters before its ``:``, no longer."""
_TAIL = r"(?: +(?:#.*)?)?$"
"""Where a line ends: spaces, and a comment after them."""

_SCALAR = rf"(?P<value>{_QUOTED}|(?P<plain>{_BLOCK_PLAIN}))(?={_TAIL})"
_ENTRY = re.compile(rf"(?P<key>{_KEY}):(?: +(?:{_SCALAR}|(?P<flow>[\[{{]))|(?={_TAIL}))")
"""``key:`` and its value if it is a scalar (``value``), where a flow one starts (``flow``)."""
_ITEM = re.compile(rf"{_SCALAR}|(?P<flow>[\[{{])")
"""A list item's scalar value, or where its flow value starts."""
_END = re.compile(_TAIL)
_FLOW_ITEM = re.compile(rf" *(?:{_QUOTED}|(?P<plain>{_FLOW_PLAIN})|(?P<open>[\[{{]))")
_FLOW_KEY = re.compile(rf" *(?P<key>{_KEY}): +")
_FLOW_END = re.compile(r" *([,\]}])")

_NULLS = ("~", "null", "Null", "NULL")
_NUMBER_START = frozenset("0123456789.+-")
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}


class _Unread(Exception):
    """A line this reader does not know: libyaml reads the text."""


def read_lines(
    text: str, file: str
) -> tuple[dict[str, Any], dict[DataPath, Location], dict[DataPath, Location]] | None:
    """The data, value positions and key positions of ``text``; ``None`` for libyaml."""
    # NOTE: a text must print: no tab, CR or other control, none of YAML's other line
    # breaks (U+0085, U+2028, U+2029), no byte-order mark (libyaml skips one at a line's
    # start), no zero-width or private character; only libyaml reads those.
    if not text.replace("\n", "").isprintable() or _marked(text):
        return None
    skip = _SKIP.fullmatch
    lines = [
        (number, len(line) - len(line.lstrip(" ")), line)
        for number, line in enumerate(text.split("\n"), 1)
        if not skip(line)
    ]
    if not lines or lines[0][1] != 0:
        return None
    reader = _Reader(file, lines)
    try:
        data = reader.mapping(0, ())
    except _Unread:
        return None
    if reader.at < len(lines):
        return None
    return data, reader.values, reader.keys


def _marked(text: str) -> bool:
    """Whether a line of ``text`` starts with a directive or a document marker."""
    return text.startswith(_MARKERS) or any(f"\n{mark}" in text for mark in _MARKERS)


_at = tuple.__new__
"""A :class:`Location` made without its constructor's call: twice as fast, the same tuple."""


class _Reader:
    """The structural lines of one text, read top-down by their indentation.

    Each collection reads its lines while they stand at its column; a line deeper than
    that is a value continued (or an error), which only libyaml reads.
    """

    __slots__ = ("at", "file", "keys", "lines", "values")

    def __init__(self, file: str, lines: list[tuple[int, int, str]]) -> None:
        self.file = file
        self.lines = lines
        self.at = 0
        self.values: dict[DataPath, Location] = {(): Location(file, lines[0][0], 1)}
        self.keys: dict[DataPath, Location] = {}

    def mapping(self, indent: int, path: DataPath) -> dict[str, Any]:
        """The block mapping whose keys start at column ``indent`` (0-based)."""
        if len(path) >= MAX_DEPTH:
            raise _Unread
        result: dict[str, Any] = {}
        lines, file, keys, values = self.lines, self.file, self.keys, self.values
        entry_at, end = _ENTRY.match, len(lines)
        while self.at < end:
            number, column, line = lines[self.at]
            if column != indent:
                if column < indent:
                    break
                raise _Unread  # a value continued, or an error
            entry = entry_at(line, indent)
            if entry is None:
                raise _Unread  # a stray item, a key or a value libyaml must judge
            name = entry["key"]
            if name in result or resolve(name) != STR:
                raise _Unread  # libyaml's walk says what is wrong with the key
            child = (*path, name)
            keys[child] = _at(Location, (file, number, indent + 1))
            kind = entry.lastgroup
            self.at += 1
            if kind == "value":
                values[child] = _at(Location, (file, number, entry.start("value") + 1))
                result[name] = _scalar(entry)
            elif kind == "flow":
                result[name] = self.flow_line(line, entry.start("flow"), number, child, indent)
            else:
                result[name] = self.nested(indent, child)
        return result

    def nested(self, indent: int, path: DataPath) -> Any:
        """The block under ``key:`` at ``indent``: deeper, or a list at the key's own column."""
        if self.at == len(self.lines):
            raise _Unread  # an empty value
        number, column, line = self.lines[self.at]
        item = line.startswith("- ", column)
        if column < indent or (column == indent and not item):
            raise _Unread  # an empty value
        self.values[path] = _at(Location, (self.file, number, column + 1))
        return self.sequence(column, path) if item else self.mapping(column, path)

    def sequence(self, indent: int, path: DataPath) -> list[Any]:
        """The block list whose dashes stand at column ``indent``."""
        if len(path) >= MAX_DEPTH:
            raise _Unread
        result: list[Any] = []
        lines, file, values = self.lines, self.file, self.values
        while self.at < len(lines):
            number, column, line = lines[self.at]
            if column != indent or not line.startswith("- ", indent):
                if column > indent:
                    raise _Unread  # a value continued, or an error
                break
            start = len(line) - len(line[indent + 1 :].lstrip(" "))
            child = (*path, len(result))
            if _ENTRY.match(line, start):
                values[child] = _at(Location, (file, number, start + 1))
                lines[self.at] = (number, start, line)  # the item is a mapping at this column
                result.append(self.mapping(start, child))
                continue
            item = _ITEM.match(line, start)
            if item is None:
                raise _Unread
            self.at += 1
            if item.lastgroup == "value":
                values[child] = _at(Location, (file, number, start + 1))
                result.append(_scalar(item))
            else:
                result.append(self.flow_line(line, start, number, child, indent))
        return result

    def flow_line(self, line: str, start: int, number: int, path: DataPath, indent: int) -> Any:
        """The flow list or mapping at column ``start``, to the end of its (last) line.

        It may break after an opening bracket or a comma, onto lines deeper than ``indent``.
        """
        self.values[path] = _at(Location, (self.file, number, start + 1))
        value, line, _, end = self.flow(line, number, start, path, indent)
        if not _END.match(line, end):
            raise _Unread
        return value

    def flow(
        self, line: str, number: int, start: int, path: DataPath, indent: int
    ) -> tuple[Any, str, int, int]:
        """The flow list or mapping at column ``start``; the line and column after it."""
        if len(path) >= MAX_DEPTH:
            raise _Unread
        file, values = self.file, self.values
        mapping = line[start] == "{"
        close = "}" if mapping else "]"
        items: list[Any] = []
        named: dict[str, Any] = {}
        at, first = start + 1, True
        while True:
            if not line[at:].strip(" "):
                line, number, at = self.next_line(indent)
            if first and (empty := _FLOW_END.match(line, at)) and empty[1] == close:
                return (named if mapping else items), line, number, empty.end()
            first = False
            name = ""
            if mapping:
                key = _FLOW_KEY.match(line, at)
                if key is None or key["key"] in named or resolve(key["key"]) != STR:
                    raise _Unread
                name = key["key"]
                child: DataPath = (*path, name)
                self.keys[child] = _at(Location, (file, number, key.start("key") + 1))
                at = key.end()
            else:
                child = (*path, len(items))
            item = _FLOW_ITEM.match(line, at)
            if item is None:
                raise _Unread
            if item["open"]:
                values[child] = _at(Location, (file, number, item.start("open") + 1))
                value, line, number, at = self.flow(line, number, item.start("open"), child, indent)
            else:
                values[child] = _at(Location, (file, number, _first(item) + 1))
                value, at = _scalar(item), item.end()
            if mapping:
                named[name] = value
            else:
                items.append(value)
            sep = _FLOW_END.match(line, at)
            if sep is None or sep[1] not in (",", close):
                raise _Unread
            at = sep.end()
            if sep[1] == close:
                return (named if mapping else items), line, number, at

    def next_line(self, indent: int) -> tuple[str, int, int]:
        """The line a flow goes on to after a break: it must stand deeper than ``indent``."""
        if self.at == len(self.lines) or self.lines[self.at][1] <= indent:
            raise _Unread
        number, column, line = self.lines[self.at]
        self.at += 1
        return line, number, column


def _first(item: re.Match[str]) -> int:
    """The column where a flow item's value starts (its quote, for a quoted one)."""
    if item["plain"] is not None:
        return item.start("plain")
    return item.start("dq" if item["dq"] is not None else "sq") - 1


def _scalar(found: re.Match[str]) -> Any:
    """A scalar's value as the loader's SafeConstructor makes it, for the forms it reads alike."""
    if found["dq"] is not None:
        return found["dq"]
    if found["sq"] is not None:
        return found["sq"]
    text = found["plain"]
    tag = resolve(text)
    if tag == STR:
        if text[0] in _NUMBER_START and (
            ENGINE_FLOAT.fullmatch(text) or YAML12_ONLY_INT.fullmatch(text)
        ):
            raise _Unread  # YAML 1.1 text, a YAML 1.2 number: the loader says which
        return text
    # NOTE: each tag's simplest forms only: what PyYAML's constructor makes of them is what
    # Python makes; the others (1_000, 0o17, +1, 1:30, .inf, a bad date) the loader explains
    kind = tag[18:]  # after "tag:yaml.org,2002:"
    if kind == "int":
        digits = text[1:] if text[0] == "-" else text
        if digits.isdigit() and (digits[0] != "0" or digits == "0"):
            if len(text) > MAX_NUMBER_CHARS:
                raise _Unread  # the loader says why
            return int(text)
    elif kind == "float" and not ("_" in text or ":" in text or text[0] == "+"):
        try:
            number = float(text)
        except ValueError:  # .inf, .nan
            raise _Unread from None
        if math.isfinite(number):
            return number
    elif kind == "bool" and text in _BOOLS:
        return _BOOLS[text]
    elif kind == "null" and text in _NULLS:
        return None
    elif kind == "timestamp" and len(text) == 10:  # a date; a time of day is longer
        try:
            return datetime.date(int(text[:4]), int(text[5:7]), int(text[8:]))
        except ValueError:
            pass
    raise _Unread
