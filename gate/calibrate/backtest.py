"""How accurate calibrated epoch times are: history replayed in time order (pure).

Each experiment (a spec version: its fingerprint, in its MLflow experiment) is estimated
from the calibration of the runs that started before its first run, exactly as ``check``
would have priced it then: the finest key with enough runs gives the expected case (the
median) and the worst case (the 90th percentile). Its actual epoch time is the median over
its own runs. The naive baseline is what the spec declared (its expected and worst epoch
time). An experiment with no earlier runs of its key is counted under "not calibrated"
and priced by the baseline alone.

Errors are (estimate − actual) ÷ actual: MAPE is their mean absolute value, bias their
mean (positive: estimates too high), coverage the share of experiments whose actual fell
inside the expected–worst range.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gate.calibrate.learn import coarser, learn
from gate.calibrate.model import Calibration
from gate.calibrate.observe import Observation


@dataclass(frozen=True, slots=True)
class Case:
    """One experiment's actual epoch time, and the two estimates of it."""

    experiment: str
    team: str
    actual: float
    calibrated: tuple[float, float] | None
    declared: tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class Accuracy:
    """MAPE, signed bias and coverage of one estimator over ``cases`` experiments."""

    cases: int
    mape: float
    bias: float
    coverage: float


@dataclass(frozen=True, slots=True)
class Scores:
    """Calibrated and declared accuracy over the same experiments."""

    calibrated: Accuracy | None
    declared: Accuracy | None
    uncalibrated: int


def cases(observations: Iterable[Observation], min_runs: int) -> list[Case]:
    """Every experiment with a measured epoch time, estimated from the runs before it."""
    runs = sorted(observations, key=lambda o: o.start)
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    for run in runs:
        groups[(run.experiment, run.spec)].append(run)
    found = []
    for (experiment, _), members in sorted(groups.items(), key=lambda g: g[1][0].start):
        times = [m.epoch_minutes for m in members if m.epoch_minutes is not None]
        if not times:
            continue
        first = members[0]
        before = [r for r in runs if r.start < first.start]
        calibration = learn(before, first.start.date())
        found.append(
            Case(
                experiment=experiment,
                team=first.team,
                actual=statistics.median(times),
                calibrated=_predict(calibration, first, min_runs),
                declared=_declared(first),
            )
        )
    return found


def score(found: Sequence[Case]) -> Scores:
    """Accuracy of the calibrated and the declared estimates over the calibrated cases."""
    both = [c for c in found if c.calibrated is not None and c.declared is not None]
    calibrated = [(c.actual, c.calibrated) for c in both if c.calibrated is not None]
    declared = [(c.actual, c.declared) for c in both if c.declared is not None]
    return Scores(
        calibrated=_accuracy(calibrated),
        declared=_accuracy(declared),
        uncalibrated=sum(c.calibrated is None for c in found),
    )


def by_team(found: Sequence[Case]) -> dict[str, Scores]:
    """:func:`score` per team, by name."""
    teams: dict[str, list[Case]] = defaultdict(list)
    for case in found:
        teams[case.team or "(no team)"].append(case)
    return {team: score(members) for team, members in sorted(teams.items())}


def _predict(
    calibration: Calibration, run: Observation, min_runs: int
) -> tuple[float, float] | None:
    entries = {entry.key: entry for entry in calibration.entries}
    for key in coarser(run.key)[:3]:
        entry = entries.get(key)
        stat = entry.epoch_minutes if entry is not None else None
        if stat is not None and stat.runs >= min_runs:
            return stat.median, stat.p90
    return None


def _declared(run: Observation) -> tuple[float, float] | None:
    if run.declared_minutes is None:
        return None
    worst = run.declared_worst if run.declared_worst is not None else run.declared_minutes
    return run.declared_minutes, worst


def _accuracy(pairs: Sequence[tuple[float, tuple[float, float]]]) -> Accuracy | None:
    usable = [(actual, est) for actual, est in pairs if actual > 0]
    if not usable:
        return None
    errors = [(expected - actual) / actual for actual, (expected, _) in usable]
    inside = [
        min(expected, worst) <= actual <= max(expected, worst)
        for actual, (expected, worst) in usable
    ]
    return Accuracy(
        cases=len(usable),
        mape=statistics.fmean(abs(e) for e in errors),
        bias=statistics.fmean(errors),
        coverage=sum(inside) / len(inside),
    )
