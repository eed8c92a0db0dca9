"""What each trial costs to run: the hardware it holds (``resources``), how long it trains.

``workload`` gives the epoch time directly, as a throughput, or as the model's size for the
FLOPs prior; a :class:`Range` is an uncertain input the two scenarios read differently.
"""

from __future__ import annotations

import re
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

from gate.model import Before, Field, Model, StrictFloat, field_check, model_check
from gate.spec.base import Name, NonNegativeFloat, PositiveFloat, PositiveInt
from gate.spec.mig import mig_problem, slice_share


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

    @field_check("mig_profile")
    @staticmethod
    def _real_mig_slice(profile: str | None, data: dict[str, Any]) -> None:
        accelerator, slices = data.get("accelerator"), data.get("gpus_per_trial")
        if profile is not None and isinstance(accelerator, str) and isinstance(slices, int):
            problem = mig_problem(accelerator, profile, slices)
            if problem is not None:
                raise ValueError(problem)

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

    @model_check
    def _ordered(self) -> None:
        if self.low > self.high:
            raise ValueError("low is above high — swap them, or give a single number")


def _exponent(value: Any) -> Any:
    """``8.0e9``, which YAML 1.1 reads as text (it wants ``8.0e+9``), as the number meant."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]+(\.[0-9]*)?[eE][0-9]+", value.strip()):
        return float(value)
    return value


Size = Annotated[
    float,
    Field(gt=0, le=1e30, allow_inf_nan=False, strict=True),
    Before(_exponent),  # NOTE: after Field, or pydantic's schema writes gt/le as raw keys
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

    @model_check
    def _one_size(self) -> None:
        by_tokens = self.parameters is not None or self.tokens_per_epoch is not None
        if by_tokens == (self.flops_per_sample is not None):
            raise ValueError(
                "give parameters and tokens_per_epoch, or flops_per_sample (with "
                "workload.train_samples)"
            )
        if by_tokens and (self.parameters is None or self.tokens_per_epoch is None):
            raise ValueError("the model size is incomplete — give parameters and tokens_per_epoch")


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

    @model_check
    def _one_epoch_time(self) -> None:
        if self.model is not None:
            self._model_only()
            return
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

    def _model_only(self) -> None:
        assert self.model is not None
        if self.epoch_minutes is not None or self.samples_per_second is not None:
            raise ValueError(
                "epoch time given twice — keep workload.model or the declared epoch time"
            )
        if (self.model.flops_per_sample is not None) != (self.train_samples is not None):
            raise ValueError("flops_per_sample and train_samples go together — give both")

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
