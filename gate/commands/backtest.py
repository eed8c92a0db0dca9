"""``budget-gate calibrate --backtest``: each experiment's price then, against what it cost.

While ``calibrate`` streams the runs, :class:`CostBacktest` finds each experiment's spec
version (by the run's ``budget_gate.spec`` path and fingerprint,
:mod:`gate.integrations.git.spec_versions`), prices it from its declared figures and prices
every run as ``reconcile`` does (:func:`gate.reconcile.actuals.price_run` under the same
plan, failed runs included), keeping per run only its cost. Then, in time order
(:func:`gate.calibrate.backtest.replays`), each experiment is priced again through the
evaluator with the calibration of the runs before it, exactly as ``check`` and
``estimate --calibration`` would have priced it then. The cost is the headline table; the
epoch-time table follows. Experiments that cannot be scored on cost say why.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gate.calibrate.backtest import (
    Accuracy,
    Case,
    CostCase,
    Replay,
    Scored,
    Scores,
    by_team,
    epoch_case,
    score,
)
from gate.commands.reconcile import requote
from gate.estimate.model import Estimate
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.integrations.git.spec_versions import (
    HISTORY_BUDGET,
    SpecVersion,
    SpecVersions,
    policies_home,
)
from gate.ledger import tracking
from gate.money import to_decimal
from gate.policy.findings import Outcome
from gate.reconcile.actuals import Plan, RunFacts, RunStatus, price_run
from gate.reconcile.quality import monitor_for
from gate.words import counted

NO_SPEC, INVALID, RUNNING = "no_spec", "spec_invalid", "running"
UNSEARCHED = "spec_unsearched"
"""Why an experiment is scored on epoch time only (the keys of ``epoch_time_only``)."""
_WHY = {
    NO_SPEC: ("no spec at its fingerprint", "no spec at their fingerprint"),
    UNSEARCHED: (
        f"its spec not searched for in git history (past {HISTORY_BUDGET:,} spec paths)",
        f"their specs not searched for in git history (past {HISTORY_BUDGET:,} spec paths)",
    ),
    INVALID: ("its spec does not evaluate", "their specs do not evaluate"),
    RUNNING: ("its runs are still running", "their runs are still running"),
}
_UNFINISHED = (RunStatus.RUNNING.value, RunStatus.SCHEDULED.value)


@dataclass
class _Tally:
    """One experiment's spec, plan and the running total of its runs' cost."""

    version: SpecVersion
    plan: Plan
    cost: Decimal = Decimal(0)
    running: int = 0


@dataclass
class CostBacktest:
    """Collects actual costs while the runs stream by, then scores the estimates."""

    evaluator: Evaluator
    now: dt.datetime
    versions: SpecVersions = field(default_factory=SpecVersions)
    _tallies: dict[tuple[str, str], _Tally | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # No fix search (it re-estimates edits of the spec) and no calibration: the baseline.
        self.evaluator = dataclasses.replace(self.evaluator, fix_estimates=0, calibration=None)
        if self.versions.home is None:
            self.versions = SpecVersions(home=policies_home(self.evaluator.policies))

    def add(self, facts: RunFacts, experiment: str) -> None:
        """Price one run of ``experiment`` under its spec version's plan (if found)."""
        key = (experiment, facts.tags.get(tracking.FINGERPRINT, ""))
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = self._start(facts, key[1])
        if isinstance(tally, str):
            return
        tally.cost += price_run(facts, tally.plan).cost
        tally.running += int(facts.status in _UNFINISHED)

    def _start(self, facts: RunFacts, fingerprint: str) -> _Tally | str:
        """The experiment's plan at its declared figures, or why it has none."""
        found = self.versions.find(facts.tags.get(tracking.SPEC, ""), fingerprint)
        if found is None:
            return UNSEARCHED if self.versions.exhausted else NO_SPEC
        evaluation = self.evaluator.evaluate_spec(found.path, found.content)
        spec, policy, est = evaluation.spec, evaluation.policy, evaluation.result.estimate
        if evaluation.result.outcome is Outcome.INVALID or not spec or not policy or not est:
            return INVALID
        plan = Plan(
            spec=spec,
            fingerprint=fingerprint,
            quote=est.quote,
            estimate=est,
            monitor=monitor_for(spec, returns=policy.returns),
            now=self.now,
            tolerance=to_decimal(policy.limits.reconcile_tolerance),
            requote=requote(spec, policy),
        )
        return _Tally(found, plan)

    def case(self, replay: Replay) -> CostCase | str:
        """The experiment's cost against its calibrated and declared prices, or why not."""
        tally = self._tallies.get((replay.experiment, replay.fingerprint), NO_SPEC)
        if isinstance(tally, str):
            return tally
        if tally.running:
            return RUNNING
        calibrated = dataclasses.replace(self.evaluator, calibration=replay.calibration)
        priced = calibrated.evaluate_spec(tally.version.path, tally.version.content)
        return CostCase(
            experiment=replay.experiment,
            fingerprint=replay.fingerprint,
            spec=tally.version.where,
            team=tally.plan.spec.metadata.team or "",
            actual=tally.cost,
            calibrated=_calibrated(priced),
            declared=_prices(tally.plan.estimate),
            epoch=_epoch(priced),
        )


def _prices(est: Estimate) -> tuple[Decimal, Decimal]:
    return est.expected.cost, est.worst.cost


def _calibrated(evaluation: Evaluation) -> tuple[Decimal, Decimal] | None:
    """The prices, when the calibration supplied a figure (else they are the declared ones)."""
    est = evaluation.result.estimate
    measured = est.measured if est is not None else None
    if est is None or measured is None:
        return None
    epoch = measured.epoch if measured.epoch is not None and not measured.epoch.prior else None
    if epoch is None and all(
        figure is None for figure in (measured.plateau, measured.failure_rate, measured.mfu)
    ):
        return None
    return _prices(est)


def _epoch(evaluation: Evaluation) -> tuple[float, float] | None:
    """The epoch time (expected, worst) the pricing took from the calibration, if any."""
    est = evaluation.result.estimate
    epoch = est.measured.epoch if est is not None and est.measured is not None else None
    if epoch is None or epoch.prior:
        return None
    return float(epoch.median), float(epoch.high)


@dataclass(frozen=True, slots=True)
class Backtest:
    """The cost and epoch-time scores of every experiment replayed, and what was left out."""

    experiments: int
    cost: tuple[CostCase, ...]
    epoch: tuple[Case, ...]
    cost_only_epoch: Counter[str]
    min_runs: int

    @property
    def epoch_uncalibrated(self) -> int:
        """Epoch-time cases with fewer than ``min_runs`` earlier runs of their key."""
        return score(self.epoch).uncalibrated


def run_backtest(replays: Iterable[Replay], costs: CostBacktest | None, min_runs: int) -> Backtest:
    """Score every replayed experiment on cost (where its spec was found) and epoch time."""
    cost: list[CostCase] = []
    epoch: list[Case] = []
    left: Counter[str] = Counter()
    experiments = 0
    for replay in replays:
        experiments += 1
        priced = costs.case(replay) if costs is not None else NO_SPEC
        if isinstance(priced, str):
            left[priced] += 1
        else:
            cost.append(priced)
        found = epoch_case(replay, min_runs, None if isinstance(priced, str) else priced)
        if found is not None:
            epoch.append(found)
    return Backtest(experiments, tuple(cost), tuple(epoch), left, min_runs)


def render(backtest: Backtest) -> str:
    """The cost table (the headline), then the epoch-time table, overall and per team."""
    cost = score(backtest.cost)
    lines = [
        f"backtest: {counted(backtest.experiments, 'experiment')} in time order, each "
        "estimated from the calibration of the runs before it",
        *(
            f"{counted(n, 'experiment')} scored on epoch time only: {_WHY[why][n != 1]}"
            for why, n in sorted(backtest.cost_only_epoch.items())
        ),
        "",
        f"cost: the spec priced as check would have then, against what its runs cost "
        f"(failed ones included); {cost.uncalibrated} not calibrated yet",
        *_table(cost, by_team(backtest.cost), len(backtest.cost)),
        "",
        "epoch time: the median over the experiment's runs against the calibration's "
        f"({backtest.epoch_uncalibrated} had fewer than {backtest.min_runs} earlier runs "
        "of their key)",
        *_table(score(backtest.epoch), by_team(backtest.epoch), len(backtest.epoch)),
        "",
        "(estimate − actual) ÷ actual; coverage: actual within expected–worst; ≤ worst: "
        "actual at most the worst case; declared: the spec's own figures",
    ]
    return "\n".join(lines)


def _table(overall: Scores, teams: dict[str, Scores], cases: int) -> list[str]:
    """The scores by estimator, overall and per team; a sentence when nothing was scored."""
    if overall.calibrated is None and overall.declared is None:
        why = (
            ": each experiment is scored against the calibration of the runs before it "
            f"({counted(cases, 'experiment')}, none with earlier runs of its key)"
            if cases
            else ""
        )
        return [f"  nothing to score yet{why}"]
    rows = [
        f"{'':<20} {'estimator':<11} {'cases':>5} {'MAPE':>8} {'bias':>8} {'coverage':>9} "
        f"{'≤ worst':>8}"
    ]
    rows.extend(_score_rows("overall", overall))
    for team, scores in teams.items():
        rows.extend(_score_rows(f"team {team}", scores))
    return rows


def _score_rows(label: str, scores: Scores) -> list[str]:
    rows = []
    for name, accuracy in (("calibrated", scores.calibrated), ("declared", scores.declared)):
        rows.append(f"{label:<20} {name:<11} {_accuracy(accuracy)}")
        label = ""
    return rows


def _accuracy(accuracy: Accuracy | None) -> str:
    if accuracy is None:
        return f"{0:>5} {'—':>8} {'—':>8} {'—':>9} {'—':>8}"
    return (
        f"{accuracy.cases:>5} {accuracy.mape:>8.1%} {accuracy.bias:>+8.1%} "
        f"{accuracy.coverage:>9.0%} {accuracy.bounded:>8.0%}"
    )


def as_json(backtest: Backtest) -> dict[str, Any]:
    """The figures as objects: overall and per team for cost and epoch time, and the cases."""
    return {
        "experiments": backtest.experiments,
        "epoch_time_only": dict(sorted(backtest.cost_only_epoch.items())),
        "cost": {**_scores_json(backtest.cost), "cases": [_cost_case(c) for c in backtest.cost]},
        "epoch_time": _scores_json(backtest.epoch),
        "min_runs": backtest.min_runs,
    }


def _scores_json(found: tuple[Scored, ...]) -> dict[str, Any]:
    return {
        "overall": _one(score(found)),
        "teams": {team: _one(scores) for team, scores in by_team(found).items()},
    }


def _one(scores: Scores) -> dict[str, Any]:
    return {
        "calibrated": _accuracy_json(scores.calibrated),
        "declared": _accuracy_json(scores.declared),
        "not_calibrated": scores.uncalibrated,
    }


def _accuracy_json(accuracy: Accuracy | None) -> dict[str, Any] | None:
    return None if accuracy is None else dataclasses.asdict(accuracy)


def _cost_case(case: CostCase) -> dict[str, Any]:
    def pair(prices: tuple[Decimal, Decimal] | None) -> dict[str, str] | None:
        return None if prices is None else {"expected": str(prices[0]), "worst": str(prices[1])}

    return {
        "experiment": case.experiment,
        "fingerprint": case.fingerprint,
        "spec": case.spec,
        "team": case.team,
        "actual": str(case.actual),
        "calibrated": pair(case.calibrated),
        "declared": pair(case.declared),
    }
