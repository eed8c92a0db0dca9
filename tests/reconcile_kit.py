"""Reconcile test builders: a plan at a fixed price and clock, runs as MLflow has them.

Registered from ``tests/conftest.py`` (``pytest_plugins``) for its ``lab`` fixture: a team
with its own MLflow experiment and spec on the session's server.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from gate import tracking
from gate.ledger.records import LedgerRecord, RecordKind
from gate.reconcile.actuals import Plan, RunFacts
from gate.reconcile.quality import monitor_for
from gate.spec.fingerprint import fingerprint
from tests.conftest import make_estimate, make_policy, make_quote, make_spec
from tests.ledger_kit import Team, unique

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def at(hours: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


def ms(hours: float) -> int:
    return int(at(hours).timestamp() * 1000)


def make_plan(
    overrides: dict[str, Any] | None = None,
    *,
    price: str = "10",
    now: float = 1000.0,
    tolerance: str = "0.1",
    approval: LedgerRecord | None = None,
    **kw: Any,
) -> Plan:
    """The base spec (gate: val_f1 >= 0.8; 4 trials × 1 GPU × 1 h) at ``price`` per GPU-h."""
    spec = make_spec(overrides)
    return Plan(
        spec=spec,
        fingerprint=fingerprint(spec),
        quote=make_quote(price, spec.resources.accelerator),
        estimate=make_estimate(spec, make_policy(), price),
        monitor=monitor_for(spec),
        now=at(now),
        tolerance=Decimal(tolerance),
        approval=approval,
        **kw,
    )


def facts(
    run_id: str,
    *,
    hours: float = 1.0,
    start: float = 0.0,
    status: str = "FINISHED",
    gpus: int | None = 1,
    f1: float | None = 0.9,
    tags: dict[str, str] | None = None,
    metrics: dict[str, float] | None = None,
    name: str | None = None,
    **kw: Any,
) -> RunFacts:
    """A run that started ``start`` hours after T0 and held its GPUs for ``hours``."""
    all_tags = {} if gpus is None else {tracking.GPUS: str(gpus)}
    all_tags.update(tags or {})
    all_metrics = {} if f1 is None else {"val_f1": f1}
    all_metrics.update(metrics or {})
    return RunFacts(
        run_id=run_id,
        status=status,
        start_ms=ms(start),
        end_ms=None if status == "RUNNING" else ms(start + hours),
        name=run_id if name is None else name,
        tags=all_tags,
        metrics=all_metrics,
        **kw,
    )


def approval(amount: str, currency: str = "USD") -> LedgerRecord:
    return LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec="exp/spec.yaml",
        fingerprint="sha256:x",
        experiment="test-sweep",
        recorded_at=T0,
        currency=currency,
        worst_cost=Decimal(amount),
        by="alice",
        record_id="approval-run-1",
    )


def log_run(
    client: Any,
    experiment_id: str,
    *,
    tags: dict[str, str],
    start: float = 0.0,
    hours: float | None = 1.0,
    status: str = "FINISHED",
    metrics: dict[str, float] | None = None,
    params: dict[str, str] | None = None,
    history: dict[str, list[float]] | None = None,
    name: str | None = None,
) -> str:
    """Create a real MLflow run as a launcher would leave it, with controlled times.

    ``history`` maps a metric to its values at steps 0, 1, 2, …; ``metrics`` are logged
    once, at step 0. ``hours`` ``None`` leaves the run RUNNING.
    """
    from mlflow.entities import Metric, Param

    run = client.create_run(experiment_id, start_time=ms(start), tags=tags, run_name=name)
    run_id: str = run.info.run_id
    points = [Metric(k, v, ms(start), 0) for k, v in (metrics or {}).items()]
    for key, values in (history or {}).items():
        points.extend(Metric(key, v, ms(start) + i, i) for i, v in enumerate(values))
    for first in range(0, len(points), 1000):  # MLflow takes at most 1000 metrics a batch
        chunk = points[first : first + 1000]
        client.log_batch(run_id, metrics=chunk, params=[] if first else _params(params, Param))
    if not points and params:
        client.log_batch(run_id, params=_params(params, Param))
    if hours is not None:
        client.set_terminated(run_id, status, end_time=ms(start + hours))
    return run_id


def _params(params: dict[str, str] | None, param: Any) -> list[Any]:
    return [param(k, v) for k, v in (params or {}).items()]


# 1 GPU; epochs of an hour: a trial of N epochs holds its GPU N hours, at 10 per GPU-hour.
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: {name}, team: {team}, owner: carol, labels: {{cost-center: {cc}}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: {epochs}, epoch_minutes: 60}}
search: {{strategy: random, max_trials: {trials}}}
quality_gate:
  - {{metric: val_macro_f1, op: ">=", value: 0.8}}
  - {{metric: "val_recall_class_*", op: ">=", value: 0.65}}
tracking: {{mlflow_experiment: {experiment}}}
"""
GOOD = {"val_macro_f1": 0.9, "val_recall_class_0": 0.8, "val_recall_class_1": 0.7}


@dataclass
class Lab:
    """A team, its MLflow experiment and a spec whose runs the test logs."""

    team: Team
    client: Any
    experiment: str
    experiment_id: str
    spec: str

    def log(self, spec: str | None = None, trial: int = 0, **kw: Any) -> str:
        tags = tracking.run_tags(spec or self.spec, trial_id=trial)
        return log_run(self.client, self.experiment_id, tags=tags, **kw)

    def write_spec(self, *, trials: int = 6, epochs: int = 10, file: str | None = None) -> str:
        path = self.team.root / (file or f"{unique('spec')}.yaml")
        path.write_text(
            SPEC.format(
                name=self.experiment,
                team=self.team.name,
                cc=self.team.cost_center,
                trials=trials,
                epochs=epochs,
                experiment=self.experiment,
            ),
            encoding="utf-8",
        )
        return str(path)

    def reconcile(
        self, *args: str, spec: str | None = None, uri: str | None = None
    ) -> tuple[int, str, str]:
        return self.team.cli("reconcile", spec or self.spec, *args, uri=uri)

    def json(self, *args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        code, out, err = self.reconcile("--format", "json", *args, **kw)
        assert out, err
        return code, json.loads(out)


@pytest.fixture
def lab(team: Team) -> Lab:
    """A team with an MLflow experiment of its own and a spec of 6 trials × 10 h at 10."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(team.uri)
    name = unique("exp")
    experiment_id = client.create_experiment(name)
    lab = Lab(team, client, name, experiment_id, "")
    lab.spec = lab.write_spec()
    return lab
