"""Where the money of finished runs went to waste, the variance, and the verdict (pure).

Three kinds of waste, each in money with the advice of DOMAIN.md §4:

- **failed or killed runs**: their whole cost;
- **epochs after the plateau**: per run that did not fail, its training time × epochs after
  the plateau ÷ epochs run (an epoch's share of training; the held time when phases were
  not logged);
- **idle GPU time**: price × hours × (1 − mean utilization) over runs that did not fail —
  an upper bound, since utilization counts any resident kernel, not useful work. It can
  overlap the epochs after the plateau.

Failed runs are left out of the other two so no money is counted twice between them.
The verdict fails with no qualified model, or when the actual cost exceeds the approved
amount (the worst-case estimate when nothing was approved) by more than the tolerance.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum

from gate.money import format_amount, format_small
from gate.reconcile.quality import Monitor


class WasteKind(str, Enum):
    """The kinds of waste reconcile measures."""

    FAILED = "failed-runs"
    PLATEAU = "epochs-after-plateau"
    IDLE = "idle-gpu-time"


@dataclass(frozen=True, slots=True)
class Waste:
    """One kind of waste: what it cost, over how many runs, and what to do about it.

    ``measured`` is false when no run logged what this needs (a metric history, GPU
    utilization); ``upper_bound`` marks an estimate that can only overstate.
    """

    kind: WasteKind
    title: str
    cost: Decimal
    gpu_hours: Decimal
    runs: int
    detail: str
    advice: str
    measured: bool = True
    upper_bound: bool = False


@dataclass(frozen=True, slots=True)
class RunWaste:
    """The few numbers of one run that waste is computed from."""

    failed: bool
    cost: Decimal
    gpu_hours: Decimal
    epochs: int | None
    plateau: int | None
    plateau_cost: Decimal
    plateau_gpu_hours: Decimal
    utilization: Decimal | None
    train_cost: Decimal = Decimal(0)


FAILED_ADVICE = (
    "every failed or retried run is charged to the experiment: fix the cause before "
    "retrying (the same configuration fails the same way), cap the retries, and checkpoint "
    "so that a retry resumes instead of starting over"
)
IDLE_ADVICE = (
    "an upper bound: utilization counts any resident kernel, not useful work. Keep the GPUs "
    "fed (more data-loader workers, larger batches), do setup before the GPUs are allocated "
    "and release them on exit, or request fewer or smaller GPUs (a MIG slice for a small job)"
)


def failed_waste(runs: Sequence[RunWaste], retried_trials: int, retry_runs: int) -> Waste:
    """Failed and killed runs: their whole cost."""
    failed = [r for r in runs if r.failed]
    retries = (
        f"; {retried_trials} trial(s) were run again ({retry_runs} extra run(s))"
        if retried_trials
        else ""
    )
    return Waste(
        WasteKind.FAILED,
        "Failed or killed runs",
        sum((r.cost for r in failed), Decimal(0)),
        sum((r.gpu_hours for r in failed), Decimal(0)),
        len(failed),
        f"{len(failed)} of {len(runs)} run(s) failed or were killed{retries}",
        FAILED_ADVICE if failed or retried_trials else "none: no run failed or was killed",
    )


def plateau_waste(runs: Sequence[RunWaste], monitor: Monitor) -> Waste:
    """Epochs trained after the monitored metric stopped improving by min_delta."""
    known = [r for r in runs if not r.failed and r.epochs and r.plateau]
    title = "Epochs after the plateau"
    if not known:
        return Waste(
            WasteKind.PLATEAU,
            title,
            Decimal(0),
            Decimal(0),
            0,
            f"no run that did not fail logged a history of {monitor.metric} (step = epoch)",
            f"log {monitor.metric} once per epoch with step=epoch to measure this",
            measured=False,
        )
    after = [r.epochs - r.plateau for r in known if r.epochs and r.plateau]
    wasted = [r for r in known if r.epochs != r.plateau]
    plateaus = [r.plateau for r in known if r.plateau]
    epochs = [r.epochs for r in known if r.epochs]
    cost = sum((r.plateau_cost for r in known), Decimal(0))
    trained = sum((r.train_cost for r in known), Decimal(0))
    share = f", {fixed_percent(cost / trained)} of their training cost" if trained else ""
    detail = (
        f"{monitor.metric} ({monitor.mode}, must gain {monitor.threshold.describe()}) stopped "
        f"paying after epoch {_median(plateaus)} (median) while runs trained "
        f"{_median(epochs)} epochs; {sum(after):,} epochs over {len(wasted)} of {len(known)} "
        f"run(s) came after it{share}"
    )
    return Waste(
        WasteKind.PLATEAU,
        title,
        cost,
        sum((r.plateau_gpu_hours for r in known), Decimal(0)),
        len(wasted),
        detail,
        _plateau_advice(monitor, plateaus, after),
    )


def _plateau_advice(monitor: Monitor, plateaus: list[int], after: list[int]) -> str:
    if not any(after):
        return "none: every run stopped at its plateau"
    if monitor.patience is None:
        cap = _percentile(plateaus, 0.9)
        return (
            f"add stopping.early_stopping on {monitor.metric} with a patience of a few epochs, "
            f"or cut max_epochs to about {cap} (90 % of the runs had plateaued by then)"
        )
    mean_after = statistics.fmean(after)
    if mean_after <= monitor.patience + 1:
        return (
            f"these are mostly the {monitor.patience} patience epochs early stopping waits: "
            f"lower the patience if {monitor.metric} rarely improves again after a pause"
        )
    return (
        f"early stopping (patience {monitor.patience}) should stop a run about "
        f"{monitor.patience} epochs after its plateau, yet runs went on {mean_after:.1f} "
        f"epochs on average: check that the launcher applies it to {monitor.metric} "
        f"(name, mode, min_delta)"
    )


def idle_waste(runs: Sequence[RunWaste]) -> Waste:
    """Price × hours × (1 − mean utilization), over runs that logged GPU utilization."""
    known = [r for r in runs if not r.failed and r.utilization is not None]
    title = "Idle GPU time (upper bound)"
    if not known:
        return Waste(
            WasteKind.IDLE,
            title,
            Decimal(0),
            Decimal(0),
            0,
            "no run that did not fail logged GPU utilization (MLflow system metrics)",
            "start runs with log_system_metrics=True and nvidia-ml-py installed to measure this",
            measured=False,
            upper_bound=True,
        )
    idle_hours = sum((r.gpu_hours * (1 - (r.utilization or 0)) for r in known), Decimal(0))
    held = sum((r.gpu_hours for r in known), Decimal(0))
    used = sum((r.gpu_hours * (r.utilization or 0) for r in known), Decimal(0))
    mean = used / held if held else Decimal(0)
    return Waste(
        WasteKind.IDLE,
        title,
        sum((r.cost * (1 - (r.utilization or 0)) for r in known), Decimal(0)),
        idle_hours,
        len(known),
        f"mean GPU utilization {format_amount(mean * 100, 1)} % over "
        f"{format_small(held, 1)} GPU-hours of {len(known)} run(s)",
        IDLE_ADVICE,
        upper_bound=True,
    )


def _median(values: list[int]) -> str:
    return f"{statistics.median(values):g}"


def _percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass(frozen=True, slots=True)
class Variance:
    """Actual against the estimate and the approved amount, with the policy's tolerance."""

    currency: str
    actual: Decimal
    actual_gpu_hours: Decimal
    expected: Decimal
    expected_gpu_hours: Decimal
    worst: Decimal
    worst_gpu_hours: Decimal
    tolerance: Decimal
    approved: Decimal | None = None
    approval_id: str | None = None

    @property
    def reference(self) -> Decimal:
        """The amount the tolerance applies to: approved, else the worst-case estimate."""
        return self.approved if self.approved is not None else self.worst

    @property
    def reference_name(self) -> str:
        """``approved`` or ``worst-case estimate``, for messages."""
        return "approved" if self.approved is not None else "worst-case estimate"

    @property
    def limit(self) -> Decimal:
        """The most the runs may cost before the verdict fails."""
        return self.reference * (1 + self.tolerance)

    @property
    def over(self) -> bool:
        """Whether the actual cost is past the tolerance."""
        return self.actual > self.limit


def _money(amount: Decimal, currency: str) -> str:
    return f"{format_small(amount)} {currency}"


def percent(fraction: Decimal) -> str:
    """``0.1`` as ``10 %``, ``0.125`` as ``12.5 %`` (one decimal at most, never ``1e+06``)."""
    text = format(fraction * 100, ",.1f").removesuffix(".0")
    return f"{'0' if text == '-0' else text} %"


def fixed_percent(fraction: Decimal) -> str:
    """``0.15`` as ``15.0 %``: always one decimal, so figures side by side read alike.

    The reconcile reports use it throughout (``+15.0 %`` beside ``+64.3 %``, not ``+15 %``).
    """
    return f"{format_amount(fraction * 100, 1)} %"


def signed_percent(fraction: Decimal) -> str:
    """A change as ``+15.0 %`` or ``−44.0 %`` (a true minus, one decimal)."""
    return f"{'+' if fraction >= 0 else '−'}{fixed_percent(abs(fraction))}"


def change(actual: Decimal, planned: Decimal) -> Decimal | None:
    """Relative change from ``planned`` to ``actual`` (``None`` when nothing was planned)."""
    return (actual - planned) / planned if planned else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Pass or fail, why, and whether runs still running make it provisional."""

    passed: bool
    reasons: tuple[str, ...] = ()
    provisional: bool = False

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail (DESIGN.md §3)."""
        return 0 if self.passed else 1


def decide(runs: int, qualified: int, variance: Variance, running: int) -> Verdict:
    """Fail with no runs, no qualified model, or spend past the tolerance."""
    currency = variance.currency
    reasons: list[str] = []
    if runs == 0:
        reasons.append("no runs found, so no qualified model")
    elif qualified == 0:
        reasons.append(
            f"no run passed the quality gate: {_money(variance.actual, currency)} "
            f"spent on {runs} run(s) bought no qualified model"
        )
    if variance.over:
        share = change(variance.actual, variance.reference)
        over = f" ({fixed_percent(share)} over)" if share else ""
        reasons.append(
            f"actual {_money(variance.actual, currency)} exceeds the "
            f"{variance.reference_name} {_money(variance.reference, currency)}{over} "
            f"by more than the tolerance of {fixed_percent(variance.tolerance)}"
        )
    return Verdict(not reasons, tuple(reasons), provisional=running > 0)
