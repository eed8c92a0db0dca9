"""MLflow tag names shared by launch scripts, the ledger and reconciliation, and run tagging.

Training runs tagged with :func:`gate.tracking.run_tags` can be found again by
reconciliation: the spec fingerprint ties a run to the approved spec, the trial id to its
trial. Nothing here imports MLflow or reads a file; launch scripts pass the dict to
``mlflow.set_tags`` themselves.

Run conventions — what a launcher logs so that ``budget-gate reconcile`` can price a run:

- one MLflow run per trial attempt that holds GPUs, in the spec's
  ``tracking.mlflow_experiment``, tagged with :func:`gate.tracking.run_tags` (spec,
  fingerprint, trial id, GPUs, accelerator, capacity, the ``model`` label, precision,
  max_epochs and the monitored metric, which ``budget-gate calibrate`` learns by;
  ``attempt`` 1, 2, … for retries of one trial). Don't tag a parent run that holds no
  GPUs: its time would be charged too;
- time held is the run's own start and end (``mlflow.start_run`` to the end of the
  ``with`` block), so start the run when the GPUs are allocated and end it on release;
  a run still RUNNING is charged up to now; FAILED and KILLED runs are failed runs;
- validation metrics with ``step`` = epoch (``mlflow.log_metrics({...}, step=epoch)``): one
  value of the monitored metric per epoch gives the epochs run and the plateau; the latest
  value of each metric is what the quality gate judges;
- optionally the seconds spent in each phase, as metrics or params named
  :data:`SETUP_SECONDS`, :data:`TRAIN_SECONDS` and :data:`EVAL_SECONDS` (time held beyond
  their sum is idle), and :data:`SUBMITTED_AT` (ISO 8601 with a zone) when the trial was
  queued, so the time to the first qualified model includes the queue;
- optionally :data:`TRAIN_FLOPS`, the FLOPs the run trained, so ``budget-gate calibrate``
  measures its model FLOPs utilization (a spec that gives ``workload.model`` tags its FLOPs
  per epoch, :data:`FLOPS_PER_EPOCH`, and needs nothing more);
- GPU utilization comes from MLflow's system metrics
  (``mlflow.start_run(log_system_metrics=True)``, with ``nvidia-ml-py`` installed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from gate.spec.experiment import Experiment

MAX_TAG_COUNT = 10**12
"""The largest count a tag may carry (GPUs, epochs, an attempt): past it, a typo or a forgery."""


def tag_count(text: str | None) -> int | None:
    """A tag's whole number (``"8"``), or ``None`` for anything else.

    ASCII digits only, up to :data:`MAX_TAG_COUNT`: a training job writes these tags, and
    ``"²".isdigit()`` is true while ``int("²")`` fails; thirty digits overflow the money
    arithmetic downstream.
    """
    if text is None or not (text.isascii() and text.isdigit()) or len(text) > 13:
        return None
    value = int(text)
    return value if value <= MAX_TAG_COUNT else None


PREFIX = "budget_gate."
SPEC = PREFIX + "spec"
FINGERPRINT = PREFIX + "fingerprint"
EXPERIMENT = PREFIX + "experiment"
TEAM = PREFIX + "team"
COST_CENTER = PREFIX + "cost_center"
TRIAL_ID = PREFIX + "trial_id"
GPUS = PREFIX + "gpus"
ACCELERATOR = PREFIX + "accelerator"
CAPACITY = PREFIX + "capacity"
APPROVAL_ID = PREFIX + "approval_id"
ATTEMPT = PREFIX + "attempt"
SUBMITTED_AT = PREFIX + "submitted_at"

# What ``budget-gate calibrate`` learns by: the model label, precision, epochs planned and
# the monitored metric (its plateau is a fraction of max_epochs).
MODEL = PREFIX + "model"
PRECISION = PREFIX + "precision"
MAX_EPOCHS = PREFIX + "max_epochs"
MONITOR = PREFIX + "monitor"
MONITOR_MODE = PREFIX + "monitor_mode"
PATIENCE = PREFIX + "patience"
MIN_DELTA = PREFIX + "min_delta"
EPOCH_MINUTES = PREFIX + "epoch_minutes"
EPOCH_MINUTES_WORST = PREFIX + "epoch_minutes_worst"
FLOPS_PER_EPOCH = PREFIX + "flops_per_epoch"
"""The spec's training FLOPs per epoch (from ``workload.model``), so calibrate can measure MFU."""
MIG_PROFILE = PREFIX + "mig_profile"
"""The MIG slice a run's GPUs are (``1g.10gb``), so calibrate keeps slices apart from GPUs."""

# What the runtime guard leaves on a run it stopped (tags), and the per-epoch cost metric.
STOPPED_BY = PREFIX + "stopped_by"
STOP_KIND = PREFIX + "stop_kind"
STOP_REASON = PREFIX + "stop_reason"
STOP_SPEND = PREFIX + "stop_spend"
STOP_EPOCH = PREFIX + "stop_epoch"
COST_METRIC = PREFIX + "cost"

# Phase durations, as metrics or params of a training run (seconds).
SETUP_SECONDS = PREFIX + "setup_seconds"
TRAIN_SECONDS = PREFIX + "train_seconds"
EVAL_SECONDS = PREFIX + "eval_seconds"

TRAIN_FLOPS = PREFIX + "train_flops"
"""FLOPs the run trained, as a metric or param (e.g. Lightning's ``measure_flops`` × steps)."""

COST_CENTER_LABEL = "cost-center"
MODEL_LABEL = "model"
DEFAULT_MONITOR = ("val_loss", "min")
"""What reconcile monitors when a spec has no early stopping (gate.reconcile.quality)."""


def spec_path(path: str | Path) -> str:
    """The spec path as recorded: normalized, with forward slashes."""
    return Path(path).as_posix()


def spec_tags(
    spec: Experiment,
    fingerprint: str,
    path: str | Path,
    *,
    trial_id: str | None = None,
    approval_id: str | None = None,
    attempt: int | None = None,
) -> dict[str, str]:
    """Tags that identify a training run of ``spec`` (pure); unset values are left out."""
    early = spec.stopping.early_stopping
    monitor, mode = (early.monitor, early.mode) if early is not None else DEFAULT_MONITOR
    tags = {
        SPEC: spec_path(path),
        FINGERPRINT: fingerprint,
        EXPERIMENT: spec.metadata.name,
        TEAM: spec.metadata.team,
        COST_CENTER: spec.metadata.labels.get(COST_CENTER_LABEL),
        GPUS: str(spec.resources.gpus_per_trial),
        ACCELERATOR: spec.resources.accelerator,
        CAPACITY: spec.resources.capacity.value,
        TRIAL_ID: trial_id,
        APPROVAL_ID: approval_id,
        ATTEMPT: None if attempt is None else str(attempt),
        MODEL: spec.metadata.labels.get(MODEL_LABEL),
        PRECISION: spec.resources.precision.value,
        MAX_EPOCHS: str(spec.workload.max_epochs),
        MONITOR: monitor,
        MONITOR_MODE: mode,
        PATIENCE: None if early is None else str(early.patience),
        MIN_DELTA: None if early is None or not early.min_delta else f"{early.min_delta:g}",
        EPOCH_MINUTES: _minutes(spec, "expected"),
        EPOCH_MINUTES_WORST: _minutes(spec, "worst"),
        FLOPS_PER_EPOCH: _flops(spec),
        MIG_PROFILE: spec.resources.mig_profile,
    }
    return {key: value for key, value in tags.items() if value is not None}


def _minutes(spec: Experiment, scenario: Literal["worst", "expected"]) -> str | None:
    """The spec's declared epoch time, so a backtest can compare it with what ran."""
    if not spec.workload.declares_epoch_time:
        return None
    return f"{spec.workload.epoch_minutes_for(scenario).normalize():f}"


def _flops(spec: Experiment) -> str | None:
    flops = spec.workload.epoch_flops
    return None if flops is None else f"{flops:.6g}"
