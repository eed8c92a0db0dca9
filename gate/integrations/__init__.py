"""I/O with other systems, one subpackage or module per system, each imported when needed.

:func:`open_ledger` is the one door to the MLflow ledger: importing this package imports no
MLflow; calling it does for ``sqlite:///`` stores, while a tracking server is read and
written over REST (:mod:`gate.integrations.mlflow.rest`) with no MLflow at all.
``mlflow/`` holds all MLflow I/O (ledger, training runs, tracking URI), ``github/`` the
pull-request flow's GitHub facade, ``git/`` the repository and spec history, ``skypilot``
the SkyPilot admin policy and ``skypilot_endpoint`` its HTTP side (the only modules that
import SkyPilot), with ``skypilot_settings`` (where the specs, policies and ledger are) and
``skypilot_spec`` (the spec a task names, judged and its launch recorded) and
``shared_secret`` (what the endpoint's callers must prove), and ``kubernetes/`` the Kueue
AdmissionCheck controller (the only package that imports the
Kubernetes client). Imports :mod:`gate.ci`'s models and the pure core; nothing below imports
this package.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import BackendError, MissingExtra

if TYPE_CHECKING:
    from gate.ledger.records import LedgerStore
    from gate.ledger.signing import Trust

LEDGER_EXTRA = "install the ledger extra: pip install 'budget-gate[mlflow]'"
_MLFLOW_MODULES = ("mlflow", "sqlalchemy", "alembic")  # the last two: sqlite:/// stores
GITHUB_EXTRA = "install the GitHub extra: pip install 'budget-gate[github]'"
_GITHUB_MODULES = ("github", "requests")  # PyGithub and what it sends with


def open_ledger(tracking_uri: str, trust: Trust) -> LedgerStore:
    """The approvals ledger in the MLflow tracking store at ``tracking_uri``, read under ``trust``.

    A tracking server (``http://``, ``https://``) is read and written over its REST API
    without importing MLflow (:mod:`gate.integrations.mlflow.rest`),
    unless ``MLFLOW_TRACKING_AUTH`` names an MLflow auth plugin, which only MLflow's client
    can apply. A SQLite store is read with SQL and written through MLflow's client
    (:mod:`gate.integrations.mlflow.sql_ledger`); one whose file is not there (or empty)
    reads as empty, says so, and is made on the first write, so it needs MLflow installed
    (:mod:`gate.integrations.mlflow.absent_ledger`); a directory, or another tool's SQLite
    file, is refused; any other store (a path) is MLflow's client.

    Raises:
        gate.errors.MissingExtra: MLflow is needed and not installed (exit 3, naming the extra).
        gate.errors.InputError: the URI names a directory, another tool's database, or no file;
            or ``BUDGET_GATE_LEDGER_TIMEOUT`` is no number of seconds (whatever the store).
    """
    from gate.integrations.mlflow.patience import Patience

    Patience.from_env(os.environ)  # NOTE: refused for every store, not only those that wait
    if tracking_uri.startswith(("http://", "https://")) and not os.environ.get(
        "MLFLOW_TRACKING_AUTH"
    ):
        from gate.integrations.mlflow.rest import RestLedger

        return RestLedger(tracking_uri, trust)
    from gate.integrations.mlflow.sql_ledger import SqlLedger
    from gate.integrations.mlflow.sql_source import (
        no_store_yet,
        open_sql,
        refuse_foreign,
        store_path,
    )

    stored = store_path(tracking_uri)
    if stored is not None:
        refuse_foreign(stored, "the approvals ledger")
    if stored is not None and _reached(stored, no_store_yet):
        import importlib.util

        from gate.integrations.mlflow.absent_ledger import AbsentLedger

        with needs_mlflow("the approvals ledger"):  # NOTE: only MLflow can ever make it
            if importlib.util.find_spec("mlflow") is None:
                raise ModuleNotFoundError("No module named 'mlflow'", name="mlflow")
        return AbsentLedger(tracking_uri, trust)
    source = open_sql(tracking_uri)
    if source is not None:
        return SqlLedger(tracking_uri, trust, source)
    with needs_mlflow("the approvals ledger"):
        from gate.integrations.mlflow.client import MlflowLedger

        return MlflowLedger(tracking_uri, trust)


def _reached(path: Path, test: Callable[[Path], bool]) -> bool:
    """``test`` of a store's file; one out of reach (permissions) is a failed backend."""
    try:
        return test(path)
    except OSError as exc:
        raise BackendError(
            f"{path}: the MLflow store cannot be reached ({exc.strerror}): check the path and "
            "its permissions"
        ) from None


@contextlib.contextmanager
def needs_mlflow(what: str) -> Iterator[None]:
    """Turn a missing MLflow (``pip install .`` without the extra) into exit 3 with the fix."""
    with _needs(what, "MLflow", _MLFLOW_MODULES, LEDGER_EXTRA):
        yield


@contextlib.contextmanager
def needs_github(what: str) -> Iterator[None]:
    """Turn a missing PyGithub (``pip install .`` without the extra) into exit 3 with the fix."""
    with _needs(what, "PyGithub", _GITHUB_MODULES, GITHUB_EXTRA):
        yield


@contextlib.contextmanager
def _needs(what: str, package: str, modules: tuple[str, ...], hint: str) -> Iterator[None]:
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in modules:
            raise
        raise MissingExtra(
            f"{what} needs {package}, and {exc.name} is not installed", hint=hint
        ) from None
