"""What one fresh process costs: wall time, CPU seconds and its own peak RSS; a server's CPU.

A child's peak RSS (``ru_maxrss``) starts at its parent's resident size when it forks:
Linux carries the high-water mark through ``exec``. A benchmark that holds MLflow in
memory (~180 MiB) would report that much for every command it starts, however small.
:func:`measure` forks the command from a small launcher (``python -S``, nothing but
``os``, ``sys`` and ``time`` imported) and reads the command's own rusage there.
:func:`tree_cpu` sums the CPU seconds of a process and its descendants from ``/proc``
(a server with worker processes), for the work a command makes a server do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = """
import os, sys, time
began = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - began
with open(sys.argv[1], "w") as report:
    report.write(f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Usage:
    """One process: wall and CPU (user + system) seconds, peak RSS in KiB, exit code."""

    wall: float
    cpu: float
    rss_kib: int
    code: int


def measure(argv: list[str], stdout: Path) -> Usage:
    """Run ``argv`` (its first item an absolute path) with its stdout to the file ``stdout``.

    Its stderr is printed when it exits with a code above 2 (a crash, not a verdict).
    """
    report = stdout.with_suffix(".usage")
    with stdout.open("wb") as sink:
        launched = subprocess.run(
            [sys.executable, "-S", "-c", LAUNCHER, str(report), *argv],
            stdout=sink,
            stderr=subprocess.PIPE,
            check=False,
        )
    if launched.returncode not in (0, 1, 2):
        sys.stderr.write(launched.stderr.decode(errors="replace")[-3000:])
    wall, cpu, rss = report.read_text(encoding="utf-8").split()
    return Usage(float(wall), float(cpu), int(rss), launched.returncode)


def tree_cpu(pid: int) -> float | None:
    """CPU seconds of process ``pid`` and its descendants so far; ``None`` without ``/proc``."""
    if not Path("/proc/self/stat").exists():
        return None
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # from field 3, the state
        parent[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    tree = {pid}
    while more := {child for child, up in parent.items() if up in tree} - tree:
        tree |= more
    return sum(cpu.get(member, 0.0) for member in tree)
