"""The vendored third-party fixtures are the exact bytes their SOURCES.md names, and all named.

Why: the tests prove our output against GitHub's payloads and OpenAPI description, the SARIF
schema and the public price data; an edited copy would prove nothing. Each folder under
``tests/fixtures/`` says where its files come from, their licence, size and sha256.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

# A row of a SOURCES.md's own table: | name | bytes | sha256 |
ROW = re.compile(r"^\| ([^|\s]+) \| (\d+) \| ([0-9a-f]{64}) \|$", re.MULTILINE)
FOLDERS = sorted({p.parent for p in FIXTURES.rglob("*") if p.is_file()})


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_every_fixture_is_the_bytes_its_sources_note_names(folder: Path):
    note = folder / "SOURCES.md"
    assert note.is_file(), f"{folder} has no SOURCES.md (source, licence, sha256 of each file)"
    listed = {name: (int(size), digest) for name, size, digest in ROW.findall(note.read_text())}
    present = {p.name for p in folder.iterdir() if p.is_file() and p.name != "SOURCES.md"}
    assert present == set(listed)
    for name, (size, digest) in listed.items():
        data = (folder / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest), name


def test_the_fixtures_the_suite_reads_are_vendored():
    assert {p.relative_to(FIXTURES).as_posix() for p in FOLDERS} == {
        "configs",
        "configs/hydra",
        "configs/hydra/db",
        "configs/katib",
        "configs/rules",
        "configs/skypilot",
        "configs/wandb",
        "focus",
        "focus/1.2",
        "focus/1.2/attributes",
        "focus/1.2/columns",
        "github/events",
        "github/openapi",
        "kueue",
        "prices",
        "sarif",
    }
