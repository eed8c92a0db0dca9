"""What a guarded run leaves in MLflow: its cost per epoch, and the tags of a stop.

``budget_gate.cost`` (step = epoch) is what the run has cost so far, so MLflow's UI can sort
and chart runs by money; a stop adds ``budget_gate.stopped_by``, the kind, the reason, the
experiment's spend at the time and the epoch (:meth:`gate.guard.model.Decision.tags`),
which ``budget-gate reconcile`` lists with what each stop saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gate.guard.model import COST_METRIC, Decision


@dataclass
class RunMarks:
    """Marks one MLflow run (by id) through a tracking URI; MLflow is imported on first use."""

    tracking_uri: str
    run_id: str
    _client: Any = None

    def _mlflow(self) -> Any:
        if self._client is None:
            from mlflow.tracking import MlflowClient

            self._client = MlflowClient(self.tracking_uri)
        return self._client

    def epoch(self, epoch: int, run_cost: Decimal) -> None:
        """Log what the run has cost after ``epoch``."""
        self._mlflow().log_metric(self.run_id, COST_METRIC, float(run_cost), step=epoch)

    def stopped(self, decision: Decision) -> None:
        """Tag the run with the guard's stop (nothing when the decision is to continue)."""
        tags = decision.tags()
        if tags:
            client = self._mlflow()
            for key, value in tags.items():
                client.set_tag(self.run_id, key, value)

    def __getstate__(self) -> dict[str, Any]:
        return {"tracking_uri": self.tracking_uri, "run_id": self.run_id, "_client": None}
