"""The same spec with a few keys changed, validated and priced again (pure).

Fixes (:mod:`gate.policy.fixes`), the waste rules that put money on a practice (BG301,
BG302, BG304) and the cheaper plans of ``estimate --alternatives`` all price a spec that
differs from the one written by a few edits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal

from gate.errors import InputError
from gate.estimate.measured import EpochTime, Measured
from gate.estimate.model import Estimate
from gate.estimate.prices import Quote
from gate.estimate.scenarios import estimate
from gate.estimate.settings import PricingPolicy
from gate.model import ValidationError, edited
from gate.policy.findings import Edit
from gate.spec.experiment import Experiment
from gate.spec.trial import Range

TENSOR_CORE_GPUS = frozenset(  # V100 and newer
    [
        "V100",
        "V100-32GB",
        "T4",
        "T4g",
        "A10",
        "A10G",
        "A100",
        "A100-80GB",
        "A6000",
        "RTX6000",
        "L4",
        "L40S",
        "H100",
        "H200",
        "GH200",
        "B200",
        "B300",
    ]
)
"""Accelerators with tensor cores, where bf16/fp16 mixed precision pays (BG304)."""

BF16_SPEEDUP = Decimal(2)
"""The stated speed-up of bf16 mixed precision over fp32 on tensor cores (epoch time ÷ 2)."""


def apply_edits(spec: Experiment, edits: Iterable[Edit]) -> Experiment | None:
    """The spec with ``edits`` applied, validated again; ``None`` when it is no longer valid."""
    try:
        return edited(spec, ((edit.path, edit.value) for edit in edits))
    except ValidationError:
        return None


def reprice(
    spec: Experiment,
    policy: PricingPolicy,
    quote: Quote,
    edits: Iterable[Edit],
    measured: Measured | None = None,
) -> Estimate | None:
    """The edited spec's estimate at ``quote``; ``None`` when the edits make it invalid.

    ``measured`` is what the calibration measured for the spec (its estimate's
    ``measured``), so the edit is priced from the same figures as the spec itself. An edit
    the FLOPs prior cannot price (bf16 on a GPU without a bf16 peak) is ``None`` too.
    """
    edited = apply_edits(spec, edits)
    if edited is None:
        return None
    try:
        return estimate(edited, policy, quote, measured=measured, savings=False, notes=False)
    except InputError:
        return None


def bf16_edits(spec: Experiment) -> tuple[Edit, ...]:
    """bf16 precision, with the epoch time divided by :data:`BF16_SPEEDUP`."""
    work = spec.workload
    edits = [Edit(("resources", "precision"), "bf16")]
    minutes = work.epoch_minutes
    if isinstance(minutes, Range):
        low, high = (float(Decimal(str(v)) / BF16_SPEEDUP) for v in (minutes.low, minutes.high))
        edits.append(Edit(("workload", "epoch_minutes"), {"low": low, "high": high}))
    elif minutes is not None:
        edits.append(
            Edit(("workload", "epoch_minutes"), float(Decimal(str(minutes)) / BF16_SPEEDUP))
        )
    elif work.samples_per_second is not None:
        rate = float(Decimal(str(work.samples_per_second)) * BF16_SPEEDUP)
        edits.append(Edit(("workload", "samples_per_second"), rate))
    return tuple(edits)


def bf16_measured(measured: Measured | None) -> Measured | None:
    """The measured figures for the same runs in bf16.

    A measured epoch time is divided by :data:`BF16_SPEEDUP`; a FLOPs prior is dropped, so
    the edited spec's prior is worked out again at the bf16 peak (with the same MFU).
    """
    epoch = measured.epoch if measured is not None else None
    if measured is None or epoch is None:
        return measured
    if epoch.prior:
        return replace(measured, epoch=None)
    halved = EpochTime(
        low=epoch.low / BF16_SPEEDUP,
        median=epoch.median / BF16_SPEEDUP,
        high=epoch.high / BF16_SPEEDUP,
        basis=f"{epoch.basis}, ÷ {BF16_SPEEDUP} for bf16",
    )
    return replace(measured, epoch=halved)


def configurations(spec: Experiment, trials: int) -> int:
    """Configurations a search of ``trials`` tries (trials ÷ seeds), at least one."""
    return max(1, trials // len(spec.search.seeds))
