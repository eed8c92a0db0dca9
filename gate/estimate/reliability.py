"""Extra GPU time from failures, retries and spot preemptions (pure formulas).

Retries: a trial attempt fails with probability p after a fraction f of its run; it is
retried up to m times. The expected extra work is ``f × (p + p² + … + p^m)`` runs, and
the ceiling (every retry used, each failing at the very end) is ``m`` runs.

Preemptions arrive as a Poisson process with rate λ per hour. Work is saved every ``c``
hours (the checkpoint interval, or the whole run without checkpoints) and a restart costs
``s`` hours (setup). The expected time to finish one segment of ``c`` hours is
``(e^(λc) − 1)(1/λ + s)`` (the classic checkpoint/restart result), so recompute grows
exponentially with the interval: spot without checkpoints can cost more than on-demand.
"""

from __future__ import annotations

import math
from decimal import Decimal


def expected_retry_runs(failure_rate: float, max_retries: int, failure_point: float) -> Decimal:
    """Expected extra runs per trial spent in failed attempts that were retried."""
    p = Decimal(str(failure_rate))
    attempts = sum((p**k for k in range(1, max_retries + 1)), Decimal(0))
    return Decimal(str(failure_point)) * attempts


def preemption_factor(
    run_hours: Decimal,
    preemptions_per_hour: float,
    checkpoint_hours: Decimal | None,
    restart_hours: Decimal,
) -> Decimal:
    """Expected wall time ÷ useful time for one run under preemptions (1 when none)."""
    if preemptions_per_hour <= 0 or run_hours <= 0:
        return Decimal(1)
    interval = float(min(checkpoint_hours, run_hours) if checkpoint_hours else run_hours)
    # NOTE: (e^x − 1)(1/λ + s) with x = λc, written as c·(e^x − 1)/x + s·(e^x − 1) so tiny
    # rates do not overflow 1/λ; x is capped so absurd inputs stay finite.
    x = min(preemptions_per_hour * interval, 700.0)
    growth = math.expm1(x)
    per_segment = interval * (growth / x if x > 0 else 1.0) + float(restart_hours) * growth
    factor = per_segment / interval
    return Decimal(str(min(factor, MAX_FACTOR))).max(Decimal(1))


MAX_FACTOR = 1e12
"""A run that takes a trillion times its length under preemptions never finishes: the
factor is capped there so the estimate stays a (huge) finite number."""
