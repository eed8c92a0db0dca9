"""How ``budget-gate ci`` behaves on a pull request: comment, status, label, reviews, outputs.

Each test runs the real process against the fake GitHub (see ci_kit.py) and looks at what
GitHub would show; the fixture fails any test whose requests break GitHub's description.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.reporters.markdown import written_for
from tests.github.ci_kit import (
    BASE,
    NUMBER,
    POLICY,
    SPEC,
    T0,
    PullRequestStory,
    fresh,
    grid_spec,
)
from tests.github.events import load_event
from tests.github.fake_github import FakeGitHub
from tests.ledger_kit import UNSIGNED
from tests.mlflow_server import free_port

HOUR = dt.timedelta(hours=1)
SMALL = grid_spec(1)  # 16 trials: within policy


def test_one_sticky_comment_is_updated_in_place(story: PullRequestStory) -> None:
    # Someone pastes the marker into their own comment: it is not ours to update.
    story.change(SPEC, SMALL, at=T0 + HOUR)
    first = story.run("pull_request.opened", story.pull_request_event())
    marker = story.bot_comments()[0].splitlines()[0]
    story.repo.add_comment(NUMBER, "mallory", marker + "\nforged")
    story.push({SPEC: grid_spec(4)}, at=T0 + 2 * HOUR)
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    (comment,) = story.bot_comments()
    assert "needs approval" in comment and written_for(comment) == story.head
    assert story.comments()[1] == marker + "\nforged"
    story.fake.clear_log()
    story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert story.fake.requests_for("issues/update-comment") == []  # nothing changed
    assert first.code == 0 and story.status()[0] == "pending"


def test_a_late_run_for_an_older_head_keeps_the_newer_comment(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    old_event = story.pull_request_event()
    old = story.head
    story.push({SPEC: SMALL}, at=T0 + 2 * HOUR)
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    newer = story.bot_comments()
    late = story.run("pull_request.opened", old_event, seed=False)  # delivered late
    assert late.code == 0, late.stderr
    assert story.bot_comments() == newer and written_for(newer[0]) == story.head
    assert story.status(old)[0] == "pending" and story.status()[0] == "success"
    assert "budget-approval-required" not in story.labels  # labels follow the newest head
    assert "kept the comment written for a newer commit" in late.stdout
    assert "needs approval" in late.summary  # the late run's own report


def test_outputs_json_report_and_comment_modes(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), before=SMALL, at=T0 + HOUR)
    off = story.run("pull_request.opened", story.pull_request_event(), BUDGET_GATE_COMMENT="off")
    assert story.comments() == [] and story.status()[0] == "pending"
    assert off.outputs == {
        "verdict": "approval-required",
        "worst-cost": "580.27",
        "expected-cost": "580.27",
        "needs-approval": "true",
        "report-json": str(story.workspace.parent / "budget-gate-report.json"),
    }
    doc = off.report
    assert doc["results"][0]["file"] == SPEC
    assert doc["diff"]["specs"][0]["explanation"] == ["grid grew from 16 to 64 trials (×4)"]
    for _ in range(2):
        story.run("pull_request.opened", story.pull_request_event(), BUDGET_GATE_COMMENT="new")
    assert len(story.bot_comments()) == 2
    assert "16 to 64 trials" in story.bot_comments()[0]


def test_violations_and_invalid_specs_fail_the_step_and_the_status(
    story: PullRequestStory,
) -> None:
    broken = "experiments/broken.yaml"
    story.change(
        SPEC, grid_spec(4).replace("gpus_per_trial: 1", "gpus_per_trial: 16"), at=T0 + HOUR
    )
    violation = story.run("pull_request.opened", story.pull_request_event())
    assert violation.code == 1
    assert story.status() == ("failure", "breaks policy · worst case 9,284.27 USD")
    story.change(
        broken, "apiVersion: budget-gate/v1\nkind: Experiment\nresources: [\n", at=T0 + HOUR
    )
    invalid = story.run("pull_request.opened", story.pull_request_event())
    assert invalid.code == 3
    assert story.status() == ("failure", "invalid input: see the job's annotations")
    assert f"::error file={broken},line=" in invalid.stdout
    assert invalid.outputs["verdict"] == "invalid"


def test_a_pull_request_without_specs_passes_quietly(story: PullRequestStory) -> None:
    story.change("README.md", "hello", at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0
    assert story.status() == ("success", "no experiment spec changed")
    assert story.comments() == []
    assert ran.outputs["verdict"] == "pass" and ran.outputs["needs-approval"] == "false"


def test_events_that_need_nothing_make_no_request(story: PullRequestStory) -> None:
    on_issue = load_event("issue_comment.created.on-issue", comment__body="/budget-gate approve")
    ran = story.run("issue_comment", on_issue, seed=False)
    assert (ran.code, ran.stdout) == (
        0,
        "budget-gate: nothing to do: the comment is on an issue, not a pull request\n",
    )
    chat = story.comment_event("alice", "thanks!", at=T0 + HOUR)
    assert story.run("issue_comment", chat).code == 0
    assert story.fake.requests == []


def test_reviews_are_requested_once_per_need(story: PullRequestStory) -> None:
    story.fake.add_org("Codertocat")  # the repository's owner as an organization, with a team
    story.fake.add_team("Codertocat", "ml-platform", members=["carol"])
    story.repo.put_file(
        "policies/default.yaml",
        story.repo.files_at(story.repo.pull(NUMBER).base_sha)["policies/default.yaml"]
        .decode()
        .replace("teams: [Octocoders/budget-approvers]", "teams: [ml-platform, Octocoders/x]"),
        ref=story.repo.pull(NUMBER).base_sha,
    )
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    assert story.requested == (["octocat", "alice"], ["ml-platform"])
    story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert len(story.fake.requests_for("pulls/request-reviewers")) == 1
    story.run("issue_comment", story.comment_event("carol", "/budget-gate approve", at=fresh()))
    assert story.status()[0] == "success" and "budget-approval-required" not in story.labels


def test_a_refused_review_request_is_a_note_not_a_failure(story: PullRequestStory) -> None:
    story.repo.permissions.pop("alice")  # alice is listed, but not a collaborator
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0
    assert "GitHub refused the review request (alice): Reviews may only be requested" in ran.stdout
    assert "budget-approval-required" in story.labels


def test_a_deleted_spec_is_shown_with_its_former_cost(story: PullRequestStory) -> None:
    story.change("experiments/old.yaml", None, before=SMALL, at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    (comment,) = story.bot_comments()
    assert "Specs deleted since master" in comment and "experiments/old.yaml" in comment
    assert story.status() == ("success", "no experiment spec changed")


@pytest.mark.parametrize("fake_github", ["/api/v3"], indirect=True)
def test_github_enterprise_api_root(story: PullRequestStory, fake_github: FakeGitHub) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.env["GITHUB_API_URL"].endswith("/api/v3")
    assert ran.code == 0 and story.status()[0] == "pending"
    assert all(r.path.startswith("/api/v3/") for r in fake_github.requests)


def test_github_failing_is_a_backend_error(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    for _ in range(3):  # the first try and two retries
        story.fake.fail_next("pulls/list-files", 502, "Bad Gateway")
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 4
    assert "budget-gate: GitHub at http://127.0.0.1:" in ran.stderr
    assert "while listing the files of pull request #2" in ran.stderr
    assert story.repo.statuses == []


def test_approvals_are_recorded_in_the_mlflow_ledger(
    story: PullRequestStory, mlflow_server
) -> None:
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-{dt.datetime.now().timestamp():.0f}"
    spec = grid_spec(4).replace("team: nlp", f"team: {team}")
    story.change(SPEC, spec, at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    review = story.review_event("alice", at=T0 + 2 * HOUR)
    ran = story.run("pull_request_review", review)
    assert ran.code == 0, ran.stderr
    assert "budget-gate: recorded approval by alice on " in ran.stdout
    again = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert "recorded" not in again.stdout  # found in the ledger: recorded once
    from gate.integrations.mlflow.client import MlflowLedger
    from gate.ledger.records import LedgerQuery

    (record,) = MlflowLedger(mlflow_server.uri, UNSIGNED).query(LedgerQuery(team=team))
    assert (record.by, record.source.value, record.pr_number) == ("alice", "github-review", NUMBER)
    assert record.event_at == T0 + 2 * HOUR and f"{record.worst_cost:.2f}" == "580.27"
    assert dt.datetime.now(dt.timezone.utc) - record.recorded_at < dt.timedelta(minutes=5)
    assert (record.head_sha, record.event_id) == (story.head, f"review-{review['review']['id']}")
    assert json.loads(Path(again.outputs["report-json"]).read_text())["results"][0]["approval"][
        "approved"
    ]


@pytest.mark.parametrize(
    "withdraw", ["dismissed", "changes-requested", "comment-deleted", "base-edited"]
)
def test_an_approval_withdrawn_on_github_is_revoked_in_the_ledger(
    story: PullRequestStory, mlflow_server, tmp_path, withdraw
) -> None:
    """The ledger's copy of a review or comment that GitHub no longer shows stops counting:
    on the pull request at once, and at launch through the revocation CI records."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-{withdraw}-{dt.datetime.now().timestamp():.0f}"
    text = grid_spec(4).replace("team: nlp", f"team: {team}")
    story.change(SPEC, text, at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    if withdraw == "comment-deleted":
        approve = story.comment_event("alice", "/budget-gate approve ok", at=fresh())
        ran = story.run("issue_comment", approve)
    else:
        ran = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert ran.code == 0 and "budget-gate: recorded approval by alice" in ran.stdout
    assert story.status()[0] == "success"
    pull = story.repo.pull(NUMBER)
    if withdraw == "dismissed":
        (review,) = pull.reviews
        review.state = "DISMISSED"  # what GitHub does to a dismissed review
        ran = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    elif withdraw == "changes-requested":
        later = story.review_event("alice", at=T0 + 3 * HOUR, state="changes_requested")
        ran = story.run("pull_request_review", later)
    elif withdraw == "base-edited":  # to another branch and back: GitHub dates the last edit
        edited = story.pull_request_event("edited")
        edited["changes"] = {"base": {"ref": {"from": "stage"}, "sha": {"from": BASE}}}
        ran = story.run("pull_request.edited", edited)
    else:
        for key, comment in list(story.repo.comments.items()):
            if comment.body.startswith("/budget-gate approve"):
                del story.repo.comments[key]
        approve["action"] = "deleted"  # the deletion's own event runs the workflow
        ran = story.run("issue_comment", approve, seed=False)
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    assert "budget-gate: revoked approval by alice" in ran.stdout
    again = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert "revoked" not in again.stdout  # once
    local = tmp_path / "local"
    (local / "policies").mkdir(parents=True)
    (local / "policies" / "default.yaml").write_text(POLICY, encoding="utf-8")
    (local / SPEC).parent.mkdir(parents=True)
    (local / SPEC).write_text(text, encoding="utf-8")
    argv = ["verify", str(local / SPEC), "--policy-dir", str(local / "policies")]
    assert main([*argv, "--tracking-uri", mlflow_server.uri]) == 2  # nothing clears a launch


def test_a_revocation_by_one_who_may_not_revoke_does_not_stop_ci_revoking(
    story: PullRequestStory, mlflow_server
) -> None:
    """A local revocation by someone who may not revoke counts nowhere; taken as done by CI's
    sweep, it left a dismissed review's ledger copy in force at launch."""
    import dataclasses

    from gate.integrations import open_ledger
    from gate.ledger.records import LedgerQuery, RecordKind, Source

    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-mallory-{dt.datetime.now().timestamp():.0f}"
    story.change(SPEC, grid_spec(4).replace("team: nlp", f"team: {team}"), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    records = ledger.query(LedgerQuery(team=team))  # the server holds others' of this path
    (approval,) = [r for r in records if r.kind is RecordKind.APPROVAL]
    forged = dataclasses.replace(
        approval,
        kind=RecordKind.REVOCATION,
        by="mallory",
        source=Source.LOCAL,
        revokes=(approval.record_id or "",),
        record_id=None,
        run_id=None,
    )
    ledger.append(forged)
    (review,) = story.repo.pull(NUMBER).reviews
    review.state = "DISMISSED"
    ran = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert ran.code == 0, ran.stderr
    assert "budget-gate: revoked approval by alice" in ran.stdout


READ_ONCE = ("pulls/list-reviews", "issues/list-comments")


def test_a_second_approval_replaces_the_first_and_revokes_nothing(
    story: PullRequestStory, mlflow_server
) -> None:
    """A reviewer who approves again (after a push that leaves the spec as it was) still
    approves: their first review's ledger copy stands, and a search it cleared runs on."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-again-{dt.datetime.now().timestamp():.0f}"
    story.change(SPEC, grid_spec(4).replace("team: nlp", f"team: {team}"), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    first = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert "budget-gate: recorded approval by alice" in first.stdout
    story.push({"README.md": "more words\n"}, at=T0 + 3 * HOUR)
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    before = {name: len(story.fake.requests_for(name)) for name in READ_ONCE}
    again = story.run("pull_request_review", story.review_event("alice", at=T0 + 4 * HOUR))
    assert again.code == 0 and "revoked" not in again.stdout
    # The reviews and comments judge the approvals and say which stand: read once a run.
    assert {n: len(story.fake.requests_for(n)) - before[n] for n in READ_ONCE} == dict.fromkeys(
        READ_ONCE, 1
    )
    assert story.status()[0] == "success"


def test_a_withdrawn_approval_of_an_older_version_is_revoked_too(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    """The comment deleted, then the spec changed: the old version's approval is revoked,
    so it cannot clear a launch of that version."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-older-{dt.datetime.now().timestamp():.0f}"
    text = grid_spec(4).replace("team: nlp", f"team: {team}")
    story.change(SPEC, text, at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    story.run("issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh()))
    for key, comment in list(story.repo.comments.items()):
        if comment.body.startswith("/budget-gate approve"):
            del story.repo.comments[key]
    story.push({SPEC: grid_spec(8).replace("team: nlp", f"team: {team}")}, at=T0 + 3 * HOUR)
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert "budget-gate: revoked approval by alice" in ran.stdout
    local = tmp_path / "local"
    (local / "policies").mkdir(parents=True)
    (local / "policies" / "default.yaml").write_text(POLICY, encoding="utf-8")
    (local / SPEC).parent.mkdir(parents=True)
    (local / SPEC).write_text(text, encoding="utf-8")  # the version alice had approved
    argv = ["verify", str(local / SPEC), "--policy-dir", str(local / "policies")]
    assert main([*argv, "--tracking-uri", mlflow_server.uri]) == 2


def test_a_ledger_outage_does_not_fail_a_spec_that_needs_nothing_from_it(
    story: PullRequestStory,
) -> None:
    """Looking for withdrawn approvals is bookkeeping: down, it is said, and left to the next
    run; the verdict of a spec within policy stands."""
    story.extra_env = {"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{free_port()}"}
    story.change(SPEC, grid_spec(1), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"
    assert "withdrawn approvals of pull request #2 were not checked" in ran.stdout


def test_pull_request_target_is_a_pull_request(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request_target.opened", story.pull_request_event())
    assert ran.env["GITHUB_EVENT_NAME"] == "pull_request_target"
    assert ran.code == 0 and story.status()[0] == "pending" and len(story.bot_comments()) == 1


def test_a_broken_base_policy_is_invalid_input_with_its_position(story: PullRequestStory) -> None:
    base = story.repo.pull(NUMBER).base_sha
    story.repo.put_file("policies/default.yaml", "apiVersion: budget-gate/v1\nkind: [\n", ref=base)
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 3
    assert ran.stderr.startswith("policies/default.yaml:")


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("issue_comment", '{"repository": {"full_name": "o/r"}, "issue": "2", "comment": {}}',
         "payload is not what GitHub sends"),
        ("issue_comment",
         '{"action": "created", "repository": {"full_name": "o/r"}, '
         '"issue": {"pull_request": {"url": "u"}}, "comment": []}',
         "payload is not what GitHub sends"),
        ("issue_comment",
         '{"action": "edited", "repository": {"full_name": "o/r"}, '
         '"issue": {"pull_request": {"url": "u"}}, "comment": "x"}',
         "payload is not what GitHub sends"),
        ("pull_request",
         '{"action": "opened", "repository": {"full_name": "o/r"}, '
         '"pull_request": {"number": 1e999, "head": {"sha": "a"}}}',
         "payload is not what GitHub sends"),
        ("pull_request", '{"a": ' + "[" * 200_000 + "]" * 200_000 + "}",
         "cannot read the event"),
    ],
)  # fmt: skip
def test_a_malformed_event_payload_is_an_input_error_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    name: str,
    payload: str,
    message: str,
) -> None:
    event = tmp_path / "event.json"
    event.write_text(payload, encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_NAME", name)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert main(["ci"]) == 3
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "GITHUB_EVENT_NAME is not set"),
        ({"GITHUB_EVENT_NAME": "pull_request"}, "GITHUB_EVENT_PATH is not set"),
        (
            {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "missing.json"},
            "GITHUB_EVENT_PATH missing.json: cannot read the event",
        ),
    ],
)
def test_outside_a_workflow_it_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict, message: str
) -> None:
    for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["ci"]) == 3
    assert message in capsys.readouterr().err


def test_bad_settings_are_usage_errors(
    story: PullRequestStory, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ci", "--fail-on", "never"]) == 3
    ran = story.run("pull_request.opened", story.pull_request_event(), BUDGET_GATE_COMMENT="loud")
    assert ran.code == 3 and "comment 'loud' is not one of update, new, off" in ran.stderr
