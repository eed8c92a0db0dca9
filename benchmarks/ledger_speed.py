"""How fast are ``check`` and ``verify`` with a monthly budget, as a team's ledger month fills?

With ``limits.monthly_budget`` in the policy, ``check`` and ``verify`` need the month's
spend of the spec's team. The plain way (budget-gate before snapshots) is
``MlflowClient.search_runs`` over every record of the team this month, which grows with
the month. budget-gate reads a tracking server over REST without importing MLflow, takes
the newest snapshot the writers rolled, and reads only the records after it. Targets:

* ``check`` of one spec with 16,667 records of its team this month: under 1 s and 150 MB,
  and within 1.5× of the time with 100 records;
* ``check`` with a budget: no MLflow import, start-up within 0.3 s of a plain ``check``.

The benchmark starts its own ``mlflow server`` (1 worker, sqlite store in a temporary
directory) and, for each size, writes a month of one team's ledger: of every 5 records,
3 approvals, a reconciliation of the first and a revocation of the second — the issue's
"10,000 approvals with their reconciliations and revocations" at 16,667. One record is
written through budget-gate's ledger; the rest are copies of it made with SQL in the
store (every column, with each record's own tags and params), spread over the month before the
``--as-of`` moment. Snapshots are rolled as writers roll them (:func:`roll`, called as the
month's records arrive). It then times fresh processes of ``check`` and ``verify``
(median of ``--runs``, peak RSS of the child), the same ``check`` reading the sqlite
file directly (MLflow's client), and the plain ``search_runs`` read in this process, and
checks that every reader gives the same spend. Run from the repository root::

    python benchmarks/ledger_speed.py [--sizes 100,1000,10000,16667] [--runs 3]

Exit code 0 whether or not a target is met; 1 when two readers disagree.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")

from mlflow.entities import ViewType  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from gate.integrations.mlflow.client import MlflowLedger  # noqa: E402
from gate.integrations.mlflow.rest import RestLedger  # noqa: E402
from gate.integrations.mlflow.search import filter_string  # noqa: E402
from gate.integrations.mlflow.snapshots import roll  # noqa: E402
from gate.ledger.budget import BudgetScope, month_spend, month_start  # noqa: E402
from gate.ledger.encoding import from_tags, to_tags  # noqa: E402
from gate.ledger.records import LedgerRecord, RecordKind  # noqa: E402
from gate.ledger.sealed_index import to_params  # noqa: E402
from gate.ledger.snapshot import ROLL_EVERY  # noqa: E402
from tests.ledger_kit import POLICY, SPEC, UNSIGNED, fingerprint_of  # noqa: E402
from tests.mlflow_server import MlflowServer  # noqa: E402

AS_OF = dt.datetime(2026, 11, 30, 23, 30, tzinfo=dt.timezone.utc)
TIME = shutil.which("time") or "/usr/bin/time"  # GNU time, for the peak RSS of a child
TIME_TARGET_S, MEMORY_TARGET_MB, FLAT_TARGET, START_TARGET_S = 1.0, 150, 1.5, 0.3


def main() -> int:
    """Run the benchmark and print the table."""
    args = _parser().parse_args()
    with tempfile.TemporaryDirectory(prefix="ledger-speed-") as tmp:
        server = MlflowServer(Path(tmp) / "mlflow", options=("--workers", "1")).start()
        try:
            return _bench(server, Path(tmp), args)
        finally:
            server.stop()


def _bench(server: MlflowServer, tmp: Path, args: argparse.Namespace) -> int:
    env = {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    os.environ.update(env)
    plain = _median(args.runs, [sys.executable, "-m", "gate", "check", "examples/cifar-sweep.yaml"])
    print(f"plain check (no ledger): {plain[0]:.2f} s, {plain[1]:.0f} MB", flush=True)
    rows, agree = [], True
    for size in args.sizes:
        team = f"team-{size}"
        work = tmp / team
        spec = _setup(work, team)
        made = time.perf_counter()
        snapshots = _fill(server, team, size, spec)
        print(
            f"{size:,} records for {team} ({snapshots} snapshots) in "
            f"{time.perf_counter() - made:.1f} s",
            flush=True,
        )
        common = ["--policy-dir", str(work / "policies"), "--as-of", AS_OF.isoformat()]
        base = [sys.executable, "-m", "gate"]
        check = [*base, "check", str(spec), *common, "--tracking-uri", server.uri]
        verify = [*base, "verify", str(spec), *common, "--tracking-uri", server.uri]
        sqlite = [*base, "check", str(spec), *common, "--tracking-uri", server.sqlite_uri]
        fp = fingerprint_of(str(spec))
        search = _in_process(_plain_read, server.uri, team, fp)
        ours = _in_process(_our_read, server.uri, team, fp)
        budgets = {_budget(c) for c in (check, verify, sqlite)} | {ours[2]}
        agree &= budgets == {search[2]}
        row = Row(
            size,
            search[:2],
            ours[:2],
            _median(args.runs, check),
            _median(args.runs, verify),
            _median(1, sqlite),
        )
        rows.append(row)
        print(f"  {row}; spend {sorted(budgets)} vs {search[2]}", flush=True)
    _print(rows, plain)
    if not agree:
        print("ERROR: the readers disagree on the month's spend", file=sys.stderr)
        return 1
    return 0


def _setup(work: Path, team: str) -> Path:
    (work / "policies").mkdir(parents=True)
    policy = POLICY.format(
        price="10",
        cap="100000000",
        trials_over=4,
        extra="",
        limits=", monthly_budget: 100000000",
        team=team,
    )
    (work / "policies" / "default.yaml").write_text(policy, encoding="utf-8")
    spec = work / "sweep.yaml"
    spec.write_text(SPEC.format(name="sweep", team=team, cc="cc-1", trials=8), encoding="utf-8")
    return spec


def _fill(server: MlflowServer, team: str, size: int, spec: Path) -> int:
    """Write ``size`` records of ``team`` in AS_OF's month, rolling snapshots as writers do."""
    start = month_start(AS_OF)
    span = (AS_OF - start) / size
    fp = fingerprint_of(str(spec))
    first = _record(team, 0, start, spec=str(spec), fingerprint=fp, kind=RecordKind.APPROVAL)
    first = dataclasses.replace(first, worst_cost=Decimal(1000), expires_at=AS_OF + dt.timedelta(9))
    ledger = MlflowLedger(server.uri, UNSIGNED)
    template = ledger.append(first)  # the spec's own approval, which verify finds
    experiment = ledger.experiment_id(create=False)
    assert experiment is not None
    ids = [template]
    snapshots, step = 0, max(1, ROLL_EVERY // 5)
    with sqlite3.connect(server.root / "mlflow.db") as con:
        columns = [row[1] for row in con.execute("PRAGMA table_info(runs)")]
        for at in range(1, size, step):
            batch = []
            for n in range(at, min(size, at + step)):
                run_id = uuid.uuid4().hex  # its record id too (revocations name them)
                record = _record(team, n, start + span * n, revoked=ids, record_id=run_id)
                ids.append(run_id)
                batch.append((run_id, record))
            _copy(con, columns, template, batch)
            con.commit()
            now = batch[-1][1].recorded_at
            snapshots += roll(ledger, experiment, f"team:{team}", now) is not None
    return snapshots


def _record(
    team: str, n: int, when: dt.datetime, revoked: list[str] | None = None, **fields: object
) -> LedgerRecord:
    """Record ``n`` of the month: 3 approvals, then a reconciliation and a revocation."""
    group, slot = divmod(n, 5)
    kind = [RecordKind.APPROVAL] * 3 + [RecordKind.RECONCILIATION, RecordKind.REVOCATION]
    amount = Decimal(1000 + n % 97) / 100
    record = LedgerRecord(
        kind=kind[slot],
        spec=f"exp/s{group % 400}.yaml",
        fingerprint=f"sha256:{uuid.UUID(int=group * 8 + min(slot, 3) % 3).hex * 2}",
        experiment=f"exp-{group}",
        recorded_at=when,
        currency="USD",
        worst_cost=amount if slot < 3 else None,
        expected_cost=amount if slot < 3 else None,
        actual_cost=amount if slot == 3 else None,
        team=team,
        by="alice",
        reason="benchmark",
        expires_at=when + dt.timedelta(days=14) if slot < 3 else None,
        revokes=(revoked[-3],) if slot == 4 and revoked else (),
    )
    return dataclasses.replace(record, **fields)  # type: ignore[arg-type]


def _copy(
    con: sqlite3.Connection,
    columns: list[str],
    template: str,
    batch: list[tuple[str, LedgerRecord]],
) -> None:
    """Insert each record as a copy of the template run with its own id, time, tags, params."""
    fixed = {"run_uuid": "?", "name": "?", "start_time": "?", "end_time": "?"}
    picked = ", ".join(fixed.get(c, c) for c in columns)
    order = [c for c in columns if c in fixed]
    sql = f"INSERT INTO runs ({', '.join(columns)}) SELECT {picked} FROM runs WHERE run_uuid = ?"
    for run_id, record in batch:
        ms = int(record.recorded_at.timestamp() * 1000)
        values = {"run_uuid": run_id, "name": record.kind.value, "start_time": ms, "end_time": ms}
        con.execute(sql, (*[values[c] for c in order], template))
        tags = [(k, v, run_id) for k, v in to_tags(record).items()]
        con.executemany("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?)", tags)
        params = [(k, v, run_id) for k, v in to_params(record).items()]
        con.executemany("INSERT INTO params (key, value, run_uuid) VALUES (?, ?, ?)", params)


@dataclass(frozen=True)
class Row:
    """One size's figures: (seconds, MB) for each reader."""

    size: int
    search: tuple[float, float]
    ours: tuple[float, float]
    check: tuple[float, float]
    verify: tuple[float, float]
    sqlite: tuple[float, float]


def _in_process(read: Callable[[str, str, str], str], *args: str) -> tuple[float, float, str]:
    """Wall time, Python heap peak (MB) and result of one read in this process."""
    tracemalloc.start()
    began = time.perf_counter()
    spent = read(*args)
    elapsed = time.perf_counter() - began
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return elapsed, peak, spent


def _our_read(uri: str, team: str, fp: str) -> str:
    """The month's spend as check reads it from a server (REST, newest snapshot, the rest)."""
    query = BudgetScope("team", team).query(month_start(AS_OF))
    spend = RestLedger(uri, UNSIGNED).month_spend(query, AS_OF)
    totals = spend.totals("USD", spec="-", fingerprint=fp)
    return str(totals.committed + totals.actual)


def _plain_read(uri: str, team: str, fp: str) -> str:
    """The month's records through ``MlflowClient.search_runs``, as budget-gate read them."""
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("budget-gate-ledger").experiment_id
    query = BudgetScope("team", team).query(month_start(AS_OF))
    records, token = [], None
    while True:
        page = client.search_runs(
            [experiment],
            filter_string(query),
            ViewType.ACTIVE_ONLY,
            max_results=50_000,
            page_token=token,
        )
        records.extend(from_tags(run.data.tags, run.info.run_id) for run in page)
        token = page.token
        if not token:
            break
    spend = month_spend(records, AS_OF).totals("USD", spec="-", fingerprint=fp)
    return str(spend.committed + spend.actual)


def _budget(argv: list[str]) -> str:
    """The month's spend a command reports (its JSON budget)."""
    out = subprocess.run([*argv, "--format", "json"], capture_output=True, text=True, check=False)
    budget = json.loads(out.stdout)["results"][0]["budget"]
    return str(Decimal(budget["committed"]) + Decimal(budget["actual"]))


def _median(runs: int, argv: list[str]) -> tuple[float, float]:
    """Median wall time and peak RSS (MB) of ``runs`` fresh processes of ``argv``."""
    timings = [_run(argv) for _ in range(runs)]
    return statistics.median(t for t, _ in timings), max(rss for _, rss in timings) / 1024


def _run(argv: list[str]) -> tuple[float, int]:
    """One process's wall time and peak RSS in KiB.

    The RSS comes from ``/usr/bin/time``: a child forked straight from this process (which
    holds MLflow) would report this process's pages as its own peak.
    """
    began = time.perf_counter()
    proc = subprocess.run(
        [TIME, "-f", "%M %x", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - began
    rss, code = proc.stderr.strip().splitlines()[-1].split()
    if int(code) not in (0, 1, 2):
        raise SystemExit(f"{' '.join(argv)} exited {code}: {proc.stderr[-2000:]}")
    return elapsed, int(rss)


def _print(rows: list[Row], plain: tuple[float, float]) -> None:
    print()
    print(
        "| records this month | search_runs read (in process) | budget-gate read (in process) "
        "| check | verify | check, sqlite file |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cells = [r.search, r.ours, r.check, r.verify, r.sqlite]
        print(f"| {r.size:,} | " + " | ".join(f"{t:.2f} s, {mb:.0f} MB" for t, mb in cells) + " |")
    print(
        f"\nplain check (no ledger): {plain[0]:.2f} s, {plain[1]:.0f} MB. Commands: median wall "
        "time of fresh processes and their peak RSS; in process: Python heap peak."
    )
    small, large = rows[0], rows[-1]
    (big_s, big_mb), flat = large.check, large.check[0] / small.check[0]
    start = small.check[0] - plain[0]
    verdict = "PASS" if big_s < TIME_TARGET_S and big_mb < MEMORY_TARGET_MB else "MISS"
    print(
        f"check at {large.size:,}: {big_s:.2f} s, {big_mb:.0f} MB "
        f"(target < {TIME_TARGET_S:g} s and < {MEMORY_TARGET_MB} MB): {verdict}"
    )
    print(
        f"check at {large.size:,} / at {small.size:,}: {flat:.2f}× "
        f"(target ≤ {FLAT_TARGET}×): {'PASS' if flat <= FLAT_TARGET else 'MISS'}"
    )
    print(
        f"check with a budget at {small.size:,} records − plain check: {start:.2f} s "
        f"(target ≤ {START_TARGET_S} s): {'PASS' if start <= START_TARGET_S else 'MISS'}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[100, 1_000, 10_000, 16_667],
        help="records per month",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed processes per command (5)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
