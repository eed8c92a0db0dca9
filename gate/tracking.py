"""MLflow tag names shared by launch scripts, the ledger and reconciliation, and run tagging.

Training runs tagged with :func:`run_tags` can be found again by reconciliation: the spec
fingerprint ties a run to the approved spec, the trial id to its trial. Nothing here imports
MLflow; launch scripts pass the dict to ``mlflow.set_tags`` themselves.
"""

from __future__ import annotations

from pathlib import Path

from gate.fingerprint import fingerprint
from gate.loader import load_file
from gate.spec import Experiment
from gate.validation import validate

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

COST_CENTER_LABEL = "cost-center"


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
) -> dict[str, str]:
    """Tags that identify a training run of ``spec`` (pure); unset values are left out."""
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
    }
    return {key: value for key, value in tags.items() if value is not None}


def run_tags(
    path: str | Path, *, trial_id: str | int | None = None, approval_id: str | None = None
) -> dict[str, str]:
    """Read the spec at ``path`` and return the tags for one of its training runs.

    Example, in a launch script::

        mlflow.set_tags(gate.tracking.run_tags("experiments/sweep.yaml", trial_id=7))

    Raises:
        gate.errors.InputError: the spec is not valid (the same errors ``check`` prints).
    """
    spec = validate(Experiment, load_file(path))
    trial = None if trial_id is None else str(trial_id)
    return spec_tags(spec, fingerprint(spec), path, trial_id=trial, approval_id=approval_id)
