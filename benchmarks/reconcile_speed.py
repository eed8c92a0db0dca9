"""How fast is ``budget-gate reconcile`` against the naive loop, and how much memory does it use?

Reconcile reads every run of an experiment with the history of its monitored metric. The
naive way is ``MlflowClient.search_runs`` and then one ``get_metric_history`` per run.
budget-gate reads pages of runs over raw REST and the histories with MLflow's bulk
endpoint, 100 runs a request, on 4 threads, while the next page is searched. Targets:

* at 2,000 runs with 100-step histories: at least 10× faster than the naive loop;
* at 10,000 runs: peak memory that grows far slower than the data read.

The benchmark starts its own MLflow server as ``mlflow server`` does by default (4 worker
processes, uvicorn; sqlite store in a temporary directory), creates one finished and one
failed run through MLflow's API, copies them in the store with SQL to N runs (every column
copied, only the run id and times changed: seconds instead of the minutes that logging
10⁶ points through the API takes), then times both readers on the same data, checks that
they read the same histories, and measures peak memory with ``tracemalloc`` in a second
pass. Run from the repository root (``pip install -e '.[test,mlflow]'``)::

    python benchmarks/reconcile_speed.py [--runs 2000] [--memory-runs 10000]

``--workers N`` changes the server's worker processes; with one, uvicorn answers each of
the naive loop's requests faster on loopback and the gap narrows. ``--analyze`` runs
SQLite's ``ANALYZE`` on the store first. MLflow never does, and without it each per-run
history query scans every point of that metric in the store, which makes the naive loop
quadratic; with it, both readers are bound by the server turning rows into objects.
``--gunicorn`` serves MLflow with gunicorn instead of uvicorn. Exit code 0 whether
or not a target is met; 1 when the two readers disagree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sqlite3
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")

from mlflow.entities import Metric, ViewType  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from gate import tracking  # noqa: E402
from gate.integrations.mlflow.runs import MlflowRuns, RunQuery  # noqa: E402
from gate.reconcile.actuals import Plan  # noqa: E402
from gate.reconcile.quality import monitor_for  # noqa: E402
from gate.reconcile.reconciler import Reconciler  # noqa: E402
from gate.spec.fingerprint import fingerprint  # noqa: E402
from tests.conftest import make_estimate, make_quote, make_spec  # noqa: E402
from tests.mlflow_server import MlflowServer  # noqa: E402

T = TypeVar("T")
STEPS = 100
SPEEDUP_TARGET = 10.0
EXPERIMENT = "reconcile-speed"
TABLES = ("runs", "tags", "params", "metrics", "latest_metrics")
T0 = 1_790_000_000_000  # ms


def main() -> int:
    """Run the benchmark and print the table."""
    args = _parser().parse_args()
    # NOTE: MLflow's own default is 4 worker processes (the test fixture runs 1, for memory).
    options: tuple[str, ...] = ("--workers", str(args.workers))
    if args.gunicorn:
        options += ("--gunicorn-opts", "--timeout 120")
    with tempfile.TemporaryDirectory(prefix="reconcile-speed-") as tmp:
        server = MlflowServer(Path(tmp) / "mlflow", options=options).start()
        try:
            return _bench(server, args)
        finally:
            server.stop()


def _bench(server: MlflowServer, args: argparse.Namespace) -> int:
    plan = _plan()
    client = MlflowClient(server.uri)
    experiment_id = client.create_experiment(EXPERIMENT)
    made = time.perf_counter()
    templates = _templates(client, experiment_id, plan.fingerprint)
    db = server.root / "mlflow.db"
    _clone(db, templates, args.runs, analyze=args.analyze)
    print(
        f"server: mlflow, {args.workers} workers, "
        f"{'gunicorn' if args.gunicorn else 'uvicorn (default)'}, "
        f"sqlite store{', ANALYZE run' if args.analyze else ''}; "
        f"{args.runs:,} runs × {STEPS} steps made in {time.perf_counter() - made:.1f} s",
        flush=True,
    )
    rows: list[tuple[str, str, str]] = []
    ours_s, ours = _timed(lambda: _ours(server.uri, experiment_id, plan))
    rows.append((f"budget-gate reader + reconcile, {args.runs:,} runs", f"{ours_s:.2f} s", ""))
    print(f"  ours: {ours_s:.2f} s", flush=True)
    mismatch = False
    if not args.skip_naive:
        naive_s, naive = _timed(lambda: _naive(server.uri, experiment_id))
        print(f"  naive: {naive_s:.2f} s", flush=True)
        speedup = naive_s / ours_s
        verdict = "PASS" if speedup >= SPEEDUP_TARGET else "MISS"
        rows.append((f"naive loop, {args.runs:,} runs", f"{naive_s:.2f} s", ""))
        rows.append(("speed-up", f"{speedup:.1f}×", f"target ≥ {SPEEDUP_TARGET:g}×: {verdict}"))
        mismatch = naive != ours  # (runs, histories by run id) from each reader
    memory = [(args.runs, *_peak(server.uri, experiment_id, plan))]
    if args.memory_runs > args.runs:
        _clone(db, templates, args.memory_runs, analyze=args.analyze)
        big_s, _ = _timed(lambda: _ours(server.uri, experiment_id, plan))
        label = f"budget-gate reader + reconcile, {args.memory_runs:,} runs"
        rows.append((label, f"{big_s:.2f} s", ""))
        memory.append((args.memory_runs, *_peak(server.uri, experiment_id, plan)))
    for runs, stream, whole in memory:
        points = runs * STEPS
        rows.append(
            (
                f"peak Python memory, {runs:,} runs ({points:,} history points)",
                f"{_mib(stream)} streaming; {_mib(whole)} with the report",
                "",
            )
        )
    if len(memory) == 2:
        (small, _, small_whole), (large, _, large_whole) = memory
        per_run = (large_whole - small_whole) / (large - small)
        rows.append(("memory per extra run (its result, for the report)", f"{per_run:,.0f} B", ""))
    _print(rows)
    if mismatch:
        print("ERROR: the two readers read different histories", file=sys.stderr)
        return 1
    return 0


def _plan() -> Plan:
    spec = make_spec(
        {
            "metadata": {"name": EXPERIMENT},
            "quality_gate": [{"metric": "val_f1", "op": ">=", "value": 0.8}],
            "tracking": {"mlflow_experiment": EXPERIMENT},
        }
    )
    return Plan(
        spec=spec,
        fingerprint=fingerprint(spec),
        quote=make_quote("4"),
        estimate=make_estimate(spec),
        monitor=monitor_for(spec),
        now=dt.datetime.now(dt.timezone.utc),
        tolerance=Decimal("0.1"),
    )


def _templates(client: MlflowClient, experiment_id: str, fp: str) -> list[str]:
    """One finished and one failed run, each with a 100-step val_loss history."""
    made = []
    for status, f1 in (("FINISHED", 0.85), ("FAILED", 0.4)):
        tags = {tracking.FINGERPRINT: fp, tracking.GPUS: "2", tracking.TRIAL_ID: "0"}
        run = client.create_run(experiment_id, start_time=T0, tags=tags)
        history = [Metric("val_loss", 2.0 / (1 + s), T0 + s, s) for s in range(STEPS)]
        client.log_batch(run.info.run_id, metrics=[*history, Metric("val_f1", f1, T0, 0)])
        client.set_terminated(run.info.run_id, status, end_time=T0 + 3_600_000)
        made.append(run.info.run_id)
    return made


def _clone(db: Path, templates: list[str], total: int, *, analyze: bool) -> None:
    """Copy the template runs' rows until the experiment holds ``total`` runs."""
    with sqlite3.connect(db) as con:
        have = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        for table in TABLES:
            columns = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
            key = "run_uuid"
            picked = ", ".join("?" if c == key else c for c in columns)
            sql = (
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"SELECT {picked} FROM {table} WHERE {key} = ?"
            )
            con.executemany(sql, _pairs(templates, have, total))
        # Spread start times so the order by start time means something.
        con.execute(
            "UPDATE runs SET start_time = ? + (rowid * 1000), end_time = ? + (rowid * 1000)",
            (T0, T0 + 3_600_000),
        )
        if analyze:
            con.execute("ANALYZE")


def _pairs(templates: list[str], have: int, total: int) -> Iterator[tuple[str, str]]:
    """(new run id, template run id) for every run still missing."""
    for index in range(have, total):
        yield uuid.UUID(int=index + 1).hex, templates[index % len(templates)]


def _ours(uri: str, experiment_id: str, plan: Plan) -> tuple[int, dict[str, tuple[float, ...]]]:
    """What ``budget-gate reconcile`` does, minus printing: read, price, total."""
    reconciler = Reconciler(plan)
    histories: dict[str, tuple[float, ...]] = {}
    query = RunQuery(experiment_id, plan.fingerprint, plan.monitor.metric)
    for facts in MlflowRuns(uri).facts(query):
        reconciler.add(facts)
        histories[facts.run_id] = facts.history
    result = reconciler.result()
    return len(result.runs), histories


def _naive(uri: str, experiment_id: str) -> tuple[int, dict[str, tuple[float, ...]]]:
    """search_runs, then get_metric_history per run."""
    client = MlflowClient(uri)
    runs = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], "", ViewType.ACTIVE_ONLY, max_results=50_000, page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            break
    histories = {}
    for run in runs:
        points = sorted(client.get_metric_history(run.info.run_id, "val_loss"), key=_step)
        histories[run.info.run_id] = tuple(m.value for m in points)
    return len(runs), histories


def _step(metric: Metric) -> tuple[int, int]:
    return metric.step, metric.timestamp


def _peak(uri: str, experiment_id: str, plan: Plan) -> tuple[int, int]:
    """Peak traced bytes: streaming alone (facts dropped), and with the kept run results."""
    query = RunQuery(experiment_id, plan.fingerprint, plan.monitor.metric)
    tracemalloc.start()
    for _ in MlflowRuns(uri).facts(query):
        pass
    stream = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    reconciler = Reconciler(plan)
    for facts in MlflowRuns(uri).facts(query):
        reconciler.add(facts)
    reconciler.result()
    whole = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return stream, whole


def _timed(work: Callable[[], T]) -> tuple[float, T]:
    began = time.perf_counter()
    result = work()
    return time.perf_counter() - began, result


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _print(rows: list[tuple[str, str, str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    print()
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=2_000, help="runs for the timing (2,000)")
    parser.add_argument(
        "--memory-runs", type=int, default=10_000, help="runs for the memory figure (10,000)"
    )
    parser.add_argument("--gunicorn", action="store_true", help="serve MLflow with gunicorn")
    parser.add_argument(
        "--workers", type=int, default=4, help="MLflow server worker processes (MLflow's 4)"
    )
    parser.add_argument(
        "--analyze", action="store_true", help="run ANALYZE on the store (see the docstring)"
    )
    parser.add_argument("--skip-naive", action="store_true", help="skip the (slow) naive loop")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
