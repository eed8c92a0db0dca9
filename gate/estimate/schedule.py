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
  the top max(1, ⌊j/η⌋) of the j so far; with ranks in random order that happens with
  probability max(1, ⌊j/η⌋)/j, so a little more than 1/η of the trials go on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

_ONE = Decimal(1)


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


def flat(trials: int, epochs: int) -> tuple[Stage, ...]:
    """Every trial trains ``epochs`` epochs in one go (grid, random, Bayesian)."""
    return (Stage((Rung(Decimal(trials), epochs, epochs, True),), barrier=False),)


def rung_marks(min_epochs: int, max_epochs: int, eta: Decimal) -> list[int]:
    """Cumulative epochs at the end of each rung: r, rη, rη², … below R, then R."""
    marks: list[int] = []
    level = Decimal(min(min_epochs, max_epochs))
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
) -> Stage:
    """One successive-halving bracket over ``marks``.

    ``exact`` floors the survivors as synchronous halving does; otherwise the expected
    number promoted by ASHA's rule is kept as a real number. With ``resume`` a promoted
    trial continues from its checkpoint; without it, it retrains from scratch to the mark.
    """
    rungs = []
    previous = 0
    survivors = configurations
    for i, mark in enumerate(marks):
        if i:
            survivors = (
                max(_ONE, Decimal(math.floor(configurations / eta**i)))
                if exact
                else expected_promotions(survivors, eta)
            )
        epochs = mark - previous if resume else mark
        relaunch = i == 0 or barrier or not resume
        rungs.append(Rung(survivors, epochs, mark, relaunch))
        previous = mark
    return Stage(tuple(rungs), barrier)


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
