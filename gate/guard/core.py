"""The runtime guard: reports in, continue / stop trial / stop search out (pure, stateful).

Spend is GPU-seconds held × the spec's price, summed over every attempt of every trial.
Each attempt reports its cumulative GPU-seconds, and the guard keeps the largest value per
attempt: a report delivered twice, or a trial paused and resumed (which keeps counting
from where it was), is counted once, and each retry is charged as an attempt of its own.
The checks, in order:

1. the experiment's spend reaches the ceiling (the approved amount, else the worst-case
   estimate): stop the search; the decision sticks;
2. the trial (all its attempts) reaches ``max_trial_hours`` or ``max_trial_cost``: stop it;
3. the monitored metric gains no more over the last patience window than the accepted
   return (:func:`gate.estimate.returns.pays`): stop the trial at plateau + patience;
4. on a trial's end, ``max_failed_in_a_row`` or ``max_failed_trials`` failures: stop the
   search.

The ceiling can be refreshed from the ledger (a new approval raises it; a revocation stops
the search), at most once every ``refresh_seconds`` of the injected clock.
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from numbers import Integral, Real

from gate.estimate.returns import gain, pays
from gate.guard.limits import Ceiling, GuardLimits
from gate.guard.model import Action, Decision, Report, StopKind, seconds_held
from gate.guard.names import TrialNames

REFRESH_SECONDS = 60.0

log = logging.getLogger(__name__)

Refresh = Callable[[], "Ceiling | str | None"]
"""Reads the current ceiling from the ledger; else why no approval holds (``None``: revoked)."""


@dataclass(slots=True)
class _Curve:
    """One trial's monitored metric: epochs reported, best so far, GPU-seconds at each."""

    epochs: list[int] = field(default_factory=list)
    best: list[float] = field(default_factory=list)
    held: list[float] = field(default_factory=list)

    def add(self, epoch: int, value: float, held: float, mode: str) -> None:
        if self.epochs and epoch <= self.epochs[-1]:  # resumed from an earlier checkpoint
            cut = bisect.bisect_left(self.epochs, epoch)
            del self.epochs[cut:], self.best[cut:], self.held[cut:]
        best = self.best[-1] if self.best else math.nan
        if not math.isnan(value) and (
            math.isnan(best) or (value < best if mode == "min" else value > best)
        ):
            best = value
        self.epochs.append(epoch)
        self.best.append(best)
        self.held.append(held)


class Guard:
    """Decides, per report, whether a trial or the search goes on."""

    def __init__(
        self,
        limits: GuardLimits,
        *,
        clock: Callable[[], float],
        refresh: Refresh | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        launch_key: str | None = None,
    ) -> None:
        self.limits = limits
        self.launch_key = launch_key
        """The launch whose workers share the ceiling (their Optuna studies are read too)."""
        self._clock = clock
        self._refresh = refresh
        self._refresh_seconds = refresh_seconds
        self._refreshed = clock()
        self._set_ceiling(limits.ceiling)
        self._attempts: dict[tuple[str, int], float] = {}
        self._trials: dict[str, float] = {}
        self._total = 0.0
        self._curves: dict[str, _Curve] = {}
        self._gpus: dict[str, float] = {}
        self._ended: dict[tuple[str, int], bool] = {}
        self._taken: set[tuple[str, int]] = set()
        self._in_a_row = 0
        self._failed = 0
        self._stopped: Decision | None = None
        self._said_unmonitored = False
        self.names = TrialNames()
        """Which adapter's trial each name is: a name counts one trial's spend."""

    def _set_ceiling(self, ceiling: Ceiling) -> None:
        self.ceiling = ceiling
        price = self.limits.price_per_gpu_hour
        self._ceiling_seconds = float(ceiling.amount / price * 3600) if price else math.inf

    @property
    def spend(self) -> Decimal:
        """What every attempt reported so far has cost."""
        return self.limits.cost(self._total)

    @property
    def gpu_seconds(self) -> float:
        """GPU-seconds held by every attempt reported so far."""
        return self._total

    def trial_cost(self, trial: str) -> Decimal:
        """What ``trial`` (all its attempts) has cost so far."""
        return self.limits.cost(self._trials.get(trial, 0.0))

    def new_attempt(self, trial: str) -> int:
        """An attempt number of ``trial`` no other attempt has had (0 for a new trial).

        The number is taken at once: two attempts opened before either reports (a retry
        beside a straggler) get two numbers, so neither hides the other's spend.
        """
        known = [a for t, a in (*self._attempts, *self._ended, *self._taken) if t == trial]
        attempt = max(known) + 1 if known else 0
        self._taken.add((trial, attempt))
        return attempt

    def take_attempt(self, trial: str, attempt: int) -> int:
        """Hold an attempt number given by the caller, so :meth:`new_attempt` skips it.

        NOTE: one opened before is refused (``ValueError``): keeping the larger total per
        attempt, a second under it hid its spend (a resumed loop trained 64 USD, showed 32).
        """
        key = (trial, attempt)
        if key in self._taken or key in self._attempts or key in self._ended:
            free = self.new_attempt(trial)
            self._taken.discard((trial, free))
            raise ValueError(
                f"budget-gate guard: attempt {attempt} of trial {trial} was opened before; "
                f"a new attempt is {free} (leave attempt out to number it), or continue the "
                "first with pause() and resume()"
            )
        self._taken.add(key)
        return attempt

    def hold(self, trial: str, gpus: float) -> None:
        """Set the GPUs ``trial`` holds, as its engine allotted them (its hours are per GPU).

        NOTE: an engine may give a trial more GPUs than the spec's ``gpus_per_trial``; its
        reports then carry more GPU-seconds, which are not more hours.
        """
        self._gpus[trial] = gpus

    def retire(self, trial: str, attempt: int) -> None:
        """End an attempt that will be retried, counting no failure.

        A lost node or a spot preemption: the trial's later reports are a new attempt's.
        """
        self._ended.setdefault((trial, attempt), False)

    def has_ended(self, trial: str, attempt: int) -> bool:
        """Whether that attempt's end was counted (a later report is a new attempt's)."""
        return (trial, attempt) in self._ended

    def record(self, trial: str, gpu_seconds: float, attempt: int = 0) -> None:
        """Count an attempt's cumulative GPU-seconds (the largest value reported wins).

        Raises:
            ValueError: ``gpu_seconds`` is NaN, infinite or negative: a broken timer, which
                counted as nothing would let the trial spend without limit.
        """
        gpu_seconds = seconds_held(gpu_seconds, trial, "GPU-seconds")
        key = (trial, attempt)
        before = self._attempts.get(key, 0.0)
        if gpu_seconds > before:
            self._attempts[key] = gpu_seconds
            self._trials[trial] = self._trials.get(trial, 0.0) + gpu_seconds - before
            self._total += gpu_seconds - before

    def observe(self, report: Report) -> Decision:
        """Count the report and decide for its trial (and the search)."""
        self.record(report.trial, report.gpu_seconds, report.attempt)
        search = self.check()
        if search.stop:
            return self._with_trial(search, report)
        capped = self._caps(report)  # NOTE: before the metric: a bad one skips no red line
        if capped is not None:
            return capped
        value = self._monitored(report)  # after the spend: a bad report still counts, stops
        flat = self._plateau(report, value)
        if flat is not None:
            return flat
        return self._decide(Action.CONTINUE, report)

    def check(self) -> Decision:
        """The search-level decision alone: the ceiling (refreshed when due) and failures."""
        if self._stopped is not None:
            return self._stopped
        self._maybe_refresh()
        if self._stopped is not None:
            return self._stopped
        if self._total >= self._ceiling_seconds:
            self._stopped = self._decide(
                Action.STOP_SEARCH,
                kind=StopKind.BUDGET,
                reason=f"spend {self.limits.money(self.spend)} reaches the "
                f"{self.ceiling.source} {self.limits.money(self.ceiling.amount)}",
            )
            return self._stopped
        return self._decide(Action.CONTINUE)

    def end(self, trial: str, *, failed: bool, attempt: int = 0) -> Decision:
        """Count an attempt's end (once); too many failures stop the search."""
        key = (trial, attempt)
        if key not in self._ended:
            self._ended[key] = failed
            self._failed += failed
            self._in_a_row = self._in_a_row + 1 if failed else 0
        limits = self.limits
        if self._stopped is None:
            row, total = limits.max_failed_in_a_row, limits.max_failed_trials
            why = None
            if row is not None and self._in_a_row >= row:
                why = f"{self._in_a_row} failed trials in a row (policy: at most {row})"
            elif total is not None and self._failed >= total:
                why = f"{self._failed} failed trials in all (policy: at most {total})"
            if why is not None:
                self._stopped = self._decide(Action.STOP_SEARCH, kind=StopKind.FAILURES, reason=why)
        return self.check()

    def _maybe_refresh(self) -> None:
        if self._refresh is None:
            return
        now = self._clock()
        # NOTE: a guard unpickled on another host (a restored Ray Tune search) holds that
        # host's monotonic reading, which may be ahead of this one's: refresh then too.
        if 0 <= now - self._refreshed < self._refresh_seconds:
            return
        self._refreshed = now
        ceiling = self._refresh()
        if isinstance(ceiling, Ceiling):
            self._set_ceiling(ceiling)
            return
        self._stopped = self._decide(
            Action.STOP_SEARCH,
            kind=StopKind.APPROVAL,
            reason=f"the approval of {self.limits.money(self.ceiling.amount)} no longer "
            f"holds ({ceiling or 'revoked in the ledger'})",
        )

    def _caps(self, report: Report) -> Decision | None:
        limits = self.limits
        held = self._trials.get(report.trial, 0.0)
        gpus = self._gpus.get(report.trial, float(limits.gpus))
        hours = held / 3600 / gpus if gpus else 0.0
        if limits.max_trial_hours is not None and hours >= limits.max_trial_hours:
            return self._decide(
                Action.STOP_TRIAL,
                report,
                StopKind.TRIAL_HOURS,
                f"trial {report.trial} has run {hours:.2f} h, reaching max_trial_hours "
                f"{limits.max_trial_hours:g}",
            )
        cost = limits.cost(held)
        if limits.max_trial_cost is not None and cost >= limits.max_trial_cost:
            return self._decide(
                Action.STOP_TRIAL,
                report,
                StopKind.TRIAL_COST,
                f"trial {report.trial} has cost {limits.money(cost)}, reaching max_trial_cost "
                f"{limits.money(limits.max_trial_cost)}",
            )
        return None

    def _monitored(self, report: Report) -> float | None:
        """The monitored metric's value, checked with the epoch before the curve holds them.

        NOTE: an epoch that is no number (None, ``'3'``) entered the trial's curve and
        raised TypeError at that report and every later one.

        Raises:
            ValueError: the epoch, or the monitored metric, is no number.
        """
        epoch, value = report.epoch, report.metrics.get(self.limits.monitor)
        if not isinstance(epoch, Real) or not (isinstance(epoch, Integral) or math.isfinite(epoch)):
            raise ValueError(
                f"budget-gate guard: trial {report.trial} reported epoch {epoch!r} — "
                "report the epoch as a number"
            )
        if value is None:
            self._unmonitored(report)
            return None
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(
                f"budget-gate guard: trial {report.trial} reported {self.limits.monitor} "
                f"{value!r:.80} at epoch {epoch} — report it as a number"
            ) from None

    def _plateau(self, report: Report, value: float | None) -> Decision | None:
        limits = self.limits
        if value is None:
            return None
        curve = self._curves.setdefault(report.trial, _Curve())
        held = self._attempts.get((report.trial, report.attempt), 0.0)
        curve.add(report.epoch, value, held, limits.mode)
        threshold = limits.threshold
        if threshold is None:
            return None
        start = bisect.bisect_right(curve.epochs, report.epoch - threshold.window) - 1
        if start < 0:
            return None
        if not math.isfinite(curve.best[start]):
            return self._never_finite(report, curve, start)
        epochs = report.epoch - curve.epochs[start]
        gpu_hours = max(curve.held[-1] - curve.held[start], 0.0) / 3600
        cost = gpu_hours * float(limits.price_per_gpu_hour)
        before, after = curve.best[start], curve.best[-1]
        if pays(threshold, before, after, limits.mode, epochs, gpu_hours, cost):
            return None
        need = threshold.required(before, epochs, gpu_hours, cost)
        return self._decide(
            Action.STOP_TRIAL,
            report,
            StopKind.PLATEAU,
            f"{limits.monitor} gained {gain(before, after, limits.mode):.3g} over epochs "
            f"{curve.epochs[start]}–{report.epoch}, no more than the {need:.3g} the policy "
            f"accepts ({threshold.describe(limits.currency)}): plateau at epoch "
            f"{curve.epochs[start]}",
        )

    def _unmonitored(self, report: Report) -> None:
        """Say once that a report lacks the monitored metric: no plateau can stop its trial.

        NOTE: a metric logged under another name (``loss``, ``val/loss``) turned the plateau
        rule off without a word.
        """
        if self.limits.threshold is None or self._said_unmonitored:
            return
        self._said_unmonitored = True
        log.warning(
            "budget-gate guard: trial %s reported no %r at epoch %s (it reported %s): the "
            "plateau rule cannot stop a trial without it; report the metric the spec's "
            "stopping.early_stopping.monitor names (val_loss where it names none)",
            report.trial,
            self.limits.monitor,
            report.epoch,
            ", ".join(sorted(repr(k) for k, v in report.metrics.items() if v is not None)[:10])
            or "no metric",
        )

    def _never_finite(self, report: Report, curve: _Curve, start: int) -> Decision | None:
        """A trial whose best metric is no finite number over the whole window gains nothing.

        NOTE: a loss NaN from epoch 1 trained to max_epochs; an infinite one read "gained
        nan … no more than the inf the policy accepts", which says nothing.
        """
        best, first = curve.best[-1], curve.epochs[start]
        if math.isfinite(best):
            return None  # its first finite value came within the window: a gain
        worst = math.inf if self.limits.mode == "min" else -math.inf
        never = math.isnan(best) or best == worst
        what = "has had no finite value" if never else f"has been {best:g} (it diverged)"
        return self._decide(
            Action.STOP_TRIAL,
            report,
            StopKind.PLATEAU,
            f"{self.limits.monitor} {what} over epochs {first}–{report.epoch}: nothing "
            f"gained, plateau at epoch {first}",
        )

    def _decide(
        self,
        action: Action,
        report: Report | None = None,
        kind: StopKind | None = None,
        reason: str = "",
    ) -> Decision:
        trial = report.trial if report is not None else ""
        return Decision(
            action=action,
            spend=self.spend,
            trial_cost=self.trial_cost(trial) if trial else Decimal(0),
            currency=self.limits.currency,
            kind=kind,
            reason=reason,
            trial=trial,
            epoch=report.epoch if report is not None else None,
        )

    def _with_trial(self, search: Decision, report: Report) -> Decision:
        return replace(
            search,
            trial_cost=self.trial_cost(report.trial),
            trial=report.trial,
            epoch=report.epoch,
        )
