"""The window's runs, priced and judged per spec version and month, as reconcile does (pure).

Each run is priced by the plan of its spec version (:func:`gate.reconcile.actuals.price_run`
through a :class:`gate.reconcile.reconciler.Reconciler`), so cost, qualified models,
waste and guard stops are reconcile's own figures. A run counts, whole, in the month it
*started* (UTC): a run is not split at a month's end, so an experiment's cost per
qualified model stays whole, and a run still running is charged up to the report's clock.
Runs are grouped by (month, spec path, fingerprint); the plan is looked up once per spec
version, by the command, and a version without one (no spec found at its fingerprint, a
spec that no longer evaluates) is counted with the reason, never priced in silence. So is
a run logged outside its spec's MLflow experiment (its tags are its writer's claim: a job
must not charge its hours to another team's spec, as ``reconcile`` would never read it
there), and one whose end is before its start (what it held is not known).

Post-plateau waste is priced on the history of the metric the *plan* monitors (the spec
version's ``stopping.early_stopping.monitor``), as ``reconcile`` prices it. The command
reads each run's history by its ``budget_gate.monitor`` tag first (the tag is only the
job's claim, a guess at what to fetch); a run whose tag is missing or names another
metric is not priced on that history but held in :attr:`MonthRuns.refetch`, and the
command reads it again by the plan's metric.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from gate.ledger import tracking
from gate.policy.findings import Finding
from gate.policy.model import Severity
from gate.reconcile.actuals import MS_PER_HOUR, Plan, RunFacts, RunResult, moment
from gate.reconcile.notes import QUICK_NOTE, deleted_note, too_quick
from gate.reconcile.reconciler import Reconciler, Reconciliation
from gate.report.commitments import NO_TEAM
from gate.report.period import Month, Period
from gate.words import counted


@dataclass(frozen=True, slots=True)
class Priced:
    """A spec version's plan, and whose it is: team, model label, spec, experiment.

    ``needs_approval`` says whether the policy's triggers ask for an approval of it
    (``None`` where that is not known); ``provider`` is whose prices it was charged at.
    """

    plan: Plan
    team: str
    model: str
    spec: str
    experiment: str
    needs_approval: bool | None = None
    provider: str = ""
    tracked_in: str = ""
    """The MLflow experiment its runs are logged in (``tracking.mlflow_experiment``)."""

    @property
    def currency(self) -> str:
        """The currency of the plan's price."""
        return self.plan.quote.currency


def asks_approval(findings: Iterable[Finding]) -> bool:
    """Whether the policy's triggers ask for an approval: a finding of severity ``approval``.

    Not the outcome: a spec that also breaks a hard limit fails, and its outcome would hide
    that it is over the triggers too. A waived finding asks for nothing; one an approval
    satisfied still says the spec is over them.
    """
    return any(f.severity is Severity.APPROVAL and f.waived_by is None for f in findings)


PlanFor = Callable[[RunFacts], "Priced | str"]
"""The plan of a run's spec version, or why there is none."""
ELSEWHERE = "logged outside their spec's MLflow experiment (tracking.mlflow_experiment)"
BACKWARDS = "their end is before their start, so what they held is not known"
DELETED_OPEN = (
    "they were deleted in MLflow before they ended (MLflow ends no deleted run), so what "
    "they held is not known (counted as 0 GPU-h)"
)
UNREAD_RECORD = (
    "they lie in the ledger's experiment with a record's kind tag, but the ledger did not "
    "read them as records (unsigned, malformed or cut short: see its count on stderr)"
)
UNTAGGED = (
    f"they carry no {tracking.FINGERPRINT} tag (a sweep's parent run, or a job deleted it), "
    "in an MLflow experiment a spec version logs to (listed under its team, at its GPUs per "
    "trial: an upper bound)"
)


@dataclass(frozen=True, slots=True)
class RunLine:
    """One priced run, with the accelerator and capacity it was charged as (FOCUS' SKU, spot).

    Those of its tags where they priced it, else the spec's: a job that tags its run spot
    is charged, and shown, at the spec's on-demand price.
    """

    result: RunResult
    month: Month
    priced: Priced
    accelerator: str
    capacity: str


@dataclass
class ExperimentMonth:
    """One spec version's runs that started in one month, and their reconciliation."""

    month: Month
    priced: Priced
    fingerprint: str
    reconciler: Reconciler
    lines: list[RunLine] = field(default_factory=list)
    _result: Reconciliation | None = None

    @property
    def result(self) -> Reconciliation:
        """Reconcile's totals over the runs (computed once, after the last run)."""
        if self._result is None:
            self._result = self.reconciler.result()
        return self._result


@dataclass(frozen=True, slots=True)
class Unpriced:
    """Runs left unpriced for one reason, with their GPU-hours as held."""

    reason: str
    runs: int
    gpu_hours: Decimal
    teams: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Held:
    """One unpriced run: why, where it lies, the hours it held, its tags' GPUs and team."""

    reason: str
    month: Month
    experiment_id: str
    hours: Decimal
    gpus: int
    team: str
    priced: Priced | None


class MonthRuns:
    """Adds the window's runs one at a time (streaming), grouped by month and spec version."""

    def __init__(
        self,
        plan_for: PlanFor,
        period: Period,
        experiments: Mapping[str, str] | None = None,
        launched: Iterable[Priced] = (),
    ) -> None:
        """Runs are added to groups by spec version; ``experiments`` names ids to names.

        A run counts for its spec only in the experiment the spec tracks; ``None``: the runs
        were not read from a store, and say nothing of where they were logged.
        ``launched`` are the versions the ledger approved or launched in the window
        (:meth:`tracked`).
        """
        self.period = period
        self._experiments = experiments
        self._launched = tuple(launched)
        self._window = frozenset(period.window)
        self._plan_for = plan_for
        self._plans: dict[tuple[str, str], Priced | str] = {}
        self._groups: dict[tuple[Month, str, str], ExperimentMonth] = {}
        self._unpriced: list[_Held] = []
        self.outside = 0
        self.refetch: dict[tuple[str, str, str], set[str]] = {}
        """Run ids to read again, by (experiment id, fingerprint, the plan's metric)."""
        self._counted: set[str] = set()
        """Run ids already priced or held: the report's searches each count a run once."""

    def add(self, facts: RunFacts, history_of: str | None = None) -> None:
        """Price one run under its spec version's plan, or count why it cannot be.

        ``history_of`` names the metric ``facts.history`` holds (``None``: the plan's, or
        none was read: a trend month's run, whose waste is not reported). A
        run whose history is of another metric is left for :attr:`refetch`, unpriced here.
        A run counted already (found again by a later search: a job changed its tags between
        them) is not counted twice.
        """
        if facts.run_id in self._counted:
            return
        month = self._month_of(facts)
        if month is None or facts.start_ms is None:  # the second: None has no month either
            return
        fingerprint = facts.tags.get(tracking.FINGERPRINT, "")
        version = (facts.tags.get(tracking.SPEC, ""), fingerprint)
        priced = self._plans.get(version)
        if priced is None:
            priced = self._plans[version] = self._plan_for(facts)
        if isinstance(priced, str):
            self._count_unpriced(priced, facts)
            return
        if self._elsewhere(facts, priced):
            self._count_unpriced(ELSEWHERE, facts, priced)
            return
        if facts.end_ms is not None and facts.end_ms < facts.start_ms:
            self._count_unpriced(BACKWARDS, facts, priced)
            return
        if facts.deleted_open:
            self._count_unpriced(DELETED_OPEN, facts, priced)
            return
        metric = priced.plan.monitor.metric
        if history_of is not None and history_of != metric:
            wanted = (facts.experiment_id, fingerprint, metric)
            self.refetch.setdefault(wanted, set()).add(facts.run_id)
            return
        # NOTE: one experiment is one spec version in its MLflow experiment, however its runs
        # spell the path (``./experiments/a.yaml``, absolute, a namesake): split by the
        # tag's text, a 2x overrun scored as two experiments that each held the worst case.
        key = (month, priced.tracked_in, fingerprint)
        group = self._groups.get(key)
        if group is None:
            group = ExperimentMonth(month, priced, fingerprint, Reconciler(priced.plan))
            self._groups[key] = group
        result = group.reconciler.add(facts)
        assert result is not None  # NOTE: a run the reconciler leaves out is counted above
        self._counted.add(facts.run_id)
        group.lines.append(RunLine(result, month, priced, *result.charged_as))

    def tracked(self) -> dict[str, Priced]:
        """The MLflow experiments the window's spec versions log to, each with a version's plan.

        The versions of the window's runs, then those the ledger approved or launched in it
        (a job that untagged every run of its spec leaves no run to name it). Where runs lost
        their fingerprint tag, :meth:`add_untagged` counts them; a run with no plan of its
        own is listed under the team of the experiment it lies in.
        """
        found: dict[str, Priced] = {}
        versions = [self._groups[key].priced for key in sorted(self._groups)]
        for priced in (*versions, *self._launched):
            found.setdefault(priced.tracked_in, priced)
        return found

    def add_untagged(self, facts: RunFacts, priced: Priced) -> None:
        """Count a run of ``priced``'s experiment that carries no fingerprint tag, unpriced."""
        if facts.run_id not in self._counted and self._month_of(facts) is not None:
            reason = DELETED_OPEN if facts.deleted_open else UNTAGGED
            self._count_unpriced(reason, facts, priced)

    def add_unread_record(self, facts: RunFacts) -> None:
        """Count a run in the ledger's experiment like a record, that the ledger did not read.

        Listed with the hours it held: never a record, and never priced.
        """
        if facts.run_id not in self._counted and self._month_of(facts) is not None:
            self._count_unpriced(UNREAD_RECORD, facts)

    def _month_of(self, facts: RunFacts) -> Month | None:
        """The month the run started in, if in the window; else counted as outside it."""
        month = None if facts.start_ms is None else Month.of(moment(facts.start_ms))
        if month not in self._window:
            self.outside += 1
            return None
        return month

    def _elsewhere(self, facts: RunFacts, priced: Priced) -> bool:
        if self._experiments is None:
            return False
        return self._experiments.get(facts.experiment_id) != priced.tracked_in

    def _count_unpriced(self, reason: str, facts: RunFacts, priced: Priced | None = None) -> None:
        """Keep a run left unpriced, with its spec version's plan where it has one."""
        held = (
            max(Decimal(facts.end_ms - facts.start_ms) / MS_PER_HOUR, Decimal(0))
            if facts.end_ms is not None and facts.start_ms is not None
            else Decimal(0)
        )
        gpus = tracking.tag_count(facts.tags.get(tracking.GPUS, "")) or 0
        team = facts.tags.get(tracking.TEAM) or NO_TEAM
        assert facts.start_ms is not None  # NOTE: a run outside the window is not counted
        month = Month.of(moment(facts.start_ms))
        self._counted.add(facts.run_id)
        self._unpriced.append(_Held(reason, month, facts.experiment_id, held, gpus, team, priced))

    @property
    def experiments(self) -> list[ExperimentMonth]:
        """Every (month, spec version) group, in month then spec order."""
        return [self._groups[key] for key in sorted(self._groups)]

    @property
    def unpriced(self) -> list[Unpriced]:
        """The period's runs left unpriced, by reason, every team's."""
        return self.unpriced_of(None)

    def unpriced_of(self, team: str | None) -> list[Unpriced]:
        """The period's runs left unpriced (``team``'s only, if named), by reason.

        Each under the team and GPUs of a plan where known: a run's own plan first, else
        that of the experiment it lies in (:meth:`tracked`), its GPUs no fewer than its tag
        says: the tags are the job's claim, and a job that made up its run's fingerprint and
        dropped its team and GPU tags listed its hours as none, under no team. The trend
        months' runs are left out: only their cost per qualified model is shown.
        """
        names = self._experiments or {}
        tracked = self.tracked()
        months = set(self.period.months)
        runs: Counter[str] = Counter()
        hours: dict[str, Decimal] = {}
        teams: dict[str, set[str]] = {}
        for held in self._unpriced:
            plan = held.priced or tracked.get(names.get(held.experiment_id, ""))
            owner = held.team if plan is None else plan.team
            if held.month not in months or team not in (None, owner):
                continue
            gpus = (
                held.gpus
                if plan is None
                else max(held.gpus, plan.plan.spec.resources.gpus_per_trial)
            )
            runs[held.reason] += 1
            hours[held.reason] = hours.get(held.reason, Decimal(0)) + held.hours * gpus
            teams.setdefault(held.reason, set()).add(owner)
        return [
            Unpriced(reason, count, hours[reason], tuple(sorted(teams[reason])))
            for reason, count in sorted(runs.items())
        ]


def run_notes(current: Iterable[ExperimentMonth], now: dt.datetime) -> list[str]:
    """What the period's runs took on their jobs' word: GPUs above the spec, open ends.

    And the runs deleted in MLflow, counted all the same; qualified runs that ended before one
    epoch could have run.
    """
    groups = list(current)
    notes = []
    above = sum(
        1
        for g in groups
        for r in g.result.runs
        if r.gpus > g.priced.plan.spec.resources.gpus_per_trial
    )
    if above:
        notes.append(
            f"{counted(above, 'run')} charged for more GPUs than their spec's gpus_per_trial, "
            f"on their {tracking.GPUS} tag's word (reconcile lists them)"
        )
    invalid = sum(1 for g in groups for r in g.result.runs if r.gpus_tag_invalid)
    if invalid:
        notes.append(
            f"{counted(invalid, 'run')} with an invalid {tracking.GPUS} tag (not a whole "
            "number): charged at their spec's gpus_per_trial (reconcile lists them)"
        )
    if (deleted := deleted_note([r for g in groups for r in g.result.runs])) is not None:
        notes.append(deleted)
    quick = sum(too_quick(g.priced.plan, g.result.runs) for g in groups)
    if quick:
        notes.append(
            f"{counted(quick, 'qualified run')} ended sooner than one epoch at their spec "
            f"version's priced epoch time: {QUICK_NOTE} (reconcile lists them)"
        )
    running = sum(g.result.running for g in groups)
    if running:
        notes.append(
            f"{counted(running, 'run')} still running (or dated by the job to end after "
            f"now): charged up to {now:%Y-%m-%d %H:%M} UTC, so the figures are provisional"
        )
    return notes
