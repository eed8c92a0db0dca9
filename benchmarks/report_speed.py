"""How fast is ``budget-gate report`` on a month of 20 teams, 2,000 experiments, 20,000 runs?

Issue 25's target: the month reports in under 10 s against a local tracking server,
reading what ``reconcile`` reads once. This benchmark starts an MLflow server as
``mlflow server`` runs by default (4 workers, uvicorn, sqlite store in a temporary
directory), writes 2,000 spec files (20 teams × 100 experiments, each its own MLflow
experiment and spec version) and a policy, logs one finished and one failed template run
through MLflow's API, and copies them in the store with SQL to 10 runs per experiment,
each with the tags ``gate.tracking.run_tags`` gives a run of its spec, a 10-epoch
``val_loss`` history and ``val_f1`` (seconds, instead of the minutes that logging 200,000
points through the API takes). Every run holds 1 GPU for 1 hour at 10 per GPU-hour, so the
month's actual cost is known: 200,000.

Then it times ``budget-gate report --month 2026-06 --format json`` as a fresh process (its
imports included) twice: over the server's REST API (``--tracking-uri http://...``), and on
the server's own SQLite store (``--tracking-uri sqlite:///...``, read with SQL while the
server runs), and checks that each priced every run at the known total; against the floor
over REST (the same searches and bulk history reads with nothing done with the answers:
the server's own share, which no client goes below) and a plain
MLflow loop: ``MlflowClient.search_runs`` over the experiments and one
``get_metric_history`` per run (timed on ``--naive-sample`` runs and scaled to all of
them: the whole loop takes many minutes). Run from the repository root
(``pip install -e '.[test,mlflow]'``)::

    python benchmarks/report_speed.py [--teams 20] [--experiments 100] [--runs 10]

Exit 0 when the report is right both ways and one of them is within the target (the row
says which); 1 when both miss it, 2 when its figures are wrong or it failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")

from mlflow.entities import Metric, ViewType  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from gate import tracking  # noqa: E402
from tests.mlflow_server import MlflowServer  # noqa: E402

TARGET_S = 10.0
MONTH = "2026-06"
T0 = int(dt.datetime(2026, 6, 1, 8, tzinfo=dt.timezone.utc).timestamp() * 1000)
HOUR_MS = 3_600_000
EPOCHS = 10
PRICE = 10
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
teams: [{teams}]
prices: {{overrides: {{L4: {{on-demand: {price}}}}}}}
limits: {{max_experiment_cost: 1000000, monthly_budget: 50000}}
approval: {{trials_over: 1000, approvers: {{users: [alice]}}}}
"""
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: {name}, team: {team}, owner: carol, labels: {{model: {model}}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: {epochs}, epoch_minutes: 6}}
search: {{strategy: random, max_trials: {runs}}}
stopping:
  early_stopping: {{monitor: val_loss, mode: min, patience: 2}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
tracking: {{mlflow_experiment: {name}}}
"""
HISTORY = [1.0, 0.6, 0.4, 0.3, 0.25, 0.22, 0.21, 0.21, 0.21, 0.21]


def main() -> int:
    """Seed, time both readers, print the table."""
    args = _parser().parse_args()
    with tempfile.TemporaryDirectory(prefix="report-speed-") as tmp:
        root = Path(tmp)
        server = MlflowServer(root / "mlflow", options=("--workers", str(args.workers))).start()
        try:
            return _bench(server, root, args)
        finally:
            server.stop()


def _bench(server: MlflowServer, root: Path, args: argparse.Namespace) -> int:
    made = time.perf_counter()
    specs = _write_specs(root, args)
    experiments = _seed(server, specs, args)
    total_runs = len(specs) * args.runs
    print(
        f"server: mlflow, {args.workers} workers, uvicorn, sqlite; {args.teams} teams, "
        f"{len(specs):,} experiments, {total_runs:,} runs × {EPOCHS} epochs made in "
        f"{time.perf_counter() - made:.1f} s",
        flush=True,
    )
    ours_s, document, error = _report(root, server.uri)
    print(f"  budget-gate report over REST: {ours_s:.2f} s", flush=True)
    problems = [error] if error else _check(document, total_runs)
    store = f"sqlite:///{server.root / 'mlflow.db'}"
    sql_s, document, error = _report(root, store)
    print(f"  budget-gate report on the store: {sql_s:.2f} s", flush=True)
    problems += [error] if error else _check(document, total_runs)
    floor_search_s, floor_histories_s = _floor(server.uri, experiments)
    search_s, histories_s = _naive(server, experiments, args.naive_sample)
    naive_s = search_s + histories_s * total_runs / args.naive_sample
    best = min(ours_s, sql_s)

    def verdict(seconds: float) -> str:
        return f"target < {TARGET_S:g} s: {'PASS' if seconds < TARGET_S else 'MISS'}"

    rows = [
        (f"budget-gate report, {total_runs:,} runs, over REST (fresh process)",
         f"{ours_s:.2f} s", verdict(ours_s)),
        ("budget-gate report, the server's sqlite store read with SQL", f"{sql_s:.2f} s",
         verdict(sql_s)),
        ("floor: the same REST reads, answers parsed and dropped (4 at once)",
         f"{floor_search_s + floor_histories_s:.2f} s",
         f"searches {floor_search_s:.2f} s + histories {floor_histories_s:.2f} s"),
        ("plain loop: search_runs over the experiments", f"{search_s:.2f} s", ""),
        (f"plain loop: get_metric_history, {args.naive_sample} runs timed", f"{histories_s:.2f} s",
         f"× {total_runs / args.naive_sample:g} to scale"),
        (f"plain loop, {total_runs:,} runs (scaled)", f"{naive_s:.1f} s",
         f"{naive_s / ours_s:.1f}× the report over REST"),
    ]  # fmt: skip
    _print(rows)
    for problem in problems:
        print(f"ERROR: {problem}", file=sys.stderr)
    if problems:
        return 2
    return 0 if best < TARGET_S else 1


def _write_specs(root: Path, args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    """(team, experiment name, spec path) for every experiment, and the policy."""
    teams = [f"team-{t:02d}" for t in range(args.teams)]
    policies = root / "policies"
    policies.mkdir()
    text = POLICY.format(teams=", ".join(teams), price=PRICE)
    (policies / "default.yaml").write_text(text, encoding="utf-8")
    specs = []
    for t, team in enumerate(teams):
        for e in range(args.experiments):
            name = f"{team}-exp-{e:03d}"
            path = root / "experiments" / f"{name}.yaml"
            path.parent.mkdir(exist_ok=True)
            path.write_text(
                SPEC.format(name=name, team=team, model=f"model-{t % 5}", epochs=EPOCHS,
                            runs=args.runs),
                encoding="utf-8",
            )  # fmt: skip
            specs.append((team, name, path))
    return specs


def _seed(
    server: MlflowServer, specs: list[tuple[str, str, Path]], args: argparse.Namespace
) -> list[str]:
    """One MLflow experiment per spec, and ``args.runs`` copied runs in each; their ids."""
    client = MlflowClient(server.uri)
    first = client.create_experiment(specs[0][1])
    templates = []
    for status, f1 in (("FINISHED", 0.9), ("FAILED", 0.5)):
        tags = tracking.run_tags(specs[0][2], trial_id=0)
        run = client.create_run(first, start_time=T0, tags=tags)
        history = [Metric("val_loss", v, T0 + s, s) for s, v in enumerate(HISTORY)]
        client.log_batch(run.info.run_id, metrics=[*history, Metric("val_f1", f1, T0, 0)])
        client.set_terminated(run.info.run_id, status, end_time=T0 + HOUR_MS)
        templates.append(run.info.run_id)
    db = server.root / "mlflow.db"
    with sqlite3.connect(db) as con:
        ids = _experiments(con, first, [name for _, name, _ in specs[1:]])
        _copy_runs(con, templates, [first, *ids], specs, args.runs)
    return [first, *ids]


def _experiments(con: sqlite3.Connection, first: str, names: list[str]) -> list[str]:
    columns = [row[1] for row in con.execute("PRAGMA table_info(experiments)")]
    found = con.execute("SELECT * FROM experiments WHERE experiment_id = ?", (first,)).fetchone()
    row = dict(zip(columns, found, strict=True))
    start = int(first) + 1
    rows = []
    for offset, name in enumerate(names):
        copy = {**row, "experiment_id": start + offset, "name": name}
        copy["artifact_location"] = f"{row['artifact_location'].rsplit('/', 1)[0]}/{start + offset}"
        rows.append([copy[c] for c in columns])
    marks = ", ".join("?" for _ in columns)
    con.executemany(f"INSERT INTO experiments ({', '.join(columns)}) VALUES ({marks})", rows)
    return [str(start + offset) for offset in range(len(names))]


def _copy_runs(
    con: sqlite3.Connection,
    templates: list[str],
    experiment_ids: list[str],
    specs: list[tuple[str, str, Path]],
    per_experiment: int,
) -> None:
    """Every experiment's runs: copies of a template with its own id, times and tags."""
    tables = {t: [row[1] for row in con.execute(f"PRAGMA table_info({t})")] for t in
              ("runs", "tags", "params", "metrics", "latest_metrics")}  # fmt: skip
    rows = {
        t: [
            dict(zip(cols, r, strict=True))
            for r in con.execute(f"SELECT * FROM {t} WHERE run_uuid IN (?, ?)", templates)
        ]
        for t, cols in tables.items()
    }
    con.execute("DELETE FROM runs WHERE run_uuid IN (?, ?)", templates)
    for table in ("tags", "params", "metrics", "latest_metrics"):
        con.execute(f"DELETE FROM {table} WHERE run_uuid IN (?, ?)", templates)
    out: dict[str, list[list[object]]] = {t: [] for t in tables}
    month_ms = 29 * 24 * HOUR_MS
    index = 0
    for experiment_id, (_, _, path) in zip(experiment_ids, specs, strict=True):
        spec_tags = tracking.run_tags(path)
        for trial in range(per_experiment):
            template = templates[1] if trial == per_experiment - 1 else templates[0]
            run_id = uuid.UUID(int=index + 1).hex
            start = T0 + (index * 7919 * 1000) % month_ms
            index += 1
            tags = {**spec_tags, tracking.TRIAL_ID: str(trial)}
            for table, cols in tables.items():
                for row in rows[table]:
                    if row["run_uuid"] != template:
                        continue
                    copy = {**row, "run_uuid": run_id}
                    if table == "runs":
                        copy.update(experiment_id=int(experiment_id), start_time=start,
                                    end_time=start + HOUR_MS, name=f"run-{trial}")  # fmt: skip
                    elif table == "tags" and row["key"] in tags:
                        copy["value"] = tags[row["key"]]
                    out[table].append([copy[c] for c in cols])
    for table, cols in tables.items():
        marks = ", ".join("?" for _ in cols)
        con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", out[table])


def _report(root: Path, uri: str) -> tuple[float, dict[str, object], str | None]:
    argv = [
        sys.executable, "-m", "gate", "report", "--month", MONTH, "--format", "json",
        "--policy-dir", str(root / "policies"), "--tracking-uri", uri,
    ]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=root, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        return elapsed, {}, f"budget-gate report exited {done.returncode}: {done.stderr[-2000:]}"
    return elapsed, json.loads(done.stdout), None


def _check(document: dict[str, object], runs: int) -> list[str]:
    totals = document["totals"]
    assert isinstance(totals, dict)
    problems = []
    if totals["runs"] != runs:
        problems.append(f"the report priced {totals['runs']} runs, not {runs}")
    want = Decimal(runs * PRICE)  # 1 GPU × 1 h each
    if Decimal(str(totals["actual"])).quantize(Decimal("0.01")) != want:
        problems.append(f"the report's actual is {totals['actual']}, not {want}")
    return problems


def _floor(uri: str, experiments: list[str]) -> tuple[float, float]:
    """The server's own share: the report's REST requests with nothing done with the answers.

    The searches as the report makes them (the experiments dealt into 4 groups searched at
    once, pages of 1,000), then every run's ``val_loss`` history in bulk, 100 runs a request,
    4 at once; what no client of this server can go below.
    """

    def post(body: dict[str, object]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{uri}/api/2.0/mlflow/runs/search",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=600) as answer:
            found: dict[str, Any] = json.load(answer)
            return found

    def search(group: list[str]) -> list[str]:
        ids, token = [], None
        while True:
            body: dict[str, object] = {
                "experiment_ids": group, "filter": f"tags.{tracking.FINGERPRINT} IS NOT NULL",
                "max_results": 1_000, "order_by": ["attributes.start_time ASC"],
            }  # fmt: skip
            if token:
                body["page_token"] = token
            page = post(body)
            ids += [run["info"]["run_id"] for run in page.get("runs", [])]
            token = page.get("next_page_token")
            if not token:
                return ids

    def histories(run_ids: list[str]) -> int:
        query = [("run_id", run_id) for run_id in run_ids]
        query += [("metric_key", "val_loss"), ("max_results", "25000")]
        url = f"{uri}/ajax-api/2.0/mlflow/metrics/get-history-bulk?{urlencode(query)}"
        with urllib.request.urlopen(url, timeout=600) as answer:
            return len(json.load(answer).get("metrics", []))

    began = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        groups = [experiments[g::4] for g in range(4)]
        run_ids = [run_id for ids in pool.map(search, groups) for run_id in ids]
    searched = time.perf_counter() - began
    began = time.perf_counter()
    batches = [run_ids[i : i + 100] for i in range(0, len(run_ids), 100)]
    with ThreadPoolExecutor(4) as pool:
        sum(pool.map(histories, batches))
    return searched, time.perf_counter() - began


def _naive(server: MlflowServer, experiments: list[str], sample: int) -> tuple[float, float]:
    """search_runs over every experiment, then get_metric_history on ``sample`` runs."""
    client = MlflowClient(server.uri)
    began = time.perf_counter()
    runs = []
    token = None
    while True:
        page = client.search_runs(
            experiments, f"tags.{tracking.FINGERPRINT} IS NOT NULL", ViewType.ACTIVE_ONLY,
            max_results=50_000, page_token=token,
        )  # fmt: skip
        runs.extend(page)
        token = page.token
        if not token:
            break
    searched = time.perf_counter() - began
    began = time.perf_counter()
    with ThreadPoolExecutor(1) as one:  # a plain loop: one history after another
        list(one.map(lambda r: client.get_metric_history(r.info.run_id, "val_loss"), runs[:sample]))
    return searched, time.perf_counter() - began


def _print(rows: list[tuple[str, str, str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    print()
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--teams", type=int, default=20, help="teams (20)")
    parser.add_argument("--experiments", type=int, default=100, help="experiments per team (100)")
    parser.add_argument("--runs", type=int, default=10, help="runs per experiment (10)")
    parser.add_argument("--workers", type=int, default=4, help="MLflow server workers (4)")
    parser.add_argument(
        "--naive-sample", type=int, default=300, help="runs the plain loop reads histories of (300)"
    )
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
