"""Steps of the revocation-history stories: signing as someone, committing the policies."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.ledger_kit import Team
from tests.signing_kit import Keys


def as_principal(monkeypatch: pytest.MonkeyPatch, keys: Keys, principal: str) -> None:
    for name, value in keys.env(principal).items():
        monkeypatch.setenv(name, value)


def git(root: Path, *args: str) -> None:
    identity = ["-c", "user.email=carol@example.com", "-c", "user.name=carol"]
    subprocess.run(["git", *identity, *args], cwd=root, check=True, capture_output=True)


def policies_committed(team: Team) -> None:
    """The team's folder a git work tree, its policies committed (their history's start)."""
    git(team.root, "init", "-q")
    git(team.root, "add", "policies")
    git(team.root, "commit", "-qm", "policies")


def bob_leaves(team: Team) -> None:
    policy = Path(team.policy_dir) / "default.yaml"
    text = policy.read_text(encoding="utf-8")
    policy.write_text(text.replace("users: [alice, bob]", "users: [alice, dave]"), "utf-8")
