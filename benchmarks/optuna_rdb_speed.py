"""What does the Optuna guard add to an epoch on the RDB storage its workers share?

The guard's workers share an RDB storage (guard.md), so each report writes the trial's
GPU-seconds to it and reads every trial's back: that is the figure a user of the guard
pays, not the in-memory one of ``optuna_guard_speed.py``. This runs a study on a fresh
``sqlite:///`` storage twice, ``--trials`` trials × ``--epochs`` epochs each: once as a
plain objective does without the guard (``trial.report`` and ``trial.should_prune`` under
Optuna's ``MedianPruner``), once through the guard (``guard.report`` and
``trial.should_prune`` under ``guard.pruner(MedianPruner())``), and prints the median time
of an epoch's calls for each. Target: the guard's epoch costs at most :data:`TARGET_RATIO`
times Optuna's own on the same storage. Run from the repository root::

    python benchmarks/optuna_rdb_speed.py [--trials 20] [--epochs 30]

Exit code 0 when the target holds, 1 when it is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import optuna

from gate.guard.core import Guard
from gate.guard.optuna import OptunaGuard
from tests.guard_kit import SEED, make_limits

TARGET_RATIO = 4.0
"""The guard's epoch against Optuna's own report and pruning check, on one storage."""

EpochCalls = Callable[[optuna.Trial, int, float], None]


def timed_study(
    storage: str,
    pruner: optuna.pruners.BasePruner,
    epoch_calls: EpochCalls,
    trials: int,
    epochs: int,
) -> list[float]:
    """Run ``trials`` × ``epochs`` with ``epoch_calls`` each epoch; the seconds of each call."""
    study = optuna.create_study(storage=storage, pruner=pruner)
    seconds: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -1.0, 1.0)
        for epoch in range(1, epochs + 1):
            value = x * x + 1.0 / epoch
            start = time.perf_counter()
            epoch_calls(trial, epoch, value)
            seconds.append(time.perf_counter() - start)
        return value

    study.optimize(objective, n_trials=trials, catch=(optuna.TrialPruned,))
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Time both studies on fresh sqlite storages; print their medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # A ceiling nothing reaches, no plateau in reach: every report decides "continue".
    limits = make_limits({**SEED, "search": {"strategy": "random", "max_trials": 10**6}})
    # As gate.open_guard makes it: with a launch key, whose other studies each read lists.
    guard = OptunaGuard(
        Guard(limits, clock=time.monotonic, refresh=lambda: limits.ceiling, launch_key="bench")
    )

    def plain(trial: optuna.Trial, epoch: int, value: float) -> None:
        trial.report(value, epoch)
        trial.should_prune()

    def guarded(trial: optuna.Trial, epoch: int, value: float) -> None:
        guard.report(trial, epoch, {limits.monitor: value}, held_seconds=float(epoch))
        trial.should_prune()

    with tempfile.TemporaryDirectory() as scratch:
        runs = {
            name: timed_study(
                f"sqlite:///{scratch}/{name}.db", pruner, calls, args.trials, args.epochs
            )
            for name, pruner, calls in (
                ("optuna", optuna.pruners.MedianPruner(), plain),
                ("guard", guard.pruner(optuna.pruners.MedianPruner()), guarded),
            )
        }
    optuna_s, guard_s = (statistics.median(runs[name]) for name in ("optuna", "guard"))
    p99 = statistics.quantiles(runs["guard"], n=100)[98]
    print(f"sqlite storage, {args.trials} trials × {args.epochs} epochs, median per epoch:")
    print(f"  Optuna's own trial.report + should_prune:   {optuna_s * 1e3:6.2f} ms")
    print(
        f"  guard.report + should_prune (guard pruner): {guard_s * 1e3:6.2f} ms (p99 "
        f"{p99 * 1e3:.2f} ms)"
    )
    ratio = guard_s / optuna_s
    met = ratio <= TARGET_RATIO
    print(
        f"target: at most {TARGET_RATIO:.0f}x Optuna's own: {ratio:.2f}x, "
        + ("PASS" if met else "MISS")
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
