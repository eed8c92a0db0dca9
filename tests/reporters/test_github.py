"""GitHub workflow commands: golden output, escaping, severity mapping, no injection."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import Location
from gate.policy.model import Severity
from gate.reporters.github import GithubReporter, annotation, command
from tests.reporters.sample import hostile_report, sample_report

GOLDENS = Path(__file__).parent / "goldens"


def test_hostile_golden(golden):
    golden(GOLDENS / "hostile.github.txt", GithubReporter().render(hostile_report()))


def test_command_escapes_message_and_properties():
    line = command(
        "error",
        "100% sure\r\nnext: line, ok",
        Location("dir/a,b:c.yaml", 3, 7),
        "unused.yaml",
        "BG1: a, b",
    )
    assert line == (
        "::error file=dir/a%2Cb%3Ac.yaml,line=3,col=7,title=BG1%3A a%2C b"
        "::100%25 sure%0D%0Anext: line, ok"
    )


def test_terminal_escapes_in_a_file_name_are_shown_not_sent():
    """A pull request's file name may hold ``ESC[2J`` or an OSC title: the Actions log
    renders ANSI, so it was run there; shown as ``\\x1b`` it is inert."""
    name = "a\x1b[2Jb\x1b]0;T\x07.yaml"
    line = command("error", f"{name} is not one of team vision's specs", None, name, "BG204")
    assert "\x1b" not in line and "\x07" not in line
    assert line == (
        "::error file=a\\x1b[2Jb\\x1b]0;T\\x07.yaml,title=BG204"
        "::a\\x1b[2Jb\\x1b]0;T\\x07.yaml is not one of team vision's specs"
    )


def test_a_finding_without_location_names_only_the_file():
    assert command("notice", "m", None, "s.yaml", "t") == "::notice file=s.yaml,title=t::m"


@pytest.mark.parametrize(
    ("severity", "kind"),
    [(Severity.ERROR, "error"), (Severity.APPROVAL, "warning"), (Severity.WARN, "notice")],
)
def test_severity_mapping(severity, kind):
    assert annotation(severity) == kind


def test_no_spec_value_can_start_its_own_command():
    out = GithubReporter().render(hostile_report())
    lines = out.splitlines()
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines[:-1])
    assert lines[-1] == "budget-gate: 1 spec(s), verdict violation (exit 1)"
    assert "grid search,%0D%0Areally" in out


def test_waived_findings_are_notices_that_say_so():
    out = GithubReporter().render(sample_report())
    assert (
        "::notice file=experiments/big-grid.yaml,line=7,col=3,"
        "title=BG102 Trial hours over the limit (waived)::" in out
    )
    assert "(waived: long runs approved by the board)" in out


def test_input_errors_are_annotated_at_their_position():
    out = GithubReporter().render(sample_report())
    assert (
        "::error file=experiments/broken.yaml,line=9,col=3,title=budget-gate invalid input::"
        "unknown key 'gpus_per_trail' in resources — did you mean 'gpus_per_trial'?" in out
    )


def test_the_terminal_shows_a_findings_control_characters_as_escapes():
    """A finding's message quotes a file name, which may hold ``ESC[2J`` or a line break:
    the position before it was escaped, the message printed them raw."""
    import dataclasses

    from gate.reporters.text import TextReporter

    report = hostile_report()
    result = report.results[0]
    finding = dataclasses.replace(result.findings[0], message="a\x1b[2Jb.yaml\r\nis not ours")
    report = dataclasses.replace(
        report, results=[dataclasses.replace(result, findings=[finding]), *report.results[1:]]
    )
    text = TextReporter().render(report)
    assert "\x1b" not in text and "\r" not in text
    assert "a\\x1b[2Jb.yaml\\r\\nis not ours" in text
