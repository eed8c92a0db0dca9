"""Public home of the MLflow run tags: ``gate.tracking.run_tags`` and the tag names.

Launch scripts and training code import this module by this name; the tags live in
:mod:`gate.ledger.tracking`, beside the ledger and the reconciler that read them.
"""

from __future__ import annotations

import os
from pathlib import Path

from gate.ledger.tracking import (
    ACCELERATOR,
    APPROVAL_ID,
    ATTEMPT,
    CAPACITY,
    COST_CENTER,
    COST_CENTER_LABEL,
    EVAL_SECONDS,
    EXPERIMENT,
    FINGERPRINT,
    FLOPS_PER_EPOCH,
    GPUS,
    MIG_PROFILE,
    PREFIX,
    SETUP_SECONDS,
    SPEC,
    STOP_EPOCH,
    STOP_KIND,
    STOP_REASON,
    STOP_SPEND,
    STOPPED_BY,
    SUBMITTED_AT,
    TEAM,
    TRAIN_FLOPS,
    TRAIN_SECONDS,
    TRIAL_ID,
    spec_path,
    spec_tags,
)
from gate.spec.experiment import Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import load_file
from gate.spec.validation import validate

__all__ = [
    "ACCELERATOR",
    "APPROVAL_ID",
    "ATTEMPT",
    "CAPACITY",
    "COST_CENTER",
    "COST_CENTER_LABEL",
    "EVAL_SECONDS",
    "EXPERIMENT",
    "FINGERPRINT",
    "FLOPS_PER_EPOCH",
    "GPUS",
    "MIG_PROFILE",
    "PREFIX",
    "SETUP_SECONDS",
    "SPEC",
    "STOPPED_BY",
    "STOP_EPOCH",
    "STOP_KIND",
    "STOP_REASON",
    "STOP_SPEND",
    "SUBMITTED_AT",
    "TEAM",
    "TRAIN_FLOPS",
    "TRAIN_SECONDS",
    "TRIAL_ID",
    "run_tags",
    "spec_path",
    "spec_tags",
]


def run_tags(
    path: str | Path,
    *,
    trial_id: str | int | None = None,
    approval_id: str | None = None,
    attempt: int | None = None,
) -> dict[str, str]:
    """Read the spec at ``path`` and return the tags for one of its training runs.

    The spec's path is recorded as the ledger records it: relative to the root of the git
    work tree that holds it, wherever the launcher runs (a launcher in ``experiments/``
    tags ``experiments/sweep.yaml``, not ``sweep.yaml``, which no command would find);
    outside a work tree, the path as given. ``attempt`` numbers the retries of one trial (1
    for the first run); reconciliation groups runs by trial id and charges every attempt.
    See :mod:`gate.ledger.tracking` for what else a run should log.

    Example, in a launch script::

        mlflow.set_tags(gate.tracking.run_tags("experiments/sweep.yaml", trial_id=7))

    Raises:
        gate.errors.InputError: the spec is not valid (the same errors ``check`` prints).
    """
    spec = validate(Experiment, load_file(path))
    trial = None if trial_id is None else str(trial_id)
    return spec_tags(
        spec,
        fingerprint(spec),
        _in_repository(path),
        trial_id=trial,
        approval_id=approval_id,
        attempt=attempt,
    )


def _in_repository(path: str | Path) -> str:
    from gate.integrations.git.repo import repository_root

    resolved = Path(os.path.abspath(path))
    root = repository_root(resolved.parent)
    if root is None:
        return spec_path(path)
    return resolved.relative_to(root).as_posix()
