"""Real SSH keys for ledger signing tests: one ed25519 key per principal, made by ssh-keygen.

Registered from ``tests/conftest.py`` (``pytest_plugins``) for its ``keys`` fixture.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from gate.ledger.signing import CI_PRINCIPAL

PRINCIPALS = ("alice", "bob", "carol", "mallory", CI_PRINCIPAL, "launcher")


@dataclass(frozen=True)
class Keys:
    """A private key file per principal, and the signers file lines that list them."""

    folder: Path

    def private(self, principal: str) -> Path:
        return self.folder / principal

    def public(self, principal: str) -> str:
        return (self.folder / f"{principal}.pub").read_text().split()[:2]

    def line(self, principal: str, *, key_of: str | None = None, options: str = "") -> str:
        """``principal [options] ssh-ed25519 AAAA…`` (``key_of``: list another's key)."""
        key_type, key = self.public(key_of or principal)
        return " ".join(filter(None, [principal, options, key_type, key]))

    def signers(self, *principals: str) -> str:
        """A signers file listing each principal with its own key."""
        return "".join(self.line(p) + "\n" for p in principals)

    def env(self, principal: str, *, key_of: str | None = None) -> dict[str, str]:
        """The environment that makes budget-gate sign as ``principal``."""
        return {
            "BUDGET_GATE_SIGNING_KEY": str(self.private(key_of or principal)),
            "BUDGET_GATE_SIGNER": principal,
        }


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    folder = tmp_path_factory.mktemp("keys")
    for principal in PRINCIPALS:
        subprocess.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                principal,
                "-f",
                str(folder / principal),
            ],
            check=True,
        )
    return Keys(folder)
