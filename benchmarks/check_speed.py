"""How fast is ``budget-gate check``, next to the floor and to a schema-only validator?

``budget-gate check`` runs in pre-commit hooks and CI on every push, so its cold start is
paid many times a day. Its targets (issue 23):

* one spec: at most 0.6× the time of ``check-jsonschema`` on the same file (the ratio of the
  medians), although that tool only validates the schema while ours also prices the spec
  and applies the team policy; for a spec that passes (``examples/cifar-sweep.yaml``) and
  one that needs approval (``examples/asha-bert-spot.yaml``: an ASHA search, simulated,
  and the fixes that would spare the approval);
* 1,000 specs in one call: under 1 s, with peak memory that stays flat (``check`` deals
  them out to one process per core: ``--jobs``).

``python -c pass`` is printed as the floor no Python CLI can beat. Every figure is the median
wall time of fresh processes, after warm-up runs, so the OS page cache is warm but no Python
state is shared; the commands take turns, so a burst of load on the machine falls on all of
them alike. The machine's load average is printed beside the figures. Run from the
repository root::

    python3 benchmarks/check_speed.py [--runs 15] [--specs 1000]

Exit code 0 when every target is met, 1 when one is missed or a command exits with an
unexpected code (a broken benchmark must not pass for a fast one), 2 when a tool is missing.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

EXAMPLE = Path("examples/cifar-sweep.yaml")
SPECS = {EXAMPLE: 0, Path("examples/asha-bert-spot.yaml"): 2}
"""The single-spec cases and the exit code ``check`` gives each (pass, approval required)."""
SCHEMA = Path("schemas/experiment.schema.json")
BATCH_DIR = Path("experiments/vision")
POLICY_DIR = Path("policies")
WARMUP = 2
BATCH_RUNS = 5
BATCH_TARGET_S = 1.0
SINGLE_TARGET = 0.6
CHECK_EXIT_CODES = {0: "pass", 1: "violation", 2: "approval required"}


class BenchmarkError(Exception):
    """A command exited with a code the benchmark did not expect."""


@dataclass(frozen=True)
class Timing:
    """The wall times of repeated runs of one command, and what it exited with."""

    label: str
    seconds: list[float]
    exit_codes: list[int]
    max_rss_kib: int = 0

    @property
    def median(self) -> float:
        """Median wall time in seconds."""
        return statistics.median(self.seconds)

    @property
    def spread(self) -> str:
        """Min and max, to show how noisy the median is."""
        return f"min {min(self.seconds) * 1000:.0f} / max {max(self.seconds) * 1000:.0f} ms"


def find_script(name: str) -> tuple[list[str] | None, str]:
    """Locate a console script, preferring the one beside this interpreter.

    A ``shutil.which`` hit may be a pyenv or asdf shim, a bash script that adds tens of
    milliseconds before Python starts; the scripts directory of ``sys.executable`` has the
    real entry point.
    """
    beside = Path(sysconfig.get_path("scripts")) / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)], f"console script {beside}"
    found = shutil.which(name)
    if found:
        return [found], f"console script {found} (from PATH; may be a shim)"
    return None, ""


def run_once(
    argv: list[str], stdout: int = subprocess.DEVNULL, cwd: Path | None = None
) -> tuple[float, int, int]:
    """Run one process; return its wall time, exit code and peak RSS (KiB).

    ``os.wait4`` reports the rusage of this child alone, so the peak RSS is exact rather
    than the running maximum that ``RUSAGE_CHILDREN`` keeps over every child so far.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, cwd=cwd)
    # stderr is small in every case here (diagnostics only), so reading it after the
    # wait cannot fill the pipe; stdout goes to DEVNULL or a file.
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode not in (0, 1, 2) and err:
        sys.stderr.write(err)
    # Linux reports ru_maxrss in KiB, macOS in bytes.
    rss = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
    return elapsed, proc.returncode, rss


def bench(commands: dict[str, tuple[list[str], int]], runs: int) -> dict[str, Timing]:
    """Time ``runs`` cold processes of each command, taking turns, after the warm-up runs.

    ``commands`` maps a label to its argv and the exit code it must give.
    """
    for _ in range(WARMUP):
        for argv, _code in commands.values():
            run_once(argv)
    samples: dict[str, list[tuple[float, int, int]]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, (argv, _code) in commands.items():
            samples[label].append(run_once(argv))
    timings = {}
    for label, (argv, expected) in commands.items():
        seconds, codes, rss = (list(column) for column in zip(*samples[label], strict=True))
        bad = sorted(set(codes) - {expected})
        if bad:
            raise BenchmarkError(f"{label}: exit code(s) {bad}, expected {expected}: {argv}")
        timings[label] = Timing(label, seconds, codes, max(rss))
    return timings


def make_specs(directory: Path, count: int, seed: int = 1042) -> None:
    """Write ``count`` valid, distinct variants of the cifar example, all on team vision."""
    base = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    width = len(str(count))
    for i in range(count):
        spec = json.loads(json.dumps(base))  # a deep copy of plain data
        name = f"cifar10-sweep-{i:0{width}d}"
        spec["metadata"]["name"] = name
        spec["metadata"]["team"] = "vision"
        spec["metadata"]["owner"] = rng.choice(["alice", "bob", "chen", "dara"])
        spec["workload"]["epoch_minutes"] = round(rng.uniform(1.0, 8.0), 2)
        spec["workload"]["max_epochs"] = rng.choice([20, 30, 40, 60, 90])
        search = spec["search"]
        search["max_trials"] = rng.randint(4, 40)
        search["max_concurrent_trials"] = rng.choice([1, 2, 4, 8])
        low = 10 ** rng.uniform(-5, -3)
        search["parameters"]["lr"] = {
            "low": float(f"{low:.3g}"),
            "high": float(f"{low * 10 ** rng.uniform(1, 3):.3g}"),
            "log": True,
        }
        search["seeds"] = list(range(rng.randint(1, 3)))
        spec["tracking"]["mlflow_experiment"] = name
        path = directory / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def bench_batch(gate: list[str], root: Path, count: int, runs: int) -> tuple[Timing, Counter]:
    """Time one ``check`` process over the whole directory; also tally the outcomes.

    It runs in ``root``, where the specs lie under ``experiments/vision/``: a path the vision
    team owns, so the specs pass or fail on their figures, not on where they lie (BG204).
    """
    policies = str(POLICY_DIR.resolve())
    argv = [*gate, "check", str(BATCH_DIR), "--policy-dir", policies, "--format", "json"]
    seconds, codes, peak = [], [], 0
    outcomes: Counter[str] = Counter()
    with tempfile.TemporaryFile() as out:
        for i in range(runs):
            out.seek(0)
            out.truncate()
            elapsed, code, rss = run_once(argv, stdout=out.fileno(), cwd=root)
            if code not in CHECK_EXIT_CODES:
                raise BenchmarkError(f"batch check exited {code}: {' '.join(argv)}")
            seconds.append(elapsed)
            codes.append(code)
            peak = max(peak, rss)
            if i == 0:
                out.seek(0)
                report = json.load(out)
                outcomes = Counter(r["outcome"] for r in report["results"])
                if sum(outcomes.values()) != count:
                    raise BenchmarkError(
                        f"batch check reported {sum(outcomes.values())} results, not {count}"
                    )
    return Timing(f"check x{count}", seconds, codes, peak), outcomes


def compile_bytecode() -> str:
    """Compile the package's bytecode, as ``pip install`` does; where it lies.

    An editable install has none until a process writes it, and where
    ``PYTHONDONTWRITEBYTECODE`` is set (some CI images) no process does: each ``check``
    would compile the whole package again, which check-jsonschema, installed by pip with its
    bytecode, never pays.
    """
    found = importlib.util.find_spec("gate")
    if found is None or found.origin is None:
        return "nowhere: gate is not importable by this interpreter"
    where = Path(found.origin).parent
    return str(where) if compileall.compile_dir(where, quiet=1) else f"{where}, with errors"


def verdict(ok: bool) -> str:
    """PASS or MISS."""
    return "PASS" if ok else "MISS"


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (15)")
    parser.add_argument("--specs", type=int, default=1000, help="specs in the batch (1000)")
    args = parser.parse_args()
    if args.runs < 1 or args.specs < 1:
        parser.error("--runs and --specs must be at least 1")
    return args


def main() -> int:
    """Run every measurement and print the table."""
    args = parse_args()
    for needed in (*SPECS, SCHEMA, POLICY_DIR):
        if not needed.exists():
            print(f"{needed} not found: run from the repository root", file=sys.stderr)
            return 2

    gate, gate_how = find_script("budget-gate")
    if gate is None:
        gate, gate_how = [sys.executable, "-m", "gate"], f"{sys.executable} -m gate"
    jsonschema, jsonschema_how = find_script("check-jsonschema")
    if jsonschema is None:
        print(
            "check-jsonschema not found: pip install check-jsonschema "
            "(or pip install -e '.[test]')",
            file=sys.stderr,
        )
        return 2

    print(f"python      {sys.executable} ({sys.version.split()[0]}), {os.cpu_count()} CPUs")
    ours = gate[0] == sys.executable or Path(gate[0]).parent == Path(sysconfig.get_path("scripts"))
    other = "" if ours else " (this interpreter's: the one timed may be another install)"
    print(f"budget-gate {gate_how}; bytecode compiled in {compile_bytecode()}{other}")
    print(f"check-jsonschema {jsonschema_how}")
    print(f"{args.runs} timed runs per command after {WARMUP} warm-up runs; median wall time\n")

    try:
        commands: dict[str, tuple[list[str], int]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], 0)
        }
        for spec, code in SPECS.items():
            commands[f"check {spec.name}"] = (
                [*gate, "check", str(spec), "--policy-dir", str(POLICY_DIR)],
                code,
            )
            commands[f"check-jsonschema {spec.name}"] = (
                [*jsonschema, "--schemafile", str(SCHEMA), str(spec)],
                0,
            )
        timings = bench(commands, args.runs)
        with tempfile.TemporaryDirectory(prefix="gate-bench-") as tmp:
            start = time.perf_counter()
            (Path(tmp) / BATCH_DIR).mkdir(parents=True)
            make_specs(Path(tmp) / BATCH_DIR, args.specs)
            gen_s = time.perf_counter() - start
            batch, outcomes = bench_batch(gate, Path(tmp), args.specs, BATCH_RUNS)
    except BenchmarkError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min)\n")
    return report(timings, batch, outcomes, args.specs, gen_s)


def report(
    timings: dict[str, Timing], batch: Timing, outcomes: Counter[str], specs: int, gen_s: float
) -> int:
    """Print the figures and the targets; 0 when every target is met, else 1."""
    for t in timings.values():
        print(
            f"{t.label:<38} {t.median * 1000:7.1f} ms  ({t.spread}; "
            f"peak RSS {t.max_rss_kib / 1024:.1f} MiB; exit {sorted(set(t.exit_codes))})"
        )
    tally = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    print(
        f"{batch.label:<38} {batch.median * 1000:7.1f} ms  ({batch.spread}; median of "
        f"{BATCH_RUNS}; {batch.median / specs * 1000:.2f} ms/spec; "
        f"peak RSS {batch.max_rss_kib / 1024:.1f} MiB; exit {sorted(set(batch.exit_codes))})"
    )
    print(f"{'':<38} outcomes: {tally}; {specs} specs generated in {gen_s:.1f} s")
    single = timings[f"check {EXAMPLE.name}"]
    growth = (batch.max_rss_kib - single.max_rss_kib) / 1024
    print(
        f"{'':<38} memory: {growth:+.1f} MiB peak RSS over the single check "
        f"({growth / specs * 1024:.1f} KiB/spec)\n"
    )
    rows = [("target", "figure", "goal", "result")]
    met = True
    for spec in SPECS:
        ours, theirs = timings[f"check {spec.name}"], timings[f"check-jsonschema {spec.name}"]
        ratio = ours.median / theirs.median
        met &= ratio <= SINGLE_TARGET
        rows.append(
            (
                f"check {spec.name} vs check-jsonschema",
                f"{ours.median * 1000:.0f} / {theirs.median * 1000:.0f} ms = {ratio:.2f}x",
                f"<= {SINGLE_TARGET:.2f}x",
                verdict(ratio <= SINGLE_TARGET),
            )
        )
    batch_ok = batch.median < BATCH_TARGET_S
    met &= batch_ok or specs != 1000
    rows.append(
        (
            f"{specs} specs, one call ({os.cpu_count()} cores)",
            f"{batch.median:.2f} s",
            f"< {BATCH_TARGET_S:.1f} s",
            verdict(batch_ok) + ("" if specs == 1000 else " (target is for 1000)"),
        )
    )
    floor = timings["python -c pass"]
    rows.append(
        ("single check over the floor", f"+{(single.median - floor.median) * 1000:.0f} ms", "", "")
    )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
