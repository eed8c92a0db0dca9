"""How much does one decision of the runtime guard cost?

The guard sits inside every trial's training loop and, for Ray Tune, in the driver that
sees every trial's reports, so a decision must cost well under a millisecond. This times
:meth:`gate.guard.core.Guard.observe` on the seed case's spec (8 A100 per trial, the
default policy: plateau by marginal return, red lines, the budget) over many trials
reporting in turn, each with a 400-epoch history growing as it goes, and prints the
median and the 99th percentile per call over several repeats (the best repeat's). Target:
p99 under :data:`P99_TARGET_S` (a tenth of a millisecond, a hundredth of the budget a
training step can spare). Run from the repository root::

    python benchmarks/guard_speed.py [--trials 64] [--epochs 400] [--repeats 5]

Exit code 0 when the target holds, 1 when it is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gate.guard.core import Guard
from gate.guard.model import Report
from tests import seed_curve
from tests.guard_kit import EPOCH_GPU_SECONDS, SEED, make_limits

P99_TARGET_S = 100e-6
"""The 99th percentile of one ``observe`` call, at most."""


def _reports(trials: int, epochs: int) -> list[Report]:
    # A flat-free curve (no plateau stop), so every call runs every check to the end.
    return [
        Report(f"t{t}", e, {"val_loss": 1.0 / e + t * 1e-3}, e * EPOCH_GPU_SECONDS)
        for e in range(1, epochs + 1)
        for t in range(trials)
    ]


def _time_calls(reports: list[Report]) -> list[float]:
    # A ceiling nothing reaches, so the calls all decide "continue" after every check.
    limits = make_limits({**SEED, "search": {"strategy": "random", "max_trials": 10**6}})
    guard = Guard(limits, clock=time.monotonic, refresh=lambda: limits.ceiling)
    clock = time.perf_counter_ns
    seconds = []
    for report in reports:
        start = clock()
        guard.observe(report)
        seconds.append((clock() - start) / 1e9)
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Time the guard and print the cost per call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=seed_curve.EPOCHS)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    reports = _reports(args.trials, args.epochs)
    medians, p99s = [], []
    for _ in range(args.repeats):
        seconds = sorted(_time_calls(reports))
        medians.append(statistics.median(seconds))
        p99s.append(seconds[int(0.99 * (len(seconds) - 1))])
    print(
        f"guard.observe: {len(reports):,} reports ({args.trials} trials × {args.epochs} "
        f"epochs), {args.repeats} repeats: median {min(medians) * 1e6:.1f} µs, "
        f"p99 {min(p99s) * 1e6:.1f} µs per call"
    )
    met = min(p99s) < P99_TARGET_S
    print(
        f"target: p99 < {P99_TARGET_S * 1e6:.0f} µs: {min(p99s) / P99_TARGET_S:.2f}x of it, "
        + ("PASS" if met else "MISS")
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
