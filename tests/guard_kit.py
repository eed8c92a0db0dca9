"""Guard test builders: the seed case's spec, limits at a fixed price, a hand-turned clock."""

from __future__ import annotations

import time
from typing import Any

from gate.guard.core import Guard
from gate.guard.limits import GuardLimits, limits_for
from gate.ledger.records import LedgerRecord
from tests.conftest import make_estimate, make_policy, make_spec
from tests.reconcile_kit import approval

# DOMAIN.md H: 64 trials × 8 A100 × 400 epochs of 6 minutes, no early stopping.
SEED = {
    "resources": {"accelerator": "A100", "gpus_per_trial": 8, "precision": "bf16"},
    "workload": {"max_epochs": 400, "epoch_minutes": 6},
    "search": {"strategy": "random", "max_trials": 64},
}
EPOCH_GPU_SECONDS = 6 * 60 * 8


class Clock:
    """A clock the test turns by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FastClock:
    """The monotonic clock sped up: ``scale`` of its seconds pass in each real one (picklable)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __call__(self) -> float:
        return time.monotonic() * self.scale


def make_limits(
    spec: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    price: str = "2",
    approval: LedgerRecord | None = None,
) -> GuardLimits:
    experiment = make_spec(spec)
    rules = make_policy(policy)
    return limits_for(experiment, rules, make_estimate(experiment, rules, price), approval)


def make_guard(limits: GuardLimits, clock: Clock | None = None, **kw: Any) -> Guard:
    return Guard(limits, clock=clock or Clock(), **kw)


def approved_limits(policy: dict[str, Any] | None = None) -> GuardLimits:
    """The 4-trial spec's limits under an approval of its 64 USD worst case."""
    return make_limits(guard_spec_4_trials(), policy, approval=approval("64"))


def guard_spec_4_trials() -> dict[str, Any]:
    """4 trials × 8 A100 × 10 epochs of 6 minutes at 2 USD: a 64 USD worst case."""
    return {
        "resources": {"accelerator": "A100", "gpus_per_trial": 8, "precision": "bf16"},
        "workload": {"max_epochs": 10, "epoch_minutes": 6},
        "search": {"strategy": "random", "max_trials": 4},
    }
