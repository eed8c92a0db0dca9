"""What no message may show: the validator's internals (issue 22, item 4).

Pydantic's union labels (``constrained-float``, ``function-after[_ordered(), Range]``), its
name, and Python's type names mean nothing to someone who wrote a YAML file.
"""

from __future__ import annotations

import re

INTERNALS = re.compile(
    r"constrained-|function-(?:after|before|wrap|plain)|pydantic|\[type=|errors\.pydantic"
    r"|\b(?:NoneType|str|int|float|dict|bool|Decimal|tuple|frozenset|StrictFloat|StrictInt"
    r"|PositiveInt|Annotated|Literal)\b|\blist\["
)


_YAML_TAG = re.compile(r"!![a-z]+")
"""A YAML tag the file wrote (``!!bool maybe``): the user's own word, quoted back."""


def internals_in(text: str, *paths: object) -> list[str]:
    """The lines of ``text`` that show a validator internal (``paths`` and YAML tags aside)."""
    for path in paths:
        text = text.replace(str(path), "FILE")
    return [line for line in text.splitlines() if INTERNALS.search(_YAML_TAG.sub("", line))]
