"""Runs → actual cost, cost per qualified model, waste and variance (pure).

A :class:`Reconciler` takes :class:`gate.reconcile.actuals.RunFacts` one at a time (streaming) and
keeps only each run's small :class:`gate.reconcile.actuals.RunResult`, so memory stays flat however
long the metric histories are; :meth:`Reconciler.result` adds them up (DOMAIN.md §2):

- cost per qualified model = everything spent, failed, killed and unqualified runs
  included, ÷ runs that pass the quality gate; with none, the verdict fails and the whole
  spend is reported;
- time to first qualified model runs from the first submission (queue included when the
  launcher tagged it; never after a run's start) to the end of the first run that passes the gate;
- retries are grouped by trial id; the effective-training ratio counts runs that logged
  phases; utilization-weighted GPU-hours count runs that logged GPU utilization;
- the quality curve is the best *qualified* model against cumulative spend: a run that
  fails the gate bought no model, whatever its metric, though its cost is spent.

Waste, variance and the verdict are in :mod:`gate.reconcile.waste`; the notes in
:mod:`gate.reconcile.notes`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from gate.ledger.records import short
from gate.reconcile.actuals import (
    MS_PER_HOUR,
    Plan,
    RunFacts,
    RunResult,
    RunStatus,
    by_start,
    price_run,
)
from gate.reconcile.notes import deleted_open_note, notes
from gate.reconcile.quality import ChartMetric, better, chart_metric
from gate.reconcile.waste import (
    RunWaste,
    Variance,
    Verdict,
    Waste,
    decide,
    failed_waste,
    idle_waste,
    plateau_waste,
)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One run of a trial, as the retry summary lists it."""

    run_id: str
    attempt: int | None
    status: RunStatus
    cost: Decimal


@dataclass(frozen=True, slots=True)
class TrialRetries:
    """A trial that ran more than once; every attempt but the last is a retry."""

    trial: str
    attempts: tuple[Attempt, ...]

    @property
    def retry_cost(self) -> Decimal:
        """What the attempts before the last one cost."""
        return sum((a.cost for a in self.attempts[:-1]), Decimal(0))


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """Cumulative cost after a run ended, and the best quality of a qualified model by then.

    Only runs that pass the quality gate count as a model (DOMAIN.md: compare at equal
    quality); every run's cost, failed and unqualified ones included, counts in ``cost``.
    """

    cost: Decimal
    best: float | None


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """The experiment's runs added up: spend, qualified models, waste, variance, verdict.

    ``runs`` are in start order; ``curve`` is in end order (runs still running last), for
    the chart of the best qualified model against cumulative cost. ``best_at`` is the
    cumulative cost when a qualified model last improved on the best: whatever came after
    bought no better qualified model (``None`` with none qualified).
    """

    plan: Plan
    chart: ChartMetric
    runs: tuple[RunResult, ...]
    gpu_hours: Decimal
    cost: Decimal
    qualified: int
    first_qualified: RunResult | None
    hours_to_first_qualified: Decimal | None
    effective_ratio: Decimal | None
    phased_runs: int
    utilization: Decimal | None
    utilization_gpu_hours: Decimal | None
    utilization_runs: int
    trials: int
    retries: tuple[TrialRetries, ...]
    waste: tuple[Waste, ...]
    variance: Variance
    verdict: Verdict
    curve: tuple[CurvePoint, ...]
    best_at: Decimal | None
    notes: tuple[str, ...] = ()

    @property
    def guard_stops(self) -> tuple[RunResult, ...]:
        """The runs the runtime guard stopped (their ``guard_stop`` says why)."""
        return tuple(r for r in self.runs if r.guard_stop is not None)

    @property
    def guard_saved(self) -> Decimal:
        """What the guard's stops saved against running every stopped run on."""
        return sum((r.guard_stop.saved for r in self.guard_stops if r.guard_stop), Decimal(0))

    @property
    def currency(self) -> str:
        """The policy's currency."""
        return self.plan.quote.currency

    @property
    def cost_per_qualified(self) -> Decimal | None:
        """All spend ÷ qualified models; ``None`` with none (the whole spend is reported)."""
        return self.cost / self.qualified if self.qualified else None

    @property
    def running(self) -> int:
        """Runs charged up to now (:attr:`RunResult.open`): the totals are provisional."""
        return sum(1 for r in self.runs if r.open)

    def count(self, status: RunStatus) -> int:
        """How many runs have ``status``."""
        return sum(1 for r in self.runs if r.status is status)


class Reconciler:
    """Adds runs one at a time (streaming), then totals them."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._runs: list[RunResult] = []
        self._deleted_open = 0

    def add(self, facts: RunFacts) -> RunResult | None:
        """Price and judge one run and keep its result; ``None``: a run left out, said.

        A run deleted before it ended is left out: MLflow will not end a deleted run, so it
        would be charged up to now for ever (and hold the reconciliation open).
        """
        if facts.deleted_open:
            self._deleted_open += 1
            return None
        result = price_run(facts, self.plan)
        self._runs.append(result)
        return result

    def result(self) -> Reconciliation:
        """The experiment's totals over every run added."""
        plan = self.plan
        runs = by_start(self._runs)
        gpu_hours = sum((r.gpu_hours for r in runs), Decimal(0))
        cost = sum((r.cost for r in runs), Decimal(0))
        qualified = [r for r in runs if r.qualified]
        first = min(qualified, key=_end_key) if qualified else None
        retries = _retries(runs)
        facts = [_run_waste(r) for r in runs]
        retry_runs = sum(len(t.attempts) - 1 for t in retries)
        waste = (
            failed_waste(facts, len(retries), retry_runs),
            plateau_waste(facts, plan.monitor),
            idle_waste(facts),
        )
        variance = _variance(plan, cost, gpu_hours)
        running = sum(1 for r in runs if r.open)
        chart = chart_metric(plan.spec, plan.monitor)
        curve, best_at = _curve(runs, chart)
        used = [r for r in runs if r.utilization is not None]
        used_hours = sum((r.gpu_hours for r in used), Decimal(0))
        weighted = sum((r.gpu_hours * (r.utilization or 0) for r in used), Decimal(0))
        phased = [r.phases for r in runs if r.phases is not None]
        allocated = sum((p.allocated_gpu_hours for p in phased), Decimal(0))
        effective = sum((p.effective_gpu_hours for p in phased), Decimal(0))
        return Reconciliation(
            plan=plan,
            chart=chart,
            runs=tuple(runs),
            gpu_hours=gpu_hours,
            cost=cost,
            qualified=len(qualified),
            first_qualified=first,
            hours_to_first_qualified=_time_to(first, runs),
            # NOTE: 0 ÷ a whole is 0E+26 (printed 0.000E+29 %): a plain 0 instead
            effective_ratio=(effective / allocated if effective else Decimal())
            if allocated
            else None,
            phased_runs=len(phased),
            utilization=weighted / used_hours if used_hours else None,
            utilization_gpu_hours=weighted if used else None,
            utilization_runs=len(used),
            trials=len({r.trial for r in runs}),
            retries=retries,
            waste=waste,
            variance=variance,
            verdict=decide(len(runs), len(qualified), variance, running),
            curve=curve,
            best_at=best_at,
            notes=(*notes(plan, runs), *deleted_open_note(self._deleted_open)),
        )


def reconcile(plan: Plan, runs: Iterable[RunFacts]) -> Reconciliation:
    """Price, judge and total ``runs`` (consumed one at a time)."""
    reconciler = Reconciler(plan)
    for facts in runs:
        reconciler.add(facts)
    return reconciler.result()


def _end_key(run: RunResult) -> tuple[dt.datetime, str]:
    far = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    return (run.end or far, run.run_id)


def _time_to(first: RunResult | None, runs: list[RunResult]) -> Decimal | None:
    """Hours from the first submission (or start, the earlier) to the first qualified end."""
    if first is None or first.end is None:
        return None
    began = min(m for r in runs for m in (r.submitted, r.start) if m is not None)
    return Decimal(int((first.end - began).total_seconds() * 1000)) / MS_PER_HOUR


def _retries(runs: list[RunResult]) -> tuple[TrialRetries, ...]:
    trials: dict[str, list[RunResult]] = {}
    for run in runs:  # in start order already
        trials.setdefault(run.trial, []).append(run)
    retried = []
    for trial, group in trials.items():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=lambda r: r.attempt if r.attempt is not None else 1 << 30)
        attempts = tuple(Attempt(r.run_id, r.attempt, r.status, r.cost) for r in ordered)
        retried.append(TrialRetries(trial, attempts))
    return tuple(retried)


def _run_waste(run: RunResult) -> RunWaste:
    return RunWaste(
        failed=run.status.failed,
        cost=run.cost,
        gpu_hours=run.gpu_hours,
        epochs=run.epochs,
        plateau=run.plateau,
        plateau_cost=run.plateau_cost,
        plateau_gpu_hours=run.plateau_gpu_hours,
        utilization=run.utilization,
        train_cost=_train_cost(run),
    )


def _train_cost(run: RunResult) -> Decimal:
    """The share of a run's cost spent training (all of it when phases were not logged)."""
    if run.phases is None or not run.held_hours:
        return run.cost
    return run.cost * run.phases.training / run.held_hours


def _variance(plan: Plan, cost: Decimal, gpu_hours: Decimal) -> Variance:
    est = plan.estimate
    approval = plan.approval
    usable = approval is not None and approval.currency == plan.quote.currency
    return Variance(
        currency=plan.quote.currency,
        actual=cost,
        actual_gpu_hours=gpu_hours,
        expected=est.expected.cost,
        expected_gpu_hours=est.expected.gpu_hours,
        worst=est.worst.cost,
        worst_gpu_hours=est.worst.gpu_hours,
        tolerance=plan.tolerance,
        approved=approval.worst_cost if usable and approval is not None else None,
        approval_id=approval.record_id if usable and approval is not None else None,
    )


def _curve(
    runs: list[RunResult], chart: ChartMetric
) -> tuple[tuple[CurvePoint, ...], Decimal | None]:
    spent = Decimal(0)
    best: float | None = None
    best_at: Decimal | None = None
    points = []
    for run in sorted(runs, key=_end_key):
        spent += run.cost
        if run.qualified and run.quality is not None and better(run.quality, best, chart.mode):
            best, best_at = run.quality, spent
        points.append(CurvePoint(spent, best))
    return tuple(points), best_at


@dataclass(frozen=True, slots=True)
class OtherVersions:
    """The experiment's runs of other spec versions, which this reconciliation left out.

    ``found`` says whether this version had runs; ``gpu_hours`` is what the others held
    (``None`` when not priced: with no run of this version, their count is what matters).
    """

    experiment: str
    fingerprint: str
    runs: int
    versions: int
    found: bool
    gpu_hours: Decimal | None = None
    untagged: int = 0
    """Runs with no fingerprint tag at all (a job may delete its own): not any version's."""

    @property
    def note(self) -> str:
        """The sentence the reports and stderr say, naming ``--all-versions``."""
        bare = (
            f"{' and' if self.runs else ''} {self.untagged} run(s) with no fingerprint tag"
            if self.untagged
            else ""
        )
        if self.found:
            held = "" if self.gpu_hours is None else f" ({self.gpu_hours:.2f} GPU-h)"
            tagged = (
                f" {self.runs} run(s) tagged with {self.versions} other fingerprint(s)"
                if self.runs
                else ""
            )
            them = "those tagged" if self.untagged else "them"
            return (
                f"MLflow experiment {self.experiment} also holds{tagged}{bare}{held}, not "
                f"counted here — pass --all-versions to reconcile {them}"
            )
        also = (
            f"{self.runs} run(s) of {self.versions} other version(s) are there — pass "
            "--all-versions to reconcile them"
            if self.runs
            else "no runs of other versions either"
        ) + (f";{bare} (not counted)" if bare else "")
        return (
            f"no runs of this version ({short(self.fingerprint)}) in MLflow experiment "
            f"{self.experiment}; {also}"
        )


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """A reconciliation with what the reporters say around it (where the runs came from).

    ``record_id`` is the ledger record written, or ``not_recorded`` says why none was;
    ``repository`` identifies the pull-request comment (``$GITHUB_REPOSITORY``);
    ``other_versions`` the runs of other spec versions left out (``None``: none, or
    ``--all-versions``).
    """

    file: str
    name: str
    policy: str
    experiment: str
    where: str
    result: Reconciliation
    version: str
    all_versions: bool = False
    record_id: str | None = None
    not_recorded: str | None = None
    repository: str = ""
    other_versions: OtherVersions | None = None

    @property
    def notes(self) -> tuple[str, ...]:
        """The reconciliation's notes, then what the experiment holds of other versions."""
        others = self.other_versions
        return (*self.result.notes, *([others.note] if others is not None else []))
