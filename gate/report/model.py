"""The monthly team report as values: what every reporter renders (pure).

Amounts are exact decimals in the report's currency; reporters round. Lists are in a
stable order (teams by name, rankings by their figure then name) so the JSON is stable.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from gate.calibrate.backtest import Accuracy
from gate.estimate.model import SpotComparison
from gate.reconcile.waste import WasteKind
from gate.report.period import Month, Period
from gate.report.runs import RunLine, Unpriced


@dataclass(frozen=True, slots=True)
class WasteSplit:
    """Waste in money by kind: failed runs, epochs after the plateau, idle (an upper bound).

    ``None``: not measured, no run logged what the kind needs (a metric history, GPU
    utilization): unknown, never shown as 0.
    """

    failed: Decimal = Decimal(0)
    plateau: Decimal | None = None
    idle: Decimal | None = None

    @property
    def total(self) -> Decimal:
        """Failed plus post-plateau: idle is left out, since it can overlap the plateau."""
        return self.failed + (self.plateau or Decimal(0))

    def __add__(self, other: WasteSplit) -> WasteSplit:
        return WasteSplit(
            self.failed + other.failed,
            _known_sum(self.plateau, other.plateau),
            _known_sum(self.idle, other.idle),
        )


def _known_sum(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    """The sum of what was measured; ``None`` when neither was."""
    return b if a is None else a if b is None else a + b


@dataclass(frozen=True, slots=True)
class TeamRow:
    """One team over the period: budget, approved, launched, actual, forecast, return."""

    team: str
    budget: Decimal | None
    approved: Decimal
    launched: Decimal | None
    actual: Decimal
    forecast: Decimal
    gpu_hours: Decimal
    runs: int
    experiments: int
    qualified: int
    waste: WasteSplit
    guard_saved: Decimal
    accuracy: Accuracy | None
    """The approved (else the spec's) estimates against the actual, per experiment."""
    cases: int
    all_failed: bool = False
    """Every run failed or was killed: no plateau to measure, all its waste is failed runs."""

    @property
    def waste_at_least(self) -> bool:
        """Whether its waste is a lower bound: it spent, and no run measured a plateau it had."""
        return self.waste.plateau is None and self.actual > 0 and not self.all_failed

    @property
    def cost_per_qualified(self) -> Decimal | None:
        """All spend ÷ qualified models; ``None`` with none."""
        return self.actual / self.qualified if self.qualified else None

    @property
    def waste_share(self) -> Decimal | None:
        """Waste (failed and post-plateau) ÷ actual spend."""
        return self.waste.total / self.actual if self.actual else None


@dataclass(frozen=True, slots=True)
class MonthFigure:
    """One month of a team's model: spend, qualified models, and their ratio."""

    month: Month
    cost: Decimal
    gpu_hours: Decimal
    qualified: int

    @property
    def cost_per_qualified(self) -> Decimal | None:
        """Spend ÷ qualified models in that month; ``None`` with none."""
        return self.cost / self.qualified if self.qualified else None


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One team's model label over the period, and its months in the trend window."""

    team: str
    model: str
    gpu_hours: Decimal
    actual: Decimal
    qualified: int
    trend: tuple[MonthFigure, ...]

    @property
    def cost_per_qualified(self) -> Decimal | None:
        """All spend ÷ qualified models over the period; ``None`` with none."""
        return self.actual / self.qualified if self.qualified else None


@dataclass(frozen=True, slots=True)
class WasteRow:
    """One kind of waste over the period (reconcile's kinds), and the runs it was found in."""

    kind: WasteKind
    title: str
    cost: Decimal
    gpu_hours: Decimal
    runs: int
    upper_bound: bool = False
    measured: bool = True
    """False when no run logged what it needs (GPU utilization, for idle): its 0 is unknown."""


@dataclass(frozen=True, slots=True)
class GuardSummary:
    """Runs the runtime guard stopped: what they cost, and what the stops saved."""

    runs: int
    cost: Decimal
    saved: Decimal


@dataclass(frozen=True, slots=True)
class ExperimentRow:
    """One spec version over the period: spend, return and waste."""

    experiment: str
    team: str
    model: str
    spec: str
    fingerprint: str
    runs: int
    cost: Decimal
    qualified: int
    waste: WasteSplit
    guard_saved: Decimal

    @property
    def cost_per_qualified(self) -> Decimal | None:
        """All spend ÷ qualified models; ``None`` with none."""
        return self.cost / self.qualified if self.qualified else None


@dataclass(frozen=True, slots=True)
class SpotRow:
    """Spot runs against the same GPU-hours on demand, recompute of preempted runs included."""

    runs: int
    preempted: int
    gpu_hours: Decimal
    comparison: SpotComparison
    unpriced: int = 0
    """Spot runs whose accelerator has no on-demand price: left out of the comparison."""


@dataclass(frozen=True, slots=True)
class Approved:
    """An approval recorded in the period: by whom, from where, for what, at what worst case."""

    team: str
    experiment: str
    spec: str
    fingerprint: str
    by: str
    source: str
    recorded_at: dt.datetime
    approved: Decimal


@dataclass(frozen=True, slots=True)
class ApprovalRow(Approved):
    """One approval that counts in the period, and what its runs cost."""

    expected: Decimal | None
    actual: Decimal
    runs: int
    over_triggers: bool | None


@dataclass(frozen=True, slots=True)
class RevokedRow(Approved):
    """An approval recorded in the period and revoked by its end: it holds no money."""

    revoked_by: str
    revoked_at: dt.datetime


@dataclass(frozen=True, slots=True)
class Ranking:
    """Teams in rank order (best first) on one figure; teams without it come last."""

    by: str
    teams: tuple[tuple[str, Decimal | None], ...]


@dataclass(frozen=True, slots=True)
class MonthReport:
    """The period's report: teams, models, waste, experiments, spot, approvals, rankings."""

    period: Period
    generated_at: dt.datetime
    currency: str
    where: str
    teams: tuple[TeamRow, ...]
    models: tuple[ModelRow, ...]
    waste: tuple[WasteRow, ...]
    guard: GuardSummary
    costliest: tuple[ExperimentRow, ...]
    spot: SpotRow
    approvals: tuple[ApprovalRow, ...]
    rankings: tuple[Ranking, ...]
    lines: tuple[RunLine, ...]
    """Every priced run of the period (the FOCUS rows)."""
    unpriced: tuple[Unpriced, ...] = ()
    notes: tuple[str, ...] = ()
    version: str = ""
    team_filter: str | None = None
    revoked: tuple[RevokedRow, ...] = ()
    """The approvals of the period revoked by its end (not in ``approvals``)."""

    @property
    def actual(self) -> Decimal:
        """What every team's runs of the period cost."""
        return sum((t.actual for t in self.teams), Decimal(0))

    @property
    def gpu_hours(self) -> Decimal:
        """GPU-hours held by every team's runs of the period."""
        return sum((t.gpu_hours for t in self.teams), Decimal(0))

    @property
    def qualified(self) -> int:
        """Qualified models over every team."""
        return sum(t.qualified for t in self.teams)
