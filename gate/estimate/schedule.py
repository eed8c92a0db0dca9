"""Which trials train for how many epochs: flat searches and the successive-halving family (pure).

Synchronous successive halving and Hyperband follow Li et al., "Hyperband: A Novel
Bandit-Based Approach to Hyperparameter Optimization" (JMLR 18, 2018): with ``n``
configurations, minimum ``r`` and maximum ``R`` epochs and reduction factor ``η``, rung
``i`` keeps ``floor(n η^-i)`` configurations, each trained to ``r η^i`` epochs. Hyperband
runs brackets ``s = s_max … 0`` with ``n_s = ceil((s_max + 1) η^s / (s + 1))``.

Choices where the paper is silent, each stated in the estimate's assumptions:
- R/r not a power of η: rungs at r, rη, rη², … below R, then a last rung at R (as Optuna
  and Ray Tune lay them out), so a larger R never costs less.
- More rungs than configurations: the best configuration carries on alone (never 0).
- Fractional epochs (η not an integer) round up to whole epochs.
- Asynchronous halving (ASHA, Optuna's pruners) has no fixed counts. Its worst case is no
  saving at all (an arrival order exists in which every trial is promoted). Its expected
  case follows ASHA's rule: the j-th trial to reach a rung is promoted when it ranks in
  the top max(1, ⌊j/η⌋) of the j so far. With ranks in random order at every rung that
  happens with probability max(1, ⌊j/η⌋)/j. Real learning curves keep their ranks: a
  trial promoted once is likely promoted again. :func:`asha_reach` models that with a
  rank correlation ρ between a trial's scores at successive rungs (Gaussian scores, the
  correlation a policy assumption) and counts the promotions by simulating ASHA's rule.
- Asynchronous Hyperband follows Optuna's ``HyperbandPruner``: ⌊log_η(R/r)⌋ + 1 brackets,
  bracket b running successive halving with rungs at r·η^(b+i) below R, trials shared out
  in proportion to ⌈B η^s/(s+1)⌉ with B brackets and s = B − 1 − b.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

_ONE = Decimal(1)
SIMULATION_STEPS = 400_000
"""Arrivals × runs × rungs one search's ASHA simulation takes at most: about a tenth of a
second. Asynchronous Hyperband shares it out among its brackets (:func:`simulation_shares`)."""


@dataclass(frozen=True, slots=True)
class Rung:
    """Trials that train together in one rung, and how far each trains there."""

    trials: Decimal
    epochs: int
    reached: int
    launches: bool


@dataclass(frozen=True, slots=True)
class Stage:
    """Rungs run in order; with a barrier a rung waits for the previous one to finish."""

    rungs: tuple[Rung, ...]
    barrier: bool
    simulated: int = 0
    """The work of the ASHA simulation behind the counts (:func:`simulated_steps`; 0: exact)."""


def flat(trials: int, epochs: int) -> tuple[Stage, ...]:
    """Every trial trains ``epochs`` epochs in one go (grid, random, Bayesian)."""
    return (Stage((Rung(Decimal(trials), epochs, epochs, True),), barrier=False),)


def rung_marks(min_epochs: int, max_epochs: int, eta: Decimal) -> list[int]:
    """Cumulative epochs at the end of each rung: r, rη, rη², … below R, then R."""
    return _marks_from(Decimal(min(min_epochs, max_epochs)), max_epochs, eta)


def _marks_from(level: Decimal, max_epochs: int, eta: Decimal) -> list[int]:
    marks: list[int] = []
    while ceil_int(level) < max_epochs:
        mark = ceil_int(level)
        if not marks or mark > marks[-1]:  # η near 1 repeats a mark: keep each rung once
            marks.append(mark)
        level *= eta
    marks.append(max_epochs)
    return marks


def halving(
    configurations: Decimal,
    marks: list[int],
    eta: Decimal,
    *,
    resume: bool,
    exact: bool,
    barrier: bool,
    persistence: RankPersistence | None = None,
    steps: int = SIMULATION_STEPS,
) -> Stage:
    """One successive-halving bracket over ``marks``.

    ``exact`` floors the survivors as synchronous halving does; otherwise the expected
    number promoted by ASHA's rule, with ranks kept as ``persistence`` says, is kept as a
    real number (:func:`asha_reach`, simulating at most ``steps``). With ``resume`` a
    promoted trial continues from its checkpoint; without it, it retrains from scratch to
    the mark.
    """
    work = 0
    if exact:
        reach = [
            max(_ONE, Decimal(math.floor(configurations / eta**i))) if i else configurations
            for i in range(len(marks))
        ]
    else:
        persistence = persistence or RankPersistence()
        reach = asha_reach(configurations, len(marks), eta, persistence, steps)
        work = simulated_steps(configurations, len(marks), persistence, steps)
    rungs = []
    previous = 0
    for i, (mark, survivors) in enumerate(zip(marks, reach, strict=True)):
        epochs = mark - previous if resume else mark
        relaunch = i == 0 or barrier or not resume
        rungs.append(Rung(survivors, epochs, mark, relaunch))
        previous = mark
    return Stage(tuple(rungs), barrier, work)


def expected_promotions(arrivals: Decimal, eta: Decimal) -> Decimal:
    """Expected trials ASHA promotes out of ``arrivals``, ranks in random order.

    The j-th arrival is promoted with probability max(1, ⌊j/η⌋)/j; a fractional last
    arrival counts by its fraction.
    """
    whole = math.floor(arrivals)
    exact = min(whole, _EXACT_ARRIVALS)
    total = sum((Decimal(max(1, math.floor(j / eta))) / j for j in range(1, exact + 1)), Decimal(0))
    if whole > exact:
        # NOTE: past 1,000 arrivals ⌊j/η⌋/j = 1/η − frac(j/η)/j, and frac(j/η) cycles evenly
        # through k/p (η = p/q in lowest terms), so it averages (p − 1)/2p: the tail is
        # (n − m)/η − (p − 1)/2p · ln(n/m), within a few hundredths of a trial. The closed
        # form keeps a million arrivals at η = 1.1 instant (a sum would take seconds).
        p = Fraction(eta).numerator
        mean_frac = Decimal(p - 1) / (2 * p)
        total += Decimal(whole - exact) / eta - mean_frac * Decimal(math.log(whole / exact))
    part = arrivals - whole
    if part:
        total += part * Decimal(max(1, math.floor((whole + 1) / eta))) / (whole + 1)
    return total


_EXACT_ARRIVALS = 1_000


def asha_reach(
    configurations: Decimal,
    rungs: int,
    eta: Decimal,
    persistence: RankPersistence,
    steps: int = SIMULATION_STEPS,
) -> list[Decimal]:
    """Expected trials reaching each of ``rungs`` rungs under ASHA's rule (the first: all).

    Each trial has a latent quality z; its score at every rung is √ρ·z + √(1−ρ)·ε with
    fresh noise ε, so scores at successive rungs correlate by ρ. A model-based sampler
    proposes better trials once it has seen ``STARTUP_TRIALS``: their z is ``gain``
    standard deviations better. Trials arrive one by one and the j-th arrival at a rung
    goes on when its score is among the best max(1, ⌊j/η⌋) of the j so far. With ρ = 0
    and no gain the counts are exact (:func:`expected_promotions`); otherwise they are the
    mean of seeded simulations of the first 2,000 arrivals (deterministic), later arrivals
    going on at ASHA's steady rate of 1/η per rung. The simulation takes at most ``steps``
    (arrivals × runs × rungs; at least one arrival in four runs).
    """
    rho, gain = persistence.correlation, persistence.sampler_gain
    if (rho <= 0 and gain <= 0) or rungs < 2:
        reach = [configurations]
        for _ in range(rungs - 1):
            reach.append(expected_promotions(reach[-1], eta))
        return reach
    # NOTE: with many rungs (η near 1) nearly every arrival climbs all of them: fewer
    # simulated arrivals keep the work bounded; later ones go on at the steady rate.
    simulated = _arrivals(configurations, rungs, steps)
    counts = _simulate(simulated, rungs, float(eta), rho, gain, steps)
    tail = configurations - simulated
    return [Decimal(str(c)) + tail / eta**k for k, c in enumerate(counts)]


@dataclass(frozen=True, slots=True)
class RankPersistence:
    """How ASHA's trials keep their ranks: correlation between rungs, and sampler gain."""

    correlation: float = 0.0
    sampler_gain: float = 0.0


STARTUP_TRIALS = 10
"""Trials a model-based sampler draws at random before it models (Optuna's TPE default)."""

_SIMULATED_ARRIVALS = 2_000
_SIMULATED_WORK = 10_000  # arrivals × runs: a hundredth of a second
_MIN_RUNS = 4


def simulated_steps(
    configurations: Decimal, rungs: int, persistence: RankPersistence, steps: int
) -> int:
    """The work of :func:`asha_reach`'s simulation: arrivals × runs × promotions (0: exact)."""
    if (persistence.correlation <= 0 and persistence.sampler_gain <= 0) or rungs < 2:
        return 0
    arrivals = _arrivals(configurations, rungs, steps)
    return arrivals * _runs(arrivals, rungs, steps) * (rungs - 1)


def _arrivals(configurations: Decimal, rungs: int, steps: int) -> int:
    """Arrivals simulated: with many rungs (η near 1) fewer, to keep the work bounded."""
    deep = max(1, steps // (_MIN_RUNS * (rungs - 1)))
    return min(math.floor(configurations), _SIMULATED_ARRIVALS, deep)


def _runs(arrivals: int, rungs: int, steps: int) -> int:
    """Seeded runs averaged, within ``steps``."""
    runs = max(16, _SIMULATED_WORK // max(1, arrivals))
    return max(_MIN_RUNS, min(runs, steps // max(1, arrivals * (rungs - 1))))


def simulation_shares(brackets: list[tuple[int, list[int]]]) -> list[int]:
    """Each bracket's part of :data:`SIMULATION_STEPS`, in proportion to its trials × rungs.

    NOTE: each of η = 1.1's dozens of brackets simulated up to the whole bound, so one
    ``check`` took seconds. Shared this way, every bracket simulates the same fraction of
    its arrivals; the expected epochs of Optuna's grid (η ≥ 2) move by under 1 %.
    """
    work = [n * max(0, len(marks) - 1) for n, marks in brackets]
    total = sum(work)
    return [SIMULATION_STEPS * w // total if total else SIMULATION_STEPS for w in work]


@functools.lru_cache(maxsize=1024)
def _simulate(
    arrivals: int, rungs: int, eta: float, rho: float, gain: float, steps: int
) -> tuple[float, ...]:
    runs = _runs(arrivals, rungs, steps)
    rng = random.Random(20_181_201)  # fixed: the same spec always gets the same estimate
    draw, insort_at = _normals(rng).__next__, bisect.bisect_left
    keep, fresh = math.sqrt(rho), math.sqrt(1 - rho)
    promoted = [max(1, math.floor(j / eta)) for j in range(arrivals * 2 + 2)]
    better_by = [gain if i >= STARTUP_TRIALS else 0.0 for i in range(arrivals)]
    reached = [0] * rungs
    for _ in range(runs):
        seen: list[list[float]] = [[] for _ in range(rungs - 1)]
        for i in range(arrivals):
            quality = keep * (draw() - better_by[i])
            depth = 0
            for scores in seen:
                score = quality + fresh * draw()
                better = insort_at(scores, score)  # lower is better
                scores.insert(better, score)
                if better >= promoted[len(scores)]:
                    break
                depth += 1
            reached[depth] += 1
    # reached[d] counts trials that stopped at rung d; a rung is reached by all deeper ones
    return tuple(round(sum(reached[k:]) / runs, 6) for k in range(rungs))


def _normals(rng: random.Random) -> Iterator[float]:
    """Standard normal draws, the very ones ``rng.gauss(0.0, 1.0)`` returns, faster.

    ``random.gauss`` makes its draws in Box–Muller pairs from two ``random()`` calls; a
    generator does the same without a method call per draw, so a check with an ASHA
    search spends a third less on its simulations and every figure stays as it was.
    """
    uniform, log, sqrt, cos, sin = rng.random, math.log, math.sqrt, math.cos, math.sin
    while True:
        angle = uniform() * _TWO_PI
        radius = sqrt(-2.0 * log(1.0 - uniform()))
        yield cos(angle) * radius
        yield sin(angle) * radius


_TWO_PI = 2.0 * math.pi


def no_pruning(configurations: Decimal, marks: list[int], *, resume: bool) -> Stage:
    """Asynchronous worst case: every trial is promoted through every rung."""
    if resume:
        return Stage((Rung(configurations, marks[-1], marks[-1], True),), barrier=False)
    rungs = tuple(Rung(configurations, m, m, True) for m in marks)
    return Stage(rungs, barrier=False)


def hyperband_brackets(
    min_epochs: int, max_epochs: int, eta: Decimal, limit: int | None
) -> list[tuple[int, list[int]]]:
    """Hyperband's brackets as (configurations, rung marks), most exploratory first."""
    units = Decimal(max_epochs) / Decimal(min(min_epochs, max_epochs))
    s_max = 0
    while eta ** (s_max + 1) <= units:
        s_max += 1
    brackets = []
    for s in range(s_max, -1, -1):
        n = ceil_int(Decimal(s_max + 1) * eta**s / (s + 1))
        marks = [min(max_epochs, ceil_int(max_epochs / eta ** (s - i))) for i in range(s)]
        brackets.append((n, [*marks, max_epochs]))
    return brackets[:limit] if limit else brackets


def optuna_brackets(
    min_epochs: int, max_epochs: int, eta: Decimal, limit: int | None
) -> list[tuple[int, list[int]]]:
    """Optuna's ``HyperbandPruner`` brackets as (trial budget, rung marks), bracket 0 first.

    As in Optuna 3–5: ⌊log_η(R/r)⌋ + 1 brackets, computed in floating point as Optuna does
    (so R = 243, r = 1, η = 3 gives 5, not 6); bracket b prunes at r·η^(b+i) below R; its
    budget ⌈B η^s/(s+1)⌉ (s = B − 1 − b) is its share of the trials.
    """
    r = min(min_epochs, max_epochs)
    count = math.floor(math.log(max_epochs / r, float(eta))) + 1
    brackets = []
    for b in range(count):
        s = count - 1 - b
        budget = ceil_int(Decimal(count) * eta**s / (s + 1))
        brackets.append((budget, _marks_from(r * eta**b, max_epochs, eta)))
    return brackets[:limit] if limit else brackets


def split(total: int, weights: list[int]) -> list[int]:
    """Share ``total`` out in proportion to ``weights`` (largest remainder, exact sum)."""
    whole = sum(weights)
    shares = [Decimal(total) * w / whole for w in weights]
    floors = [math.floor(s) for s in shares]
    order = sorted(range(len(weights)), key=lambda i: shares[i] - floors[i], reverse=True)
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return floors


def ceil_int(value: Decimal) -> int:
    """The smallest whole number at least ``value``."""
    return int(value.to_integral_value(rounding=ROUND_CEILING))
