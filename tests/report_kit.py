"""A synthetic month whose every figure is known, seeded into a real MLflow server.

March 2025 (UTC), with January and February as trend months. Three teams share one policy
(L4 at 10 per GPU-hour on demand, 4 on spot; a monthly budget of 1000 per team; approval
over 4 trials). Every run holds 1 GPU; its cost is hours × price. The runs:

vision, spec A (model resnet, 6 trials: over the trigger, approved by alice at 600,
expected 400):
  a0  February, 2 h, qualified                                        20  (trend month)
  a1  10 h, qualified, val_loss halves for 6 epochs then is flat 4    100 (plateau: 40)
  a2  3 h, FAILED                                                     30  (failed)
  a3  5 h, finished below the gate                                    50
nlp, spec B (model bert, spot, 3 trials: under the trigger, approved by bob at 300,
expected 100):
  b1  spot 8 h, qualified                                             32  (on demand: 80)
  b2  spot 2 h, KILLED: preempted                                     8   (failed, recompute)
  b3  on-demand 4 h, stopped by the guard at epoch 4 of 10, below the gate  40 (saved 60)
tabular, spec C (no model label, 2 trials, no approval: its approval was revoked):
  c1  1 h, qualified, GPU utilization 40 % and 60 % (mean 50 %)        10  (idle: 5)
  c2  2 h, qualified                                                  20
Left out: a run in April and one in December 2024 (outside the window), and a run whose
spec is nowhere (not priced, said in the notes). The ledger also has an approval in EUR.

:data:`EXPECTED` is the report worked out by hand from these figures.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from gate import tracking
from gate.ledger.records import LedgerRecord, RecordKind
from tests.ledger_kit import fingerprint_of, seed_record, unique

UTC = dt.timezone.utc
MONTH = "2025-03"
M0 = dt.datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
HOUR_MS = 3_600_000
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
teams: [{teams}]
prices: {{overrides: {{L4: {{on-demand: 10, spot: 4}}}}}}
limits: {{max_experiment_cost: 100000, monthly_budget: 1000}}
approval:
  trials_over: 4
  approvers: {{users: [alice, bob]}}
"""
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: {name}, team: {team}, owner: carol, labels: {{{labels}}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16, capacity: {capacity}{ckpt}}}
workload: {{max_epochs: 10, epoch_minutes: 60}}
search: {{strategy: random, max_trials: {trials}}}
stopping:
  early_stopping: {{monitor: val_loss, mode: min, patience: 2}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
tracking: {{mlflow_experiment: {name}}}
"""
PLATEAU = [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.03125, 0.03125, 0.03125, 0.03125]
FALLING = [1.0, 0.5, 0.25, 0.125]


@dataclass
class Month:
    """The seeded month: its folder (policies, specs), server, teams and spec paths."""

    root: Path
    uri: str
    teams: dict[str, str] = field(default_factory=dict)
    specs: dict[str, str] = field(default_factory=dict)
    run_ids: dict[str, str] = field(default_factory=dict)

    @property
    def policy_dir(self) -> str:
        return str(self.root / "policies")


def seed(root: Path, uri: str) -> Month:
    """Write the policy and specs, log the runs and the ledger records."""
    from mlflow.tracking import MlflowClient

    month = Month(root, uri)
    month.teams = {key: unique(key) for key in ("vision", "nlp", "tabular")}
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "default.yaml").write_text(
        POLICY.format(teams=", ".join(month.teams.values())), encoding="utf-8"
    )
    specs = {
        "A": ("vision", "model: resnet", "on-demand", "", 6),
        "B": (
            "nlp",
            "model: bert, cost-center: ml-42",
            "spot",
            ", checkpoint_every_minutes: 30",
            3,
        ),
        "C": ("tabular", "", "on-demand", "", 2),
    }
    client = MlflowClient(uri)
    experiments = {}
    for key, (team, labels, capacity, ckpt, trials) in specs.items():
        name = unique(f"report-{key.lower()}")
        path = root / f"{name}.yaml"
        path.write_text(
            SPEC.format(
                name=name,
                team=month.teams[team],
                labels=labels,
                capacity=capacity,
                ckpt=ckpt,
                trials=trials,
            ),
            encoding="utf-8",
        )
        month.specs[key] = str(path)
        experiments[key] = client.create_experiment(name)
    good, bad = {"val_f1": 0.9}, {"val_f1": 0.6}
    runs: list[tuple[str, str, dict[str, Any]]] = [
        ("a0", "A", {"start": -24 * 20, "hours": 2, "metrics": good}),
        ("a1", "A", {"start": 0, "hours": 10, "metrics": good, "history": PLATEAU}),
        ("a2", "A", {"start": 11, "hours": 3, "status": "FAILED"}),
        ("a3", "A", {"start": 15, "hours": 5, "metrics": bad}),
        ("b1", "B", {"start": 24, "hours": 8, "metrics": good}),
        ("b2", "B", {"start": 33, "hours": 2, "status": "KILLED"}),
        ("b3", "B", {"start": 36, "hours": 4, "metrics": bad, "history": FALLING,
                     "tags": {tracking.CAPACITY: "on-demand", tracking.STOPPED_BY: "guard",
                              "budget_gate.stop_kind": "plateau",
                              "budget_gate.stop_epoch": "4"}}),
        ("c1", "C", {"start": 48, "hours": 1, "metrics": good,
                     "history_gpu": [40.0, 60.0]}),
        ("c2", "C", {"start": 50, "hours": 2, "metrics": good}),
        ("april", "A", {"start": 24 * 31, "hours": 1, "metrics": good}),
        ("december", "C", {"start": -24 * 80, "hours": 1, "metrics": good}),
    ]  # fmt: skip
    for trial, (run, key, how) in enumerate(runs):
        tags = tracking.run_tags(month.specs[key], trial_id=trial)
        tags.update(how.pop("tags", {}))
        month.run_ids[run] = log_run(client, experiments[key], tags, name=run, **how)
    lost = tracking.run_tags(month.specs["A"], trial_id=99)
    lost.update(
        {tracking.SPEC: str(root / "gone.yaml"), tracking.FINGERPRINT: "sha256:" + "0" * 64}
    )
    month.run_ids["lost"] = log_run(client, experiments["A"], lost, name="lost", start=60, hours=1)
    # A job in C's experiment tags its run as A's (50 GPU-hours charged to vision), and one
    # of A's runs ends before it starts (a qualified model at no cost): neither is priced.
    misfiled = tracking.run_tags(month.specs["A"], trial_id=98)
    month.run_ids["misfiled"] = log_run(
        client, experiments["C"], misfiled, name="misfiled", start=62, hours=50, metrics=good
    )
    backwards = tracking.run_tags(month.specs["A"], trial_id=97)
    month.run_ids["backwards"] = log_run(
        client, experiments["A"], backwards, name="backwards", start=64, hours=-3, metrics=good
    )
    _ledger(month)
    return month


@dataclass
class OneSpec:
    """One team's policy, one spec and its MLflow experiment, in a sqlite store."""

    root: Path
    team: str
    spec: Path
    uri: str
    client: Any
    experiment: str

    @property
    def policy_dir(self) -> str:
        return str(self.root / "policies")


def one_spec(
    root: Path, *, labels: str = "model: m", capacity: str = "on-demand", at: str = ""
) -> OneSpec:
    """The policy in ``root/policies`` and a spec at ``root/at`` (default ``<name>.yaml``),
    its experiment made in ``root/mlflow.db``; log its runs with :func:`log_run`."""
    from mlflow.tracking import MlflowClient

    team, name = unique("team"), unique("spec")
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "default.yaml").write_text(POLICY.format(teams=team), encoding="utf-8")
    spec = root / (at or f"{name}.yaml")
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        SPEC.format(name=name, team=team, labels=labels, capacity=capacity, ckpt="", trials=3),
        encoding="utf-8",
    )
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(uri)
    return OneSpec(root, team, spec, uri, client, client.create_experiment(name))


def log_run(
    client: Any,
    experiment_id: str,
    tags: dict[str, str],
    *,
    name: str,
    start: float,
    hours: float,
    status: str = "FINISHED",
    metrics: dict[str, float] | None = None,
    history: list[float] | None = None,
    history_gpu: list[float] | None = None,
) -> str:
    from mlflow.entities import Metric

    begin = _ms(start)
    run = client.create_run(experiment_id, start_time=begin, tags=tags, run_name=name)
    points = [Metric(k, v, begin, 0) for k, v in (metrics or {}).items()]
    points += [Metric("val_loss", v, begin + i, i) for i, v in enumerate(history or [])]
    points += [
        Metric("system/gpu_0_utilization_percentage", v, begin + i, i)
        for i, v in enumerate(history_gpu or [])
    ]
    if points:
        client.log_batch(run.info.run_id, metrics=points)
    client.set_terminated(run.info.run_id, status, end_time=_ms(start + hours))
    return str(run.info.run_id)


def _ms(hours: float) -> int:
    return int(M0.timestamp() * 1000) + int(hours * HOUR_MS)


def _ledger(month: Month) -> None:
    def record(key: str, kind: RecordKind, day: int, **kw: Any) -> str:
        spec = month.specs[key]
        team = {"A": "vision", "B": "nlp", "C": "tabular"}[key]
        made = LedgerRecord(
            kind=kind,
            spec=spec,
            fingerprint=fingerprint_of(spec),
            experiment=Path(spec).stem,
            recorded_at=dt.datetime(2025, 3, day, 12, 0, tzinfo=UTC),
            currency=kw.pop("currency", "USD"),
            team=month.teams[team],
            record_id=uuid.uuid4().hex,
            **kw,
        )
        seed_record(month.uri, made)  # written in March 2025, as its writers did
        return str(made.record_id)

    record("A", RecordKind.APPROVAL, 1, worst_cost=Decimal(600), expected_cost=Decimal(400),
           by="alice", reason="the resnet sweep")  # fmt: skip
    record("B", RecordKind.APPROVAL, 2, worst_cost=Decimal(300), expected_cost=Decimal(100),
           by="bob", reason="spot trial")  # fmt: skip
    revoked = record("C", RecordKind.APPROVAL, 6, worst_cost=Decimal(999),
                     expected_cost=Decimal(999), by="alice", reason="too much")  # fmt: skip
    record("C", RecordKind.REVOCATION, 7, by="alice", reason="wrong amount", revokes=(revoked,))
    record("C", RecordKind.APPROVAL, 8, worst_cost=Decimal(50), expected_cost=Decimal(50),
           by="bob", reason="in euros", currency="EUR")  # fmt: skip


D = Decimal
EXPECTED: dict[str, dict[str, Any]] = {
    # actual = Σ hours × price; cost per qualified = actual ÷ qualified runs; None: no run
    # logged what the kind needs (GPU utilization, a val_loss history): not measured, not 0
    "vision": {"actual": D(100 + 30 + 50), "gpu_hours": D(18), "runs": 3, "qualified": 1,
               "approved": D(600), "budget": D(1000), "failed": D(30), "plateau": D(40),
               "idle": None, "guard_saved": D(0), "estimate": (D(400), D(600))},
    "nlp": {"actual": D(32 + 8 + 40), "gpu_hours": D(14), "runs": 3, "qualified": 1,
            "approved": D(300), "budget": D(1000), "failed": D(8), "plateau": D(0),
            "idle": None, "guard_saved": D(60), "estimate": (D(100), D(300))},
    "tabular": {"actual": D(10 + 20), "gpu_hours": D(3), "runs": 2, "qualified": 2,
                "approved": D(0), "budget": D(1000), "failed": D(0), "plateau": None,
                "idle": D(5), "guard_saved": D(0), "estimate": None},
}  # fmt: skip
SPOT = {"runs": 2, "preempted": 1, "gpu_hours": D(10), "on_demand": D(80), "spot": D(32),
        "recompute": D(8), "net": D(80 - 32 - 8)}  # fmt: skip
TREND = {
    "vision": [None, D(20), D(180)],
    "nlp": [None, None, D(80)],
    "tabular": [None, None, D(15)],
}
