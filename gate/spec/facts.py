"""The facts a W&B, Katib, SkyPilot or Hydra file cannot hold, in one flat vocabulary.

A team writes them where its engine lets it: a ``# x-budget-gate:`` comment block (W&B,
whose schema refuses unknown keys), an ``x-budget-gate:`` block (Hydra),
``budget-gate/<name>`` annotations (Katib), ``X_BUDGET_GATE_<NAME>`` envs (SkyPilot); a
policy's ``defaults:`` uses the same names for what a team's imported files lack. Each
name is a field of the spec (:data:`FACT_PATHS` says which), so a team that knows the
spec knows the facts.
"""

from __future__ import annotations

from typing import Annotated

from gate.model import Field, Model, StrictInt, fields_of
from gate.money import Money
from gate.spec.base import Name, NonNegativeFloat, PositiveFloat, PositiveInt, Text
from gate.spec.experiment import Condition
from gate.spec.search import EarlyStopping
from gate.spec.trial import Capacity, Precision, Range

EXTENSION_KEY = "x-budget-gate"
"""A Hydra config's top-level block; a W&B sweep writes it as a ``# x-budget-gate:`` comment."""
ANNOTATION_PREFIX = "budget-gate/"
"""Katib: ``metadata.annotations`` keys ``budget-gate/<fact>`` (values are JSON or text)."""
ENV_PREFIX = "X_BUDGET_GATE_"
"""SkyPilot: task ``envs`` named ``X_BUDGET_GATE_<FACT>`` (values are JSON or text); not
``BUDGET_GATE_``, which the admin policy sets on a cleared task for its run tags."""


class Facts(Model):
    """What an engine's file cannot say: the hardware, the epoch time, the quality gate."""

    name: Name | None = None
    """The experiment's name (default: the engine's own name for it, else the file's)."""
    team: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=63)] | None = None
    """The team whose policy applies (metadata.team)."""
    owner: Name | None = None
    """Who runs the experiment (metadata.owner)."""
    labels: dict[Name, Text] | None = None
    """Attribution labels (metadata.labels); ``model`` keys the calibration."""
    accelerator: Name | None = None
    """The GPU model, a key of the price catalog (resources.accelerator)."""
    gpus_per_trial: PositiveInt | None = None
    """GPUs one trial holds (resources.gpus_per_trial)."""
    capacity: Capacity | None = None
    """on-demand, spot or reserved (resources.capacity)."""
    cloud: Name | None = None
    """The cloud whose catalog price applies (resources.cloud)."""
    precision: Precision | None = None
    """fp32, tf32, fp16, bf16 or fp8 (resources.precision)."""
    checkpoint_every_minutes: PositiveFloat | None = None
    """How often a trial checkpoints (resources.checkpoint_every_minutes)."""
    max_epochs: PositiveInt | None = None
    """Epochs a trial trains at most, when no swept parameter says (workload.max_epochs)."""
    epoch_minutes: PositiveFloat | Range | None = None
    """Minutes one epoch takes on gpus_per_trial GPUs (workload.epoch_minutes)."""
    samples_per_second: PositiveFloat | None = None
    """Throughput of one trial, with train_samples (workload.samples_per_second)."""
    train_samples: PositiveInt | None = None
    """Training samples in one epoch (workload.train_samples)."""
    setup_minutes: NonNegativeFloat | None = None
    """Minutes a trial holds its GPUs before training (workload.setup_minutes)."""
    eval_overhead: NonNegativeFloat | None = None
    """Fraction added to each epoch for validation (workload.eval_overhead)."""
    seeds: list[StrictInt] | None = None
    """Seeds each configuration runs with (search.seeds)."""
    max_trials: PositiveInt | None = None
    """Trials a SkyPilot task's sweep runs (search.max_trials); the engines' own counts win."""
    max_concurrent_trials: PositiveInt | None = None
    """Trials at once, where the engine does not say (search.max_concurrent_trials)."""
    early_stopping: EarlyStopping | None = None
    """The training loop's early stopping (stopping.early_stopping)."""
    max_trial_hours: PositiveFloat | None = None
    """Hours a trial may run (stopping.max_trial_hours)."""
    max_trial_cost: Annotated[Money, Field(gt=0)] | None = None
    """Cost a trial may reach (stopping.max_trial_cost)."""
    quality_gate: list[Condition] | None = None
    """What makes a run a qualified model (quality_gate)."""
    deadline_hours: PositiveFloat | None = None
    """Hours by which the search must finish (deadline_hours)."""
    mlflow_experiment: Name | None = None
    """The MLflow experiment of the runs (tracking.mlflow_experiment)."""


FACT_PATHS: dict[str, tuple[str, ...]] = {
    "name": ("metadata", "name"),
    "team": ("metadata", "team"),
    "owner": ("metadata", "owner"),
    "labels": ("metadata", "labels"),
    "accelerator": ("resources", "accelerator"),
    "gpus_per_trial": ("resources", "gpus_per_trial"),
    "capacity": ("resources", "capacity"),
    "cloud": ("resources", "cloud"),
    "precision": ("resources", "precision"),
    "checkpoint_every_minutes": ("resources", "checkpoint_every_minutes"),
    "max_epochs": ("workload", "max_epochs"),
    "epoch_minutes": ("workload", "epoch_minutes"),
    "samples_per_second": ("workload", "samples_per_second"),
    "train_samples": ("workload", "train_samples"),
    "setup_minutes": ("workload", "setup_minutes"),
    "eval_overhead": ("workload", "eval_overhead"),
    "seeds": ("search", "seeds"),
    "max_trials": ("search", "max_trials"),
    "max_concurrent_trials": ("search", "max_concurrent_trials"),
    "early_stopping": ("stopping", "early_stopping"),
    "max_trial_hours": ("stopping", "max_trial_hours"),
    "max_trial_cost": ("stopping", "max_trial_cost"),
    "quality_gate": ("quality_gate",),
    "deadline_hours": ("deadline_hours",),
    "mlflow_experiment": ("tracking", "mlflow_experiment"),
}
"""Each fact's place in the spec."""

assert set(FACT_PATHS) == set(fields_of(Facts))
