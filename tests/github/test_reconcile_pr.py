"""``reconcile --pr N`` writes its Markdown report to the pull request, through the fake GitHub."""

from __future__ import annotations

import pytest

from gate.ledger.records import RecordKind
from gate.reporters.reconcile_markdown import reconcile_marker
from tests.github.fake_github import DEFAULT_TOKEN
from tests.reconcile_kit import GOOD

REPO = "Codertocat/Hello-World"
PR = 2  # the pull request of the default event


@pytest.fixture
def in_workflow(github_env, monkeypatch):
    for key, value in github_env().items():
        monkeypatch.setenv(key, value)


def said(err: str) -> str:
    """Stderr without the warning every ledger read gives when records are unsigned."""
    return "".join(line for line in err.splitlines(True) if "records are not signed" not in line)


def comments(fake_github):
    return fake_github.repo(REPO).comments_on(PR)


def test_the_report_becomes_one_sticky_comment(lab, fake_github, in_workflow):
    lab.log(hours=10, metrics=GOOD)
    code, out, err = lab.reconcile("--pr", str(PR))
    assert code == 0
    [comment] = comments(fake_github)
    marker = reconcile_marker(REPO, lab.spec)
    assert comment.body.startswith(marker + "\n\n## ✅ budget-gate reconcile: 100.00 USD")
    assert "Recorded in the ledger as run" in comment.body
    assert said(err).startswith("budget-gate: wrote the reconciliation to http://127.0.0.1:")
    assert "verdict: pass (exit 0)" in out  # stdout keeps its own format
    [record] = [r for r in lab.team.records(lab.spec) if r.kind is RecordKind.RECONCILIATION]
    assert record.pr_number == PR

    lab.log(trial=1, start=1, hours=10, metrics={**GOOD, "val_macro_f1": 0.1})
    assert lab.reconcile("--pr", str(PR))[0] == 0
    [edited] = comments(fake_github)  # edited in place, not a second comment
    assert edited.id == comment.id and "200.00 USD per qualified model" in edited.body
    assert len(fake_github.requests_for("issues/create-comment")) == 1
    assert len(fake_github.requests_for("issues/update-comment")) == 1


def test_other_comments_are_left_alone(lab, fake_github, in_workflow):
    repo = fake_github.repo(REPO)
    repo.add_comment(PR, "octocat", "<!-- budget-gate:comment:0123456789abcdef -->\n\ncheck")
    lab.log(hours=10, metrics=GOOD)
    assert lab.reconcile("--pr", str(PR))[0] == 0
    bodies = [c.body for c in comments(fake_github)]
    assert len(bodies) == 2 and bodies[0].endswith("check")


def test_dry_run_writes_no_comment(lab, fake_github, in_workflow):
    lab.log(hours=10, metrics=GOOD)
    assert lab.reconcile("--pr", str(PR), "--dry-run")[0] == 0
    assert comments(fake_github) == [] and fake_github.writes == []


def test_without_a_token_nothing_is_done(lab, fake_github, in_workflow, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    lab.log(hours=10, metrics=GOOD)
    code, out, err = lab.reconcile("--pr", str(PR))
    assert code == 3 and out == ""
    assert "cannot write to GitHub: GITHUB_TOKEN not set" in err
    assert lab.team.records(lab.spec) == []  # it stopped before the ledger write


def test_a_github_failure_is_exit_4_without_the_token(lab, fake_github, in_workflow):
    # 422 is not retried (a 502 would be, and succeed on the retry).
    fake_github.fail_next("issues/create-comment", 422, "Validation Failed")
    lab.log(hours=10, metrics=GOOD)
    code, out, err = lab.reconcile("--pr", str(PR))
    assert code == 4 and out == ""
    assert said(err) == (
        f"budget-gate: GitHub at {fake_github.base_url} answered 422 while writing the comment "
        f"on #{PR}: Validation Failed\n"
    )
    assert DEFAULT_TOKEN not in err


def test_an_unknown_pull_request_is_exit_4(lab, fake_github, in_workflow):
    lab.log(hours=10, metrics=GOOD)
    code, _, err = lab.reconcile("--pr", "999")
    assert code == 4 and "answered 404 while writing the comment on #999" in err


def test_an_unreachable_github_is_exit_4(lab, fake_github, in_workflow, monkeypatch):
    from tests.mlflow_server import free_port

    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{free_port()}")
    lab.log(hours=10, metrics=GOOD)
    code, _, err = lab.reconcile("--pr", str(PR))
    assert code == 4
    assert "could not be reached while writing the comment on #2" in err
