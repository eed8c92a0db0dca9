"""How long the gate waits for the ledger: one bounded setting for every request it sends.

Enforcement fails closed, and it must fail fast: SkyPilot's client gives up on an admin
policy after 30 s, and a launch script or a CI job should hear "the ledger is down" in
seconds, not after MLflow's default seven retries (2 + 4 + … + 60 s, about three minutes).
``BUDGET_GATE_LEDGER_TIMEOUT`` is the most seconds one request to the tracking server may
take in all, retries included (default :data:`DEFAULT_SECONDS`); a decision stops at its
first request that fails. It applies to the REST reader (:mod:`gate.integrations.mlflow.rest`)
and to the ``MlflowClient`` the ledger writes with (:class:`BoundedCalls`); MLflow's own
``MLFLOW_HTTP_REQUEST_*`` settings keep applying to everything else MLflow does (a
training job's own runs, ``reconcile``'s reads). See ``docs/ledger-outages.md``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from gate.errors import InputError

ENV = "BUDGET_GATE_LEDGER_TIMEOUT"
"""The one setting: seconds a ledger request may take, retries included."""
DEFAULT_SECONDS = 5.0
"""Leaves room under the 10 s in which every enforcement path must refuse."""
MAX_SECONDS = 120.0
RETRIES = 2
"""Retries of a request that failed fast (refused, reset, 429/5xx) while time is left."""
FIRST_PAUSE_S = 0.25
"""The pause before the first retry; it doubles before each next one."""


@dataclass(frozen=True, slots=True)
class Patience:
    """The time budget of one request to the tracking server, retries included."""

    seconds: float = DEFAULT_SECONDS

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str],
        name: str = ENV,
        default: float = DEFAULT_SECONDS,
        most: float = MAX_SECONDS,
    ) -> Patience:
        """The seconds in ``environ[name]`` (``BUDGET_GATE_LEDGER_TIMEOUT``), or ``default``.

        Raises:
            gate.errors.InputError: the value is not a number of seconds in range (exit 3).
        """
        raw = environ.get(name)
        if raw is None or not raw.strip():
            return cls(default)
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not 0.1 <= seconds <= most:  # NOTE: also refuses nan and inf
            shown = raw if len(raw) <= 40 else raw[:37] + "..."
            raise InputError(
                f"{name} is {shown!r}, not a number of seconds from 0.1 to {most:g}",
                hint=f"set it to the seconds one request may take, retries included "
                f"(default {default:g}), or unset it",
            )
        return cls(seconds)

    def pause(self, retry: int) -> float:
        """The pause before retry number ``retry`` (0-based)."""
        return float(FIRST_PAUSE_S * 2**retry)

    def mlflow_env(self) -> dict[str, str]:
        """MLflow's HTTP settings that keep one of its requests within :attr:`seconds`.

        MLflow takes whole seconds per attempt: two attempts of half the budget, no pause.
        """
        per_attempt = max(1, math.floor(self.seconds / 2))
        return {
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
            "MLFLOW_HTTP_REQUEST_TIMEOUT": str(per_attempt),
            "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
            "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
        }


_lock = threading.Lock()
_holders = 0
_saved: dict[str, str | None] = {}


@contextlib.contextmanager
def bounded_mlflow(patience: Patience) -> Iterator[None]:
    """MLflow's HTTP settings held to ``patience`` while the ledger talks, then restored.

    NOTE: MLflow reads these from the environment at every request and offers no
    per-client setting, so they are set while a ledger call is in flight and the user's
    own values come back after the last one (calls may nest and run in several threads).
    A training thread's own MLflow request at that very moment would see them too.
    """
    global _holders
    settings = patience.mlflow_env()
    with _lock:
        if _holders == 0:
            _saved.clear()
            _saved.update({key: os.environ.get(key) for key in settings})
            os.environ.update(settings)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                for key, value in _saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value


T = TypeVar("T")


class BoundedCalls(Generic[T]):
    """``target`` (an ``MlflowClient``) with every method call under :func:`bounded_mlflow`."""

    def __init__(self, target: T, patience: Patience) -> None:
        self._target = target
        self._patience = patience

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if not callable(attribute):
            return attribute
        return self._bounded(attribute)

    def _bounded(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            with bounded_mlflow(self._patience):
                return method(*args, **kwargs)

        return call


def bounded_client(client: T, tracking_uri: str) -> T:
    """``client`` held to the ledger's patience when it talks HTTP (a tracking server).

    Raises:
        gate.errors.InputError: ``BUDGET_GATE_LEDGER_TIMEOUT`` is malformed.
    """
    # NOTE: read whatever the store: a malformed setting is refused the same way for a
    # sqlite:/// or file store (no requests to bound) as for a tracking server
    patience = Patience.from_env(os.environ)
    if not tracking_uri.startswith(("http://", "https://")):
        return client
    return cast(T, BoundedCalls(client, patience))
