"""Issue 11 item 4: who ran a local approval is on record; ``approval.sources: [github]``.

Through the real CLI in a child process against the real MLflow server: a local record
carries the OS user and ``git config user.email`` of whoever ran ``approve``; a policy
that counts only GitHub-verified approvals makes ``verify``, ``check`` and
``gate.require_approval`` ignore local ones (and ``approve`` refuse to write them), while
an approval the pull-request flow recorded still counts.
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import subprocess

import pytest

import gate
from gate.integrations import open_ledger
from gate.ledger.records import RecordKind, Source
from tests.ledger_kit import UNSIGNED, Team
from tests.reconcile_kit import GOOD, Lab
from tests.test_quiet_greens import cli

GITHUB_ONLY = "  sources: [github]\n"
REFUSED = "the policy counts only approvals from github (approval.sources), and this one is local"


def _approve(team: Team, spec: str, **kw) -> subprocess.CompletedProcess[str]:
    where = ("--policy-dir", team.policy_dir, "--tracking-uri", team.uri)
    return cli("approve", spec, *where, "--by", "alice", "--reason", "worth it", **kw)


def _verify(team: Team, spec: str, command: str = "verify") -> subprocess.CompletedProcess[str]:
    return cli(command, spec, "--policy-dir", team.policy_dir, "--tracking-uri", team.uri)


def test_a_local_record_names_the_os_user_and_git_email_that_ran_it(team: Team, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    email = "priya@example.com"
    subprocess.run(["git", "-C", str(repo), "config", "user.email", email], check=True)
    spec = team.spec(10)
    proc = _approve(team, spec, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    user = getpass.getuser()
    assert f"  run by OS user {user} (git user.email {email})" in proc.stdout
    [record] = team.records(spec)
    assert (record.by, record.ran_by_user, record.ran_by_email) == ("alice", user, email)


def test_github_only_sources_ignore_local_approvals_and_count_github_ones(team: Team):
    spec = team.spec(10)  # 10 trials > 4: needs approval
    assert _approve(team, spec).returncode == 0
    assert _verify(team, spec).returncode == 0  # by default a local approval counts

    team.policy(extra=GITHUB_ONLY)
    verify = _verify(team, spec)
    assert verify.returncode == 2
    assert REFUSED in verify.stdout
    assert _verify(team, spec, "check").returncode == 2
    with pytest.raises(gate.ApprovalRequired) as raised:
        gate.require_approval(spec, policy_dir=team.policy_dir, tracking_uri=team.uri)
    assert any(REFUSED in reason for reason in raised.value.reasons)

    refused = _approve(team, spec)
    assert refused.returncode == 3
    assert f"cannot approve {spec} here: {REFUSED}" in refused.stderr
    assert "approve the pull request on GitHub" in refused.stderr

    # What the pull-request flow records after checking the reviewer on GitHub
    [local] = [r for r in team.records(spec) if r.kind is RecordKind.APPROVAL]
    reviewed = dataclasses.replace(local, source=Source.GITHUB_REVIEW, record_id=None, pr_number=7)
    open_ledger(team.uri, UNSIGNED).append(reviewed)
    assert _verify(team, spec, "check").returncode == 0  # counts it, launches nothing
    cleared = gate.require_approval(spec, policy_dir=team.policy_dir, tracking_uri=team.uri)
    assert cleared.approval is not None and cleared.approval.source is Source.GITHUB_REVIEW


def test_sources_must_name_known_origins(team: Team):
    team.policy(extra="  sources: [slack]\n")
    proc = _verify(team, team.spec(10))
    assert proc.returncode == 3
    assert (
        "default.yaml:9:13: approval.sources[0]: 'slack' is not allowed — use 'local' or 'github'"
        in proc.stderr
    )


def test_reconcile_measures_against_a_local_approval_only_while_local_ones_count(lab: Lab):
    lab.log(hours=10, metrics=GOOD)
    spec, team = lab.spec, lab.team  # 6 trials > 4: needs approval
    assert _approve(team, spec).returncode == 0
    args = ("reconcile", lab.spec, "--policy-dir", team.policy_dir, "--dry-run")
    proc = cli(*args, "--tracking-uri", team.uri, "--format", "json")
    assert json.loads(proc.stdout)["variance"]["reference"] == "approved"

    team.policy(extra=GITHUB_ONLY)
    proc = cli(*args, "--tracking-uri", team.uri, "--format", "json")
    assert json.loads(proc.stdout)["variance"]["reference"] == "worst-case estimate"
