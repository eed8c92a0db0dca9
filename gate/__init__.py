"""budget-gate: price ML experiments before launch and gate them on team policy.

For launch scripts::

    import gate

    cleared = gate.require_approval("experiments/sweep.yaml")   # raises if not cleared
    mlflow.set_tags(cleared.run_tags(trial_id=7))

Importing ``gate`` stays cheap: the pipeline and MLflow load on the first call.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import ApprovalRequired, BackendError, GateError, InputError, PolicyViolation

if TYPE_CHECKING:
    from gate.launch import Verification

__version__ = "0.1.0"
__all__ = [
    "ApprovalRequired",
    "BackendError",
    "GateError",
    "InputError",
    "PolicyViolation",
    "__version__",
    "require_approval",
]


def require_approval(
    spec: str | Path,
    *,
    policy_dir: str | Path = "policies",
    tracking_uri: str | None = None,
    now: dt.datetime | None = None,
) -> Verification:
    """Clear ``spec`` for launch, as ``budget-gate verify`` does, or raise why not.

    Returns a :class:`gate.launch.Verification` with the approval used (``None`` when none
    was needed) and ``run_tags(trial_id)`` for the experiment's MLflow runs. The ledger is
    at ``tracking_uri``, else ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``.

    Raises:
        ApprovalRequired: no fresh approval for this exact spec version (exit code 2).
        PolicyViolation: the spec breaks the policy (1).
        InputError: the spec or a policy is invalid (3).
        BackendError: the ledger could not be read (4).
    """
    from gate.launch import require_approval as verify

    return verify(spec, policy_dir=policy_dir, tracking_uri=tracking_uri, now=now)
