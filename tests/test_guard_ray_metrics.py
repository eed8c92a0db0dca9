"""The metric a Ray Tune trainable reports, as Tune hands it to the guard's stopper.

One search on a local Ray cluster (``ray.init(num_cpus=2)``), run as
``tests/test_guard_ray.py`` runs its own: in a network namespace with only loopback up,
node address 127.0.0.1, warnings as errors. The child is this module
(``python -m tests.test_guard_ray_metrics STORAGE``); it prints one JSON line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.netns import run_on_loopback

EPOCHS = 30
KINDS = ("float", "numpy.float32", "nested")
MONITOR = "val/loss"
"""The spec's monitor, as Tune names a nested metric (``{"val": {"loss": ...}}``)."""


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    storage = tmp_path_factory.mktemp("ray-metrics")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    command = f"{sys.executable} -m tests.test_guard_ray_metrics {storage}"
    done = run_on_loopback(command, env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_numpy_or_nested_metric_reaches_the_plateau_rule(search):
    """A flat ``val/loss`` reported as ``numpy.float32`` (a metric computed with numpy), or
    nested as Tune names it (``{"val": {"loss": ...}}``), was left out of the guard's report,
    which kept only top-level ``int`` and ``float``: the plateau rule never saw it, and the
    trial trained all 30 epochs where the same curve as a ``float`` stopped at epoch 11,
    without a word. All three now stop at the plateau."""
    assert search["errors"] == 0, search
    assert search["epochs"] == dict.fromkeys(KINDS, 11), search
    assert search["stops"] == ["plateau"] * 3, search
    assert search["said"] == [], search  # every report held the metric: nothing to say


def _flat(config: dict[str, Any]) -> None:
    import numpy as np
    from ray import tune

    for epoch in range(1, EPOCHS + 1):
        time.sleep(0.02)
        metrics: dict[str, Any] = {
            "float": {MONITOR: 0.5},
            "numpy.float32": {MONITOR: np.float32(0.5)},
            "nested": {"val": {"loss": 0.5}},
        }[config["kind"]]
        tune.report({**metrics, "epoch": epoch, "budget_gate_held_seconds": epoch * 360.0})


def run(storage: str) -> dict[str, Any]:
    from ray import tune

    from gate.guard.core import Guard
    from gate.guard.ray import RayGuard
    from tests.guard_kit import guard_spec_4_trials, make_limits
    from tests.reconcile_kit import approval

    stopping = {"early_stopping": {"monitor": MONITOR, "patience": 10}}
    limits = make_limits({**guard_spec_4_trials(), "stopping": stopping}, approval=approval("1000"))
    guard = RayGuard(Guard(limits, clock=time.monotonic))
    results = tune.Tuner(
        _flat,
        param_space={"kind": tune.grid_search(list(KINDS))},
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(
            storage_path=storage, stop=guard, callbacks=[guard], verbose=0, name="metrics"
        ),
    ).fit()
    return {
        "epochs": {r.config["kind"]: int(r.metrics.get("epoch", 0)) for r in results},
        "errors": results.num_errors,
        "stops": sorted(d.kind.value for d in guard.decisions.values() if d.kind),
    }


class _Said(logging.Handler):
    """The guard's logged warnings, kept."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(record.getMessage())


def main(storage: str) -> int:
    warnings.simplefilter("error")
    said = _Said()
    logging.getLogger("gate.guard").addHandler(said)
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        found = run(storage)
    finally:
        ray.shutdown()
    print(json.dumps({**found, "said": said.said}))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    raise SystemExit(main(sys.argv[1]))
