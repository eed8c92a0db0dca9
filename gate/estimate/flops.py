"""The FLOPs prior: an epoch time from the model's size when no run has measured it (pure).

Training takes about 6 FLOPs per parameter per token (forward 2, backward 4), so an epoch
is 6·N·D FLOPs, or ``flops_per_sample × train_samples`` (``Workload.epoch_flops``); the
GPUs deliver their dense peak at the spec's precision (``gate/data/peak_flops.json``:
NVIDIA's datasheets, as PyTorch Lightning tabulates them) times the model FLOPs
utilization: the MFU ``budget-gate calibrate`` measured on the model's runs, else the
policy's ``estimation.mfu`` (0.35 unless it says otherwise). :func:`epoch_minutes` is the pure
formula, for anyone pricing "what bf16 would cost".
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path

from gate.errors import InputError
from gate.estimate.measured import EpochTime, Measured, minutes_text, raise_to
from gate.money import to_decimal
from gate.spec.experiment import Experiment

_DATA = Path(__file__).resolve().parent.parent / "data"
"""The package's data (see :data:`gate.estimate.prices._DATA`)."""


@dataclass(frozen=True, slots=True)
class Peaks:
    """Dense peak FLOP/s per GPU by accelerator and precision, with source and date."""

    source: str
    date: str
    peaks: dict[str, dict[str, float]]

    def peak(self, accelerator: str, precision: str) -> float | None:
        """The dense peak of one GPU at ``precision``; ``None`` when unknown."""
        return self.peaks.get(accelerator, {}).get(precision)


@functools.cache
def load_peaks() -> Peaks:
    """The packaged table (read once)."""
    raw = json.loads((_DATA / "peak_flops.json").read_text("utf-8"))
    return Peaks(raw["source"], raw["date"], raw["peaks"])


def epoch_minutes(flops: float, peak: float, gpus: Decimal | int, mfu: float) -> Decimal:
    """Minutes for ``flops`` of training on ``gpus`` GPUs of dense ``peak`` FLOP/s at ``mfu``.

    ``gpus`` counts whole GPUs: two ``1g.10gb`` MIG slices of an H100 are 2/7 of one.
    """
    seconds = to_decimal(flops) / (to_decimal(peak) * Decimal(gpus) * to_decimal(mfu))
    return seconds / 60


def with_prior(spec: Experiment, measured: Measured | None, mfu: float) -> Measured | None:
    """``measured``, with the FLOPs prior as its epoch time when nothing measured one.

    Where ``measured.floor`` holds runs of a coarser key (or of a slice's whole GPUs), each
    case prices the larger of the prior and those runs (:func:`_floored`).

    The MFU is the calibration's, measured on the spec's model, when it has one
    (``measured.mfu``: its median for the expected case, its 10th percentile for the
    worst), else ``mfu``, the policy's.

    Raises:
        gate.errors.InputError: the spec gives its model size on an accelerator or at a
            precision the peak table lacks.
    """
    flops = spec.workload.epoch_flops
    if flops is None or (measured is not None and measured.epoch is not None):
        return measured
    resources_ = spec.resources
    precision = resources_.precision.value
    table = load_peaks()
    peak = table.peak(resources_.accelerator, precision)
    if peak is None:
        raise InputError(
            f"no dense peak FLOP/s for {resources_.accelerator} at {precision}, which the "
            "FLOPs prior needs",
            hint="give workload.epoch_minutes instead of workload.model, or a precision the "
            "accelerator has",
        )
    gpus = resources_.gpus_per_trial
    # NOTE: a MIG slice has its share of the GPU's compute: 1g.10gb of an H100 is 1/7 of the
    # peak, so its epoch takes 7 times as long (priced at the whole GPU's speed, it cost 1/7)
    share = resources_.gpu_share
    units = Decimal(gpus) * share
    measured_mfu = measured.mfu if measured is not None else None
    if measured_mfu is not None:  # the fastest epoch comes from the highest MFU
        fast, typical, slow = measured_mfu.high, measured_mfu.median, measured_mfu.low
        said = f"MFU {typical:.3g}: median of {measured_mfu.basis}; the policy says {mfu:g}"
    else:
        fast = typical = slow = mfu
        said = f"MFU {mfu:g} (policy estimation.mfu)"
    held = f"{gpus} GPU{'s' if gpus != 1 else ''}"
    if share != 1:
        each = f"({share:.3g} GPU each)"
        held = f"{gpus} {resources_.mig_profile} slice{'s' if gpus != 1 else ''} {each}"
    basis = (
        f"FLOPs prior {flops:.3g} FLOPs ÷ ({peak / 1e12:g} TFLOP/s {precision} dense × {held} "
        f"× MFU); {said}; peaks: NVIDIA datasheets, table of {table.date}"
    )
    prior = EpochTime(
        low=epoch_minutes(flops, peak, units, fast),
        median=epoch_minutes(flops, peak, units, typical),
        high=epoch_minutes(flops, peak, units, slow),
        basis=basis,
        prior=True,
    )
    return _floored(measured or Measured(), prior)


def _floored(measured: Measured, prior: EpochTime) -> Measured:
    """``measured`` priced at ``prior``, raised to the runs of ``measured.floor``, if any.

    Runs on a coarser key (another GPU count or precision), or a slice's whole GPUs, may
    raise the model size's epoch time, never lower it, just as they may a declared one:
    each case prices the larger.
    """
    floor = measured.floor
    if floor is None:
        return replace(measured, epoch=prior)
    raised = raise_to(floor, prior.median, prior.high, prior)
    if raised is not None:
        return replace(measured, epoch=raised)
    note = (
        f"calibration's epoch time ({floor.basis}: median {minutes_text(floor.median)}, "
        f"90th percentile {minutes_text(floor.high)} min) not used: {floor.floor}, and the FLOPs "
        "prior is higher in both cases"
    )
    return replace(measured, epoch=prior, notes=(*measured.notes, note))
