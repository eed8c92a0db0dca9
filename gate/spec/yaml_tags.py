"""YAML 1.1's implicit tags, as PyYAML's SafeLoader gives them, and the limits of a reading.

A plain scalar's tag (``12`` an int, ``yes`` a bool, ``2026-01-01`` a date) comes from the
first of the patterns below that matches it, tried in this order among those its first
character selects: PyYAML's own table (``yaml/resolver.py``), copied so that a spec read
a line at a time (:mod:`gate.spec.yaml_lines`) starts no PyYAML at all. A test resolves
the same values both ways, and compares this table with the installed PyYAML's.
"""

from __future__ import annotations

import re

MAX_DEPTH = 64
"""Mappings and lists nested in one another, at most, however the text is read."""
MAX_NUMBER_CHARS = 1000
"""The longest integer read: no count or amount needs more, and any form of it (``0x``
included) stays within the 4,300 digits Python turns into text and back."""
MAX_NODES = 100_000
"""Values in one document at most, aliases expanded (a spec has a few hundred): what
defuses "billion laughs". A text read a line at a time has no aliases, but may be long."""

STR = "tag:yaml.org,2002:str"
SEQ = "tag:yaml.org,2002:seq"
EXPONENT_ONLY_FLOAT = re.compile(r"[-+]?(?:[0-9]+|[0-9]*\.[0-9]+|[0-9]+\.)[eE][-+]?[0-9]+")
"""A number in exponent form that YAML 1.2 and JSON read as a float and YAML 1.1 as text
where its mantissa has no dot or its exponent no sign (``1e-05``, ``1.0e5``); the rest of
them (``1.0e-5``) both read alike."""
ENGINE_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+")
"""The same, as OmegaConf (Hydra) and go-yaml (Kubernetes) read numbers: with ``_`` in the
digits too (``1_000e0`` is 1000.0 to them, text to YAML 1.1 and 1.2 alike)."""
YAML12_ONLY_INT = re.compile(r"[-+]?0[0-9]*[89][0-9]*|0o[0-7]+")
"""Integers of YAML 1.2 that 1.1 reads as text: a leading zero before an 8 or 9 (``08``),
``0o`` octal (``0o10``); 8 to yq and editors, ``'08'`` to PyYAML."""
MAP = "tag:yaml.org,2002:map"

_DIGITS = "0123456789"
RESOLVERS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "tag:yaml.org,2002:bool",
        "yYnNtTfFoO",
        re.compile(
            r"""^(?:yes|Yes|YES|no|No|NO
                    |true|True|TRUE|false|False|FALSE
                    |on|On|ON|off|Off|OFF)$""",
            re.X,
        ),
    ),
    (
        "tag:yaml.org,2002:float",
        "-+" + _DIGITS + ".",
        re.compile(
            r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""",
            re.X,
        ),
    ),
    (
        "tag:yaml.org,2002:int",
        "-+" + _DIGITS,
        re.compile(
            r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""",
            re.X,
        ),
    ),
    ("tag:yaml.org,2002:merge", "<", re.compile(r"^(?:<<)$")),
    ("tag:yaml.org,2002:null", "nN~", re.compile(r"^(?: ~ |null|Null|NULL | )$", re.X)),
    (
        "tag:yaml.org,2002:timestamp",
        _DIGITS,
        re.compile(
            r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
                     (?:[Tt]|[ \t]+)[0-9][0-9]?
                     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
                     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
            re.X,
        ),
    ),
    ("tag:yaml.org,2002:value", "=", re.compile(r"^(?:=)$")),
    ("tag:yaml.org,2002:yaml", "!&*", re.compile(r"^(?:!|&|\*)$")),
)
"""(tag, the first characters that select it, its pattern), in PyYAML's order. The null
pattern is selected by the empty value too."""

_BY_FIRST: dict[str, list[tuple[str, re.Pattern[str]]]] = {"": [(RESOLVERS[4][0], RESOLVERS[4][2])]}
for _tag, _firsts, _pattern in RESOLVERS:
    for _first in _firsts:
        _BY_FIRST.setdefault(_first, []).append((_tag, _pattern))

_RESOLVED: dict[str, str] = {}
_RESOLVED_MAX = 4096


def resolve(value: str) -> str:
    """The tag YAML 1.1 (PyYAML's SafeLoader) gives a plain scalar: int, bool, null, ..."""
    found = _RESOLVED.get(value)
    if found is None:
        found = STR
        for tag, pattern in _BY_FIRST.get(value[:1], ()):
            if pattern.match(value):
                found = tag
                break
        if len(_RESOLVED) < _RESOLVED_MAX:
            _RESOLVED[value] = found
    return found
