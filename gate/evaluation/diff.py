"""How a spec's cost changed between a base and a head version, by driver (pure).

Cost = trials × GPUs per trial × hours per trial × price per GPU-hour, so the ratio of two
costs is the product of the ratios of the drivers that changed. A spec with no base was
added, one with no head was deleted, and a version that could not be priced (invalid
input) makes the spec ``unpriced`` with the reason, instead of failing the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Protocol

from gate.errors import Problem
from gate.estimate.model import Estimate, Scenario
from gate.estimate.settings import ScenarioName


class Priced(Protocol):
    """One evaluated version of a spec, as the comparison sees it (a ``SpecResult``)."""

    @property
    def estimate(self) -> Estimate | None:
        """The estimate, or ``None`` when this version could not be priced."""
        ...

    @property
    def currency(self) -> str:
        """The currency of the estimate."""
        ...

    @property
    def errors(self) -> tuple[Problem, ...]:
        """Why this version could not be priced."""
        ...


class Change(str, Enum):
    """What happened to a spec between the base and the head."""

    ADDED = "added"
    DELETED = "deleted"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    UNPRICED = "unpriced"


class Driver(str, Enum):
    """The four factors of the cost, in the order they are explained."""

    TRIALS = "trials"
    GPUS_PER_TRIAL = "gpus_per_trial"
    HOURS_PER_TRIAL = "hours_per_trial"
    PRICE_PER_GPU_HOUR = "price_per_gpu_hour"


@dataclass(frozen=True, slots=True)
class DriverChange:
    """One factor that differs between the two versions."""

    driver: Driver
    base: Decimal
    head: Decimal

    @property
    def ratio(self) -> Decimal | None:
        """Head ÷ base, or None when the base was zero."""
        return self.head / self.base if self.base else None


@dataclass(frozen=True, slots=True)
class ScenarioDiff:
    """One scenario (worst or expected) before and after; a missing side costs nothing."""

    name: ScenarioName
    base: Scenario | None
    head: Scenario | None

    @property
    def base_cost(self) -> Decimal:
        """The base version's cost (zero for an added spec)."""
        return self.base.cost if self.base else Decimal(0)

    @property
    def head_cost(self) -> Decimal:
        """The head version's cost (zero for a deleted spec)."""
        return self.head.cost if self.head else Decimal(0)

    @property
    def base_gpu_hours(self) -> Decimal:
        """The base version's GPU-hours (zero for an added spec)."""
        return self.base.gpu_hours if self.base else Decimal(0)

    @property
    def head_gpu_hours(self) -> Decimal:
        """The head version's GPU-hours (zero for a deleted spec)."""
        return self.head.gpu_hours if self.head else Decimal(0)

    @property
    def drivers(self) -> tuple[DriverChange, ...]:
        """The factors that changed, when both versions exist."""
        if self.base is None or self.head is None:
            return ()
        pairs = zip(_factors(self.base), _factors(self.head), strict=True)
        return tuple(
            DriverChange(driver, base, head)
            for driver, (base, head) in zip(Driver, pairs, strict=True)
            if base != head
        )


@dataclass(frozen=True, slots=True)
class SpecDiff:
    """The change of one spec: its scenarios side by side, or why they cannot be compared."""

    file: str
    change: Change
    currency: str = "USD"
    base: Estimate | None = None
    head: Estimate | None = None
    reason: str = ""
    problems: tuple[Problem, ...] = ()

    @property
    def scenarios(self) -> tuple[ScenarioDiff, ...]:
        """Worst and expected, side by side; empty when the spec is unpriced."""
        if self.change is Change.UNPRICED:
            return ()
        return tuple(
            ScenarioDiff(
                name,
                self.base.scenario(name) if self.base else None,
                self.head.scenario(name) if self.head else None,
            )
            for name in ("worst", "expected")
        )


def compare(file: str, base: Priced | None, head: Priced | None) -> SpecDiff:
    """Compare two evaluations of one spec; ``None`` means that version does not exist."""
    present = [r for r in (base, head) if r is not None]
    if not present:
        raise ValueError(f"{file}: nothing to compare")
    for side, result in (("base", base), ("new", head)):
        if result is not None and result.estimate is None:
            return SpecDiff(
                file,
                Change.UNPRICED,
                reason=f"the {side} version is invalid",
                problems=result.errors,
            )
    if len({r.currency for r in present}) > 1:
        reason = f"the currency changed from {present[0].currency} to {present[1].currency}"
        return SpecDiff(file, Change.UNPRICED, reason=reason)
    return SpecDiff(
        file,
        _change(base, head),
        present[0].currency,
        base.estimate if base else None,
        head.estimate if head else None,
    )


def _change(base: Priced | None, head: Priced | None) -> Change:
    if base is None:
        return Change.ADDED
    if head is None:
        return Change.DELETED
    assert base.estimate is not None and head.estimate is not None
    same = all(
        _factors(base.estimate.scenario(name)) == _factors(head.estimate.scenario(name))
        for name in ("worst", "expected")
    )
    return Change.UNCHANGED if same else Change.CHANGED


def _factors(s: Scenario) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    d = s.drivers
    return (
        Decimal(d.trials),
        Decimal(d.gpus_per_trial) * d.gpu_share,  # a MIG slice is a share of a GPU
        d.hours_per_trial,
        d.price_per_gpu_hour,
    )
