"""A Ray Tune search of 8 trials under the guard, on a local Ray cluster (run in a netns).

``python -m tests.ray_guard_run STORAGE_DIR`` starts ``ray.init(num_cpus=2)`` on 127.0.0.1
and runs two searches of 8 trials of 12 epochs (each epoch reported as 6 minutes on 8 GPUs
at 2 USD, 1.60 USD) against the approved 64 USD (the worst case) of a spec of 4 trials ×
10 epochs, so the ceiling falls inside a running trial: one search that trains, one whose
trials all fail, and one restarted with ``Tuner.restore`` after two trials failed. It
prints one JSON line: the spend, the trials and their errors.
Warnings are errors here as in the suite.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
import warnings

EPOCHS = 12


_UNRAISABLE: list[str] = []


def _warnings() -> None:
    """Warnings are errors, as in the suite."""
    warnings.simplefilter("error")
    # pytest turns errors in __del__ (an unclosed file's warning, once an error) into
    # failures; so does this child.
    sys.unraisablehook = lambda u: _UNRAISABLE.append(f"{u.exc_type.__name__}: {u.exc_value}")


def trainable(config: dict) -> None:
    from ray import tune

    if config["fail"]:
        raise RuntimeError("CUDA out of memory")
    for epoch in range(1, EPOCHS + 1):
        time.sleep(0.05)
        tune.report(
            {
                "val_loss": config["x"] + 1.0 / epoch,
                "epoch": epoch,
                "budget_gate_held_seconds": epoch * 360.0,
            }
        )


def flaky(config: dict) -> None:
    """Trials 2 and 3 fail in epoch 3 until the marker file exists (the driver's restart)."""
    from ray import tune

    for epoch in range(1, EPOCHS + 1):
        if config["trial"] >= 2 and epoch == 3 and not os.path.exists(config["marker"]):
            raise RuntimeError("node lost")
        time.sleep(0.05)
        tune.report(
            {"val_loss": 1.0 / epoch, "epoch": epoch, "budget_gate_held_seconds": epoch * 360.0}
        )


def retrying(config: dict) -> None:
    """Each trial fails in epoch 3 on its first two runs (Tune retries it), then trains all."""
    from ray import tune

    runs = os.path.join(config["marker"], f"trial-{config['trial']}")
    with open(runs, "a") as log:
        log.write("run\n")
    with open(runs) as log:
        attempt = len(log.readlines())
    for epoch in range(1, EPOCHS + 1):
        if attempt <= 2 and epoch == 3:
            raise RuntimeError("node lost")
        time.sleep(0.05)
        tune.report(
            {"val_loss": 1.0 / epoch, "epoch": epoch, "budget_gate_held_seconds": epoch * 360.0}
        )


LYING_EPOCHS = 20
LYING_EPOCH_S = 0.2
"""Real seconds per iteration of a lying trainable: an hour on the driver's sped-up clock."""


def lying(config: dict) -> None:
    """Holds its GPUs an hour per iteration and says it held them for nothing."""
    from ray import tune

    for epoch in range(1, LYING_EPOCHS + 1):
        time.sleep(LYING_EPOCH_S)
        said = {"budget_gate_held_seconds": 0.0} if config["lie"] == "held" else {}
        tune.report({"val_loss": 1.0 / epoch, "epoch": epoch, "time_this_iter_s": 0.0, **said})


def lied(storage: str) -> dict:
    """Two trials that report 0 s held (one as ``budget_gate_held_seconds``, one as
    ``time_this_iter_s``) under max_trial_hours 3, on a driver clock where each real
    ``LYING_EPOCH_S`` is an hour: the driver's own count stops them near 3 iterations."""
    from ray import tune

    from gate.guard.core import Guard
    from gate.guard.ray import RayGuard
    from tests.guard_kit import FastClock, guard_spec_4_trials, make_limits
    from tests.reconcile_kit import approval

    spec = {**guard_spec_4_trials(), "stopping": {"max_trial_hours": 3}}
    limits = make_limits(spec, approval=approval("1000"))
    clock = FastClock(3600 / LYING_EPOCH_S)
    guard = RayGuard(Guard(limits, clock=clock), clock=clock)
    results = tune.Tuner(
        lying,
        param_space={"lie": tune.grid_search(["held", "iter"])},
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(
            storage_path=storage, stop=guard, callbacks=[guard], verbose=0, name="lied"
        ),
    ).fit()
    return {
        "epochs": sorted(int(r.metrics.get("epoch", 0)) for r in results if r.metrics),
        "spend": str(guard.guard.spend),
        "stops": sorted(d.kind.value for d in guard.decisions.values() if d.kind),
        "errors": results.num_errors,
    }


def retried(storage: str) -> dict:
    """Two trials, each retried twice by Tune: 2 + 2 + 12 epochs each, all of them charged.

    Four retried runs under max_failed_in_a_row 3: a run Tune retries is no failed trial.
    """
    from ray import tune

    from gate.guard.core import Guard
    from gate.guard.ray import RayGuard
    from tests.guard_kit import approved_limits

    policy = {"guard": {"max_failed_in_a_row": 3}}
    guard = RayGuard(Guard(approved_limits(policy), clock=time.monotonic))
    marker = os.path.join(storage, "retried-runs")
    os.makedirs(marker)
    tune.Tuner(
        retrying,
        param_space={"trial": tune.grid_search([0, 1]), "marker": marker},
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(
            storage_path=storage,
            stop=guard,
            callbacks=[guard],
            verbose=0,
            name="retried",
            failure_config=tune.FailureConfig(max_failures=2),
        ),
    ).fit()
    return {"spend": str(guard.guard.spend), "stop": guard.guard.check().reason}


def restored(storage: str) -> dict:
    """Two trials finish and two fail; after ``Tuner.restore`` the guard goes on counting.

    The first run spends 2 × 12 + 2 × 2 epochs at 1.60 (44.80 USD of 64.00). The restored
    run retries the two failed trials: carried on, the guard stops them when 12 more epochs
    reach 64.00; counted afresh, both would train all 12 epochs (20 more, 38.40 USD in all).
    """
    from ray import tune

    from gate.guard.core import Guard
    from gate.guard.ray import RayGuard
    from tests.guard_kit import approved_limits

    policy = {"guard": {"max_failed_in_a_row": 10}}
    guard = RayGuard(Guard(approved_limits(policy), clock=time.monotonic))
    marker = os.path.join(storage, "restarted")
    space = {"trial": tune.grid_search([0, 1, 2, 3]), "marker": marker}
    first = tune.Tuner(
        flaky,
        param_space=space,
        tune_config=tune.TuneConfig(max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(
            storage_path=storage, stop=guard, callbacks=[guard], verbose=0, name="restored"
        ),
    ).fit()
    spent = str(guard.guard.spend)
    open(marker, "w").close()
    again = tune.Tuner.restore(os.path.join(storage, "restored"), flaky, resume_errored=True)
    results = again.fit()
    retried = [r for r in results if r.config["trial"] >= 2]
    return {
        "first_errors": first.num_errors,
        "first_spend": spent,
        "retried_epochs": sorted(int(r.metrics.get("epoch", 0)) for r in retried),
        "errors": results.num_errors,
    }


def search(storage: str, name: str, fail: bool) -> dict:
    """One guarded Tuner run; what the guard and Tune saw."""
    from ray import tune

    from gate.guard.core import Guard
    from gate.guard.ray import RayGuard
    from tests.guard_kit import approved_limits

    policy = {"guard": {"max_failed_in_a_row": 3}}
    guard = RayGuard(Guard(approved_limits(policy), clock=time.monotonic))
    guard = pickle.loads(pickle.dumps(guard))  # Tune pickles it with the experiment
    tuner = tune.Tuner(
        trainable,
        param_space={"x": tune.uniform(0.0, 1.0), "fail": fail},
        tune_config=tune.TuneConfig(num_samples=8, max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(
            storage_path=storage, stop=guard, callbacks=[guard], verbose=0, name=name
        ),
    )
    results = tuner.fit()
    return {
        "spend": str(guard.guard.spend),
        "ceiling": str(guard.guard.ceiling.amount),
        "errors": results.num_errors,
        "started": len(results),
        "epochs": sum(int(r.metrics.get("epoch", 0)) for r in results if r.metrics),
        "stop": guard.guard.check().reason,
        "stops": sorted(d.kind.value for d in guard.decisions.values() if d.kind),
    }


def main(storage: str) -> int:
    _warnings()
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        budget = search(storage, "budget", fail=False)
        failing = search(storage, "failing", fail=True)
        after_restore = restored(storage)
        retries = retried(storage)
        lies = lied(storage)
    finally:
        ray.shutdown()
    found = {
        "budget": budget,
        "failing": failing,
        "restored": after_restore,
        "retried": retries,
        "lied": lies,
    }
    print(json.dumps({**found, "unraisable": _UNRAISABLE}))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Tune's result loggers (JSON, CSV, TensorBoard files per trial) are not what the guard
    # reads or is judged by: off, they cost a quarter less CPU. Trials share worker processes
    # where they can (reuse_actors) for the same reason; the failing search's trials cannot.
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    raise SystemExit(main(sys.argv[1]))
