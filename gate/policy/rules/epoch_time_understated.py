"""The spec declares a faster epoch, or an earlier plateau, than its runs measured.

With a calibration file (``budget-gate calibrate``, committed as
``policies/calibration.json``) the estimate already prices the measured figures; this
rule makes an understated spec visible rather than quietly overruled. It fires when the
declared epoch time (the expected case's) is more than ``calibration.tolerance`` (20 %
by default) below the measured 10th percentile of the spec's key (model label,
accelerator, GPUs per trial, precision), or when the spec's ``expected_plateau_epoch`` is
that much earlier than the measured 10th-percentile plateau. Runs on a coarser key
(another GPU count or precision) count where the spec's own key has too few: they may raise
the spec's epoch time, never lower it. So do a MIG slice's whole GPUs (the same model,
accelerator and precision on whole GPUs, the same count first), since a slice is never
faster than its whole GPU. A spec that gives its model size (``workload.model``) instead of
an epoch time is held to them alike: its FLOPs prior is the author's word too, and the rule
fires when that prior is the tolerance below the runs' 10th percentile. A label with no
runs that is a typo's distance from a measured one on the same hardware
(``fixture-resnet-18`` beside ``fixture-resnet18``) is held to that model's epoch time too.
Fix the figure in the spec, or say in the pull request why this run will be faster than
every run before it.

Passes (runs of resnet18 on A100 × 1 bf16 measured 3.8–4.6 min an epoch)::

    metadata: {name: sweep, labels: {model: resnet18}}
    resources: {accelerator: A100, gpus_per_trial: 1, precision: bf16}
    workload: {max_epochs: 20, epoch_minutes: 4}

Fails (0.5 min is far below the measured 3.8)::

    metadata: {name: sweep, labels: {model: resnet18}}
    resources: {accelerator: A100, gpus_per_trial: 1, precision: bf16}
    workload: {max_epochs: 20, epoch_minutes: 0.5}
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from gate.estimate.measured import EpochTime, minutes_text
from gate.ledger.tracking import MODEL_LABEL
from gate.money import to_decimal
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG308"
SLUG = "epoch-time-understated"
TITLE = "Declared epoch time or plateau below what runs measured"
DEFAULT_SEVERITY = Severity.APPROVAL


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag a declared epoch time or plateau beyond the tolerance below the measured low."""
    measured = ctx.estimate.measured
    if measured is None:
        return
    keep = 1 - to_decimal(ctx.policy.calibration.tolerance)
    prior = measured.epoch.raised if measured.epoch is not None else None
    if (
        measured.epoch is not None
        and prior is not None
        and prior.median < measured.epoch.low * keep
    ):
        yield _prior_under(ctx, measured.epoch, prior.median)
    if not ctx.spec.workload.declares_epoch_time:
        return
    work = ctx.spec.workload
    epoch = measured.epoch
    declared = work.epoch_minutes_for("expected")
    if epoch is not None and not epoch.prior and declared < epoch.low * keep:
        field = "epoch_minutes" if work.epoch_minutes is not None else "samples_per_second"
        why = f"; {epoch.floor}" if epoch.floor else ""
        yield Violation(
            f"epoch time {declared.normalize():f} min is below the measured "
            f"{minutes_text(epoch.low)} (10th percentile of {epoch.basis}{why}) by more than "
            f"the tolerance of {ctx.policy.calibration.tolerance:.0%}: priced at the "
            f"measured median {minutes_text(epoch.median)} min instead",
            ("workload", field),
        )
    near = measured.near
    if epoch is None and near is not None and declared < near[1].low * keep:
        label = ctx.spec.metadata.labels.get(MODEL_LABEL)
        yield Violation(
            f"the model label {label!r} has no measured epoch time, but {near[0]!r}, a "
            f"typo's distance from it, has: if it is that model, the epoch time "
            f"{declared.normalize():f} min is below its measured {minutes_text(near[1].low)} "
            f"(10th percentile of {near[1].basis}) by more than the tolerance of "
            f"{ctx.policy.calibration.tolerance:.0%}",
            ("metadata", "labels", MODEL_LABEL),
        )
    early = ctx.spec.stopping.early_stopping
    low = measured.low_plateau_epoch(work.max_epochs)
    said = early.expected_plateau_epoch if early is not None else None
    if said is not None and low is not None and measured.plateau is not None and said < low * keep:
        yield Violation(
            f"expected_plateau_epoch {said} is earlier than the measured {low} (10th "
            f"percentile of {measured.plateau.basis}, as a share of max_epochs) by more "
            f"than the tolerance: priced at epoch {measured.plateau_epoch(work.max_epochs)}",
            ("stopping", "early_stopping", "expected_plateau_epoch"),
        )


def _prior_under(ctx: RuleContext, epoch: EpochTime, prior: Decimal) -> Violation:
    """The FLOPs prior of ``workload.model`` was under the floor of runs on a coarser key."""
    return Violation(
        f"the FLOPs prior of workload.model gives an epoch time of {minutes_text(prior)} min, "
        f"below the measured floor {minutes_text(epoch.low)} (10th percentile of "
        f"{epoch.basis}; {epoch.floor}) by more than the tolerance of "
        f"{ctx.policy.calibration.tolerance:.0%}: priced at the measured median "
        f"{minutes_text(epoch.median)} min instead",
        ("workload", "model"),
    )
