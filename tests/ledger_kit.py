"""A team's policy and specs in a temporary directory, and the CLI run against a ledger.

Registered from ``tests/conftest.py`` (``pytest_plugins``) for its ``team`` fixture.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest

from gate.cli import main
from gate.integrations import open_ledger
from gate.integrations.signing import signer_from
from gate.ledger.records import (
    LEDGER_EXPERIMENT,
    LedgerQuery,
    LedgerRecord,
    RecordKind,
    Source,
)
from gate.ledger.signing import SIGNERS_FILE, Trust
from gate.spec.experiment import Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import load_file
from gate.spec.validation import validate
from tests.mlflow_server import MlflowServer

# 1 GPU × 10 epochs × 6 min = 1 h per trial at 10 USD per GPU-hour: N trials cost 10 × N.
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: {name}, team: {team}, owner: carol, labels: {{cost-center: {cc}}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: 10, epoch_minutes: 6}}
search: {{strategy: random, max_trials: {trials}}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
teams: [{team}]
prices: {{overrides: {{L4: {{on-demand: {price}}}}}}}
limits: {{max_experiment_cost: {cap}{limits}}}
approval:
  trials_over: {trials_over}
  approvers: {{users: [alice, bob]}}
{extra}"""


UNSIGNED = Trust(None, SIGNERS_FILE)
"""Reads every record (signed or not) as written: what a ledger without signers does."""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass
class Team:
    """A team of its own (so tests sharing one MLflow server never see each other)."""

    root: Path
    uri: str
    capsys: pytest.CaptureFixture[str]
    name: str = field(default_factory=lambda: unique("team"))
    cost_center: str = field(default_factory=lambda: unique("cc"))

    @property
    def policy_dir(self) -> str:
        return str(self.root / "policies")

    def policy(
        self,
        *,
        price: str = "10",
        cap: str = "100000",
        trials_over: int = 4,
        limits: str = "",
        extra: str = "",
    ) -> None:
        """Write the team's policy; ``limits`` adds ``, key: value`` pairs to ``limits``."""
        directory = Path(self.policy_dir)
        directory.mkdir(parents=True, exist_ok=True)
        text = POLICY.format(
            price=price,
            cap=cap,
            trials_over=trials_over,
            limits=limits,
            extra=extra,
            team=self.name,
        )
        (directory / "default.yaml").write_text(text, encoding="utf-8")

    def spec(self, trials: int, *, file: str | None = None, name: str | None = None) -> str:
        path = self.root / (file or f"{unique('spec')}.yaml")
        text = SPEC.format(
            name=name or unique("exp"), team=self.name, cc=self.cost_center, trials=trials
        )
        path.write_text(text, encoding="utf-8")
        return str(path)

    def cli(self, command: str, *args: str, uri: str | None = None) -> tuple[int, str, str]:
        self.capsys.readouterr()
        target = self.uri if uri is None else uri
        where = ["--tracking-uri", target] if target else []
        code = main([command, "--policy-dir", self.policy_dir, *where, *args])
        out, err = self.capsys.readouterr()
        return code, out, err

    def reconcile(
        self,
        spec: str,
        actual: str,
        *,
        uri: str | None = None,
        trust: Trust = UNSIGNED,
        signer_env: dict[str, str] | None = None,
        **changes: object,
    ) -> LedgerRecord:
        """Append what reconciliation records: the actual cost of a spec's runs, now."""
        record = LedgerRecord(
            kind=RecordKind.RECONCILIATION,
            spec=spec,
            fingerprint=fingerprint_of(spec),
            experiment="reconciled",
            recorded_at=dt.datetime.now(dt.timezone.utc),
            currency="USD",
            actual_cost=Decimal(actual),
            team=self.name,
            cost_center=self.cost_center,
        )
        record = dataclasses.replace(record, **changes)
        signer = signer_from(signer_env, principal=None) if signer_env else None
        run_id = open_ledger(uri or self.uri, trust).append(record, signer)
        return dataclasses.replace(record, run_id=run_id)

    def records(
        self, spec: str, uri: str | None = None, trust: Trust = UNSIGNED
    ) -> list[LedgerRecord]:
        """Every record of the spec's version that counts under ``trust`` (default: all)."""
        query = LedgerQuery(fingerprint=fingerprint_of(spec))
        return open_ledger(uri or self.uri, trust).query(query)


def seed_record(uri: str, record: LedgerRecord) -> str:
    """Write ``record`` as a writer at its ``recorded_at`` would have (unsigned): its run id.

    The stores stamp every record with the time they write it, so a test that needs last
    month's records writes them this way, as the budget-gate of last month did.
    """
    from mlflow.tracking import MlflowClient

    from gate.integrations.mlflow.search import millis
    from gate.ledger.encoding import to_tags

    record = dataclasses.replace(record, record_id=record.record_id or uuid.uuid4().hex)
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    experiment = found.experiment_id if found else client.create_experiment(LEDGER_EXPERIMENT)
    run = client.create_run(experiment, start_time=millis(record.recorded_at), tags=to_tags(record))
    client.set_terminated(run.info.run_id, "FINISHED")
    return str(run.info.run_id)


def fingerprint_of(path: str) -> str:
    return fingerprint(validate(Experiment, load_file(path)))


@pytest.fixture
def team(tmp_path: Path, mlflow_server: MlflowServer, capsys: pytest.CaptureFixture[str]) -> Team:
    """A team of its own, with the test policy, on the session's MLflow server."""
    team = Team(tmp_path, mlflow_server.uri, capsys)
    team.policy()
    return team


def github_approval_record(path: str, by: str = "alice", **changes: object) -> LedgerRecord:
    """What ``budget-gate ci`` of ``org/repo-a`` records after ``by``'s review on PR #5.

    The record names the spec by its file name (the tests' root holds it), else
    ``changes`` say otherwise (``spec="experiments/a.yaml"``).
    """
    now = dt.datetime.now(dt.timezone.utc)
    record = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=Path(path).name,
        fingerprint=fingerprint_of(path),
        experiment="sweep",
        recorded_at=now,
        currency="USD",
        worst_cost=Decimal("80"),
        by=by,
        reason="reviewed",
        source=Source.GITHUB_REVIEW,
        pr_number=5,
        expires_at=now + dt.timedelta(days=30),
        head_sha="a" * 40,
        event_id="review-77",
        event_at=now,
        repository="org/repo-a",
    )
    return dataclasses.replace(record, **changes)


def github_approval(team: Team, path: str, by: str = "alice", **changes: object) -> None:
    """:func:`github_approval_record` of ``team``'s spec, appended to its ledger."""
    team_of = {"team": team.name, "cost_center": team.cost_center}
    record = github_approval_record(path, by, **{**team_of, **changes})
    open_ledger(team.uri, UNSIGNED).append(record)
