"""Issue 11 item 4 through the Action: ``approval.sources: [github]`` ignores local approvals.

The real ``budget-gate ci`` process against the fake GitHub, with the MLflow ledger: a
local ``budget-gate approve`` of the very spec version turns the status green under the
base policy, but not once the base policy counts only GitHub-verified approvals; a
review by a listed approver then does.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

from tests.github.ci_kit import POLICY, T0, PullRequestStory, grid_spec
from tests.ledger_kit import unique

HOUR = dt.timedelta(hours=1)


def test_github_only_sources_ignore_a_local_ledger_approval(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    spec_text = grid_spec(4).replace("team: nlp", f"team: {unique('ci')}")
    # A path of its own: the ledger is shared, and approvals of another version at the same
    # path would add "the spec changed since its last approval" to the reasons below.
    spec = f"experiments/{unique('llm-grid')}.yaml"
    story.change(spec, spec_text, at=T0 + HOUR)

    # Someone approves the same version locally, at a terminal, against the same policy.
    local = tmp_path / "local"
    (local / "policies").mkdir(parents=True)
    (local / "policies" / "default.yaml").write_text(POLICY, encoding="utf-8")
    (local / "experiments").mkdir()
    (local / spec).write_text(spec_text, encoding="utf-8")  # the same path in the repository
    approve = [sys.executable, "-m", "gate", "approve", spec, "--by", "alice"]
    where = ["--reason", "at my desk", "--tracking-uri", mlflow_server.uri]
    proc = subprocess.run(
        [*approve, *where], cwd=local, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr

    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"  # by default the local approval counts

    base = story.repo.pull(2).base_sha
    story.repo.put_file("policies/default.yaml", POLICY + "  sources: [github]\n", ref=base)
    ran = story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert story.status() == ("pending", "approval required · worst case 580.27 USD")
    report = ran.report["results"][0]
    assert report["outcome"] == "approval-required"
    [why, ask] = report["approval"]["stale"]
    assert why.startswith("approval by alice on ")
    assert why.endswith("no longer counts: the policy counts only approvals from github "
                        "(approval.sources), and this one is local")  # fmt: skip
    assert ask.startswith("approvers: users alice")

    ran = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"


def _approve_locally(tmp_path, spec: str, text: str, policy: str, by: str, uri: str) -> None:
    local = tmp_path / f"local-{by}"
    (local / "policies").mkdir(parents=True)
    (local / "policies" / "default.yaml").write_text(policy, encoding="utf-8")
    (local / "experiments").mkdir()
    (local / spec).write_text(text, encoding="utf-8")
    argv = [sys.executable, "-m", "gate", "approve", spec, "--by", by, "--reason", "mine"]
    proc = subprocess.run(
        [*argv, "--tracking-uri", uri], cwd=local, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_a_ledger_approval_by_the_author_does_not_count_on_the_pull_request(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    """Refused as a review by them is: the author approves through the ledger instead."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    policy = POLICY.replace("users: [alice]", "users: [alice, Codertocat]")
    story.repo.put_file("policies/default.yaml", policy, ref=story.repo.pull(2).base_sha)
    text = grid_spec(4).replace("team: nlp", f"team: {unique('ci')}")
    spec = f"experiments/{unique('llm-grid')}.yaml"
    story.change(spec, text, at=T0 + HOUR)
    _approve_locally(tmp_path, spec, text, policy, "Codertocat", mlflow_server.uri)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    stale = " ".join(ran.report["results"][0]["approval"]["stale"])
    assert "the approval by Codertocat in the ledger: Codertocat opened the pull request" in stale


def test_a_ledger_approval_by_who_pushed_the_change_does_not_count(
    story: PullRequestStory, mlflow_server, tmp_path
) -> None:
    """alice pushes the costlier grid to Codertocat's pull request, then records an approval."""
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    team = unique("ci")
    spec = f"experiments/{unique('llm-grid')}.yaml"
    story.change(spec, grid_spec(4).replace("team: nlp", f"team: {team}"), at=T0 + HOUR)
    costly = grid_spec(8).replace("team: nlp", f"team: {team}")
    story.push({spec: costly}, at=T0 + 2 * HOUR, author="alice", committer="alice")
    _approve_locally(tmp_path, spec, costly, POLICY, "alice", mlflow_server.uri)
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    stale = " ".join(ran.report["results"][0]["approval"]["stale"])
    assert f"the approval by alice in the ledger: alice authored {story.head[:7]}" in stale
