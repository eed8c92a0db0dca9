"""How a plan's stages take time: each trial's path up its rungs, and the hours it adds up to.

A stage's trial is walked rung by rung under the per-trial cap (:func:`walk_stage`); the
:class:`Clock` adds each stage's held, recomputed and waited hours, its waves and its
wall-clock, synchronous rungs wave by wave and asynchronous ones as work over workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from gate.estimate.caps import Cut, TrialCap, TrialPath, advance, cut_note
from gate.estimate.reliability import MAX_FACTOR
from gate.estimate.schedule import Stage, ceil_int


@dataclass(slots=True)
class Clock:
    """GPU-hours held and recomputed, waves and wall-clock, added up stage after stage."""

    trial_hours: Decimal = Decimal(0)
    recompute: Decimal = Decimal(0)
    waves: int = 0
    wall: Decimal = Decimal(0)
    first: Decimal | None = None
    """When the first trial reaches the top rung (``None`` until a stage says)."""
    clamped: bool = False
    """Whether a run's preemption factor hit its ceiling, so the held hours are a floor."""

    def add(
        self,
        stage: Stage,
        runs: list[tuple[Decimal, Decimal, Decimal]],
        furthest_held: Decimal,
        concurrency: int,
        queue: Decimal,
    ) -> None:
        """One stage's runs: (trials, hours run, hours billed) per rung."""
        synchronous = stage.barrier or len(stage.rungs) == 1
        stage_work = Decimal(0)
        last = (0, Decimal(0))
        for trials, run, billed in runs:
            self.trial_hours += trials * billed
            self.recompute += trials * (billed - run)
            self.clamped = self.clamped or (run > 0 and billed >= run * _CEILING)
            stage_work += trials * billed
            if synchronous:
                rung_waves = ceil_int(trials / concurrency)
                self.waves += rung_waves
                self.wall += rung_waves * (billed + queue)
                last = (rung_waves, billed + queue)
        if not synchronous:
            # Asynchronous rungs keep every worker busy: work ÷ workers, at least one path.
            stage_waves = ceil_int(stage.rungs[0].trials / concurrency)
            if self.first is None:
                self.first = self.wall + queue + furthest_held
            self.waves += stage_waves
            self.wall += max(stage_work / concurrency, furthest_held) + stage_waves * queue
        elif self.first is None:
            # The first wave of the top rung ends after every lower rung (a barrier each).
            self.first = self.wall - (last[0] - 1) * last[1]


def walk_stage(
    stage: Stage,
    setup: Decimal,
    per_epoch: Decimal,
    cap: TrialCap | None,
    held: Callable[[Decimal], Decimal],
) -> tuple[TrialPath, Decimal, list[tuple[Decimal, Decimal, Decimal]]]:
    """One trial of ``stage`` taken up its rungs under the cap.

    Returns its path, what it would hold without the cap, and per rung the trials, the
    useful hours and the held hours each spends there.
    """
    path = TrialPath()
    uncut = exact = counted = Decimal(0)
    runs: list[tuple[Decimal, Decimal, Decimal]] = []
    for rung in stage.rungs:
        start = setup * rung.launches
        # NOTE: rounded as a running total, so a trial's rungs add up to its whole path
        # rounded once: rounded one by one, two rungs of a resumed trial came to a nanohour
        # more than the same epochs in one, and the worst case fell below the expected.
        exact += start + rung.epochs * per_epoch
        run = round_hours(exact) - counted
        counted += run
        uncut += held(run)
        run, billed = advance(path, rung, run, start, per_epoch, cap, held)
        runs.append((rung.trials, run, billed))
    return path, uncut, runs


def furthest_path(
    stages: tuple[Stage, ...],
    paths: list[TrialPath],
    uncut: list[Decimal],
    cap: TrialCap | None,
    notes: bool = True,
) -> tuple[TrialPath, Cut | None, tuple[str, ...]]:
    """The trial that trains furthest, and where the cap cut it, with the note saying so."""
    index = max(range(len(paths)), key=lambda i: paths[i].trained)
    furthest = paths[index]
    if cap is None or not furthest.cut:
        return furthest, None, ()
    target = max(stage.rungs[-1].reached for stage in stages)
    every = all(p.cut for p in paths)
    cut = Cut(furthest.held, furthest.trained, target, cap.field, uncut[index])
    return furthest, cut, (cut_note(cap, cut, every),) if notes else ()


def round_hours(hours: Decimal) -> Decimal:
    """Hours (or money) to the nanohour: sums of rungs then add up as the whole does."""
    # NOTE: 7 min × 60 / 60 must be exactly 7 h, or a trial at a limit would "exceed" it by
    # a 28th-digit rounding error; a nanohour is far below anything a scheduler measures.
    return hours.quantize(_NANOHOUR) if hours.adjusted() < 18 else hours


_NANOHOUR = Decimal("1e-9")
_CEILING = Decimal(str(MAX_FACTOR))
