"""Notes on a reconciliation (pure): what the estimate priced against what the runs took.

The runs' median epoch time against the estimate's, and on what basis the estimate priced
it (measured, a FLOPs prior or the spec's figure); a spec without a quality gate; an
approval in another currency; runs deleted in MLflow, counted all the same; qualified runs
that ended before one epoch could have run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from gate.estimate.measured import minutes_text
from gate.reconcile.actuals import Plan, RunResult
from gate.reconcile.waste import signed_percent
from gate.words import counted


def notes(plan: Plan, runs: Sequence[RunResult]) -> tuple[str, ...]:
    """What the reader should know to read the totals: epoch-time error, no gate, the basis."""
    notes = [note] if (note := _epoch_error(plan, runs)) is not None else []
    if (deleted := deleted_note(runs)) is not None:
        notes.append(deleted)
    priced = _priced_epoch(plan)
    if priced is not None and (quick := _quicker_than(priced, runs)):
        notes.append(
            f"{counted(quick, 'qualified run')} ended sooner than one epoch at the priced "
            f"epoch time ({minutes_text(priced.minutes)} min): {QUICK_NOTE}"
        )
    if not plan.spec.quality_gate:
        notes.append("the spec has no quality_gate: every finished run counts as qualified")
    approval = plan.approval
    if approval is not None and approval.currency != plan.quote.currency:
        notes.append(
            f"the approval is in {approval.currency}, the policy prices in "
            f"{plan.quote.currency}: compared with the worst-case estimate instead"
        )
    if (basis := _estimate_basis(plan)) is not None:
        notes.append(basis)
    return tuple(notes)


def deleted_note(runs: Sequence[RunResult]) -> str | None:
    """The runs deleted in MLflow (or in a deleted experiment), which count all the same.

    Deleting a run hides it from MLflow's searches, not from the bill: a job that deleted
    its failed runs would otherwise lower its experiment's cost per qualified model.
    """
    deleted = [r for r in runs if r.deleted]
    if not deleted:
        return None
    hours = sum((r.gpu_hours for r in deleted), Decimal(0))
    return (
        f"{counted(len(deleted), 'run')} deleted in MLflow (or in a deleted experiment) "
        f"counted: deleting a run does not undo its spend ({hours:.2f} GPU-h)"
    )


QUICK_NOTE = (
    "a model that trained no epoch is its job's word (its times and metrics are the job's "
    "to write): compare the runs with the launches"
)


def too_quick(plan: Plan, runs: Sequence[RunResult]) -> int:
    """How many qualified runs ended sooner than one epoch at the estimate's epoch time.

    NOTE: a run's times and metrics are its job's word: a run of a millisecond that logs a
    passing metric counts as a qualified model and lowers the cost per qualified model. It
    still counts (an estimate's epoch time can be far off), but it is said.
    """
    priced = _priced_epoch(plan)
    return 0 if priced is None else _quicker_than(priced, runs)


def _quicker_than(priced: _PricedEpoch, runs: Sequence[RunResult]) -> int:
    return sum(
        1 for r in runs if r.qualified and r.end is not None and r.held_hours * 60 < priced.minutes
    )


def deleted_open_note(count: int) -> tuple[str, ...]:
    """The note on the runs left out as deleted before they ended, if any."""
    if not count:
        return ()
    return (
        f"{counted(count, 'run')} deleted in MLflow before they ended, not counted: what "
        "they held is not known (MLflow ends no deleted run: restore it, end it, delete it)",
    )


def _epoch_error(plan: Plan, runs: Sequence[RunResult]) -> str | None:
    """The runs' median epoch time against what the estimate priced, and on what basis."""
    times = [
        (r.phases.training if r.phases is not None else r.held_hours) * 60 / r.epochs
        for r in runs
        if r.epochs and r.end is not None
    ]
    if not times:
        return None
    actual = statistics.median(times)
    priced = _priced_epoch(plan)
    if priced is None or not actual:
        return None
    error = (priced.minutes - actual) / actual
    return (
        f"epoch time: the runs took {minutes_text(actual)} min (median of "
        f"{counted(len(times), 'run')}); the estimate priced {minutes_text(priced.minutes)} "
        f"({priced.short}): error {signed_percent(error)}"
    )


@dataclass(frozen=True, slots=True)
class _PricedEpoch:
    """The epoch time the estimate's expected case priced, and its basis, short and long."""

    minutes: Decimal
    short: str
    long: str


def _priced_epoch(plan: Plan) -> _PricedEpoch | None:
    """Measured, a FLOPs prior, or the spec's declared figure; ``None`` when there is none."""
    measured = plan.estimate.measured
    epoch = measured.epoch if measured is not None else None
    if epoch is not None and epoch.prior:
        return _PricedEpoch(epoch.median, epoch.basis, f"a FLOPs prior ({epoch.basis})")
    if epoch is not None:
        return _PricedEpoch(
            epoch.median, f"median of {epoch.basis}", f"the measured calibration of {epoch.basis}"
        )
    work = plan.spec.workload
    if not work.declares_epoch_time:
        return None
    expected, worst = work.epoch_minutes_for("expected"), work.epoch_minutes_for("worst")
    declared = (
        f"the spec's declared epoch time ({minutes_text(expected)} min, "
        f"worst {minutes_text(worst)})"
    )
    return _PricedEpoch(expected, "the spec's figure", declared)


def _estimate_basis(plan: Plan) -> str | None:
    """What the cost variance is against: the basis of the epoch time the estimate priced."""
    priced = _priced_epoch(plan)
    if priced is None:
        return None
    measured = plan.estimate.measured
    also = [
        name
        for name, figure in (
            ("plateau", measured.plateau if measured is not None else None),
            ("failure rate", measured.failure_rate if measured is not None else None),
        )
        if figure is not None
    ]
    measured_too = f"; its {' and '.join(also)} measured too" if also else ""
    return f"cost variance: the estimate priced each epoch from {priced.long}{measured_too}"
