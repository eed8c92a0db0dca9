"""Format targets, the one-stdout rule, atomic writes and the job summary."""

from __future__ import annotations

import argparse
import os

import pytest

from gate.commands.output import (
    FormatTarget,
    append_step_summary,
    parse_target,
    plan_targets,
    write_atomically,
)
from gate.errors import InputError
from gate.evaluation.report import Report


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ("text", FormatTarget("text")),
        ("markdown=out/comment.md", FormatTarget("markdown", "out/comment.md")),
        ("json=a=b.json", FormatTarget("json", "a=b.json")),
    ],
)
def test_parse_target(value, target):
    assert parse_target(value) == target


@pytest.mark.parametrize(("value", "error"), [("xml", "unknown format 'xml'"), ("json=", "empty")])
def test_parse_target_refuses(value, error):
    with pytest.raises(argparse.ArgumentTypeError, match=error):
        parse_target(value)


def test_plan_defaults_to_text_on_stdout():
    assert plan_targets(None) == [FormatTarget("text")]


def test_plan_allows_one_stdout_only():
    with pytest.raises(InputError, match="formats text, json all want stdout"):
        plan_targets([FormatTarget("text"), FormatTarget("json")])


def test_plan_refuses_the_same_file_twice(tmp_path):
    with pytest.raises(InputError, match="same file"):
        plan_targets([FormatTarget("text", "a.txt"), FormatTarget("json", "./a.txt")])


def test_plan_refuses_a_link_to_the_other_formats_file(tmp_path):
    """A link was compared by its own path while the write goes through it: two formats
    wrote one file, the second over the first, and both said 'wrote'."""
    (tmp_path / "link.json").symlink_to(tmp_path / "b.json")  # dangling: b.json is not yet
    targets = [FormatTarget("json", str(tmp_path / "b.json"))]
    with pytest.raises(InputError, match="same file"):
        plan_targets([*targets, FormatTarget("markdown", str(tmp_path / "link.json"))])


def test_write_atomically_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / "out.md"
    path.write_text("old")
    write_atomically(str(path), "new ✓\n")
    assert path.read_text(encoding="utf-8") == "new ✓\n"
    assert os.listdir(tmp_path) == ["out.md"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_write_atomically_into_a_missing_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        write_atomically(str(tmp_path / "missing" / "out.md"), "x")
    assert os.listdir(tmp_path) == []


def test_write_atomically_keeps_the_old_file_when_the_rename_fails(tmp_path):
    target = tmp_path / "dir-in-the-way"
    (target / "child").mkdir(parents=True)
    with pytest.raises(InputError, match="cannot write"):
        write_atomically(str(target), "x")
    assert sorted(os.listdir(tmp_path)) == ["dir-in-the-way"]


def test_step_summary_is_appended_only_when_set(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    append_step_summary(Report(()), {})
    assert summary.read_text() == "earlier step\n"
    append_step_summary(Report(()), {"GITHUB_STEP_SUMMARY": str(summary)})
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "budget-gate" in text


def test_a_failed_render_into_the_file_removes_the_temporary(tmp_path):
    with pytest.raises(UnicodeEncodeError):
        write_atomically(str(tmp_path / "out.md"), "lone surrogate \ud800")
    assert os.listdir(tmp_path) == []


def test_an_unwritable_step_summary_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        append_step_summary(Report(()), {"GITHUB_STEP_SUMMARY": str(tmp_path)})
