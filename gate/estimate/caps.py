"""Per-trial caps: where ``max_trial_hours`` and ``max_trial_cost`` stop a trial (pure).

A cap bounds what a trial holds, recompute after spot preemptions included, since the bill
counts it: a trial capped at 300 USD never costs more than 300 USD. The useful time that
fits under what is left of a cap is found by bisection, because preemptions stretch a
longer run by more than a shorter one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from gate.estimate.schedule import Rung
from gate.money import format_amount, to_decimal
from gate.spec.experiment import Experiment

_NANOHOUR = Decimal("1e-9")


@dataclass(frozen=True, slots=True)
class TrialCap:
    """The tighter of a spec's per-trial caps, in hours held, and its name for the notes.

    ``field`` is the spec key under ``stopping:`` that sets it, ``amount`` what the spec
    wrote there (hours, or money).
    """

    hours: Decimal
    amount: Decimal
    field: str = "max_trial_hours"

    @property
    def label(self) -> str:
        """``max_trial_hours 6.00 h`` or ``max_trial_cost 300.00``, as the notes say it."""
        unit = " h" if self.field == "max_trial_hours" else ""
        return f"{self.field} {format_amount(self.amount)}{unit}"


def trial_cap(spec: Experiment, rate_per_hour: Decimal) -> TrialCap | None:
    """The tighter of ``max_trial_hours`` and ``max_trial_cost`` at ``rate_per_hour``."""
    caps = []
    stop = spec.stopping
    if stop.max_trial_hours is not None:
        hours = to_decimal(stop.max_trial_hours)
        caps.append(TrialCap(hours, hours, "max_trial_hours"))
    if stop.max_trial_cost is not None and rate_per_hour > 0:
        # NOTE: rounded down, so a trial capped at the cost never costs a hair more than it.
        hours = floor_hours(stop.max_trial_cost / rate_per_hour)
        caps.append(TrialCap(hours, stop.max_trial_cost, "max_trial_cost"))
    return min(caps, key=lambda cap: cap.hours) if caps else None


def fit(left: Decimal, held: Callable[[Decimal], Decimal]) -> tuple[Decimal, Decimal]:
    """The useful hours whose held time fits in ``left`` hours, and that held time.

    ``held(useful)`` is non-decreasing and at least ``useful`` (preemptions only add).
    """
    if left <= 0:
        return Decimal(0), Decimal(0)
    if held(left) <= left:
        return left, left
    low, high = Decimal(0), left
    for _ in range(60):  # 2^-60 of the cap: far below a nanohour
        middle = (low + high) / 2
        if held(middle) <= left:
            low = middle
        else:
            high = middle
    useful = floor_hours(low)
    return useful, floor_hours(min(held(useful), left))


def floor_hours(hours: Decimal) -> Decimal:
    """Hours rounded down to the nanohour; a figure too large to quantize stays as it is.

    NOTE: quantizing a huge quotient (a 1e300 cap over a small rate) would need more digits
    than the decimal context has.
    """
    return hours.quantize(_NANOHOUR, rounding=ROUND_FLOOR) if hours.adjusted() < 18 else hours


@dataclass(slots=True)
class TrialPath:
    """One trial's way through a stage: hours held so far, epochs trained, whether cut."""

    held: Decimal = Decimal(0)
    trained: Decimal = Decimal(0)
    cut: bool = False


def advance(
    path: TrialPath,
    rung: Rung,
    run: Decimal,
    start: Decimal,
    per_epoch: Decimal,
    cap: TrialCap | None,
    held: Callable[[Decimal], Decimal],
) -> tuple[Decimal, Decimal]:
    """Take a trial through one rung of ``run`` useful hours (``start`` of them setup).

    Returns the useful and the held hours it spends there: all of them, what fits under
    the cap, or none once the cap has stopped it; ``path`` records how far it got.
    """
    billed = held(run)
    if path.cut:
        run = billed = Decimal(0)
    elif cap is not None and path.held + billed > cap.hours:
        run, billed = fit(cap.hours - path.held, held)
        done = min(Decimal(rung.epochs), max(Decimal(0), run - start) / per_epoch)
        path.trained, path.cut = Decimal(rung.reached - rung.epochs) + done, True
    else:
        path.trained = Decimal(rung.reached)
    path.held += billed
    return run, billed


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a cap stopped the trial that trains furthest: held hours and epochs trained.

    ``target`` is the epochs it was to train, ``field`` the cap that stopped it (the key
    under ``stopping:``) and ``needed_hours`` what it would have held without the cap.
    """

    hours: Decimal
    epochs: Decimal
    target: int
    field: str = "max_trial_hours"
    needed_hours: Decimal = Decimal(0)


def cut_note(cap: TrialCap, cut: Cut, every_trial: bool) -> str:
    """Say where the cap stops trials, how many epochs they train, and whether any finishes."""
    whole = cut.epochs == cut.epochs.to_integral_value()
    where = (
        f"after epoch {cut.epochs:f} of {cut.target}"
        if whole
        else f"in epoch {int(cut.epochs) + 1} of {cut.target} "
        f"({format_amount(cut.epochs)} epochs trained)"
    )
    head = f"{cap.label} stops trials at {format_amount(cut.hours)} h held, {where}"
    if every_trial:
        return f"{head}; no trial finishes its epochs, so no finished model"
    return f"{head}; trials that stop earlier (pruned or early-stopped) are not cut"
