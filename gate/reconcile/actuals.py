"""What one MLflow run actually cost and achieved (pure).

Input is :class:`RunFacts`: plain values read from MLflow by
:mod:`gate.integrations.mlflow.runs` (status, start and end, tags, params, the latest value
of each metric, the monitored metric's history, GPU utilization samples). :func:`price_run`
turns them into a small :class:`RunResult`, following the run conventions of
:mod:`gate.ledger.tracking` (DOMAIN.md §2):

- a run holds ``gpus × (end − start)`` GPU-hours (a RUNNING run up to ``now``, flagged; a
  SCHEDULED one nothing yet) and costs that × the price of the spec's quote, the same one
  the estimate used (hours and price cut to 12 and 8 decimals, so sums of costs are exact);
- logged phase seconds split the held time into setup, training and evaluation, and what
  they leave out is the idle tail (:mod:`gate.reconcile.phases`);
- only a FINISHED run that passes the quality gate is a qualified model.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum

from gate.estimate.accounting import Phases, run_cost
from gate.estimate.model import Estimate
from gate.estimate.prices import Quote
from gate.ledger import tracking
from gate.ledger.records import LedgerRecord
from gate.money import at_most
from gate.reconcile.phases import logged_phases
from gate.reconcile.quality import ChartMetric, Monitor, chart_metric, evaluate_gate, plateau_epoch
from gate.reconcile.stops import GuardStop, guard_stop
from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity

MS_PER_HOUR = Decimal(3_600_000)
HOUR_PLACES = 12
"""A run's GPU-hours are kept to twelve decimals (its times are milliseconds, 2.8e-7 hours)
and a price per GPU-hour to eight (a currency's exchange rate can give it 28): a cost, GPU-hours
× price, is then exact, and so is every sum of costs up to 10^8 (a team's month, a FOCUS
file's rows), in any order."""
PRICE_PLACES = 8


class RunStatus(str, Enum):
    """MLflow's run statuses."""

    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"
    RUNNING = "RUNNING"
    SCHEDULED = "SCHEDULED"

    @property
    def failed(self) -> bool:
        """Failed or killed: its whole cost is waste."""
        return self in (RunStatus.FAILED, RunStatus.KILLED)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """One MLflow run as read: no interpretation yet.

    ``metrics`` holds the latest value of every metric; ``history`` the monitored metric,
    one value per step in step order; ``utilization`` the GPU utilization samples (percent)
    by system-metric key.
    """

    run_id: str
    status: str
    start_ms: int | None
    end_ms: int | None
    name: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    history: tuple[float, ...] = ()
    utilization: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    experiment_id: str = ""
    """The MLflow experiment the run is logged in ("": not known)."""
    deleted: bool = False
    """Deleted in MLflow, or in a deleted experiment: its GPU time was spent all the same."""

    @property
    def deleted_open(self) -> bool:
        """Deleted before it ended: MLflow ends no deleted run, so what it held is not known."""
        return self.deleted and self.end_ms is None


Requote = Callable[[str, Capacity], "Quote | None"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What runs are judged against: the spec, its price, estimate and approval, the clock.

    ``requote`` prices a run tagged with another accelerator or capacity (runs of an older
    version of the spec); ``None`` from it means "charge at the spec's price, with a note".
    """

    spec: Experiment
    fingerprint: str
    quote: Quote
    estimate: Estimate
    monitor: Monitor
    now: dt.datetime
    tolerance: Decimal = Decimal("0.1")
    approval: LedgerRecord | None = None
    requote: Requote | None = None
    on_demand: Quote | None = None
    """A spot spec's on-demand price on its spot price's own cloud (the report's saving)."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run, priced and judged; ``end`` is ``None`` while it runs (charged up to now)."""

    run_id: str
    name: str
    trial: str
    attempt: int | None
    status: RunStatus
    start: dt.datetime | None
    end: dt.datetime | None
    gpus: Decimal
    held_hours: Decimal
    gpu_hours: Decimal
    cost: Decimal
    qualified: bool
    charged_as: tuple[str, str]
    """The accelerator and capacity whose price it was charged at: its tags where they
    priced it, else the spec's (a tag may only raise a run's charge)."""
    gate_failures: tuple[str, ...] = ()
    phases: Phases | None = None
    epochs: int | None = None
    plateau: int | None = None
    plateau_gpu_hours: Decimal = Decimal(0)
    plateau_cost: Decimal = Decimal(0)
    utilization: Decimal | None = None
    quality: float | None = None
    submitted: dt.datetime | None = None
    fingerprint: str = ""
    deleted: bool = False
    """Deleted in MLflow (or its experiment): counted, since its GPU time was spent."""
    gpus_tag_invalid: bool = False
    """Its ``budget_gate.gpus`` tag is no whole number: charged at its spec's GPUs."""

    @property
    def open(self) -> bool:
        """Charged up to now: still running, or dated by its writer to end after now."""
        return (
            self.end is None and self.start is not None and self.status is not RunStatus.SCHEDULED
        )

    notes: tuple[str, ...] = ()
    guard_stop: GuardStop | None = None
    price: Decimal = Decimal(0)
    """The price per GPU-hour the run was charged at."""

    @property
    def epochs_after_plateau(self) -> int:
        """Epochs trained after the last improvement (0 when unknown)."""
        if self.epochs is None or self.plateau is None:
            return 0
        return self.epochs - self.plateau

    @property
    def idle_cost(self) -> Decimal | None:
        """Price × hours × (1 − utilization): an upper bound on utilization waste."""
        if self.utilization is None:
            return None
        return self.cost * (1 - self.utilization)


def price_run(facts: RunFacts, plan: Plan) -> RunResult:
    """Price and judge one run under ``plan``."""
    notes: list[str] = []
    status = _status(facts.status, notes)
    start, end, held = _held(facts, status, plan.now, notes)
    count, gpus_tag_invalid = _gpus(facts, plan, notes)
    gpus = count * plan.spec.resources.gpu_share
    price, charged_as = _price(facts, plan, notes)
    price = at_most(price, PRICE_PLACES)
    phases = logged_phases(facts.metrics, facts.params, gpus, held, notes)
    gpu_hours = at_most(gpus * held, HOUR_PLACES)
    cost = run_cost(gpu_hours, price)
    gate = evaluate_gate(plan.spec.quality_gate, facts.metrics)
    qualified = status is RunStatus.FINISHED and gate.passed and held > 0  # no model for nothing
    epochs = len(facts.history) or None
    train = phases.training if phases is not None else held
    epoch_gpu_hours = float(gpus * train / epochs) if epochs else 0.0
    plateau = plateau_epoch(
        facts.history, plan.monitor, epoch_gpu_hours, epoch_gpu_hours * float(price)
    )
    after = (epochs - plateau) if epochs and plateau else 0
    plateau_hours = train * after / epochs if epochs and not status.failed else Decimal(0)
    plateau_gpu_hours = at_most(gpus * plateau_hours, HOUR_PLACES)
    return RunResult(
        run_id=facts.run_id,
        name=facts.name,
        trial=facts.tags.get(tracking.TRIAL_ID) or facts.run_id,
        attempt=_attempt(facts.tags.get(tracking.ATTEMPT)),
        status=status,
        start=start,
        end=end,
        gpus=gpus,
        held_hours=held,
        gpu_hours=gpu_hours,
        cost=cost,
        qualified=qualified,
        charged_as=charged_as,
        gate_failures=gate.failures,
        phases=phases,
        epochs=epochs,
        plateau=plateau,
        plateau_gpu_hours=plateau_gpu_hours,
        plateau_cost=run_cost(plateau_gpu_hours, price),
        utilization=_utilization(facts.utilization),
        quality=_quality(facts, chart_metric(plan.spec, plan.monitor), status),
        submitted=_submitted(facts.tags.get(tracking.SUBMITTED_AT), start, notes),
        fingerprint=facts.tags.get(tracking.FINGERPRINT, ""),
        deleted=facts.deleted,
        gpus_tag_invalid=gpus_tag_invalid,
        notes=tuple(notes),
        guard_stop=guard_stop(
            facts.tags, epochs, plan.spec.workload.max_epochs, run_cost(gpus * train, price)
        ),
        price=price,
    )


def _status(text: str, notes: list[str]) -> RunStatus:
    try:
        return RunStatus(text)
    except ValueError:
        notes.append(f"unknown MLflow status {text!r}: counted as failed")
        return RunStatus.FAILED


CLOCK_SLACK_MS = 10 * 60 * 1000
"""How far a run's end may lie past this machine's now (clocks differ) and still be its end."""
LAST_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z in epoch milliseconds: the last moment a datetime holds."""


def moment(ms: int) -> dt.datetime:
    """An MLflow time (epoch ms) in UTC; one past a datetime's range is pinned to its edge.

    NOTE: a run's times are its writer's (``end_time=10**17``): one of them must not stop
    every report and calibration of the tracking server.
    """
    return dt.datetime.fromtimestamp(min(max(ms, 0), LAST_MS) / 1000, dt.timezone.utc)


def _held(
    facts: RunFacts, status: RunStatus, now: dt.datetime, notes: list[str]
) -> tuple[dt.datetime | None, dt.datetime | None, Decimal]:
    """Start, end (``None`` while running) and hours held."""
    if facts.start_ms is None or status is RunStatus.SCHEDULED:
        notes.append("scheduled, not started: nothing charged yet")
        return None, None, Decimal(0)
    start = moment(facts.start_ms)
    now_ms = int(now.timestamp() * 1000)
    future = facts.end_ms is not None and facts.end_ms > now_ms + CLOCK_SLACK_MS
    if status is RunStatus.RUNNING or facts.end_ms is None or future:
        notes.append(
            "still running: charged up to now"
            if status is RunStatus.RUNNING
            else f"{status.value} without an end time before now: charged up to now"
        )
        stop_ms = now_ms
        end = None
    else:
        stop_ms, end = facts.end_ms, moment(facts.end_ms)
    if stop_ms < facts.start_ms:
        notes.append("ends before it starts: nothing charged")
        return start, end, Decimal(0)
    return start, end, Decimal(stop_ms - facts.start_ms) / MS_PER_HOUR


def _gpus(facts: RunFacts, plan: Plan, notes: list[str]) -> tuple[Decimal, bool]:
    """The GPUs a run held (its tag's, never fewer than its spec's), and if its tag was no count.

    NOTE: the tag is the job's claim (``budget_gate.gpus: "1"`` on an 8-GPU trial would be
    charged an eighth); the spec version pins what its trials hold.
    """
    text = facts.tags.get(tracking.GPUS)
    count = tracking.tag_count(text)
    planned = plan.spec.resources.gpus_per_trial
    if count and count < planned:
        notes.append(
            f"{tracking.GPUS} tag says {count}, below the spec's {planned}: {planned} charged"
        )
        return Decimal(planned), False
    if count:
        if count > planned:  # NOTE: charged on the job's word, which may be a typo: said
            notes.append(
                f"{tracking.GPUS} tag says {count}, above the spec's {planned}: {count} charged"
            )
        return Decimal(count), False
    why = "no" if text is None else f"an invalid ({text!r})"
    notes.append(f"{why} {tracking.GPUS} tag: {planned} GPUs assumed from the spec")
    return Decimal(planned), text is not None


def _price(facts: RunFacts, plan: Plan, notes: list[str]) -> tuple[Decimal, tuple[str, str]]:
    """The price per GPU-hour the run is charged at, and whose price it is."""
    quote = plan.quote
    spec_price = quote.per_gpu_hour, (quote.accelerator, quote.capacity.value)
    accelerator = facts.tags.get(tracking.ACCELERATOR, quote.accelerator)
    capacity_text = facts.tags.get(tracking.CAPACITY, quote.capacity.value)
    if accelerator == quote.accelerator and capacity_text == quote.capacity.value:
        return spec_price
    other: Quote | None = None
    try:
        capacity = Capacity(capacity_text)
    except ValueError:
        capacity = None
    if capacity is not None and plan.requote is not None:
        other = plan.requote(accelerator, capacity)
    if other is None:
        notes.append(
            f"ran on {accelerator} {capacity_text}, which has no price: charged at the spec's "
            f"{quote.accelerator} {quote.capacity.value} price"
        )
        return spec_price
    if other.per_gpu_hour < quote.per_gpu_hour:  # NOTE: the tags are the job's claim
        notes.append(
            f"tagged as run on {accelerator} {capacity_text}, cheaper than the spec's "
            f"{quote.accelerator} {quote.capacity.value}: charged at the spec's price"
        )
        return spec_price
    notes.append(f"ran on {accelerator} {capacity_text}: charged at its own price")
    return other.per_gpu_hour, (accelerator, capacity_text)


def _attempt(text: str | None) -> int | None:
    return tracking.tag_count(text)


def _utilization(samples: Mapping[str, tuple[float, ...]]) -> Decimal | None:
    """Mean over GPUs of each GPU's mean utilization over the run, as a fraction.

    Each sample is a percent, so it is clamped to 0–100 first: a broken sampler's 1e308
    would overflow the sum (MLflow stores infinity so).
    """
    means = [
        math.fsum(finite) / len(finite)
        for values in samples.values()
        if (finite := [min(max(v, 0.0), 100.0) for v in values if math.isfinite(v)])
    ]
    if not means:
        return None
    mean = Decimal(repr(math.fsum(means) / len(means))) / 100
    return min(max(mean, Decimal(0)), Decimal(1))


def _quality(facts: RunFacts, chart: ChartMetric, status: RunStatus) -> float | None:
    """The run's final value of the chart metric; failed runs produced no model."""
    value = facts.metrics.get(chart.metric)
    if value is None or status.failed or math.isnan(value):
        return None
    return value


def _submitted(text: str | None, start: dt.datetime | None, notes: list[str]) -> dt.datetime | None:
    """When the trial was queued; never after the run's start (a skewed clock, a job's tag)."""
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        notes.append(f"{tracking.SUBMITTED_AT} {text!r} is not an ISO time with a zone: ignored")
        return None
    if start is not None and moment > start:
        notes.append(f"{tracking.SUBMITTED_AT} {text} is after the run's start: the start is used")
        return start
    return moment


def by_start(runs: Iterable[RunResult]) -> list[RunResult]:
    """Runs in the order they started (not started last), then by id."""
    far = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    return sorted(runs, key=lambda r: (r.start or far, r.run_id))
