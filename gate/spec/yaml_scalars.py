"""A YAML scalar → its value, refusing what YAML 1.1 (PyYAML) and 1.2 (editors) read apart.

Base-60 numbers (``1:30``), yes/no booleans, tags other than the plain ones, NaN and
infinity are refused at their line; YAML 1.1's octal and binary numbers, and YAML 1.2's
numbers that 1.1 reads as text (``08``, ``0o10``), are reported as ambiguous
(:attr:`gate.spec.loader.LoadedDoc.ambiguous`), so a spec or a policy refuses them while an
engine's own file, which its engine reads as YAML 1.1, keeps them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import Node, ScalarNode

from gate.errors import InputError, Location
from gate.spec.yaml_tags import EXPONENT_ONLY_FLOAT, MAX_NUMBER_CHARS, YAML12_ONLY_INT

STR = "tag:yaml.org,2002:str"
BOOL = "tag:yaml.org,2002:bool"
_FLOAT = "tag:yaml.org,2002:float"
_INT = "tag:yaml.org,2002:int"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_PLAIN_TAGS = ("str", "int", "float", "bool", "null", "timestamp")
_CONSTRUCT: dict[str, Callable[[SafeConstructor, ScalarNode], Any]] = {
    f"tag:yaml.org,2002:{name}": SafeConstructor.yaml_constructors[f"tag:yaml.org,2002:{name}"]
    for name in _PLAIN_TAGS
}
_CONSTRUCTOR = SafeConstructor()


def scalar_value(
    node: ScalarNode,
    path: tuple[str | int, ...],
    file: str,
    ambiguous: list[InputError],
    json: bool = False,
) -> Any:
    """The value of a plain scalar, or a located error for one read two ways.

    A YAML 1.1 octal or binary number (``0100``, which YAML 1.2 tools read as 100) is added
    to ``ambiguous``: refused in specs and policies, read as YAML 1.1 in engine files. In a
    ``json`` file ``1e-05`` is a number, as JSON says (elsewhere the text YAML 1.1 makes of
    it, which :meth:`gate.spec.loader.LoadedDoc.yaml12` reads as the number).
    """
    if node.tag != STR:
        value = _constructed(node, file, ambiguous)
    elif json and not node.style and EXPONENT_ONLY_FLOAT.fullmatch(node.value):
        value = float(node.value)  # NOTE: a number to JSON, text to YAML 1.1
    else:
        if not node.style and not json and YAML12_ONLY_INT.fullmatch(node.value):
            ambiguous.append(_text_to_yaml11(node, file))
        return node.value  # what SafeConstructor makes of a string, without its calls
    if isinstance(value, float) and not math.isfinite(value):
        where = ".".join(str(p) for p in path)
        raise InputError(
            f"{where + ': ' if where else ''}{node.value} is not a finite number",
            location=_at(file, node),
            hint="use a real number (NaN and infinity are not allowed), or quote it "
            f'("{node.value}") where a string is meant',
        )
    return value


def _constructed(node: ScalarNode, file: str, ambiguous: list[InputError]) -> Any:
    """A tagged scalar's value, as PyYAML's SafeConstructor makes it, or a located error."""
    construct = _CONSTRUCT.get(node.tag)
    if construct is None:
        raise InputError(
            f"unsupported YAML tag {short_tag(node.tag)}",
            location=_at(file, node),
            hint="remove the tag; only plain YAML values are allowed",
        )
    _check_number(node, file)
    if node.tag == _INT and not node.style and _YAML11_RADIX.fullmatch(node.value):
        ambiguous.append(_read_apart(node, file, construct))
    if node.tag == BOOL and not node.style and node.value.lower() in _YAML11_BOOLS:
        raise InputError(
            f"{node.value!r} reads as a YAML 1.1 boolean",
            location=_at(file, node),
            hint=f'write true or false, or quote it ("{node.value}") for a string',
        )
    try:
        return construct(_CONSTRUCTOR, node)
    except (ValueError, KeyError, IndexError, AttributeError, yaml.YAMLError):
        # NOTE: PyYAML's constructors raise all of these for values forced by a tag.
        if node.tag == _TIMESTAMP and not node.style:
            raise InputError(
                f"{_shown(node.value)} is no date or time in the calendar",
                location=_at(file, node),
                hint="write a date that exists, as YYYY-MM-DD",
            ) from None
        raise InputError(
            f"cannot read {_shown(node.value)} as {short_tag(node.tag)}",
            location=_at(file, node),
            hint="quote the value if it is meant as a string",
        ) from None


def _check_number(node: ScalarNode, file: str) -> None:
    """Refuse a number too long to hold, or one YAML 1.1 reads in base 60 (``1:30``)."""
    if node.tag == _INT and len(node.value) > MAX_NUMBER_CHARS:
        # NOTE: Python refuses to turn a decimal of over 4,300 digits into an int (or back)
        raise InputError(
            f"{_shown(node.value)} is a number of {len(node.value):,} characters",
            location=_at(file, node),
            hint=f"write a number of at most {MAX_NUMBER_CHARS:,} characters, or quote it",
        )
    if node.tag in (_INT, _FLOAT) and not node.style and ":" in node.value:
        raise InputError(
            f"{node.value!r} reads as a YAML 1.1 base-60 number",
            location=_at(file, node),
            hint=f'write the number you mean, or quote it ("{node.value}") for a string',
        )


def _read_apart(node: ScalarNode, file: str, construct: Any) -> InputError:
    """A YAML 1.1 octal or binary number: 0100 is 64 to PyYAML and 100 to YAML 1.2 (yq)."""
    binary = "b" in node.value
    meant = construct(_CONSTRUCTOR, node) if binary else _decimal(node.value)
    return InputError(
        f"{node.value!r} reads as a YAML 1.1 {'binary' if binary else 'octal'} "
        f"number ({construct(_CONSTRUCTOR, node)})",
        location=_at(file, node),
        hint=f'write {meant} for the number, or quote it ("{node.value}") for a string',
    )


def _text_to_yaml11(node: ScalarNode, file: str) -> InputError:
    """``08`` or ``0o10``: text to PyYAML (YAML 1.1), the number 8 to YAML 1.2 (yq, editors).

    NOTE: these were read as text, so a count written so was told "write a whole number
    without quotes" of a value that has none.
    """
    meant = int(node.value, 8) if "o" in node.value else _decimal(node.value)
    return InputError(
        f"{node.value!r} reads as text in YAML 1.1 and as the number {meant} in YAML 1.2",
        location=_at(file, node),
        hint=f'write {meant} for the number, or quote it ("{node.value}") for a string',
    )


TRUE = ("yes", "y", "true", "on")
_YAML11_BOOLS = ("yes", "no", "y", "n", "on", "off")
_YAML11_RADIX = re.compile(r"[-+]?0[0-7_]+|[-+]?0b[01_]+")
"""YAML 1.1's octal and binary integers, which YAML 1.2 reads as a decimal and a string."""


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, cut short past ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[: limit - 10] + "…" + text[-9:])


def _decimal(text: str) -> int:
    """``0100`` as the decimal number its digits spell (100)."""
    return int(text.replace("_", ""), 10)


def short_tag(tag: str) -> str:
    """``!!binary`` for ``tag:yaml.org,2002:binary``, as a YAML author writes a tag."""
    return tag.replace("tag:yaml.org,2002:", "!!")


def _at(file: str, node: Node) -> Location:
    return Location(file, node.start_mark.line + 1, node.start_mark.column + 1)
