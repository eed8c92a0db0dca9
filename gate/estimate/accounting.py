"""GPU-hour and cost arithmetic shared by the estimate and the reconciler (pure).

DOMAIN.md §2: allocated GPU-hours are devices × time held (setup, evaluation and idle tail
included); effective GPU-hours count only training; a run costs GPU-hours × price plus
other attributable cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class Phases:
    """Hours one job spends in each phase; only the held phases are billed per GPU."""

    gpus: Decimal
    setup: Decimal = Decimal(0)
    training: Decimal = Decimal(0)
    evaluation: Decimal = Decimal(0)
    idle_tail: Decimal = Decimal(0)
    queue: Decimal = Decimal(0)

    @property
    def held_hours(self) -> Decimal:
        """Hours from allocation to release (what the bill counts)."""
        return self.setup + self.training + self.evaluation + self.idle_tail

    @property
    def allocated_gpu_hours(self) -> Decimal:
        """Devices × hours held."""
        return self.gpus * self.held_hours

    @property
    def effective_gpu_hours(self) -> Decimal:
        """Devices × hours spent training."""
        return self.gpus * self.training

    @property
    def effective_training_ratio(self) -> Decimal:
        """Effective ÷ allocated GPU-hours: a time proxy, never MFU."""
        allocated = self.allocated_gpu_hours
        return self.effective_gpu_hours / allocated if allocated else Decimal(0)

    @property
    def end_to_end_hours(self) -> Decimal:
        """Delivery time: the queue counts here though it costs no GPU time."""
        return self.queue + self.held_hours


def gpu_cost(gpu_hours: Decimal, price_per_gpu_hour: Decimal) -> Decimal:
    """Cost of GPU time alone."""
    return gpu_hours * price_per_gpu_hour


def run_cost(
    gpu_hours: Decimal, price_per_gpu_hour: Decimal, other: Decimal = Decimal(0)
) -> Decimal:
    """Cost of a run: GPU time plus other attributable cost (CPU, memory, storage)."""
    return gpu_cost(gpu_hours, price_per_gpu_hour) + other
