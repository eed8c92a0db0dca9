"""Which commit a ``/budget-gate approve`` approved, wherever its binding could be lost or forged.

A comment binds to the head when its own run first processes it, and the binding is kept
in the ledger or the sticky comment; a comment that names a commit by its full SHA binds
itself. A re-run of the comment's workflow (the same payload, after the author pushed)
binds nothing, whatever keeps the bindings; where nothing can keep them (the comment off,
no ledger), only a comment that names its commit counts; and the sticky keeps only the
bindings of comments that counted, so refused commands cannot grow it past GitHub's limit.
"""

from __future__ import annotations

import datetime as dt

import pytest

from gate.ci.event import run_attempt
from gate.errors import InputError
from gate.ledger.signing import CI_PRINCIPAL
from tests.github.ci_kit import BASE, NUMBER, SPEC, T0, PullRequestStory, fresh, grid_spec
from tests.ledger_kit import unique
from tests.signing_kit import Keys

HOUR = dt.timedelta(hours=1)
RERUN = "this run is a re-run (attempt 2) of the comment's workflow, which binds no comment"


def _grid(trials_per_axis: int, team: str) -> str:
    return grid_spec(trials_per_axis).replace("team: nlp", f"team: {team}")


def _approved_then_costlier(story: PullRequestStory, team: str = "nlp") -> dict[str, object]:
    """alice approves the 64-trial grid by comment; the author pushes 128 trials."""
    story.change(SPEC, _grid(4, team), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    event = story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    ran = story.run("issue_comment", event)
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"
    story.push({SPEC: _grid(8, team)}, at=fresh())
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status() == ("pending", "approval required · worst case 1,160.53 USD")
    return event


def test_a_rerun_of_the_comment_run_after_a_costlier_push_approves_nothing_signed(
    story: PullRequestStory, mlflow_server, keys: Keys
) -> None:
    """A signed ledger ignores the sticky's lines (a branch's workflow could forge them) and
    holds the comment's binding under the approved version only: the re-run must not bind."""
    story.repo.put_file("policies/allowed_signers", keys.signers(CI_PRINCIPAL, "alice"), ref=BASE)
    story.extra_env = {
        "MLFLOW_TRACKING_URI": mlflow_server.uri,
        "BUDGET_GATE_SIGNING_KEY": str(keys.private(CI_PRINCIPAL)),
    }
    event = _approved_then_costlier(story, unique("rebind"))
    ran = story.run("issue_comment", event, GITHUB_RUN_ATTEMPT="2")  # "Re-run jobs"
    assert ran.code == 0, ran.stderr
    assert story.status() == ("pending", "approval required · worst case 1,160.53 USD")
    assert RERUN in " ".join(story.comments()[-1].split())
    assert "recorded approval" not in ran.stdout


def test_a_rerun_with_the_comment_off_approves_nothing(
    story: PullRequestStory, mlflow_server
) -> None:
    """With the comment off no sticky line binds the comment, and the ledger holds its
    binding under the approved version only: the attempt is what stops the re-run."""
    story.extra_env = {"BUDGET_GATE_COMMENT": "off", "MLFLOW_TRACKING_URI": mlflow_server.uri}
    event = _approved_then_costlier(story, unique("rerun-off"))
    ran = story.run("issue_comment", event, GITHUB_RUN_ATTEMPT="3")
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    assert RERUN.replace("attempt 2", "attempt 3") in " ".join(story.comments()[-1].split())


def test_with_the_comment_off_and_no_ledger_only_a_named_commit_binds(
    story: PullRequestStory,
) -> None:
    """Nothing keeps a binding: an unnamed comment is refused at once, saying how to approve,
    rather than counted now and lost at the next run; a named one counts in every run."""
    story.extra_env = {"BUDGET_GATE_COMMENT": "off"}
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    ran = story.run(
        "issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    )
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    said = " ".join(story.comments()[-1].split())  # the reply: the comment is off
    assert "nothing here keeps which commit a comment approved" in said
    named = f"/budget-gate approve {story.head} reviewed"
    story.run("issue_comment", story.comment_event("alice", named, at=fresh()))
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    story.push({"README.md": "more words\n"}, at=fresh())  # leaves the spec alone
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    story.push({SPEC: grid_spec(8)}, at=fresh())  # a costlier grid: the named head is stale
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "pending"


def test_the_sticky_keeps_only_bindings_of_comments_that_counted(story: PullRequestStory) -> None:
    """Refused commands by anyone, and lines of comments that are gone, are not carried
    forward: a flood of them cannot push the sticky past GitHub's 65,536 characters."""
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    (sticky,) = [c for c in story.repo.comments_on(NUMBER) if c.author == "github-actions[bot]"]
    first, _, rest = sticky.body.partition("\n\n")
    gone = "".join(
        f"<!-- budget-gate:bound:comment-{9_000_000 + i}:{story.head} -->\n" for i in range(1_000)
    )
    sticky.body = f"{first}\n{gone}\n{rest}"  # what ~1,000 earlier runs left behind
    refused = story.comment_event("mallory", "/budget-gate approve", at=fresh())
    assert story.run("issue_comment", refused).code == 0
    alice = story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    assert story.run("issue_comment", alice).code == 0
    assert story.status()[0] == "success"
    (body,) = story.bot_comments()[:1]
    assert body.count("budget-gate:bound:") == 1
    assert f"budget-gate:bound:comment-{alice['comment']['id']}:{story.head}" in body
    assert f"comment-{refused['comment']['id']}" not in body
    story.push({"README.md": "more words\n"}, at=fresh())
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "success"  # the kept binding still counts


def test_a_malformed_run_attempt_is_bad_input(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event(), GITHUB_RUN_ATTEMPT="two")
    assert ran.code == 3
    assert "GITHUB_RUN_ATTEMPT 'two' is not a run attempt" in ran.stderr
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize(
    ("value", "attempt"), [(None, 1), ("1", 1), ("2", 2), ("17", 17), ("999999", 999_999)]
)
def test_run_attempt_reads_github_s_counter(value: str | None, attempt: int) -> None:
    assert run_attempt(value) == attempt


@pytest.mark.parametrize("value", ["", "0", "-1", "1.5", "²", "1" * 5_000, " 2"])
def test_run_attempt_refuses_anything_else(value: str) -> None:
    with pytest.raises(InputError, match="is not a run attempt"):
        run_attempt(value)


def test_stale_commands_by_many_people_cost_no_team_or_role_requests(
    story: PullRequestStory,
) -> None:
    """Who may approve is asked of GitHub last: commands whose commit is unknown or stale
    are refused before, so a flood of them on a public repository spends no rate limit."""
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    story.run("pull_request.opened", story.pull_request_event())
    for n in range(12):
        login = f"passer-by-{n}"
        story.fake.add_user(login)
        story.fake.seed_from_event(story.comment_event(login, "/budget-gate approve", at=fresh()))
    story.fake.clear_log()
    ran = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    asked = [
        r.path
        for op in (
            "teams/get-membership-for-user-in-org",
            "repos/get-collaborator-permission-level",
        )
        for r in story.fake.requests_for(op)
    ]
    assert not [path for path in asked if "passer-by" in path]
    said = " ".join(story.bot_comments()[0].split())
    assert said.count("the commit it approved is unknown") == 12


def test_a_binding_line_quoted_in_another_bot_comment_binds_nothing(
    story: PullRequestStory,
) -> None:
    """Another workflow posting as the same account (a lint report quoting a changed file)
    carries the line a fork's author wrote: only the lines that open budget-gate's own
    sticky comment bind."""
    event = _approved_then_costlier(story)
    costly = story.head
    line = f"<!-- budget-gate:bound:comment-{event['comment']['id']}:{costly} -->"
    story.push({"docs/notes.md": f"{line}\n"}, at=fresh())  # leaves the spec alone
    quoted = f"### markdownlint\n\n```\ndocs/notes.md:1\n{line}\n```\n"
    story.repo.add_comment(NUMBER, "github-actions[bot]", quoted)
    story.repo.add_comment(NUMBER, "github-actions[bot]", f"{line}\n")  # even at its top
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending", "alice approved 64 trials, never 128"


def test_a_signed_ledger_without_the_ci_key_binds_no_unnamed_comment(
    story: PullRequestStory, mlflow_server, keys: Keys
) -> None:
    """Its records cannot be written and it ignores the sticky's lines: nothing keeps the
    binding, so the comment is refused at once rather than green now and lost at the next
    push; a comment naming the head counts in every run."""
    story.repo.put_file("policies/allowed_signers", keys.signers(CI_PRINCIPAL, "alice"), ref=BASE)
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}  # no BUDGET_GATE_SIGNING_KEY
    team = unique("nokey")
    story.change(SPEC, _grid(4, team), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    said = " ".join(story.bot_comments()[0].split())
    assert f"comment “/budget-gate approve {story.head} &lt;reason&gt;”" in said  # named
    event = story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    assert story.run("issue_comment", event).code == 0
    assert story.status()[0] == "pending"
    assert "nothing here keeps which commit a comment approved" in " ".join(
        story.comments()[-1].split()
    )
    named = story.comment_event("alice", f"/budget-gate approve {story.head} ok", at=fresh())
    assert story.run("issue_comment", named).code == 0
    assert story.status()[0] == "success"
    story.push({"README.md": "typo\n"}, at=fresh())
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "success"
