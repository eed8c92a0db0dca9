"""Which events ``budget-gate ci`` acts on, read from the real webhook payloads."""

from __future__ import annotations

import pytest

from gate.ci.event import named_commit, parse_command, parse_event
from gate.errors import InputError
from tests.github.events import DELETE, load_event

HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened", "labeled"])
@pytest.mark.parametrize("name", ["pull_request", "pull_request_target"])
def test_pull_request_actions_run_for_the_pushed_head(name: str, action: str) -> None:
    event = parse_event(name, load_event("pull_request.opened", action=action))
    assert (event.skip, event.number, event.head_sha, event.command) == (None, 2, HEAD, None)
    assert event.repository == "Codertocat/Hello-World"


def test_other_pull_request_actions_do_nothing() -> None:
    event = parse_event("pull_request", load_event("pull_request.opened", action="closed"))
    assert event.skip == "pull request 'closed' needs no check"
    assert event.number is None


@pytest.mark.parametrize(
    ("fixture", "action", "skip"),
    [
        ("pull_request_review.submitted.approved", "submitted", None),
        ("pull_request_review.submitted.commented", "dismissed", None),
        (
            "pull_request_review.submitted.commented",
            "edited",
            "review 'edited' changes no approval",
        ),
    ],
)
def test_reviews_judge_the_current_head(fixture: str, action: str, skip: str | None) -> None:
    event = parse_event("pull_request_review", load_event(fixture, action=action))
    assert event.skip == skip
    assert event.head_sha is None  # the pull request's head, read from the API


def test_an_approve_command_on_a_pull_request() -> None:
    payload = load_event(
        "issue_comment.created.on-pull-request",
        comment__body="/budget-gate approve  worth it for the Q4 launch \r\nthanks",
    )
    event = parse_event("issue_comment", payload)
    assert (event.skip, event.number) == (None, 3)
    assert event.command is not None
    assert (event.command.login, event.command.reason) == ("chhsia0", "worth it for the Q4 launch")
    assert event.command.comment_id == payload["comment"]["id"]


@pytest.mark.parametrize(
    ("fixture", "overrides", "skip"),
    [
        ("issue_comment.created.on-pull-request", {}, "not a /budget-gate approve command"),
        (
            "issue_comment.created.on-issue",
            {"comment__body": "/budget-gate approve"},
            "the comment is on an issue, not a pull request",
        ),
        (
            "issue_comment.created.on-pull-request",
            {"action": "edited", "comment__body": "thanks"},
            "comment 'edited' was not a /budget-gate approve command",
        ),
        (
            "issue_comment.created.on-pull-request",
            {"action": "pinned", "comment__body": "/budget-gate approve"},
            "comment 'pinned' is not a new command",
        ),
    ],
)
def test_other_comments_do_nothing(fixture: str, overrides: dict, skip: str) -> None:
    event = parse_event("issue_comment", load_event(fixture, **overrides))
    assert event.skip is not None and skip in event.skip


@pytest.mark.parametrize(
    ("action", "body", "was"),
    [
        ("deleted", "/budget-gate approve ok", None),
        ("edited", "/budget-gate approve ok, edited", None),  # still a command: judged again
        ("edited", "never mind", "/budget-gate approve ok"),  # edited away from one
    ],
)
def test_an_approve_command_taken_back_judges_the_pull_request_again(
    action: str, body: str, was: str | None
) -> None:
    """A deleted or edited command may withdraw its approval: a run, with no command."""
    payload = load_event("issue_comment.created.on-pull-request", action=action, comment__body=body)
    if was is not None:
        payload["changes"] = {"body": {"from": was}}
    event = parse_event("issue_comment", payload)
    assert event.skip is None and event.command is None
    assert event.number == payload["issue"]["number"]


def test_unknown_events_do_nothing_and_broken_payloads_are_input_errors() -> None:
    assert parse_event("push", {"repository": {"full_name": "o/r"}}).skip is not None
    with pytest.raises(InputError, match="payload is not what GitHub sends"):
        parse_event("pull_request", load_event("pull_request.opened", pull_request=DELETE))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("/budget-gate approve", ""),
        ("/budget-gate approve\tbig but worth it  ", "big but worth it"),
        # the workflow runs on a body that starts with the command: so does the command
        ("  /budget-gate approve", None),
        ("\n/budget-gate approve", None),
        ("/budget-gate approve\nsecond line is not the reason", ""),
        ("/budget-gate approved", None),
        ("/budget-gate   approve-all", None),
        ("please /budget-gate approve", None),
        ("> /budget-gate approve", None),
        ("lgtm\n/budget-gate approve", None),
        ("", None),
    ],
)
def test_only_a_first_line_command_counts(body: str, reason: str | None) -> None:
    assert parse_command(body) == reason


@pytest.mark.parametrize(
    ("reason", "named"),
    [
        ("ec26c3e", ("ec26c3e", "")),
        ("EC26C3E57CA3 worth it", ("ec26c3e57ca3", "worth it")),
        (HEAD + " ok", (HEAD, "ok")),
        ("ec26c3", (None, "ec26c3")),  # under 7: a word of the reason
        ("ec26c3eg worth it", (None, "ec26c3eg worth it")),
        ("`ec26c3e` worth it", ("ec26c3e", "worth it")),  # as GitHub shows a commit
        ("(ec26c3e), worth it", ("ec26c3e", "worth it")),
        ("ec26c3e: worth it", ("ec26c3e", "worth it")),
        ("(ec26c3e` worth it", (None, "(ec26c3e` worth it")),
        ("20240115 nightly", (None, "20240115 nightly")),  # digits alone: a reason
        ("defaced", (None, "defaced")),  # letters alone: a reason
        ("202401150000 nightly", ("202401150000", "nightly")),  # 12 or more: a commit
        ("worth it", (None, "worth it")),
        ("", (None, "")),
    ],
)
def test_a_command_may_name_the_commit_it_approves(reason: str, named: tuple) -> None:
    assert named_commit(reason) == named
