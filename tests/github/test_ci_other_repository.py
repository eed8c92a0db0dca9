"""Another repository's GitHub approval does not clear this pull request (review 5, finding 2).

Why: a ledger and a CI key may serve an organization's repositories. CI of ``org/repo-a``
recorded alice's review of its pull request #5; this repository's pull request changes a
spec at the same path to the same content, and the ledger's copy turned its status green:
the record's pull request number differed, so it was not this one's to withdraw, and
nothing read the repository it names. The real ``budget-gate ci`` against the fake GitHub.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from gate.integrations import open_ledger
from tests.github.ci_kit import REPO, T0, PullRequestStory, grid_spec
from tests.ledger_kit import UNSIGNED, github_approval_record, unique

HOUR = dt.timedelta(hours=1)


def _recorded_in(repository: str | None, spec: str, text: str, tmp_path, uri: str) -> None:
    """The approval ``budget-gate ci`` of ``repository`` records after alice's review."""
    file = tmp_path / "spec.yaml"
    file.write_text(text, encoding="utf-8")
    record = github_approval_record(
        str(file),
        spec=spec,
        experiment="llama",
        worst_cost=Decimal("1000"),
        head_sha="b" * 40,
        event_id="review-5005",
        repository=repository,
    )
    open_ledger(uri, UNSIGNED).append(record)


def test_another_repositorys_github_approval_is_not_this_pull_requests(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    ran = _opened_with_approval_from("org/repo-a", story, mlflow_server.uri, tmp_path)
    assert story.status()[0] == "pending"
    [why, *_] = ran.report["results"][0]["approval"]["stale"]
    assert why.startswith("approval by alice on ")
    assert why.endswith(f"was given on GitHub in org/repo-a, not in {REPO}: approve it in "
                        "this repository")  # fmt: skip


def test_this_repositorys_github_approval_of_another_pull_request_still_counts(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    """The same record, given here (as CI names this repository), clears the spec."""
    _opened_with_approval_from(REPO.lower(), story, mlflow_server.uri, tmp_path)
    assert story.status()[0] == "success"


def _opened_with_approval_from(repository: str, story: PullRequestStory, uri: str, tmp_path):
    """A pull request changing a spec whose GitHub approval ``repository``'s CI recorded."""
    story.extra_env = {"MLFLOW_TRACKING_URI": uri}
    text = grid_spec(4).replace("team: nlp", f"team: {unique('ci')}")
    spec = f"experiments/{unique('llm-grid')}.yaml"
    story.change(spec, text, at=T0 + HOUR)
    _recorded_in(repository, spec, text, tmp_path, uri)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    return ran
