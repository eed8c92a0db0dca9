"""Public home of the MLflow run tags: ``gate.tracking.run_tags`` and the tag names.

Launch scripts and training code import this module by this name; the tags live in
:mod:`gate.ledger.tracking`, beside the ledger and the reconciler that read them.
"""

from __future__ import annotations

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
    run_tags,
    spec_path,
    spec_tags,
)

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
