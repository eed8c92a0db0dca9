"""Rule docstrings → Markdown: literals become code spans, examples fenced YAML blocks."""

from __future__ import annotations

from gate.reporters.docstring import to_markdown

DOC = """Title line.

Use ``x: 1`` here.

Passes (policy ``a: 1``)::

    a:
      b: 1

    c: 2

Fails::

    a: 3
"""


def test_literals_and_examples_are_converted():
    assert to_markdown(DOC) == (
        "Title line.\n\nUse `x: 1` here.\n\nPasses (policy `a: 1`):\n\n"
        "```yaml\na:\n  b: 1\n\nc: 2\n```\n\nFails:\n\n```yaml\na: 3\n```\n"
    )


def test_plain_text_is_unchanged():
    assert to_markdown("Just *text*.\n") == "Just *text*.\n"
