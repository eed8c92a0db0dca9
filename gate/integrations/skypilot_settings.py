"""The SkyPilot admin policy's settings: where the specs, policies and ledger are.

Read from the API server's environment when SkyPilot loads the policy by class path
(:meth:`PolicySettings.from_env`), or given by ``budget-gate serve skypilot-policy``'s
options; and what becomes of a GPU task that names no spec. Imports no SkyPilot.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from gate.errors import InputError
from gate.integrations.mlflow.patience import Patience
from gate.integrations.mlflow.tracking_uri import resolve_tracking_uri


class MissingSpec(str, Enum):
    """What happens to a GPU task that names no spec."""

    REJECT = "reject"
    ALLOW = "allow"


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Where the specs, policies and ledger are, and what to do with a GPU task without spec."""

    repo: Path
    policy_dir: Path
    tracking_uri: str
    missing_spec: MissingSpec = MissingSpec.REJECT

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PolicySettings:
        """Settings from the API server's environment.

        ``BUDGET_GATE_REPO`` (default: the working directory), ``BUDGET_GATE_POLICY_DIR``
        (default ``policies``, relative to the repository),
        ``MLFLOW_TRACKING_URI`` and ``BUDGET_GATE_MISSING_SPEC`` (``reject`` or ``allow``).
        Also checks ``BUDGET_GATE_LEDGER_TIMEOUT``, read by the ledger at each request.

        Raises:
            gate.errors.InputError: a value is malformed (one line: which, and the fix).
        """
        repo = Path(_plain("BUDGET_GATE_REPO", environ.get("BUDGET_GATE_REPO") or os.getcwd()))
        if not repo.is_dir():
            raise InputError(
                f"BUDGET_GATE_REPO is {str(repo)!r}, not a directory",
                hint="set it to the checkout that holds the specs and policies",
            )
        policy_dir = repo / _plain(
            "BUDGET_GATE_POLICY_DIR", environ.get("BUDGET_GATE_POLICY_DIR", "policies")
        )
        missing = environ.get("BUDGET_GATE_MISSING_SPEC", MissingSpec.REJECT.value)
        try:
            missing_spec = MissingSpec(missing)
        except ValueError:
            raise InputError(
                f"BUDGET_GATE_MISSING_SPEC is {missing[:40]!r}", hint="set it to reject or allow"
            ) from None
        Patience.from_env(environ)
        uri = _plain("MLFLOW_TRACKING_URI", resolve_tracking_uri(None, environ, policy_dir))
        return cls(repo, policy_dir, uri, missing_spec)


def _plain(name: str, value: str) -> str:
    """``value`` unless it holds a control character (a NUL cannot name a path or URL)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError(f"{name} holds a control character ({value[:40]!r})", hint=f"fix {name}")
    return value
