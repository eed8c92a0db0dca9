"""What a Ray Tune trial is charged: the GPUs Tune gives it, its silent time, a broken timer.

Three searches on a local Ray cluster (``ray.init(num_cpus=2, num_gpus=64)``: Ray counts
the GPUs, none is used), run as ``tests/test_guard_ray.py`` runs its own: in a network
namespace with only loopback up, node address 127.0.0.1, warnings as errors. The child is
this module (``python -m tests.test_guard_ray_held STORAGE``); it prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.netns import run_on_loopback

SILENT_SCALE = 7200.0
"""The driver's clock in the silent search: two hours pass in each real second."""
SILENT_SECONDS = 10.0
"""Real seconds a silent trainable trains before its one report: 20 hours on that clock."""
BAD_FIGURES = {"nan": float("nan"), "inf": float("inf"), "negative": -1.0, "text": "ten"}


@pytest.fixture(scope="module")
def searches(tmp_path_factory):
    storage = tmp_path_factory.mktemp("ray-held")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    command = f"{sys.executable} -m tests.test_guard_ray_held {storage}"
    done = run_on_loopback(command, env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_trial_given_more_gpus_than_the_spec_is_charged_for_them(searches):
    """``tune.with_resources(..., {"gpu": 32})`` against a spec of 8 GPUs a trial: each
    6-minute epoch holds 3.2 GPU-hours (6.40 USD), not 0.8 (1.60 USD). Two trials stop at
    max_trial_hours 1 after 10 epochs each (hours are per GPU held), 64 USD a trial: 128 USD
    in all, where charged at the spec's 8 GPUs they cost 32 USD."""
    gpus = searches["gpus"]
    assert gpus.get("raised") is None, gpus
    assert gpus["epochs"] == [10, 10] and gpus["stops"] == ["max-trial-hours"] * 2, gpus
    # NOTE: to a millionth of a USD: the wall time charged before a report, replaced by the
    # larger figure reported, leaves float sums a hair off.
    assert round(Decimal(gpus["spend"]), 6) == 128, gpus


def test_a_trainable_that_reports_only_at_its_end_is_stopped_at_the_ceiling(searches):
    """Two trials hold 8 GPUs 20 hours (on the driver's clock) before their one report, under
    a 64 USD ceiling (4 trial-hours): taken at their reports, the search spent 320 USD before
    the guard heard of it. Charged their time at every ``stop_all``, both stop near 2 hours,
    before they report."""
    silent = searches["silent"]
    assert silent.get("raised") is None, silent
    assert silent["errors"] == 0 and silent["epochs"] == [None, None], silent
    assert silent["stop"].startswith("spend ") and "reaches the approved amount" in silent["stop"]
    assert 64 <= Decimal(silent["spend"]) <= 2 * 64, silent


def test_a_broken_held_seconds_figure_is_charged_wall_time_not_a_crash(searches):
    """Trials that report ``budget_gate_held_seconds`` NaN, inf, -1 or ``"ten"``: the guard
    raised inside Tune's stopper and the whole search died with a traceback. Each is now
    charged the driver's wall time for its run and trains to its end."""
    broken = searches["broken"]
    assert broken.get("raised") is None, broken
    assert broken["errors"] == 0 and broken["epochs"] == [3, 3, 3, 3], broken
    assert broken["unraisable"] == [], broken
    # Three epochs of 0.05 s at an hour a second: at least 9 minutes on 8 GPUs (2.40 USD).
    assert all(Decimal(cost) >= Decimal("2.4") for cost in broken["costs"].values()), broken
    assert sorted(broken["costs"]) == sorted(BAD_FIGURES), broken


def _gpu_hungry(config: dict[str, Any]) -> None:
    from ray import tune

    for epoch in range(1, 13):
        time.sleep(0.05)
        tune.report(
            {"val_loss": 1.0 / epoch, "epoch": epoch, "budget_gate_held_seconds": epoch * 360.0}
        )


def _silent(config: dict[str, Any]) -> None:
    from ray import tune

    time.sleep(SILENT_SECONDS)
    tune.report({"val_loss": 0.1, "epoch": 10, "budget_gate_held_seconds": 20 * 3600.0})


def _broken(config: dict[str, Any]) -> None:
    from ray import tune

    for epoch in range(1, 4):
        time.sleep(0.05)
        figure = BAD_FIGURES[config["bad"]]
        tune.report({"val_loss": 1.0 / epoch, "epoch": epoch, "budget_gate_held_seconds": figure})


def _search(storage: str, name: str, trainable: Any, guard: Any, space: dict[str, Any]) -> Any:
    from ray import tune

    return tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(
            storage_path=storage, stop=guard, callbacks=[guard], verbose=0, name=name
        ),
    ).fit()


def _guard(spec: dict[str, Any], approved: str, clock: Callable[[], float]) -> Any:
    from gate.guard.core import Guard
    from gate.guard.ray import RayGuard
    from tests.guard_kit import guard_spec_4_trials, make_limits
    from tests.reconcile_kit import approval

    limits = make_limits({**guard_spec_4_trials(), **spec}, approval=approval(approved))
    return RayGuard(Guard(limits, clock=clock), clock=clock)


def gpus(storage: str) -> dict[str, Any]:
    from ray import tune

    guard = _guard({"stopping": {"max_trial_hours": 1}}, "1000", time.monotonic)
    trainable = tune.with_resources(_gpu_hungry, {"cpu": 1, "gpu": 32})
    results = _search(storage, "gpus", trainable, guard, {"x": tune.grid_search([0, 1])})
    return {
        "epochs": sorted(int(r.metrics.get("epoch", 0)) for r in results),
        "spend": str(guard.guard.spend),
        "stops": sorted(d.kind.value for d in guard.decisions.values() if d.kind),
    }


def silent(storage: str) -> dict[str, Any]:
    from ray import tune

    from tests.guard_kit import FastClock

    guard = _guard({}, "64", FastClock(SILENT_SCALE))
    results = _search(storage, "silent", _silent, guard, {"x": tune.grid_search([0, 1])})
    return {
        "epochs": [r.metrics.get("epoch") for r in results],
        "errors": results.num_errors,
        "spend": str(guard.guard.spend),
        "stop": guard.guard.check().reason,
    }


def broken(storage: str) -> dict[str, Any]:
    from ray import tune

    from tests.guard_kit import FastClock

    guard = _guard({}, "1000", FastClock(3600.0))
    results = _search(
        storage, "broken", _broken, guard, {"bad": tune.grid_search(list(BAD_FIGURES))}
    )
    return {
        "epochs": sorted(int(r.metrics.get("epoch", 0)) for r in results),
        "errors": results.num_errors,
        "costs": {
            r.config["bad"]: str(guard.guard.trial_cost(r.metrics["trial_id"])) for r in results
        },
    }


def _caught(run: Callable[[str], dict[str, Any]], storage: str) -> dict[str, Any]:
    """One search's result; its crash is its own test's failure, not the other two's."""
    try:
        return run(storage)
    except Exception:
        return {"raised": traceback.format_exc()[-2000:]}


def main(storage: str) -> int:
    warnings.simplefilter("error")
    unraisable: list[str] = []
    sys.unraisablehook = lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value}")
    import ray

    ray.init(
        num_cpus=2,
        num_gpus=64,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    found: dict[str, Any] = {}
    try:
        for name, run in (("gpus", gpus), ("silent", silent), ("broken", broken)):
            found[name] = _caught(run, storage)
    finally:
        ray.shutdown()
    found["broken"]["unraisable"] = unraisable
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    raise SystemExit(main(sys.argv[1]))
