"""An approval withdrawn on GitHub is revoked in the ledger though its spec left the diff.

Why: CI looked up the ledger's copies of a pull request's approvals by the specs the pull
request changes at the head. An author who took the approved spec out of the pull request
(a commit deleting the new file) before the approver dismissed her review kept the ledger's
copy in force, and ``verify`` of the approved version (the branch's earlier commit) still
cleared a launch. CI now finds them by the pull request's number, whatever their spec.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from pathlib import Path

import pytest

from gate.cli import main
from gate.integrations import open_ledger
from gate.ledger.records import LedgerQuery, RecordKind
from tests.github.ci_kit import NUMBER, POLICY, SPEC, T0, PullRequestStory, fresh, grid_spec
from tests.ledger_kit import UNSIGNED, seed_record, unique

HOUR = dt.timedelta(hours=1)
OTHER = "experiments/other-grid.yaml"


def _approved_then_taken_out(
    story: PullRequestStory, mlflow_server, name: str, keep: dict[str, str] | None = None
) -> str:
    """Alice approves SPEC, recorded in the ledger; then the author takes SPEC out of the
    pull request (its file deleted at the head), changing ``keep`` instead. The spec's text."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-{name}-{dt.datetime.now().timestamp():.0f}"
    text = grid_spec(4).replace("team: nlp", f"team: {team}")
    story.change(SPEC, text, at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    ran = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert "budget-gate: recorded approval by alice" in ran.stdout
    pull = story.repo.pull(NUMBER)
    sha = story.push(keep or {"README.md": "x\n"}, at=fresh())
    story.repo.contents[sha].pop(SPEC, None)
    pull.files[:] = [f for f in pull.files if f.filename != SPEC]
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code == 0, ran.stderr
    return text


def _dismiss(story: PullRequestStory):
    (review,) = story.repo.pull(NUMBER).reviews
    review.state = "DISMISSED"  # what GitHub does to a dismissed review
    event = story.review_event("alice", at=fresh(), state="dismissed", id=review.id)
    return story.run("pull_request_review", event)


def _verify(text: str, tmp_path: Path, uri: str) -> int:
    """``budget-gate verify`` of the approved version, as a launch script runs it."""
    local = tmp_path / "local"
    (local / "policies").mkdir(parents=True, exist_ok=True)
    (local / "policies" / "default.yaml").write_text(POLICY, encoding="utf-8")
    (local / SPEC).parent.mkdir(parents=True, exist_ok=True)
    (local / SPEC).write_text(text, encoding="utf-8")
    argv = ["verify", str(local / SPEC), "--policy-dir", str(local / "policies")]
    return main([*argv, "--tracking-uri", uri])


def test_a_withdrawal_after_the_spec_left_the_pull_request_is_revoked(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    """The pull request changes no spec now: CI reads what GitHub shows itself."""
    text = _approved_then_taken_out(story, mlflow_server, "gone")
    assert _verify(text, tmp_path, mlflow_server.uri) == 0  # the approval clears it so far
    ran = _dismiss(story)
    assert ran.code == 0, ran.stderr
    assert "budget-gate: revoked approval by alice on " in ran.stdout
    assert f"of {SPEC} as " in ran.stdout
    again = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert again.code == 0 and "revoked" not in again.stdout  # once
    assert _verify(text, tmp_path, mlflow_server.uri) == 2  # nothing clears a launch


def test_a_withdrawal_is_revoked_while_the_pull_request_changes_another_spec(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    """The flow reads what GitHub shows (another spec changed); the approval of the spec
    taken out is found all the same."""
    other = grid_spec(2, name="other-grid")
    text = _approved_then_taken_out(story, mlflow_server, "other", {OTHER: other})
    ran = _dismiss(story)
    assert ran.code in (0, 2), ran.stderr
    assert f"of {SPEC} as " in ran.stdout and "budget-gate: revoked approval by alice" in ran.stdout
    assert _verify(text, tmp_path, mlflow_server.uri) == 2


def test_github_failing_to_list_the_reviews_is_said_and_the_next_run_revokes(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    text = _approved_then_taken_out(story, mlflow_server, "flaky")
    for _ in range(3):  # the first try and two retries
        story.fake.fail_next("pulls/list-reviews", 502, "Bad Gateway")
    ran = _dismiss(story)
    assert "withdrawn approvals of pull request #2 were not checked: GitHub at" in ran.stdout
    assert "revoked" not in ran.stdout
    again = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert "budget-gate: revoked approval by alice" in again.stdout
    assert _verify(text, tmp_path, mlflow_server.uri) == 2


def test_another_pull_requests_approval_of_the_spec_is_left_alone(
    story: PullRequestStory, mlflow_server
) -> None:
    """Only this pull request's approvals are judged by what GitHub shows on it."""
    _approved_then_taken_out(story, mlflow_server, "theirs")
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    (ours,) = [r for r in ledger.query(LedgerQuery(spec=SPEC)) if "theirs" in (r.team or "")]
    team = f"pr-{uuid.uuid4().hex[:12]}"
    theirs = dataclasses.replace(
        ours, pr_number=NUMBER + 1, team=team, event_id="review-1", payload=None, run_id=None
    )
    seed_record(mlflow_server.uri, dataclasses.replace(theirs, record_id=None))
    assert [r.pr_number for r in ledger.query(LedgerQuery(team=team))] == [NUMBER + 1]
    ran = _dismiss(story)
    assert "budget-gate: revoked approval by alice" in ran.stdout  # ours
    kinds = [r.kind for r in open_ledger(mlflow_server.uri, UNSIGNED).query(LedgerQuery(team=team))]
    assert kinds == [RecordKind.APPROVAL]  # not revoked


@pytest.mark.parametrize("repository", ["acme/other-repo", None])
def test_another_repositorys_pull_request_of_the_same_number_is_left_alone(
    story: PullRequestStory, mlflow_server, repository: str | None
) -> None:
    """One ledger serves two repositories: their pull requests #2 are not one. Another's
    approval (named by its repository, or one recorded before records named it, of a spec
    this diff does not change) is not revoked because this pull request does not show it."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = unique("hello")
    story.change(SPEC, grid_spec(4).replace("team: nlp", f"team: {team}"), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    ran = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert "budget-gate: recorded approval by alice" in ran.stdout
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    (ours,) = ledger.query(LedgerQuery(team=team))
    assert ours.repository == story.repo.full_name
    other_team = unique("other-repo")
    theirs = dataclasses.replace(
        ours,
        team=other_team,
        by="bob",
        event_id="review-987654321",
        spec="experiments/theirs.yaml",
        repository=repository,
        payload=None,
        run_id=None,
        record_id=None,
    )
    seed_record(mlflow_server.uri, theirs)
    assert [r.pr_number for r in ledger.query(LedgerQuery(team=other_team))] == [NUMBER]
    ran = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert ran.code == 0, ran.stderr
    kinds = [r.kind for r in ledger.query(LedgerQuery(team=other_team))]
    assert kinds == [RecordKind.APPROVAL], ran.stdout[-800:]
