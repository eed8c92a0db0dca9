"""Every registered format rendered from the shared sample report, against its golden file.

Goldens change only through ``pytest --update-goldens``; review them in the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.reporters import REPORTERS, load_reporter
from tests.reporters.sample import sample_report

GOLDENS = Path(__file__).parent / "goldens"
FILES = {
    "text": "sample.txt",
    "json": "sample.json",
    "markdown": "sample.md",
    "sarif": "sample.sarif",
    "github": "sample.github.txt",
    "junit": "sample.junit.xml",
}


def test_every_format_has_a_golden():
    assert set(FILES) == set(REPORTERS)


@pytest.mark.parametrize("name", sorted(FILES))
def test_sample_golden(name, golden):
    golden(GOLDENS / FILES[name], load_reporter(name).render(sample_report()))


@pytest.mark.parametrize("name", sorted(FILES))
def test_rendering_is_deterministic(name):
    reporter = load_reporter(name)
    assert reporter.render(sample_report()) == reporter.render(sample_report())
