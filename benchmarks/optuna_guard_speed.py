"""How much does one report of the Optuna guard cost once thousands of trials have ended?

Every report syncs the study's trials into the guard (their spend, the ends of finished
ones). Counting a finished trial once and skipping it afterwards keeps a report's cost flat
as the study grows. This fills an in-memory Optuna study with ``--trials`` finished trials
(10,000 by default, each with its recorded GPU-seconds), then times ``--reports`` reports
of one running trial, and prints the median per report. Target: under
:data:`TARGET_S` at 10,000 finished trials. Run from the repository root::

    python benchmarks/optuna_guard_speed.py [--trials 10000] [--reports 200]

Exit code 0 when the target holds, 1 when it is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optuna

from gate.guard.core import Guard
from gate.guard.model import GPU_SECONDS_ATTR
from gate.guard.optuna import OptunaGuard
from tests.guard_kit import SEED, make_limits

TARGET_S = 1e-3
"""One report at 10,000 finished trials, at most (the issue measured 5 ms at 1,000)."""


def main(argv: list[str] | None = None) -> int:
    """Fill a study, time the reports of one running trial, print the median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--reports", type=int, default=200)
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for n in range(args.trials):
        state = optuna.trial.TrialState.FAIL if n % 50 == 7 else optuna.trial.TrialState.COMPLETE
        study.add_trial(
            optuna.trial.create_trial(
                state=state,
                value=None if state is optuna.trial.TrialState.FAIL else 1.0 / (n + 1),
                user_attrs={GPU_SECONDS_ATTR: 1.0},
            )
        )
    # A ceiling nothing reaches and failures spread out, so every report decides "continue".
    limits = make_limits({**SEED, "search": {"strategy": "random", "max_trials": 10**6}})
    guard = OptunaGuard(Guard(limits, clock=time.monotonic, refresh=lambda: limits.ceiling))
    trial = study.ask()
    seconds = []
    for epoch in range(1, args.reports + 1):
        start = time.perf_counter()
        decision = guard.report(trial, epoch, {limits.monitor: 1.0 / epoch}, held_seconds=epoch)
        seconds.append(time.perf_counter() - start)
        if decision.stop:
            print(f"the guard stopped the trial at epoch {epoch}: {decision.reason}")
            return 1
    first, rest = seconds[0], statistics.median(seconds[1:] or seconds)
    print(
        f"OptunaGuard.report with {args.trials:,} finished trials: first {first * 1e3:.1f} ms "
        f"(counts them once), then median {rest * 1e3:.3f} ms per report ({args.reports} reports)"
    )
    met = rest < TARGET_S
    print(
        f"target: < {TARGET_S * 1e3:.0f} ms per report: {rest / TARGET_S:.2f}x of it, "
        + ("PASS" if met else "MISS")
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
