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
