"""What was measured, as the estimate takes it: figures that overrule the spec's (pure).

``budget-gate calibrate`` learns epoch times, plateaus and failure rates from finished
runs (:mod:`gate.calibrate`); the evaluation looks up the spec's key and hands the
estimate a :class:`Measured`. Every figure carries its basis in words, and the estimate
states it next to what the spec declared: a measured figure never replaces a declared
one silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Decimal

from gate.estimate.settings import (
    ClusterShape,
    ConcurrencyLimit,
    Estimation,
    Prices,
    PricingPolicy,
    Reliability,
    Returns,
    ScenarioName,
    Spot,
)
from gate.money import format_amount
from gate.spec.experiment import Experiment


@dataclass(frozen=True, slots=True)
class EpochTime:
    """Measured minutes per epoch: the low (10th percentile), median and high (90th)."""

    low: Decimal
    median: Decimal
    high: Decimal
    basis: str
    """Whose runs, e.g. ``23 runs of resnet18 on A100 × 1 bf16, 2026-11-20 … 11-30``."""
    prior: bool = False
    """A FLOPs prior (:mod:`gate.estimate.flops`), not a measurement."""
    floor: str = ""
    """Why these runs only floor the spec's figure, where they are not its own key's
    (:data:`COARSER`, :data:`WHOLE_GPU`): the median and high are at least the spec's
    figures (declared, or its FLOPs prior), which such runs may raise, never lower."""
    raised: EpochTime | None = None
    """The FLOPs prior (of ``workload.model``) that these runs raised, where it was below them."""

    def minutes(self, scenario: ScenarioName) -> Decimal:
        """The median for the expected case, the high quantile for the worst."""
        return self.high if scenario == "worst" else self.median


@dataclass(frozen=True, slots=True)
class Fraction:
    """A measured fraction (plateau epoch ÷ max_epochs, failure rate) and its basis."""

    low: float
    median: float
    basis: str


@dataclass(frozen=True, slots=True)
class Utilization:
    """Measured model FLOPs utilization: the 10th percentile, median and 90th, and its basis."""

    low: float
    median: float
    high: float
    basis: str


@dataclass(frozen=True, slots=True)
class Measured:
    """The calibration's figures for one spec; ``None`` where too few runs measured one.

    ``notes`` says what was looked up and not used (too few runs, no matching key), so an
    estimate priced from the spec alone says why.
    """

    epoch: EpochTime | None = None
    plateau: Fraction | None = None
    failure_rate: Fraction | None = None
    failure_point: float | None = None
    mfu: Utilization | None = None
    """The model's MFU, for the FLOPs prior where no epoch time was measured."""
    notes: tuple[str, ...] = ()
    floor: EpochTime | None = None
    """Runs that may raise the spec's FLOPs prior, never lower it (a coarser key's, where the
    spec gives its model size): :func:`gate.estimate.flops.with_prior` prices the larger."""
    near: tuple[str, EpochTime] | None = None
    """Where the spec's label has no epoch time: a label near it (a typo's distance) that
    has one on the spec's hardware, and that time (BG308 holds the spec to it too)."""

    def plateau_epoch(self, max_epochs: int) -> int | None:
        """The measured median plateau as an epoch of this spec."""
        if self.plateau is None:
            return None
        return max(1, math.ceil(self.plateau.median * max_epochs))

    def low_plateau_epoch(self, max_epochs: int) -> int | None:
        """The measured 10th-percentile plateau as an epoch of this spec."""
        if self.plateau is None:
            return None
        return max(1, math.ceil(self.plateau.low * max_epochs))


COARSER = "runs on another GPU count or precision may raise a declared epoch time, never lower it"
"""Why a coarser key's epoch time is priced at no less than the spec's."""

WHOLE_GPU = (
    "a MIG slice is never faster than its whole GPU: runs on whole GPUs may raise a slice's "
    "epoch time, never lower it"
)
"""Why whole-GPU runs price a MIG slice's epoch time at no less than the spec's."""


def raise_to(
    floor: EpochTime, expected: Decimal, worst: Decimal, prior: EpochTime | None = None
) -> EpochTime | None:
    """``floor``'s runs with each case at least the spec's figure (declared, or ``prior``).

    ``floor.floor`` says why those runs may raise the spec's figure, never lower it.

    ``None`` where the spec's figure is at least the runs' in both cases: they are not used.
    """
    if floor.median <= expected and floor.high <= worst:
        return None
    return replace(
        floor, median=max(floor.median, expected), high=max(floor.high, worst), raised=prior
    )


def epoch_note(epoch: EpochTime, scenario: ScenarioName, declared: Decimal | None) -> str:
    """``epoch time 4.1 min: median of 23 runs of …; the spec says 0.5``."""
    minutes = minutes_text(epoch.minutes(scenario))
    said = f"; the spec says {declared.normalize():f}" if declared is not None else ""
    if epoch.prior:
        return f"epoch time {minutes} min: {epoch.basis}{said}"
    which = "90th percentile" if scenario == "worst" else "median"
    own, whose = declared, "the spec's"
    if epoch.raised is not None:
        own, whose = epoch.raised.minutes(scenario), f"the {epoch.raised.basis}"
        said = f"; the FLOPs prior of workload.model gives {minutes_text(own)}"
    if epoch.floor and own is not None and epoch.minutes(scenario) == own:
        lower = f"the {which} of {epoch.basis} is no higher"
        return f"epoch time {minutes} min: {whose}; {lower}, and {epoch.floor}"
    floor = f" ({epoch.floor})" if epoch.floor else ""
    return f"epoch time {minutes} min: {which} of {epoch.basis}{said}{floor}"


def minutes_for(spec: Experiment, scenario: ScenarioName, measured: Measured | None) -> Decimal:
    """The epoch time a scenario prices: measured (or the FLOPs prior), else declared."""
    if measured is not None and measured.epoch is not None:
        return measured.epoch.minutes(scenario)
    return spec.workload.epoch_minutes_for(scenario)


def declared_minutes(spec: Experiment, scenario: ScenarioName) -> Decimal | None:
    """The spec's own epoch time, ``None`` when its model size sets it."""
    work = spec.workload
    return work.epoch_minutes_for(scenario) if work.declares_epoch_time else None


def minutes_text(minutes: Decimal) -> str:
    """Two decimals, or three significant digits below a tenth of a minute."""
    if minutes >= Decimal("0.1") or minutes == 0:
        return format_amount(minutes, 2)
    return f"{float(minutes):.3g}"


def plateau_note(plateau: Fraction, declared: int | None) -> str:
    """The measured plateau's basis, and what the spec declared instead."""
    said = f"; the spec says {declared}" if declared is not None else ""
    return f"measured: median {plateau.median:.0%} of max_epochs in {plateau.basis}{said}"


def failure_note(failures: Fraction, policy_rate: float) -> str:
    """The measured failure rate, and the policy's figure it replaces."""
    return (
        f"failure rate {failures.median:.0%}: {failures.basis}; the policy says {policy_rate:.0%}"
    )


def overruled(
    spec: Experiment, measured: Measured | None, policy_rate: float, policy_mfu: float
) -> tuple[str, ...]:
    """What measured history priced in place of a figure the spec (or policy) declared.

    Said beside the verdict in every format: a measurement may turn an approval into a pass.
    An epoch time measured over the spec's own or over its model size's FLOPs prior, an MFU
    measured over the policy's, a plateau, a failure rate.
    """
    if measured is None:
        return ()
    notes = []
    epoch, early = measured.epoch, spec.stopping.early_stopping
    declared = declared_minutes(spec, "expected")
    if epoch is not None and not epoch.prior:
        instead = "" if declared is not None else "; the spec's workload.model gave a FLOPs prior"
        if epoch.raised is not None:
            instead, declared = "", epoch.raised.median
        case: ScenarioName = "expected" if not epoch.floor or epoch.median != declared else "worst"
        said = epoch_note(epoch, case, declared_minutes(spec, case))
        notes.append(f"priced from measured runs: {said}{instead}")
    mfu = measured.mfu
    if epoch is not None and epoch.prior and mfu is not None and mfu.median != policy_mfu:
        notes.append(
            f"priced from measured runs: MFU {mfu.median:.3g}, median of {mfu.basis}; the "
            f"policy says {policy_mfu:g}"
        )
    if measured.plateau is not None and early is not None:
        said = plateau_note(measured.plateau, early.expected_plateau_epoch)
        notes.append(f"plateau priced from measured runs: {said.removeprefix('measured: ')}")
    if measured.failure_rate is not None and measured.failure_rate.median != policy_rate:
        notes.append(
            f"priced from measured runs: {failure_note(measured.failure_rate, policy_rate)}"
        )
    return tuple(notes)


@dataclass(frozen=True, slots=True)
class MeasuredPolicy:
    """A pricing policy whose failure assumptions are the measured ones."""

    currency: str
    prices: Prices
    limits: ConcurrencyLimit
    estimation: Estimation
    returns: Returns
    reliability: Reliability
    spot: Spot
    cluster: ClusterShape


def measured_policy(policy: PricingPolicy, measured: Measured | None) -> PricingPolicy:
    """``policy`` with the measured failure rate and failure point, when there are some."""
    if measured is None or measured.failure_rate is None:
        return policy
    base = policy.reliability
    reliability = base.model_copy(
        update={
            "failure_rate": min(measured.failure_rate.median, 0.99),
            "failure_point": measured.failure_point or base.failure_point,
        }
    )
    return replace(
        MeasuredPolicy(
            policy.currency,
            policy.prices,
            policy.limits,
            policy.estimation,
            policy.returns,
            base,
            policy.spot,
            policy.cluster,
        ),
        reliability=reliability,
    )
