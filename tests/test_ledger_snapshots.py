"""Monthly spend on a real MLflow server: REST reads and snapshots give today's figures.

The ledger is built in a past month (records are backdated, as ``recorded_at`` is the run's
start time) so snapshots can be rolled at chosen moments; it holds approvals (some
expired, some in EUR), revocations (some naming approvals recorded after them),
reconciliations (some repeated), requests, a record still being written when a snapshot
is rolled and completed afterwards, and a record whose write failed. Every read is
compared with the full scan ``main`` used (:mod:`tests.budget_reference`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gate.integrations import open_ledger
from gate.integrations.mlflow.client import MlflowLedger
from gate.integrations.mlflow.rest import RestLedger
from gate.integrations.mlflow.snapshots import roll
from gate.ledger.budget import BudgetScope, month_start, spend_status
from gate.ledger.encoding import to_tags
from gate.ledger.records import LedgerRecord, RecordKind
from gate.ledger.snapshot import CHECKSUM, MONTH, PART, PARTS, SCOPE
from tests.budget_reference import reference_status
from tests.conftest import make_policy
from tests.ledger_kit import UNSIGNED, Team, seed_record

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.timezone.utc
JUNE = dt.datetime(2026, 6, 1, tzinfo=UTC)
POLICY = make_policy({"limits": {"monthly_budget": 100000}})
SPECS = [f"exp/s{i}.yaml" for i in range(6)]


def at(days: float) -> dt.datetime:
    return JUNE + dt.timedelta(days=days)


def base(team: Team, kind: RecordKind, spec: str, fp: str, when: dt.datetime) -> LedgerRecord:
    return LedgerRecord(
        kind=kind,
        spec=spec,
        fingerprint=fp,
        experiment="snap",
        recorded_at=when,
        currency="USD",
        team=team.name,
        cost_center=team.cost_center,
        by="alice",
        record_id=uuid.uuid4().hex,
    )


def build(team: Team, writer: MlflowLedger) -> dict[str, str]:
    """Write the month's ledger; returns the ids of the unfinished and failed runs."""
    rnd = random.Random(17)
    approvals: list[str] = []
    day = 0.5
    for n in range(70):
        day += rnd.uniform(0.1, 0.35)
        spec = rnd.choice(SPECS)
        fp = f"sha256:{spec}-v{rnd.randint(1, 3)}"
        kind = rnd.choice([RecordKind.APPROVAL] * 4 + [RecordKind.REVOCATION, RecordKind.REQUEST])
        kind = RecordKind.RECONCILIATION if n % 7 == 3 else kind
        record = base(team, kind, spec, fp, at(day))
        amount = Decimal(rnd.randint(100, 900_000)) / 100
        if kind in (RecordKind.APPROVAL, RecordKind.REQUEST):
            expiry = at(day + rnd.choice([0.2, 30]))  # some expire within the month
            record = dataclasses.replace(record, worst_cost=amount, expires_at=expiry)
        elif kind is RecordKind.RECONCILIATION:
            record = dataclasses.replace(record, actual_cost=amount)
        elif approvals:
            record = dataclasses.replace(record, revokes=tuple(rnd.sample(approvals, 1)))
        if n % 11 == 5:
            record = dataclasses.replace(record, currency="EUR")
        seed_record(team.uri, record)  # written in June, as June's writers did
        if kind is RecordKind.APPROVAL:
            approvals.append(str(record.record_id))
    # A revocation recorded before the approval it names (clocks of two writers disagree).
    late = dataclasses.replace(
        base(team, RecordKind.APPROVAL, SPECS[0], "sha256:late", at(20)),
        worst_cost=Decimal("123.45"),
    )
    seed_record(team.uri, late)
    revoking = base(team, RecordKind.REVOCATION, SPECS[0], "sha256:late", at(1))
    seed_record(team.uri, dataclasses.replace(revoking, revokes=(str(late.record_id),)))
    client = MlflowClient(team.uri)
    experiment = writer.experiment_id(create=True)
    assert experiment is not None
    slow = base(team, RecordKind.APPROVAL, SPECS[1], "sha256:slow", at(2.5))
    slow = dataclasses.replace(slow, worst_cost=Decimal("777.77"))
    unfinished = client.create_run(
        experiment, start_time=int(at(2.5).timestamp() * 1000), tags=to_tags(slow)
    ).info.run_id
    failed = client.create_run(
        experiment,
        start_time=int(at(3).timestamp() * 1000),
        tags=to_tags(dataclasses.replace(slow, spec=SPECS[2])),
    ).info.run_id
    client.set_terminated(failed, status="FAILED")
    return {"unfinished": unfinished, "failed": failed}


def compare(team: Team, now: dt.datetime, uris: list[str]) -> None:
    """Every reader's figures at ``now`` equal the full scan's, for several specs."""
    scope = BudgetScope("team", team.name)
    query = scope.query(month_start(now))
    records = MlflowLedger(team.uri, UNSIGNED).query(query)
    readers = [open_ledger(uri, UNSIGNED) for uri in uris]
    spends = [reader.month_spend(query, now) for reader in readers]  # type: ignore[attr-defined]
    for spec, fp in [("-", "-"), (SPECS[0], "-"), ("-", "sha256:exp/s1.yaml-v2"), (SPECS[3], "x")]:
        kw = {"policy": POLICY, "scope": scope, "now": now, "spec": spec, "fingerprint": fp}
        expected = reference_status(records, **kw)
        for uri, spend in zip(uris, spends, strict=True):
            got = spend_status(spend, **kw)
            assert (uri, got) == (uri, expected)
            assert str(got.spent) == str(expected.spent)


@pytest.fixture
def ledger(team: Team) -> dict[str, str]:
    return build(team, MlflowLedger(team.uri, UNSIGNED))


def test_snapshots_plus_the_tail_equal_the_full_scan(team, ledger, mlflow_server):
    writer = MlflowLedger(team.uri, UNSIGNED)
    experiment = writer.experiment_id(create=False)
    assert experiment is not None
    uris = [team.uri, mlflow_server.sqlite_uri]
    compare(team, at(2), uris)  # no snapshot yet
    first = roll(writer, experiment, f"team:{team.name}", at(4), every=5)
    assert first is not None
    assert "records)" in MlflowClient(team.uri).get_run(first).info.run_name
    assert roll(writer, experiment, f"team:{team.name}", at(4), every=5) is None  # nothing new
    for days in (3.9, 4.5, 9):
        compare(team, at(days), uris)
    MlflowClient(team.uri).set_terminated(ledger["unfinished"], status="FINISHED")
    compare(team, at(9), uris)  # the slow writer's record counts now, though before the cut-off
    assert roll(writer, experiment, f"team:{team.name}", at(12), every=5) is not None
    roll(writer, experiment, f"cost-center:{team.cost_center}", at(12), every=5)
    for days in (11, 12, 18, 25, 30.9, 31):
        compare(team, at(days), uris)


def test_a_damaged_snapshot_is_read_past(team, ledger, caplog):
    writer = MlflowLedger(team.uri, UNSIGNED)
    experiment = writer.experiment_id(create=False)
    assert experiment is not None
    assert roll(writer, experiment, f"team:{team.name}", at(6), every=5) is not None
    good = roll(writer, experiment, f"team:{team.name}", at(10), every=5)
    tags = MlflowClient(team.uri).get_run(good).data.tags
    broken = {k: v for k, v in tags.items() if k.startswith((PART, PARTS, SCOPE, MONTH))}
    broken[CHECKSUM] = "0" * 64
    writer.write_run(experiment, int(at(10.5).timestamp() * 1000), broken, "damaged")
    compare(team, at(11), [team.uri])
    assert "is damaged or not under these signers; read past it" in caplog.text


def test_check_with_a_budget_reads_the_server_without_mlflow(team, ledger):
    team.policy(limits=", monthly_budget: 100000")
    writer = MlflowLedger(team.uri, UNSIGNED)
    experiment = writer.experiment_id(create=False)
    assert experiment is not None
    roll(writer, experiment, f"team:{team.name}", at(8), every=5)
    spec = team.spec(3)
    args = [
        "check",
        spec,
        "--policy-dir",
        team.policy_dir,
        "--tracking-uri",
        team.uri,
        "--as-of",
        at(15).isoformat(),
        "--format",
        "json",
    ]
    probe = (
        "import json, sys\n"
        "from gate.cli import main\n"
        f"code = main({args!r})\n"
        "print(json.dumps({'code': code, 'mlflow': sorted(m for m in sys.modules "
        "if m.split('.')[0] == 'mlflow')}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    *report, last = proc.stdout.strip().splitlines()
    assert json.loads(last) == {"code": 0, "mlflow": []}, proc.stderr
    budget = json.loads("\n".join(report))["results"][0]["budget"]
    scope = BudgetScope("team", team.name)
    records = MlflowLedger(team.uri, UNSIGNED).query(scope.query(JUNE))
    expected = reference_status(
        records, policy=POLICY, scope=scope, now=at(15), spec="-", fingerprint="-"
    )
    assert Decimal(budget["committed"]) == expected.committed > 0
    assert Decimal(budget["actual"]) == expected.actual > 0
    assert budget["other_currency_records"] == expected.other_currency > 0


def test_the_rest_ledger_reads_records_as_mlflow_does(team, ledger, tmp_path):
    rest = RestLedger(team.uri, UNSIGNED)
    assert isinstance(open_ledger(team.uri, UNSIGNED), RestLedger)
    assert not isinstance(open_ledger(f"sqlite:///{tmp_path / 'x.db'}", UNSIGNED), RestLedger)
    scope = BudgetScope("team", team.name)
    for query in (scope.query(JUNE), dataclasses.replace(scope.query(JUNE), spec=SPECS[2])):
        assert rest.query(query) == MlflowLedger(team.uri, UNSIGNED).query(query)


def test_rest_requests_carry_mlflows_credentials_and_never_in_the_url():
    from gate.integrations.mlflow.http import Rest

    rest = Rest("https://ann:p%40ss@mlflow.example:8443/base/", {"BUDGET_GATE_LEDGER_TIMEOUT": "5"})
    assert rest.base == "https://mlflow.example:8443/base"
    assert rest.headers["Authorization"] == "Basic YW5uOnBAc3M="  # ann:p@ss
    assert rest.patience.seconds == 5.0
    token = Rest("http://h", {"MLFLOW_TRACKING_TOKEN": "t0k", "MLFLOW_TRACKING_USERNAME": "u"})
    assert token.headers["Authorization"] == "Bearer t0k"
    assert "Authorization" not in Rest("http://h", {}).headers


def test_writers_roll_snapshots_as_they_append(team):
    """Appending records rolls the team's and the cost center's snapshots once enough settle."""
    from gate.ledger.snapshot import ROLL_EVERY, SETTLE

    now = dt.datetime.now(UTC)
    start = month_start(now)
    settled = now - SETTLE - dt.timedelta(minutes=2) > start  # false in a month's first minutes
    writer = MlflowLedger(team.uri, UNSIGNED)
    for n in range(ROLL_EVERY):  # settled records, written over a quarter of an hour ago …
        when = max(start, now - SETTLE - dt.timedelta(minutes=2)) - dt.timedelta(seconds=n)
        record = base(team, RecordKind.APPROVAL, SPECS[n % 6], f"sha256:auto-{n}", max(start, when))
        seed_record(team.uri, dataclasses.replace(record, worst_cost=Decimal("1.01")))
    last = base(team, RecordKind.REQUEST, SPECS[0], "sha256:auto-last", now)
    writer.append(last)  # … and the append that rolls them into snapshots
    experiment = writer.experiment_id(create=False)
    client = MlflowClient(team.uri)
    for scope in (f"team:{team.name}", f"cost-center:{team.cost_center}"):
        found = client.search_runs([experiment], f"tags.{SCOPE} = '{scope}'")
        assert len(found) == (1 if settled else 0), scope
    spend = RestLedger(team.uri, UNSIGNED).month_spend(
        BudgetScope("team", team.name).query(start), now
    )
    assert spend.totals("USD", spec="-", fingerprint="-").committed == Decimal("6.06")  # 6 specs
