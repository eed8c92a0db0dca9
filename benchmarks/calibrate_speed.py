"""Does ``budget-gate calibrate`` read runs as fast as ``budget-gate reconcile``?

Issue 13 says calibrate reads the finished runs that carry budget-gate's run tags with the
reconcile reader, at the same speed. This benchmark times both commands as fresh
processes on the same MLflow store, with reconcile as the baseline:

* ``budget-gate reconcile SPEC --tracking-uri URI --format json`` (it also writes its
  reconciliation to the ledger; ``--dry-run``, timed too, leaves that out);
* ``budget-gate calibrate --tracking-uri URI --experiment NAME``, and with ``--backtest``.

The store is made as ``benchmarks/reconcile_speed.py`` makes its own (that module's
machinery, imported): an MLflow server as ``mlflow server`` runs by default (4 workers,
uvicorn, sqlite), one finished and one failed run per spec version logged through MLflow's
API, copied with SQL to N runs. Here every run carries ``gate.tracking.run_tags(spec,
trial_id=…)`` of a spec with a ``model`` label, logs ``budget_gate.train_seconds`` and
``budget_gate.setup_seconds`` and a 100-step ``val_loss`` history, so calibrate learns
from every run. After the copy, each run gets its own trial id, a training time of its
own (epoch times 0.40–0.50 min) and, with ``--versions K``, the K spec versions run one
after another, so that the backtest has K experiments to replay (reconcile then reads
every version, with ``--all-versions``, so that both commands read the same N runs).

Both get the built-in default policy, as ``--policy-dir`` (the same for both).
Every command runs ``--repeats`` times after a warm-up, in rounds (one of each in turn);
the table shows the median wall time with its range, the CPU seconds of the command
itself and of the MLflow server's processes (from ``/proc``), and the peak RSS, next to
the floor that both commands pay before their first request: importing the reader, and
so MLflow (each command is forked from a small launcher, ``benchmarks/fresh_process.py``,
so that its peak RSS is its own). The ratios to reconcile are of the median wall time, of
the CPU of command and server together (steadier than the wall time on a busy machine)
and of the peak RSS.
Run from the repository root (``pip install -e '.[test,mlflow]'``)::

    python benchmarks/calibrate_speed.py [--runs 2000] [--repeats 5] [--versions 1]

Exit 0 whether or not calibrate is as fast; 1 when calibrate did not learn from exactly
N runs (or not the known median epoch time), when reconcile did not read N runs, or
when a command exits with an unexpected code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlflow.entities import Metric  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from benchmarks.check_speed import find_script  # noqa: E402
from benchmarks.fresh_process import measure, tree_cpu  # noqa: E402
from benchmarks.reconcile_speed import STEPS, T0, _clone, _mib, _print  # noqa: E402
from gate import tracking  # noqa: E402
from tests.mlflow_server import MlflowServer  # noqa: E402

EXPERIMENT = "calibrate-speed"
MAX_EPOCHS = 120  # finished runs stop early, at 100 epochs (STEPS)
SETUP_S = 120.0
HELD_MS = 3_600_000  # every copied run held its GPUs an hour (reconcile_speed's _clone)
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  name: {name}
  team: vision
  owner: carol
  labels: {{cost-center: cc-1, environment: research, workload-type: hpo, model: resnet18}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: {max_epochs}, epoch_minutes: {declared}, setup_minutes: 2}}
search: {{strategy: random, max_trials: {trials}}}
stopping: {{early_stopping: {{monitor: val_loss, patience: 10}}}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
tracking: {{mlflow_experiment: {name}}}
"""
EXACT_KEY = {"model": "resnet18", "accelerator": "L4", "gpus": 1, "precision": "bf16"}


@dataclass(frozen=True)
class Sample:
    """One fresh process: wall and CPU seconds (its own, the server's), peak RSS, exit code."""

    wall: float
    cpu: float
    server_cpu: float | None  # None where /proc cannot be read
    rss_kib: int
    code: int


@dataclass(frozen=True)
class Timing:
    """The timed processes of one command."""

    label: str
    samples: list[Sample]

    @property
    def wall(self) -> float:
        """Median wall seconds."""
        return statistics.median(s.wall for s in self.samples)

    @property
    def all_cpu(self) -> float:
        """Median CPU seconds of the command and the server together."""
        return statistics.median(s.cpu + (s.server_cpu or 0.0) for s in self.samples)

    @property
    def rss_kib(self) -> int:
        """Peak RSS over the processes."""
        return max(s.rss_kib for s in self.samples)

    def figures(self) -> str:
        """Median wall time and its range, median CPU seconds, peak RSS."""
        walls = [s.wall for s in self.samples]
        server = [s.server_cpu for s in self.samples if s.server_cpu is not None]
        on_server = f" + {statistics.median(server):.2f} s server" if server else ""
        own = statistics.median(s.cpu for s in self.samples)
        return (
            f"{self.wall:.2f} s ({min(walls):.2f}–{max(walls):.2f}); "
            f"CPU {own:.2f} s own{on_server}; peak RSS {_mib(self.rss_kib * 1024)}"
        )


def main() -> int:
    """Make the store, time the commands, check what they read, print the table."""
    args = _arguments()
    gate, _ = find_script("budget-gate")
    gate = gate or [sys.executable, "-m", "gate"]
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    options = ("--workers", str(args.workers))
    with tempfile.TemporaryDirectory(prefix="calibrate-speed-") as tmp:
        server = MlflowServer(Path(tmp) / "mlflow", options=options).start()
        try:
            with contextlib.chdir(tmp):
                return _bench(server, gate, Path(tmp), args)
        finally:
            server.stop()


def _bench(server: MlflowServer, gate: list[str], tmp: Path, args: argparse.Namespace) -> int:
    specs = [_write_spec(tmp, version, args.runs) for version in range(args.versions)]
    client = MlflowClient(server.uri)
    experiment_id = client.create_experiment(EXPERIMENT)
    templates = [run for spec in specs for run in _templates(client, experiment_id, spec)]
    db = server.root / "mlflow.db"
    _clone(db, templates, args.runs, analyze=args.analyze)
    epoch_minutes = _individualize(db, args.versions)
    commands = _commands(gate, server.uri, specs, tmp)
    reconcile, calibrate = commands["reconcile (baseline)"], commands["calibrate"]
    print(
        f"server: mlflow, {args.workers} workers, uvicorn, sqlite store"
        f"{', ANALYZE run' if args.analyze else ''}; {args.runs:,} runs × "
        f"{STEPS} steps of {args.versions} spec version(s); {os.cpu_count()} CPUs; "
        f"{args.repeats} fresh processes of each command after a warm-up, in rounds",
        flush=True,
    )
    try:
        timings = _time_all(commands, args.repeats, server, tmp / "out.json")
        errors = _check_reconcile(reconcile, args.runs)
        errors += _check_calibrate(calibrate, tmp / "calibration.json", epoch_minutes)
    except BenchmarkError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    _print(_rows(timings, args.runs))
    for error in errors:
        print(f"ERROR: {error}", file=sys.stderr)
    return 1 if errors else 0


def _commands(gate: list[str], uri: str, specs: list[Path], tmp: Path) -> dict[str, list[str]]:
    """The timed command lines, by label; reconcile reads every version where there are more."""
    # The same policies for both, named: without --policy-dir each would say on stderr that
    # it takes the built-in default (and calibrate before 3d02011 exited 70).
    policies = tmp / "policies"
    policies.mkdir()
    shutil.copy(ROOT / "gate" / "data" / "default-policy.yaml", policies / "default.yaml")
    where = ["--tracking-uri", uri, "--policy-dir", str(policies)]
    reconcile = [*gate, "reconcile", str(specs[0]), *where, "--format", "json"]
    if len(specs) > 1:
        reconcile.append("--all-versions")
    calibrate = [*gate, "calibrate", *where, "--experiment", EXPERIMENT]
    return {
        "import the reader (floor)": [sys.executable, "-c", "import gate.integrations.mlflow.runs"],
        "reconcile (baseline)": reconcile,
        "reconcile --dry-run": [*reconcile, "--dry-run"],
        "calibrate": calibrate,
        "calibrate --backtest": [*calibrate, "--backtest"],
    }


class BenchmarkError(Exception):
    """A command exited with a code the benchmark did not expect."""


def _write_spec(tmp: Path, version: int, runs: int) -> Path:
    """Spec version ``version``: another declared epoch time, so another fingerprint."""
    path = tmp / f"spec-{version:03d}.yaml"
    text = SPEC.format(
        name=EXPERIMENT,
        max_epochs=MAX_EPOCHS,
        declared=f"{0.3 + version / 100:.2f}",
        trials=max(runs, 1),
    )
    path.write_text(text, encoding="utf-8")
    return path


def _templates(client: MlflowClient, experiment_id: str, spec: Path) -> list[str]:
    """One finished and one failed run of ``spec``, tagged as launchers tag them."""
    made = []
    for status, f1 in (("FINISHED", 0.85), ("FAILED", 0.4)):
        tags = tracking.run_tags(spec, trial_id=0, attempt=1)
        run = client.create_run(experiment_id, start_time=T0, tags=tags)
        # val_loss falls and flattens: a plateau for calibrate, a curve for reconcile.
        history = [
            Metric("val_loss", 0.3 + 0.7 * math.exp(-s / 12), T0 + s, s) for s in range(STEPS)
        ]
        phases = [
            Metric(tracking.TRAIN_SECONDS, 2_700.0, T0, 0),  # replaced per run afterwards
            Metric(tracking.SETUP_SECONDS, SETUP_S, T0, 0),
            Metric("val_f1", f1, T0, 0),
        ]
        client.log_batch(run.info.run_id, metrics=[*history, *phases])
        client.set_terminated(run.info.run_id, status, end_time=T0 + HELD_MS)
        made.append(run.info.run_id)
    return made


def _individualize(db: Path, versions: int) -> list[float]:
    """Give each copied run its own trial id and training time; versions in time order.

    Returns every run's epoch time in minutes, as calibrate must learn it.
    """
    run_rowid = "(SELECT rowid FROM runs WHERE runs.run_uuid = {table}.run_uuid)"
    with sqlite3.connect(db) as con:
        con.execute(
            f"UPDATE tags SET value = CAST({run_rowid.format(table='tags')} AS TEXT) WHERE key = ?",
            (tracking.TRIAL_ID,),
        )
        for table in ("metrics", "latest_metrics"):
            # 2,400–2,999 s over 100 epochs: 0.40–0.50 min an epoch
            con.execute(
                f"UPDATE {table} SET value = 2400 + ({run_rowid.format(table=table)} * 37) % 600 "
                "WHERE key = ?",
                (tracking.TRAIN_SECONDS,),
            )
        if versions > 1:
            # Version after version (the spec file names sort in version order).
            con.execute(
                "WITH ordered AS (SELECT tags.run_uuid AS id, "
                "ROW_NUMBER() OVER (ORDER BY tags.value, runs.rowid) AS n "
                "FROM tags JOIN runs ON runs.run_uuid = tags.run_uuid WHERE tags.key = ?) "
                "UPDATE runs SET start_time = ? + 1000 * "
                "(SELECT n FROM ordered WHERE ordered.id = runs.run_uuid), "
                "end_time = ? + 1000 * (SELECT n FROM ordered WHERE ordered.id = runs.run_uuid)",
                (tracking.SPEC, T0, T0 + HELD_MS),
            )
        seconds = con.execute(
            "SELECT value FROM latest_metrics WHERE key = ?", (tracking.TRAIN_SECONDS,)
        ).fetchall()
    return [value / STEPS / 60 for (value,) in seconds]


def _time_all(
    commands: dict[str, list[str]], repeats: int, server: MlflowServer, out: Path
) -> list[Timing]:
    """A warm-up of each command, then ``repeats`` rounds of one of each."""
    samples: dict[str, list[Sample]] = {label: [] for label in commands}
    for round_ in range(repeats + 1):
        for label, argv in commands.items():
            sample = _run(argv, server, out)
            if sample.code not in _expected(label):
                raise BenchmarkError(f"{label} exited {sample.code}: {' '.join(argv)}")
            if round_:
                samples[label].append(sample)
        if round_:
            print(f"  round {round_} of {repeats} done", flush=True)
    return [Timing(label, runs) for label, runs in samples.items()]


def _expected(label: str) -> set[int]:
    # reconcile's verdict may be 1 (spend past the estimate's tolerance): still a full read
    return {0, 1} if label.startswith("reconcile") else {0}


def _run(argv: list[str], server: MlflowServer, out: Path) -> Sample:
    """One fresh process of ``argv``, its stdout to ``out``, and the server's CPU meanwhile."""
    assert server.process is not None
    before = tree_cpu(server.process.pid)
    usage = measure(argv, out)
    after = tree_cpu(server.process.pid)
    on_server = None if before is None or after is None else after - before
    return Sample(usage.wall, usage.cpu, on_server, usage.rss_kib, usage.code)


def _check_reconcile(argv: list[str], runs: int) -> list[str]:
    """Reconcile read every run (a dry run: nothing more in the ledger)."""
    code, out = _output([*argv, "--dry-run"])
    read = json.loads(out)["totals"]["runs"] if code in (0, 1) else None
    return [] if read == runs else [f"reconcile read {read} runs, not {runs}"]


def _check_calibrate(argv: list[str], target: Path, epoch_minutes: list[float]) -> list[str]:
    """Calibrate learned from every run, and the known median epoch time."""
    code, out = _output([*argv, "--write", str(target), "--backtest"])
    if code != 0:
        return [f"calibrate --write --backtest exited {code}"]
    print(*(line for line in out.splitlines() if line.startswith("backtest")), sep="\n")
    calibration = json.loads(target.read_text(encoding="utf-8"))
    runs = len(epoch_minutes)
    errors = []
    if calibration["runs"] != runs:
        errors.append(f"calibrate learned from {calibration['runs']} runs, not {runs}")
    exact = next((e for e in calibration["entries"] if e["key"] == EXACT_KEY), None)
    measured = None if exact is None else (exact.get("epoch_minutes") or {})
    median = statistics.median(epoch_minutes)
    if not measured or measured["runs"] != runs or abs(measured["median"] - median) > 1e-4:
        errors.append(
            f"calibrate's epoch time for {EXACT_KEY} is {measured}, not {runs} runs "
            f"with median {median:.6g} min"
        )
    return errors


def _output(argv: list[str]) -> tuple[int, str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1, 2):
        sys.stderr.write(done.stderr[-3000:])
    return done.returncode, done.stdout


def _rows(timings: list[Timing], runs: int) -> list[tuple[str, str, str]]:
    baseline = next(t for t in timings if t.label == "reconcile (baseline)")
    rows = [("command", f"{runs:,} runs: median wall (range); CPU; peak RSS", "÷ reconcile")]
    for timing in timings:
        ratio = ""
        if timing.label.startswith("calibrate"):
            ratio = (
                f"{timing.wall / baseline.wall:.2f}× time, "
                f"{timing.all_cpu / baseline.all_cpu:.2f}× CPU, "
                f"{timing.rss_kib / baseline.rss_kib:.2f}× RSS"
            )
        rows.append((timing.label, timing.figures(), ratio))
    return rows


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=2_000, help="runs in the store (2,000)")
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed processes per command (5; median)"
    )
    parser.add_argument(
        "--versions",
        type=int,
        default=1,
        help="spec versions the runs belong to, run one after another (1); "
        "the backtest replays one experiment per version",
    )
    parser.add_argument(
        "--workers", type=int, default=4, help="MLflow server worker processes (MLflow's 4)"
    )
    parser.add_argument(
        "--analyze",
        action="store_true",
        help="run SQLite's ANALYZE on the store first (see reconcile_speed.py)",
    )
    return parser


def _arguments() -> argparse.Namespace:
    parser = _parser()
    args = parser.parse_args()
    if args.repeats < 1 or args.versions < 1 or args.runs < 2 * args.versions:
        parser.error("--repeats and --versions must be at least 1, --runs at least 2 × versions")
    return args


if __name__ == "__main__":
    raise SystemExit(main())
