"""The ``kind: Experiment`` spec: what a team plans to run, as strict pydantic models.

Field names equal the YAML keys so that validation errors map straight back to a line
and column. Every model forbids unknown keys; :mod:`gate.spec.validation` adds "did you mean".
"""

from __future__ import annotations

import re
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gate.money import Money
from gate.spec.mig import mig_problem, slice_share

MAX_COUNT = 10**12
"""The most of anything countable (trials, epochs, GPUs, samples): past it, a typo."""
SMALLEST = 1e-6
"""The smallest positive time, rate or size: below it a float loses its meaning (5e-324
minutes is zero once divided), so a spec that small is refused, not priced."""
LARGEST = 1e12
"""The largest time, rate or size (a trillion hours or minutes): past it, a typo."""

PositiveInt = Annotated[StrictInt, Field(gt=0, le=MAX_COUNT)]
# NOTE: numbers are strict (true and "3" are not numbers) but an int is a fine float.
PositiveFloat = Annotated[StrictFloat, Field(ge=SMALLEST, le=LARGEST, allow_inf_nan=False)]
NonNegativeFloat = Annotated[StrictFloat, Field(ge=0, le=LARGEST, allow_inf_nan=False)]
_PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"
"""No control characters: spec strings reach terminals, CI logs and PR comments."""
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=_PRINTABLE)]
Text = Annotated[str, Field(max_length=200, pattern=_PRINTABLE)]


class Model(BaseModel):
    """Base for every spec and policy model: unknown keys are errors, values are immutable."""

    # NOTE: a docstring under a field is its description in the JSON Schema (editors show
    # it); ``budget-gate schema`` reads them from the source, so validation pays nothing.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Capacity(str, Enum):
    """How the GPUs are bought."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED = "reserved"


class Precision(str, Enum):
    """Training numeric precision; fp32 on tensor-core GPUs wastes about half the GPU-hours."""

    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"


class Strategy(str, Enum):
    """Search strategy; the successive-halving family is priced as an upper bound for now."""

    GRID = "grid"
    RANDOM = "random"
    BAYESIAN = "bayesian"
    SUCCESSIVE_HALVING = "successive_halving"
    HYPERBAND = "hyperband"
    ASHA = "asha"


class Metadata(Model):
    """Who owns the experiment and how its spend is attributed."""

    name: Name
    """The experiment's name, as reports and the ledger show it."""
    team: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=63)] | None = None
    """The team whose policy applies: policies/<team>.yaml (else the default policy, said in the
    output)."""
    owner: Name | None = None
    """Who runs the experiment; they may not approve it unless the policy allows self-approval."""
    labels: dict[Name, Text] = Field(default_factory=dict)
    """Attribution labels such as cost-center, environment, workload-type and model; a policy can
    require some."""


class Resources(Model):
    """The hardware each trial holds (whole GPUs, or MIG slices of one profile)."""

    accelerator: Name
    """The GPU model, a key of the price catalog (budget-gate prices lists them) or of the
    policy's price overrides."""
    gpus_per_trial: PositiveInt
    """GPUs one trial holds (whole GPUs; with mig_profile, MIG slices)."""
    mig_profile: Annotated[str, Field(pattern=r"^[1-7]g\.[0-9]+gb$")] | None = None
    """A MIG profile such as 1g.10gb: each trial holds slices of one GPU, priced as its share."""
    capacity: Capacity = Capacity.ON_DEMAND
    """How the GPUs are bought: on-demand, spot (preemptible) or reserved."""
    cloud: Name | None = None
    """The cloud whose catalog price applies (default: the policy's prices.cloud, else the
    dearest)."""
    precision: Precision = Precision.FP32
    """The numeric precision training uses: fp32, tf32, fp16, bf16 or fp8."""
    checkpoint_every_minutes: PositiveFloat | None = None
    """How often a trial checkpoints; on spot, the work lost to each preemption."""

    @field_validator("mig_profile")
    @classmethod
    def _real_mig_slice(cls, profile: str | None, info: ValidationInfo) -> str | None:
        accelerator, slices = info.data.get("accelerator"), info.data.get("gpus_per_trial")
        if profile is not None and isinstance(accelerator, str) and isinstance(slices, int):
            problem = mig_problem(accelerator, profile, slices)
            if problem is not None:
                raise ValueError(problem)
        return profile

    @property
    def gpu_share(self) -> Decimal:
        """Fraction of a whole GPU each unit is: a MIG ``Ng.*`` slice is N compute slices.

        N/7 on an A100 or H100, N/4 on an A30 (:mod:`gate.spec.mig`).
        """
        if self.mig_profile is None:
            return Decimal(1)
        return slice_share(self.accelerator, self.mig_profile)


class Range(Model):
    """An uncertain input: the worst case takes ``high``, the expected case the middle."""

    low: PositiveFloat
    """The lowest value of the range."""
    high: PositiveFloat
    """The highest value of the range."""

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.low > self.high:
            raise ValueError("low is above high — swap them, or give a single number")
        return self


def _exponent(value: Any) -> Any:
    """``8.0e9``, which YAML 1.1 reads as text (it wants ``8.0e+9``), as the number meant."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]+(\.[0-9]*)?[eE][0-9]+", value.strip()):
        return float(value)
    return value


Size = Annotated[
    float,
    BeforeValidator(_exponent),
    Field(gt=0, le=1e30, allow_inf_nan=False, strict=True),
]
"""A model size or FLOP count: a positive number; ``8.0e9`` is read as a number."""


FLOPS_PER_PARAMETER_TOKEN = 6
"""Training FLOPs per parameter per token: forward 2, backward 4."""


class ModelSize(Model):
    """The model instead of an epoch time: parameters × tokens, or FLOPs per sample.

    The estimate turns it into an epoch time with 6·N·D ÷ (peak FLOP/s × GPUs × MFU).
    """

    parameters: Size | None = None
    """The model's parameter count N, e.g. 8.0e9."""
    tokens_per_epoch: Size | None = None
    """Tokens D one epoch trains on; an epoch costs 6·N·D FLOPs."""
    flops_per_sample: Size | None = Field(
        default=None,
        description="Training FLOPs per sample (forward and backward); with train_samples.",
    )

    @model_validator(mode="after")
    def _one_size(self) -> ModelSize:
        by_tokens = self.parameters is not None or self.tokens_per_epoch is not None
        if by_tokens == (self.flops_per_sample is not None):
            raise ValueError(
                "give parameters and tokens_per_epoch, or flops_per_sample (with "
                "workload.train_samples)"
            )
        if by_tokens and (self.parameters is None or self.tokens_per_epoch is None):
            raise ValueError("the model size is incomplete — give parameters and tokens_per_epoch")
        return self


class Workload(Model):
    """How long one trial trains: epochs × epoch time, plus setup and evaluation."""

    max_epochs: PositiveInt
    """Epochs a trial trains at most."""
    epoch_minutes: PositiveFloat | Range | None = None
    """Minutes one epoch takes on gpus_per_trial GPUs (or give samples_per_second and
    train_samples)."""
    samples_per_second: PositiveFloat | None = Field(
        default=None,
        description=(
            "Training throughput of one trial on all its gpus_per_trial GPUs together "
            "(not per GPU); with train_samples it sets the epoch time."
        ),
    )
    train_samples: PositiveInt | None = None
    """Training samples in one epoch, with samples_per_second."""
    model: ModelSize | None = None
    """The model's size, for a FLOPs prior of the epoch time when no epoch_minutes is given."""
    setup_minutes: NonNegativeFloat = 0.0
    """Minutes a trial holds its GPUs before training (image pull, data loading)."""
    eval_overhead: Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0
    """Fraction added to each epoch for validation and checkpoints (0.1 = 10 %; at most 1)."""

    @model_validator(mode="after")
    def _one_epoch_time(self) -> Workload:
        if self.model is not None:
            return self._model_only()
        has_rate = self.samples_per_second is not None or self.train_samples is not None
        if self.epoch_minutes is None and not has_rate:
            raise ValueError(
                "no epoch time — add epoch_minutes, samples_per_second and train_samples, "
                "or the model's size (workload.model)"
            )
        if self.epoch_minutes is not None and has_rate:
            raise ValueError(
                "epoch time given twice — keep epoch_minutes or samples_per_second/train_samples"
            )
        if has_rate and (self.samples_per_second is None or self.train_samples is None):
            raise ValueError(
                "throughput is incomplete — give both samples_per_second and train_samples"
            )
        return self

    def _model_only(self) -> Workload:
        assert self.model is not None
        if self.epoch_minutes is not None or self.samples_per_second is not None:
            raise ValueError(
                "epoch time given twice — keep workload.model or the declared epoch time"
            )
        if (self.model.flops_per_sample is not None) != (self.train_samples is not None):
            raise ValueError("flops_per_sample and train_samples go together — give both")
        return self

    @property
    def epoch_flops(self) -> float | None:
        """Training FLOPs of one epoch from :attr:`model` (6·N·D, or per sample × samples)."""
        model = self.model
        if model is None:
            return None
        if model.flops_per_sample is not None and self.train_samples is not None:
            return model.flops_per_sample * self.train_samples
        assert model.parameters is not None and model.tokens_per_epoch is not None
        return FLOPS_PER_PARAMETER_TOKEN * model.parameters * model.tokens_per_epoch

    @property
    def declares_epoch_time(self) -> bool:
        """Whether the spec states an epoch time (else the model's size sets it)."""
        return self.model is None

    def epoch_minutes_for(self, scenario: Literal["worst", "expected"]) -> Decimal:
        """Minutes per epoch: the high end of a range for the worst case, its middle otherwise."""
        value = self.epoch_minutes
        if isinstance(value, Range):
            low, high = Decimal(str(value.low)), Decimal(str(value.high))
            return high if scenario == "worst" else (low + high) / 2
        if value is not None:
            return Decimal(str(value))
        if self.samples_per_second is None or self.train_samples is None:
            raise ValueError(
                "the epoch time comes from workload.model (the estimate's FLOPs prior)"
            )
        return Decimal(self.train_samples) / Decimal(str(self.samples_per_second)) / 60


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

    @model_validator(mode="after")
    def _values_or_range(self) -> Parameter:
        has_range = self.low is not None or self.high is not None
        if self.values is None and not has_range:
            raise ValueError("no values — give values: [...] or a range with low and high")
        if self.values is not None and has_range:
            raise ValueError("both values and a range — keep values: [...] or low/high")
        if has_range and (self.low is None or self.high is None or self.low > self.high):
            raise ValueError("the range is empty or open — give low and high with low <= high")
        return self

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

    @model_validator(mode="after")
    def _halving_possible(self) -> Scheduler:
        if self.reduction_factor < 1.1:
            raise ValueError(
                f"reduction_factor {self.reduction_factor:g} keeps (nearly) every trial — use "
                "1.1 or more (2, 3 or 4 are usual)"
            )
        if self.max_epochs is not None and self.max_epochs < self.min_epochs:
            raise ValueError("max_epochs is below min_epochs — raise max_epochs")
        return self


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

    @model_validator(mode="after")
    def _trials_bounded(self) -> Search:
        # NOTE: Hyperband's brackets fix the number of configurations when max_trials is unset.
        unbounded = self.strategy not in (Strategy.GRID, Strategy.HYPERBAND)
        if unbounded and self.max_trials is None:
            raise ValueError(
                f"strategy {self.strategy.value} has no max_trials — add max_trials: N, "
                "or use strategy: grid"
            )
        return self


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


class Condition(Model):
    """One quality-gate condition; a ``*`` in the metric name means every matching metric."""

    metric: Name
    """A logged metric name; * matches any characters (every match must pass)."""
    op: Literal[">=", ">", "<=", "<", "=="]
    """The comparison the metric's final value must satisfy."""
    value: StrictFloat
    """The threshold."""


class Tracking(Model):
    """Where the runs are recorded."""

    mlflow_experiment: Name | None = None
    """The MLflow experiment whose runs reconcile reads."""


class Experiment(Model):
    """A whole ``kind: Experiment`` document."""

    api_version: Literal["budget-gate/v1"] = Field(alias="apiVersion")
    """Always budget-gate/v1."""
    kind: Literal["Experiment"]
    """Always Experiment."""
    metadata: Metadata
    """Name, team, owner and attribution labels."""
    resources: Resources
    """The hardware each trial holds."""
    workload: Workload
    """How long one trial trains."""
    search: Search = Field(default_factory=Search)
    """What is searched, and how many trials run."""
    stopping: Stopping = Field(default_factory=Stopping)
    """What ends a trial early."""
    quality_gate: list[Condition] = Field(default_factory=list)
    """Conditions every qualified model meets; reconcile counts the runs that do."""
    deadline_hours: PositiveFloat | None = None
    """Hours by which the search must finish; the wall-clock is checked against it."""
    tracking: Tracking = Field(default_factory=Tracking)
    """Where the runs are tracked."""
