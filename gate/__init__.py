"""budget-gate: price ML experiments before launch and gate them on team policy.

For launch scripts::

    import gate

    cleared = gate.require_approval("experiments/sweep.yaml")   # raises if not cleared
    mlflow.set_tags(cleared.run_tags(trial_id=7))

``gate.open_guard(spec)`` builds the runtime guard a search holds itself to (see
:mod:`gate.guard`). ``gate.require_approval`` is :func:`gate.launch.require_approval`
and ``gate.open_guard`` :func:`gate.launch.open_guard`, loaded on first use so
that ``import gate`` (and the CLI's start) stays cheap; MLflow loads only when the ledger
is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate.errors import (
    ApprovalRequired,
    BackendError,
    GateError,
    InputError,
    MissingExtra,
    PolicyViolation,
)

if TYPE_CHECKING:
    from gate.launch import Verification, open_guard, require_approval

__version__ = "0.1.0"
__all__ = [
    "ApprovalRequired",
    "BackendError",
    "GateError",
    "InputError",
    "MissingExtra",
    "PolicyViolation",
    "Verification",
    "__version__",
    "open_guard",
    "require_approval",
]
_LAZY = ("Verification", "open_guard", "require_approval")


def __getattr__(name: str) -> object:
    """Load the launch API, and ``gate.tracking``, on first use (PEP 562)."""
    if name in _LAZY:
        from gate import launch

        return getattr(launch, name)
    if name == "tracking":  # NOTE: the pages write gate.tracking.run_tags after import gate
        import importlib

        return importlib.import_module("gate.tracking")
    raise AttributeError(f"module 'gate' has no attribute {name!r}")
