"""How many trials run and what ends each: the search (space, strategy, scheduler), stopping."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from gate.model import Field, Model, StrictBool, StrictFloat, StrictInt, model_check
from gate.money import Money
from gate.spec.base import Name, NonNegativeFloat, PositiveFloat, PositiveInt


class Strategy(str, Enum):
    """Search strategy; the successive-halving family is priced as an upper bound for now."""

    GRID = "grid"
    RANDOM = "random"
    BAYESIAN = "bayesian"
    SUCCESSIVE_HALVING = "successive_halving"
    HYPERBAND = "hyperband"
    ASHA = "asha"


HALVING = (Strategy.SUCCESSIVE_HALVING, Strategy.HYPERBAND, Strategy.ASHA)
"""The strategies that run a scheduler's rungs; every other one ignores ``scheduler``."""


class Parameter(Model):
    """One search dimension: a list of values, or a continuous range."""

    values: Annotated[list[Any], Field(min_length=1)] | None = None
    """The discrete values to try (a grid multiplies the counts of every parameter)."""
    low: StrictFloat | None = None
    """The lowest value of a continuous range (not allowed in a grid)."""
    high: StrictFloat | None = None
    """The highest value of a continuous range."""
    log: StrictBool = False
    """Sample the range on a log scale."""

    @model_check
    def _values_or_range(self) -> None:
        has_range = self.low is not None or self.high is not None
        if self.values is None and not has_range:
            raise ValueError("no values — give values: [...] or a range with low and high")
        if self.values is not None and has_range:
            raise ValueError("both values and a range — keep values: [...] or low/high")
        if has_range and (self.low is None or self.high is None or self.low > self.high):
            raise ValueError("the range is empty or open — give low and high with low <= high")
        if self.log and self.low is not None and self.low <= 0:
            raise ValueError("a log range needs low above 0 — raise low, or drop log: true")

    @property
    def is_continuous(self) -> bool:
        """Whether this dimension is a range that no grid can enumerate."""
        return self.values is None


class Scheduler(Model):
    """Successive-halving family: rungs from min_epochs up to max_epochs, keeping 1/η each."""

    min_epochs: PositiveInt = 1
    """Epochs every trial trains before its first rung (r)."""
    max_epochs: PositiveInt | None = None
    """Epochs a trial trains at most (R; default: workload.max_epochs)."""
    reduction_factor: Annotated[StrictFloat, Field(le=1000, allow_inf_nan=False)] = 3.0
    """The halving rate η: 1/η of the trials at a rung go on."""
    brackets: PositiveInt | None = None
    """Hyperband brackets to run (default: all of them)."""
    resume: StrictBool = True
    """Promoted trials continue from their checkpoint instead of restarting."""
    synchronous: StrictBool | None = None
    """Rungs wait for every trial (Li et al.) or promote as trials report (ASHA, Optuna)."""

    @model_check
    def _halving_possible(self) -> None:
        if self.reduction_factor < 1.1:
            raise ValueError(
                f"reduction_factor {self.reduction_factor:g} keeps (nearly) every trial — use "
                "1.1 or more (2, 3 or 4 are usual)"
            )
        if self.max_epochs is not None and self.max_epochs < self.min_epochs:
            raise ValueError("max_epochs is below min_epochs — raise max_epochs")


class Search(Model):
    """The hyperparameter search: how many trials run, and how many at once."""

    strategy: Strategy = Strategy.GRID
    """grid, random, bayesian, successive_halving, hyperband or asha."""
    parameters: dict[str, Parameter] = Field(default_factory=dict)
    """The search space, by parameter name."""
    seeds: Annotated[list[StrictInt], Field(min_length=1)] = Field(default_factory=lambda: [0])
    """Seeds each configuration runs with; every seed is a trial."""
    max_trials: PositiveInt | None = None
    """Configurations to sample (random, bayesian, asha)."""
    max_concurrent_trials: PositiveInt = 1
    """Trials that run at once; sets the waves of the wall-clock."""
    scheduler: Scheduler | None = None
    """The successive-halving family's rungs."""

    @model_check
    def _trials_bounded(self) -> None:
        # NOTE: Hyperband's brackets fix the number of configurations when max_trials is unset.
        unbounded = self.strategy not in (Strategy.GRID, Strategy.HYPERBAND)
        if unbounded and self.max_trials is None:
            raise ValueError(
                f"strategy {self.strategy.value} has no max_trials — add max_trials: N, "
                "or use strategy: grid"
            )

    @model_check
    def _asha_is_asynchronous(self) -> None:
        # NOTE: ASHA promotes as trials report: in its worst case every trial is promoted.
        # Declared synchronous, it was priced with rung barriers' floors, a fifth of that.
        if self.strategy is Strategy.ASHA and self.scheduler and self.scheduler.synchronous:
            raise ValueError(
                "strategy asha is asynchronous, but scheduler.synchronous is true — drop "
                "synchronous, or use strategy: successive_halving for rungs that wait"
            )


class LearningCurve(Model):
    """Assumed shape of the monitored metric, for the expected early-stopping epoch.

    The metric gains ``total_gain`` in all, and its per-epoch improvement halves every
    ``half_life_epochs``.
    """

    total_gain: PositiveFloat
    """How much the monitored metric improves over the whole training."""
    half_life_epochs: PositiveFloat
    """Epochs in which half of that gain is made."""


class EarlyStopping(Model):
    """Stop a trial once the monitored metric stops improving by min_delta for patience epochs."""

    monitor: Name
    """The metric early stopping watches, e.g. val_loss."""
    mode: Literal["min", "max"] = "min"
    """min when the metric improves downward, max when upward."""
    patience: PositiveInt
    """Epochs without improvement before a trial stops."""
    min_delta: NonNegativeFloat = 0.0
    """The smallest change that counts as an improvement."""
    expected_plateau_epoch: PositiveInt | None = None
    """Where you expect the metric to go flat, for the expected case."""
    learning_curve: LearningCurve | None = None
    """The expected shape of the metric, from which the plateau is derived."""


class Stopping(Model):
    """Stop conditions that bound each trial."""

    early_stopping: EarlyStopping | None = None
    """Stop a trial when its metric stops improving."""
    max_trial_hours: PositiveFloat | None = None
    """Hours a trial may hold its GPUs before it is stopped."""
    max_trial_cost: Annotated[Money, Field(gt=0)] | None = None
    """Cost a trial may reach before it is stopped, in the policy's currency."""
