"""I/O with other systems (git, GitHub, MLflow), each imported only by the code that needs it.

:func:`open_ledger` is the one door to the MLflow ledger: importing this package imports no
MLflow; calling it does. ``mlflow_runs`` reads training runs for ``reconcile``;
``github_client`` writes pull-request comments (PyGithub, imported when first used);
``tracking_uri`` says where the ledger lives; ``skypilot`` is the SkyPilot admin policy (the only
module that imports SkyPilot). Imports :mod:`gate.ci`'s models and the pure
core; nothing below imports this package.
"""

from __future__ import annotations

from gate.ledger.records import LedgerStore


def open_ledger(tracking_uri: str) -> LedgerStore:
    """The approvals ledger in the MLflow tracking store at ``tracking_uri``."""
    from gate.integrations.mlflow_client import MlflowLedger

    return MlflowLedger(tracking_uri)
