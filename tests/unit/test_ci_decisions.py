"""What the pull-request flow writes, decided from values: no HTTP."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gate.ci.decisions import (
    commit_status,
    label_change,
    may_write_comment,
    outputs,
    reviewers_to_request,
    select_specs,
)
from gate.ci.model import ChangedFile, PullInfo
from gate.evaluation.report import Report
from gate.ledger.approvers import Approvers
from gate.policy.findings import Outcome
from gate.policy.verdict import FailOn, exit_code
from gate.spec.globs import matches
from tests.reporters.sample import sample_report


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("experiments/**/*.yaml", "experiments/a.yaml", True),
        ("experiments/**/*.yaml", "experiments/team/deep/a.yaml", True),
        ("experiments/**/*.yaml", "experiments/a.yml", False),
        ("experiments/**/*.yaml", "other/experiments/a.yaml", False),
        ("experiments/*.yaml", "experiments/team/a.yaml", False),
        ("**/*.yaml", "a.yaml", True),
        ("exp/?.yaml", "exp/a.yaml", True),
        ("exp/?.yaml", "exp/ab.yaml", False),
        ("exp/[ab].yaml", "exp/b.yaml", True),
        ("exp/[!ab].yaml", "exp/b.yaml", False),
        ("exp/**", "exp/x/y.yaml", True),
        ("exp/a+b.yaml", "exp/a+b.yaml", True),
        ("exp/a+b.yaml", "exp/aab.yaml", False),
        # one dialect with the waivers (gitignore's): a bare name matches at any depth
        ("*.yaml", "experiments/a.yaml", True),
        ("experiments/", "experiments/a/b.yaml", True),
        ("/experiments/**", "team/experiments/a.yaml", False),
        ("./experiments/*.yaml", "experiments/a.yaml", True),
    ],
)
def test_globs(pattern: str, path: str, hit: bool) -> None:
    assert matches([pattern], path) is hit


def test_a_negation_takes_back_what_a_glob_matched() -> None:
    globs = ["experiments/**", "!experiments/drafts/**"]
    assert matches(globs, "experiments/a.yaml")
    assert not matches(globs, "experiments/drafts/a.yaml")


def test_select_specs_keeps_renames_and_removals() -> None:
    files = [
        ChangedFile("experiments/new.yaml", "added"),
        ChangedFile("experiments/gone.yaml", "removed"),
        ChangedFile("experiments/moved.yaml", "renamed", "old/moved.yaml"),
        ChangedFile("archive/out.yaml", "renamed", "experiments/out.yaml"),
        ChangedFile("README.md", "modified"),
        ChangedFile("policies/default.yaml", "modified"),
    ]
    present, removed = select_specs(files, ["./experiments/**/*.yaml", " "])
    assert [f.path for f in present] == [
        "experiments/new.yaml",
        "experiments/moved.yaml",
        "archive/out.yaml",
    ]
    assert [f.path for f in removed] == ["experiments/gone.yaml"]
    assert [f.base_path for f in files[:3]] == [None, "experiments/gone.yaml", "old/moved.yaml"]


def _one(outcome: Outcome, approved_by: str | None = None) -> Report:
    sample = sample_report()
    result = sample.results[1]
    findings = tuple(replace(f, approved_by=approved_by) for f in result.findings)
    return replace(sample, results=(replace(result, outcome=outcome, findings=findings),))


@pytest.mark.parametrize(
    ("outcome", "approved_by", "expected"),
    [
        (Outcome.PASS, None, ("success", "within policy · worst case 32.00 USD")),
        (Outcome.PASS, "alice", ("success", "approved by alice · worst case 32.00 USD")),
        (Outcome.APPROVAL_REQUIRED, None, ("pending", "approval required · worst case 32.00 USD")),
        (Outcome.VIOLATION, None, ("failure", "breaks policy · worst case 32.00 USD")),
        (Outcome.INVALID, None, ("failure", "invalid input: see the job's annotations")),
        (Outcome.BACKEND_ERROR, None, ("error", "a backend failed: see the job's log")),
    ],
)
def test_commit_status(outcome: Outcome, approved_by: str | None, expected: tuple) -> None:
    assert commit_status(_one(outcome, approved_by)) == expected


def test_commit_status_without_specs_and_with_long_names() -> None:
    assert commit_status(replace(sample_report(), results=())) == (
        "success",
        "no experiment spec changed",
    )
    state, description = commit_status(_one(Outcome.PASS, "a" * 300))
    assert state == "success" and len(description) == 140 and description.endswith("…")


@pytest.mark.parametrize(
    ("needs", "labels", "change"),
    [
        (True, ["bug"], "add"),
        (True, ["budget-approval-required"], None),
        (False, ["budget-approval-required", "bug"], "remove"),
        (False, [], None),
    ],
)
def test_label(needs: bool, labels: list[str], change: str | None) -> None:
    assert label_change(needs, labels) == change


def test_reviewers_are_listed_users_and_own_org_teams_not_yet_asked() -> None:
    pull = PullInfo(
        2, "Codertocat", "open", "h" * 40, "b" * 40, "main", requested_users=("octocat",),
        requested_teams=("asked",),
    )  # fmt: skip
    groups = [
        Approvers(users=["alice", "codertocat", "OctoCat"], teams=["leads", "asked", "x/y"]),
        Approvers(users=["Alice", "bob"], teams=["acme/leads", "acme/ops"]),
    ]
    assert reviewers_to_request(groups, pull, "acme") == (["alice", "bob"], ["leads", "ops"])


@pytest.mark.parametrize(
    ("written_for", "ours", "current", "may"),
    [
        (None, "a", "b", True),  # no comment yet
        ("a", "a", "b", True),  # our own comment
        ("a", "b", "b", True),  # we are the current head: the older comment goes
        ("b", "a", "b", False),  # a newer head wrote it: keep it
        ("c", "a", "b", False),  # neither is current: leave it to the current head's run
    ],
)
def test_comment_overwrite_rule(written_for: str | None, ours: str, current: str, may: bool):
    assert may_write_comment(written_for, ours, current) is may


@pytest.mark.parametrize(
    ("outcome", "fail_on", "code"),
    [
        (Outcome.APPROVAL_REQUIRED, FailOn.ERROR, 0),
        (Outcome.APPROVAL_REQUIRED, FailOn.APPROVAL, 2),
        (Outcome.APPROVAL_REQUIRED, FailOn.WARN, 2),
        (Outcome.VIOLATION, FailOn.ERROR, 1),
        (Outcome.INVALID, FailOn.ERROR, 3),
        (Outcome.PASS, FailOn.WARN, 0),
    ],
)
def test_exit_code(outcome: Outcome, fail_on: FailOn, code: int) -> None:
    assert exit_code(outcome, fail_on) == code


def test_outputs() -> None:
    report = sample_report()
    assert outputs(report, "/tmp/r.json") == {
        "verdict": "invalid",
        "worst-cost": "240.00",
        "expected-cost": "235.20",
        "needs-approval": "true",
        "report-json": "/tmp/r.json",
    }
    eur = replace(report.results[2], currency="EUR")
    mixed = replace(report, results=(report.results[1], eur))
    assert outputs(mixed, "r")["worst-cost"] == "16.00 EUR; 32.00 USD"
    assert outputs(replace(report, results=()), "r")["worst-cost"] == ""
