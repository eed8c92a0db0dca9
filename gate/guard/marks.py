"""What a guarded run leaves in MLflow: its cost per epoch, and the tags of a stop.

``budget_gate.cost`` (step = epoch) is what the run has cost so far, so MLflow's UI can sort
and chart runs by money; a stop adds ``budget_gate.stopped_by``, the kind, the reason, the
experiment's spend at the time and the epoch (:meth:`gate.guard.model.Decision.tags`),
which ``budget-gate reconcile`` lists with what each stop saved.

Marks are best effort, written after the guard has decided: a stop must reach the loop
whether MLflow answers or not. One request per report (``log_batch``) is held to the
ledger's patience (``BUDGET_GATE_LEDGER_TIMEOUT``, :mod:`gate.integrations.mlflow.patience`),
not MLflow's default retries, which wait minutes and then raise. A failure is logged once;
no mark is tried again for :data:`RETRY_AFTER_S`, so an MLflow that hangs costs at most one
bounded wait per that time, not one per epoch.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gate.guard.model import COST_METRIC, Decision
from gate.integrations.mlflow.patience import BoundedCalls, Patience
from gate.integrations.mlflow.tracking_uri import redact

log = logging.getLogger(__name__)

RETRY_AFTER_S = 60.0
"""After a failed write, the seconds during which no mark is tried."""


@dataclass
class RunMarks:
    """Marks MLflow runs (by id) through one tracking URI; MLflow is imported on first use."""

    tracking_uri: str
    clock: Callable[[], float] = time.monotonic
    _client: Any = None
    _failed_at: float | None = None
    _warned: bool = False

    def write(self, run_id: str, epoch: int, run_cost: Decimal, decision: Decision) -> bool:
        """Log what the run has cost after ``epoch`` and a stop's tags; whether they were.

        Never raises: the decision is the caller's to apply, with or without its marks.
        """
        if self._failed_at is not None and 0 <= self.clock() - self._failed_at < RETRY_AFTER_S:
            return False
        try:
            self._send(run_id, epoch, run_cost, decision)
        except Exception as error:  # NOTE: any failure, MLflow's or the network's: best effort
            self._failed_at = self.clock()
            if not self._warned:
                self._warned = True
                log.warning(
                    "budget-gate guard: MLflow at %s not marked (%s); the guard goes on "
                    "deciding without its marks, trying again after %g s",
                    redact(self.tracking_uri),
                    _one_line(error),
                    RETRY_AFTER_S,
                )
            return False
        self._failed_at = None
        return True

    def _send(self, run_id: str, epoch: int, run_cost: Decimal, decision: Decision) -> None:
        """One bounded ``log_batch``: the cost metric and, on a stop, its tags."""
        from mlflow.entities import Metric, RunTag

        stamp = int(time.time() * 1000)
        metric = Metric(COST_METRIC, float(run_cost), stamp, epoch)
        tags = [RunTag(key, value) for key, value in decision.tags().items()]
        self._mlflow().log_batch(run_id, metrics=[metric], tags=tags)

    def _mlflow(self) -> Any:
        if self._client is None:
            from mlflow.tracking import MlflowClient

            # NOTE: bounded whatever the scheme (databricks:// talks HTTP too); a local store
            # sends no request, and the bound costs it nothing.
            patience = Patience.from_env(os.environ)
            self._client = BoundedCalls(MlflowClient(self.tracking_uri), patience)
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None, "_failed_at": None}


def _one_line(error: BaseException) -> str:
    """The error's first line, short: MLflow's messages carry the whole retry history."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = text or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."
