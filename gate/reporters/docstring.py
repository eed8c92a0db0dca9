"""Rule docstrings (a small reStructuredText subset) as Markdown, for docs and reports.

Rule docs use two constructs: ````literal```` spans and a paragraph ending in ``::``
followed by an indented YAML example. Everything else is already valid Markdown.
"""

from __future__ import annotations

import re
import textwrap

_LITERAL = re.compile(r"``(.+?)``")


def to_markdown(doc: str) -> str:
    """Convert one rule docstring; indented examples become fenced YAML blocks."""
    out: list[str] = []
    lines = doc.strip().splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.endswith("::"):
            out.append(_LITERAL.sub(r"`\1`", line))
            continue
        out.append(_LITERAL.sub(r"`\1`", line[:-1]))
        block, index = _indented_block(lines, index)
        out.extend(["", "```yaml", *textwrap.dedent("\n".join(block)).splitlines(), "```"])
        if index < len(lines):
            out.append("")
    return "\n".join(out) + "\n"


def _indented_block(lines: list[str], index: int) -> tuple[list[str], int]:
    """The literal block after ``::``: blank lines, then lines indented deeper than text."""
    while index < len(lines) and not lines[index].strip():
        index += 1
    block: list[str] = []
    while index < len(lines) and (not lines[index].strip() or lines[index][0].isspace()):
        block.append(lines[index])
        index += 1
    while block and not block[-1].strip():
        block.pop()
    return block, index
