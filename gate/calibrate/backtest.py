"""How accurate calibrated estimates are: history replayed in time order (pure).

Each experiment (a spec version: its fingerprint, in its MLflow experiment) is a
:class:`Replay`: its runs, and the calibration of the runs that had ended before its first
run started, as ``check`` would have priced it then. Two things are scored against it:

- its cost (:class:`CostCase`): the spec priced with that calibration (expected and worst
  case) against what its runs cost, failed ones included; the naive baseline is the same
  spec priced from its declared figures. The pricing is the command's (it needs the spec
  and the evaluator); this module only scores;
- its epoch time (:class:`Case`): the epoch time that pricing took from the calibration
  (the expected and the worst case, as ``check`` priced them), against the median over its
  own runs; the naive baseline is what the spec declared (its expected and worst epoch
  time). Without its spec, only its own key's figure (median, 90th percentile) is scored.

An experiment with no calibrated estimate (too few earlier runs of its key) is counted
under "not calibrated" and priced by the baseline alone.

Errors are (estimate − actual) ÷ actual: MAPE is their mean absolute value, bias their
mean (positive: estimates too high), coverage the share of experiments whose actual fell
inside the expected–worst range, and "bounded" the share at most the worst case.
"""

from __future__ import annotations

import bisect
import datetime as dt
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from gate.calibrate.learn import learn
from gate.calibrate.lookup import EPOCH_LEVELS, by_key, epoch_minutes, finest, fold, folded
from gate.calibrate.model import Calibration
from gate.calibrate.observe import Observation


@dataclass(frozen=True, slots=True)
class Replay:
    """One experiment's finished runs (in start order) and the calibration before them."""

    experiment: str
    fingerprint: str
    runs: tuple[Observation, ...]
    calibration: Calibration

    @property
    def first(self) -> Observation:
        """The run that started first."""
        return self.runs[0]


@dataclass(frozen=True, slots=True)
class Case:
    """One experiment's actual epoch time, and the two estimates of it."""

    experiment: str
    team: str
    actual: float
    calibrated: tuple[float, float] | None
    declared: tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class CostCase:
    """One experiment's actual cost, and its calibrated and declared (expected, worst) prices."""

    experiment: str
    fingerprint: str
    spec: str
    """Where the spec version was found (``path``, or ``path@commit`` from git history)."""
    team: str
    actual: Decimal
    calibrated: tuple[Decimal, Decimal] | None
    declared: tuple[Decimal, Decimal] | None
    epoch: tuple[float, float] | None = None
    """The epoch time (expected, worst) the calibrated pricing took from the calibration:
    ``check``'s own figure (``None``: it priced the spec's, or a FLOPs prior)."""


class Scored(Protocol):
    """What :func:`score` reads of a case: :class:`Case` and :class:`CostCase` both have it."""

    @property
    def team(self) -> str: ...  # noqa: D102
    @property
    def actual(self) -> float | Decimal: ...  # noqa: D102
    @property
    def calibrated(self) -> tuple[float, float] | tuple[Decimal, Decimal] | None: ...  # noqa: D102
    @property
    def declared(self) -> tuple[float, float] | tuple[Decimal, Decimal] | None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class Accuracy:
    """MAPE, signed bias and coverage of one estimator over ``cases`` experiments."""

    cases: int
    mape: float
    bias: float
    coverage: float
    bounded: float
    """The share whose actual was at most the worst case: how often the gate's bound held."""


@dataclass(frozen=True, slots=True)
class Scores:
    """Calibrated and declared accuracy over the same experiments."""

    calibrated: Accuracy | None
    declared: Accuracy | None
    uncalibrated: int


def replays(observations: Iterable[Observation]) -> Iterator[Replay]:
    """Every experiment in the order its first run started, with the calibration before it.

    One calibration is learned per experiment, when it is reached (not all held at once),
    from the runs of the same model that had ended before its first run started (a lookup
    never reads another model's entries). NOTE: runs that had started, not ended, calibrated
    it: a version started while the last one's 40-hour runs ran scored "calibrated" with
    MAPE 0 % on figures ``check`` could not have had.
    A model is its label folded, as the lookup and :func:`learn` fold it: ``ResNet18`` and
    ``resnet18`` are one model's runs.
    """
    runs = sorted(observations, key=lambda o: o.start)
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    by_model: dict[str | None, list[Observation]] = defaultdict(list)
    for run in runs:
        groups[(run.experiment, run.spec)].append(run)
        by_model[_folded(run.key.model)].append(run)
    for members in by_model.values():
        members.sort(key=_ended)
    ends = {model: [_ended(r) for r in members] for model, members in by_model.items()}
    for (experiment, spec), members in sorted(groups.items(), key=lambda g: g[1][0].start):
        first = members[0]
        model = _folded(first.key.model)
        before = by_model[model][: bisect.bisect_left(ends[model], first.start)]
        yield Replay(experiment, spec, tuple(members), learn(before, first.start.date(), fold=fold))


def _ended(run: Observation) -> dt.datetime:
    return run.end if run.end is not None else run.start


def _folded(label: str | None) -> str | None:
    return None if label is None else fold(label)


def epoch_case(replay: Replay, min_runs: int, priced: CostCase | None = None) -> Case | None:
    """The experiment's measured epoch time against both estimates; ``None`` without one.

    The calibrated estimate is the one ``check`` priced: ``priced``'s, where the experiment's
    spec was found and priced; without it, only the spec's own key's figure, which ``check``
    takes as it is (a coarser key's it may set aside for the spec's, which is not known).
    NOTE: the table scored spec-less figures: label-less specs from ``any model`` entries
    (``check`` uses no calibration for them), a coarser key's raw median where ``check``
    priced the spec's larger figure.
    """
    times = [m.epoch_minutes for m in replay.runs if m.epoch_minutes is not None]
    if not times:
        return None
    first = replay.first
    return Case(
        experiment=replay.experiment,
        team=first.team,
        actual=statistics.median(times),
        calibrated=priced.epoch
        if priced is not None
        else _predict(replay.calibration, first, min_runs),
        declared=_declared(first),
    )


def cases(observations: Iterable[Observation], min_runs: int) -> list[Case]:
    """Every experiment with a measured epoch time, estimated from the runs before it."""
    found = (epoch_case(replay, min_runs) for replay in replays(observations))
    return [case for case in found if case is not None]


def score(found: Sequence[Scored]) -> Scores:
    """Accuracy of the calibrated and the declared estimates over the calibrated cases."""
    both = [c for c in found if c.calibrated is not None and c.declared is not None]
    calibrated = [(c.actual, c.calibrated) for c in both if c.calibrated is not None]
    declared = [(c.actual, c.declared) for c in both if c.declared is not None]
    return Scores(
        calibrated=accuracy(calibrated),
        declared=accuracy(declared),
        uncalibrated=sum(c.calibrated is None for c in found),
    )


def by_team(found: Sequence[Scored]) -> dict[str, Scores]:
    """:func:`score` per team, by name."""
    teams: dict[str, list[Scored]] = defaultdict(list)
    for case in found:
        teams[case.team or "(no team)"].append(case)
    return {team: score(members) for team, members in sorted(teams.items())}


def _predict(
    calibration: Calibration, run: Observation, min_runs: int
) -> tuple[float, float] | None:
    """The run's own key's epoch time (median, 90th percentile), as ``check`` prices it.

    ``None`` for a run with no model label (``check`` uses no calibration for its spec) or
    with too few runs of its own key: a coarser key's figure ``check`` may set aside for the
    spec's, and without the spec that is not known.
    """
    if run.key.model is None:
        return None
    found = finest(by_key(calibration), run.key, epoch_minutes, min_runs, EPOCH_LEVELS)
    if found is None or folded(found[0].key) != folded(run.key):
        return None
    return found[1].median, found[1].p90


def _declared(run: Observation) -> tuple[float, float] | None:
    if run.declared_minutes is None:
        return None
    worst = run.declared_worst if run.declared_worst is not None else run.declared_minutes
    return run.declared_minutes, worst


Number = float | Decimal
Pair = tuple[Number, tuple[Number, Number]]


MOST_ERROR = 1e15
"""The largest relative error counted (an estimate 10^15 times its actual). A ledger record
can hold any finite amount; one of ``1E+400`` made the error infinite, the report's JSON
``Infinity`` (no JSON) and two near 1e308 overflowed the mean."""


def accuracy(pairs: Sequence[Pair]) -> Accuracy | None:
    """MAPE, bias, coverage and how often the worst case held, over (actual, estimates) pairs.

    Each pair is an actual and its (expected, worst) estimate; actuals of zero are left out.
    """
    usable = [(Decimal(actual), est) for actual, est in pairs if actual > 0]
    if not usable:
        return None
    errors = [
        min(float((Decimal(expected) - actual) / actual), MOST_ERROR)
        for actual, (expected, _) in usable
    ]
    inside = [
        min(expected, worst) <= actual <= max(expected, worst)
        for actual, (expected, worst) in usable
    ]
    return Accuracy(
        cases=len(usable),
        mape=statistics.fmean(abs(e) for e in errors),
        bias=statistics.fmean(errors),
        coverage=sum(inside) / len(inside),
        bounded=sum(actual <= max(expected, worst) for actual, (expected, worst) in usable)
        / len(usable),
    )
