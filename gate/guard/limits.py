"""The guard's thresholds, from a spec, its policy and its approval (pure).

The ceiling is the approved amount, or the worst-case estimate when nothing needed an
approval; the per-trial red lines are the stricter of the spec's and the policy's
``max_trial_hours`` and ``max_trial_cost``; the plateau is the policy's accepted return
(:mod:`gate.estimate.returns`, the definition reconcile and the estimate use); failures
come from the policy's ``guard`` section.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from gate.estimate.model import Estimate
from gate.estimate.returns import Mode, Threshold, threshold_for
from gate.ledger.records import LedgerRecord
from gate.money import format_amount
from gate.policy.model import Policy
from gate.spec.experiment import Experiment

DEFAULT_MONITOR = "val_loss"


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The most the experiment may spend, and where that number comes from."""

    amount: Decimal
    source: str


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """Everything the guard compares reports with; ``gpus`` is per trial (MIG share applied)."""

    currency: str
    price_per_gpu_hour: Decimal
    gpus: Decimal
    ceiling: Ceiling
    monitor: str = DEFAULT_MONITOR
    mode: Mode = "min"
    threshold: Threshold | None = None
    max_trial_hours: float | None = None
    max_trial_cost: Decimal | None = None
    max_failed_in_a_row: int | None = None
    max_failed_trials: int | None = None

    def cost(self, gpu_seconds: float) -> Decimal:
        """What ``gpu_seconds`` of the spec's accelerator cost."""
        return Decimal(repr(gpu_seconds)) / 3600 * self.price_per_gpu_hour

    def money(self, amount: Decimal) -> str:
        """``12.34 USD``."""
        return f"{format_amount(amount, 2)} {self.currency}"


def limits_for(
    spec: Experiment, policy: Policy, estimate: Estimate, approval: LedgerRecord | None
) -> GuardLimits:
    """The guard's limits for ``spec``; ``approval`` ``None`` means none was needed."""
    quote = estimate.quote
    early = spec.stopping.early_stopping
    monitor, mode = (early.monitor, early.mode) if early else (DEFAULT_MONITOR, "min")
    threshold = None
    if policy.guard.stop_at_plateau:
        min_delta = early.min_delta if early else 0.0
        threshold = threshold_for(policy.returns, early.patience if early else None, min_delta)
    return GuardLimits(
        currency=quote.currency,
        price_per_gpu_hour=quote.per_gpu_hour,
        gpus=Decimal(spec.resources.gpus_per_trial) * spec.resources.gpu_share,
        ceiling=ceiling_for(estimate, approval),
        monitor=monitor,
        mode=mode,
        threshold=threshold,
        max_trial_hours=_stricter(spec.stopping.max_trial_hours, policy.limits.max_trial_hours),
        max_trial_cost=_stricter(spec.stopping.max_trial_cost, policy.limits.max_trial_cost),
        max_failed_in_a_row=policy.guard.max_failed_in_a_row,
        max_failed_trials=policy.guard.max_failed_trials,
    )


def ceiling_for(estimate: Estimate, approval: LedgerRecord | None) -> Ceiling:
    """The approved amount (in the estimate's currency), else the worst-case estimate."""
    if approval is None or approval.worst_cost is None:
        return Ceiling(estimate.worst.cost, "worst-case estimate")
    if approval.currency != estimate.quote.currency:
        return Ceiling(
            estimate.worst.cost,
            f"worst-case estimate (the approval is in {approval.currency}, prices in "
            f"{estimate.quote.currency})",
        )
    return Ceiling(approval.worst_cost, f"approved amount ({approval.record_id})")


_T = TypeVar("_T", float, Decimal)


def _stricter(a: _T | None, b: _T | None) -> _T | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
