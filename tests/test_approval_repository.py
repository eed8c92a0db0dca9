"""A GitHub approval counts only in the repository it was given in (review 5, finding 2).

Through the real CLI against the session's MLflow server: the ledger holds a GitHub
approval CI recorded on ``org/repo-a``'s pull request, and ``verify`` runs in a checkout of
the same spec at the same path. In ``org/repo-b`` (``GITHUB_REPOSITORY`` or the ``origin``
remote) it clears nothing; in ``org/repo-a`` it does; where the repository cannot be told,
it passes with a line saying its repository was not checked. A GitHub approver the policy
no longer lists (it names no teams nor permission) no longer clears launches either.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest

from tests.ledger_kit import Team, github_approval

UTC = dt.timezone.utc


@pytest.fixture(autouse=True)
def _nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)


def test_another_repositorys_github_approval_clears_nothing(
    team: Team, monkeypatch: pytest.MonkeyPatch
):
    spec = team.spec(8)
    github_approval(team, spec)
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/repo-b")
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 2, out
    assert "was given on GitHub in org/repo-a, not in org/repo-b" in out

    monkeypatch.setenv("GITHUB_REPOSITORY", "Org/Repo-A")  # GitHub names ignore case
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 0, out
    assert "approved: approval by alice" in out and "not checked" not in out


def test_the_origin_remote_names_the_repository(team: Team):
    spec = team.spec(8)
    github_approval(team, spec)
    git = ["git", "-C", str(team.root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:org/repo-b.git"], check=True)
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 2 and "not in org/repo-b" in out, out


def test_an_approval_naming_no_repository_counts_only_where_none_is_known(
    team: Team, monkeypatch: pytest.MonkeyPatch
):
    spec = team.spec(8)
    github_approval(team, spec, repository=None)
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 0, out
    assert "note: approval by alice on" in out
    assert "given on GitHub in a repository it does not name" in out and "not checked" in out
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/repo-b")
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 2 and "in a repository it does not name, not in org/repo-b" in out


def test_an_unknown_repository_is_said_not_passed_over(team: Team):
    spec = team.spec(8)
    github_approval(team, spec)
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 0, out
    assert "was given on GitHub in org/repo-a; which repository this is is unknown" in out


def test_a_github_approver_the_policy_no_longer_lists_clears_nothing(
    team: Team, monkeypatch: pytest.MonkeyPatch
):
    spec = team.spec(8)
    github_approval(team, spec, by="bob")
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/repo-a")
    assert team.cli("verify", spec, "--dry-run")[0] == 0
    policy = Path(team.policy_dir) / "default.yaml"
    text = policy.read_text(encoding="utf-8")
    policy.write_text(text.replace("users: [alice, bob]", "users: [alice, dave]"), "utf-8")
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 2, out
    assert "no longer counts: bob is not an approver" in out
