r"""Hydra's override value grammar, parsed as its ``OverrideParser.g4`` reads a value.

A value is one element or a comma list of them (a simple choice sweep); an element is a
primitive (quoted, or unquoted words with ``${...}`` and ``\`` escapes), a ``[list]``, a
``{dict}`` or a function call ``name(arg, key=arg)``. Anything the grammar does not take (a
stray ``(`` or ``=``, text after a call) is an error, never a literal: Hydra refuses it, and
read as one value it could hide a sweep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class GrammarError(ValueError):
    """A value Hydra's override grammar does not parse."""


@dataclass(frozen=True, slots=True)
class Primitive:
    """A primitive as written (quotes and escapes off); ``quoted`` when it was quoted."""

    text: str
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Container:
    """A ``[list]`` or ``{dict}``: one value, kept as written, with its elements."""

    text: str
    items: tuple[Node, ...]
    is_list: bool
    keys: tuple[str, ...] = ()
    """A dict's keys, one for each item."""


@dataclass(frozen=True, slots=True)
class Call:
    """A function call: its name, its arguments (keyword ones named), as written."""

    name: str
    args: tuple[tuple[str | None, Node], ...]
    text: str


Node = Primitive | Container | Call

_ID = re.compile(r"[A-Za-z_][\w-]*")
_ARG_NAME = re.compile(r"\s*([A-Za-z_][\w-]*)\s*=(?!=)")
_STOPS = frozenset(",()[]{}=")
_ESCAPED = frozenset("\\()[]{}:=, \t")
"""What a backslash escapes (Hydra's ``ESC``); before anything else it is itself."""
MAX_DEPTH = 64
"""Lists, dicts and calls one value may nest: past it, refused (no sweep is written so deep)."""


def parse(text: str) -> list[Node]:
    """The elements of an override value: one, or the elements of a simple choice."""
    if not text.strip(" \t"):
        return [Primitive("")]  # NOTE: ``x=`` is Hydra's empty string, one job
    parser = _Parser(text)
    elements = [parser.element()]
    while parser.take(","):
        elements.append(parser.element())
    parser.skip()
    if parser.at < len(text):
        raise GrammarError(f"{text[parser.at :]!r} after the value is not Hydra's grammar")
    return elements


class _Parser:
    """A recursive-descent reader of one value, from its start."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.depth = text, 0, 0

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in " \t":
            self.at += 1

    def take(self, char: str) -> bool:
        self.skip()
        if self.text.startswith(char, self.at):
            self.at += 1
            return True
        return False

    def element(self) -> Node:
        self.skip()
        if self.at >= len(self.text):  # NOTE: the end of the text opens nothing
            raise GrammarError(f"a value ends where an element is due: {self.text!r}")
        if self.depth >= MAX_DEPTH:
            raise GrammarError(f"a value nests lists, dicts or calls over {MAX_DEPTH} deep")
        self.depth += 1
        try:
            return self.nested()
        finally:
            self.depth -= 1

    def nested(self) -> Node:
        start, char = self.at, self.text[self.at]
        if char in "[{":
            return self.container(char, start)
        if char in "'\"":
            return Primitive(self.quoted(char), quoted=True)
        words = self.unquoted()
        if self.take("("):
            if _ID.fullmatch(words) is None:
                raise GrammarError(f"{self.text[start : self.at]!r} is no function call")
            args = self.arguments()
            return Call(words, args, self.text[start : self.at].strip())
        if not words:
            raise GrammarError(f"an empty element at {self.text[start:]!r}")
        return Primitive(words)

    def arguments(self) -> tuple[tuple[str | None, Node], ...]:
        args: list[tuple[str | None, Node]] = []
        if self.take(")"):
            return ()
        while True:
            named = _ARG_NAME.match(self.text, self.at)
            if named is not None:
                self.at = named.end()
            args.append((named.group(1) if named else None, self.element()))
            if self.take(")"):
                return tuple(args)
            if not self.take(","):
                raise GrammarError(f"a function call is not closed: {self.text!r}")

    def container(self, opening: str, start: int) -> Container:
        closing = "]" if opening == "[" else "}"
        self.at += 1
        items: list[Node] = []
        keys: list[str] = []
        if not self.take(closing):
            while True:
                if opening == "{":
                    keys.append(self.unquoted(_STOPS | {":"}))  # NOTE: a key, before its colon
                    if not self.take(":"):
                        raise GrammarError(f"a dict's entry has no ':' in {self.text!r}")
                items.append(self.element())
                if self.take(closing):
                    break
                if not self.take(","):
                    raise GrammarError(f"{opening} is not closed in {self.text!r}")
        return Container(self.text[start : self.at], tuple(items), opening == "[", tuple(keys))

    def quoted(self, quote: str) -> str:
        end = self.at + 1
        while end < len(self.text) and self.text[end] != quote:
            end += 2 if self.text[end] == "\\" else 1
        if end >= len(self.text):
            raise GrammarError(f"a quote is not closed in {self.text!r}")
        body, self.at = self.text[self.at + 1 : end], end + 1
        return body.replace(f"\\{quote}", quote)

    def unquoted(self, stops: frozenset[str] = _STOPS) -> str:
        """Unquoted words up to a comma, bracket, parenthesis or ``=``, escapes resolved."""
        out, text = [], self.text
        while self.at < len(text):
            char = text[self.at]
            if char == "\\" and text[self.at + 1 : self.at + 2] in _ESCAPED:
                out.append(text[self.at + 1])
                self.at += 2
            elif text.startswith("${", self.at):
                end = text.find("}", self.at)
                if end < 0:
                    raise GrammarError(f"an interpolation is not closed in {text!r}")
                out.append(text[self.at : end + 1])
                self.at = end + 1
            elif char in stops:
                break
            else:
                out.append(char)
                self.at += 1
        return "".join(out).strip()
