"""A commit status belongs to a commit, not to a pull request: one per base branch.

One head in two pull requests (into ``main`` and into ``stage``, where the costly spec is
already there and so no change) must not turn green for ``main`` by the other's run; a pull
request whose base is edited from ``stage`` to ``main`` is judged again against ``main``.
"""

from __future__ import annotations

import datetime as dt

import pytest

from tests.github.ci_kit import BASE, NUMBER, SPEC, T0, PullRequestStory, fresh, grid_spec
from tests.github.events import load_event
from tests.github.state import FileChange, IssueEvent, fake_sha
from tests.ledger_kit import UNSIGNED

HOUR = dt.timedelta(hours=1)


def _stage_and_head(story: PullRequestStory) -> tuple[str, str]:
    """Branch ``stage`` holds an unapproved costly spec; the head is it plus a README edit."""
    repo = story.repo
    pull = repo.pull(NUMBER)
    stage = fake_sha("stage")
    repo.contents[stage] = dict(repo.files_at(BASE))
    repo.put_file(SPEC, grid_spec(8), ref=stage)
    added = [FileChange(filename=SPEC, status="added")]
    repo.add_commit(stage, date=T0, files=added, parents=[BASE], branch="stage")
    head = fake_sha("head")
    repo.contents[head] = dict(repo.files_at(stage))
    repo.put_file("README.md", "hi\n", ref=head)
    readme = [FileChange(filename="README.md")]
    repo.add_commit(head, date=T0 + HOUR, files=readme, parents=[stage], branch=pull.head_ref)
    pull.head_sha = head
    return stage, head


def _opened_into_stage(story: PullRequestStory) -> tuple[str, str]:
    """:func:`_stage_and_head`, opened into ``stage``: a README edit there, judged so."""
    stage, head = _stage_and_head(story)
    pull = story.repo.pull(NUMBER)
    pull.base_sha, pull.base_ref = stage, "stage"
    pull.files[:] = [FileChange(filename="README.md", status="added")]
    event = story.pull_request_event()
    event["pull_request"]["base"].update(sha=stage, ref="stage")
    assert story.run("pull_request.opened", event).code == 0
    return stage, head


def _statuses(story: PullRequestStory, sha: str) -> dict[str, str]:
    return {s.context: s.state for s in story.repo.latest_statuses(sha)}


def test_a_second_pull_request_into_another_base_does_not_green_the_first(story) -> None:
    stage, head = _stage_and_head(story)
    pull = story.repo.pull(NUMBER)
    pull.files[:] = [FileChange(filename=SPEC, status="added"), FileChange(filename="README.md")]
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    assert _statuses(story, head) == {"budget-gate": "pending"}  # approval required, into main
    other = story.repo.add_pull(
        3, author="Codertocat", head_sha=head, head_ref=pull.head_ref, base_sha=stage,
        base_ref="stage",
    )  # fmt: skip
    other.files[:] = [FileChange(filename="README.md", status="added")]
    event = load_event(
        "pull_request.opened", pull_request__number=3, pull_request__head__sha=head,
        pull_request__base__sha=stage, pull_request__base__ref="stage", number=3,
    )  # fmt: skip
    assert story.run("pull_request.opened", event).code == 0
    assert _statuses(story, head) == {"budget-gate": "pending", "budget-gate (stage)": "success"}


def test_a_pull_request_moved_to_another_base_is_judged_again(story) -> None:
    stage, head = _opened_into_stage(story)
    pull = story.repo.pull(NUMBER)
    assert _statuses(story, head) == {"budget-gate (stage)": "success"}
    pull.base_sha, pull.base_ref = BASE, story.repo.default_branch  # edited back to the default
    pull.files[:] = [FileChange(filename=SPEC, status="added"), FileChange(filename="README.md")]
    edited = story.pull_request_event()
    edited["action"] = "edited"
    edited["changes"] = {"base": {"ref": {"from": "stage"}, "sha": {"from": stage}}}
    assert story.run("pull_request.edited", edited).code == 0
    assert _statuses(story, head)["budget-gate"] == "pending"
    title = story.pull_request_event()
    title["action"] = "edited"
    title["changes"] = {"title": {"from": "old"}}
    ran = story.run("pull_request.edited", title)
    assert ran.code == 0 and "needs no check" in ran.stdout + ran.stderr


def test_a_pull_request_moved_off_the_default_branch_leaves_its_status_pending(story) -> None:
    """Approved into the default branch, moved to ``stage``, the approval withdrawn there: the
    default branch's green stayed on the head, for a move back and a merge before any run."""
    _, head = _stage_and_head(story)
    pull = story.repo.pull(NUMBER)
    default, base = pull.base_ref, pull.base_sha
    pull.files[:] = [FileChange(filename=SPEC, status="added"), FileChange(filename="README.md")]
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    review = story.review_event("alice", at=T0 + 3 * HOUR)
    assert story.run("pull_request_review", review).code == 0
    assert _statuses(story, head)["budget-gate"] == "success"
    pull.base_ref = "stage"
    edited = story.pull_request_event()
    edited["action"] = "edited"
    edited["changes"] = {"base": {"ref": {"from": default}, "sha": {"from": base}}}
    assert story.run("pull_request.edited", edited).code == 0
    statuses = _statuses(story, head)
    assert statuses["budget-gate"] == "pending"
    (found,) = [s for s in story.repo.latest_statuses(head) if s.context == "budget-gate"]
    assert found.description == "the pull request's base moved to stage: judged there"


def test_an_approval_given_before_the_base_was_edited_does_not_count_after(story) -> None:
    """Approved into ``stage``, where the costly spec is no change (a README edit); edited
    into the default branch, where it is one: the review approved another diff, so the spec
    needs an approval given after the edit (GitHub's date of it, not the author's)."""
    stage, head = _opened_into_stage(story)
    pull = story.repo.pull(NUMBER)
    assert story.run("pull_request_review", story.review_event("alice", at=T0 + 3 * HOUR)).code == 0
    pull.base_sha, pull.base_ref = BASE, story.repo.default_branch
    pull.files[:] = [FileChange(filename=SPEC, status="added"), FileChange(filename="README.md")]
    edited = story.pull_request_event("edited")
    edited["changes"] = {"base": {"ref": {"from": "stage"}, "sha": {"from": stage}}}
    ran = story.run("pull_request.edited", edited)
    assert ran.code == 0, ran.stderr
    assert _statuses(story, head)["budget-gate"] == "pending"
    (moved,) = [e.created_at for e in pull.events if e.event == "base_ref_changed"]
    refusal = "it was given before the pull request's base was changed on"
    assert refusal in story.bot_comments()[-1]
    again = story.review_event("alice", at=moved + dt.timedelta(seconds=1))
    assert story.run("pull_request_review", again).code == 0
    assert _statuses(story, head)["budget-gate"] == "success"


@pytest.mark.parametrize("how", ["not-listed-yet", "automatic"])
def test_a_base_edit_counts_before_github_lists_it_and_when_github_makes_it(story, how) -> None:
    """The ``edited`` run may read the issue events before GitHub lists the edit: the edit
    happened by then. GitHub's own retargeting of a stacked pull request (its base merged)
    is listed as ``automatic_base_change_succeeded``: a base edit too."""
    stage, head = _opened_into_stage(story)
    pull = story.repo.pull(NUMBER)
    assert story.run("pull_request_review", story.review_event("alice", at=T0 + 3 * HOUR)).code == 0
    pull.base_sha, pull.base_ref = BASE, story.repo.default_branch
    pull.files[:] = [FileChange(filename=SPEC, status="added"), FileChange(filename="README.md")]
    if how == "automatic":
        at = dt.datetime.now(dt.timezone.utc)
        pull.events.append(
            IssueEvent(
                id=1, actor="web-flow", event="automatic_base_change_succeeded", created_at=at
            )
        )
        ran = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    else:
        edited = story.pull_request_event("edited")
        edited["changes"] = {"base": {"ref": {"from": "stage"}, "sha": {"from": stage}}}
        ran = story.run("pull_request.edited", edited, seed=False)  # GitHub lists nothing yet
        assert not pull.events
    assert ran.code == 0, ran.stderr
    assert _statuses(story, head)["budget-gate"] == "pending"
    assert "before the pull request's base was changed on" in story.bot_comments()[-1]


SANDBOX_POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {H100: {on-demand: 80}}}
approval:
  trials_over: 32
  approvers: {users: [Codertocat], allow_self_approval: true}
"""


def test_an_approval_into_another_base_is_not_recorded_in_the_ledger(
    story: PullRequestStory, mlflow_server
) -> None:
    """The author pushes ``sandbox`` with a policy of their own (self-approval allowed,
    prices 10×) and approves their own pull request into it: the approval was recorded,
    signed as CI, and ``verify`` on main (whose policy refuses it) cleared the launch, and
    a read-only approver listed there turned main's status green. It counts for its own
    base's status only: the ledger, which launches read, holds no copy."""
    from gate.integrations import open_ledger
    from gate.ledger.records import LedgerQuery, RecordKind

    repo = story.repo
    sandbox = fake_sha("sandbox")
    repo.contents[sandbox] = dict(repo.files_at(BASE))
    repo.put_file("policies/default.yaml", SANDBOX_POLICY, ref=sandbox)
    policy = [FileChange(filename="policies/default.yaml")]
    repo.add_commit(sandbox, date=T0, files=policy, parents=[BASE], branch="sandbox")
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = f"ci-sandbox-{dt.datetime.now().timestamp():.0f}"
    pull = repo.pull(NUMBER)
    pull.base_sha, pull.base_ref = sandbox, "sandbox"
    story.change(SPEC, grid_spec(8).replace("team: nlp", f"team: {team}"), at=T0 + HOUR)
    event = story.pull_request_event()
    event["pull_request"]["base"].update(sha=sandbox, ref="sandbox")
    assert story.run("pull_request.opened", event).code == 0
    body = "/budget-gate approve mine"
    ran = story.run("issue_comment", story.comment_event("Codertocat", body, at=fresh()))
    assert ran.code == 0, ran.stderr
    assert f"into sandbox, not the default branch {repo.default_branch}" in ran.stdout
    assert "are not recorded in the ledger" in ran.stdout
    records = open_ledger(mlflow_server.uri, UNSIGNED).query(LedgerQuery(team=team))
    assert not [r for r in records if r.kind is RecordKind.APPROVAL]
    assert _statuses(story, pull.head_sha) == {"budget-gate (sandbox)": "success"}
