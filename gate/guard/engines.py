"""The engines a guard adapter drives (Optuna, Ray Tune): an extra, named when it is missing."""

from __future__ import annotations

from gate.errors import MissingExtra


def missing_engine(needed_by: str, name: str) -> MissingExtra:
    """The error for an adapter whose engine is missing (a bare import error named no fix)."""
    return MissingExtra(
        f"{needed_by} needs {name}, which is not installed",
        hint="pip install 'budget-gate[guard]'",
    )
