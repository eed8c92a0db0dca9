"""FP32 training on a GPU with tensor cores.

On tensor-core GPUs (V100 and newer: A100, H100, L4, ...) bf16 or fp16 mixed precision
roughly halves the GPU-hours for the same batch. A spec without ``precision`` is read as
fp32, the framework default. The finding prices the same work in bf16: at a stated 2×
speed-up of the declared (or measured) epoch time, setup and evaluation overhead as they
are; or, for a spec that gives its model's size, by the FLOPs prior at the bf16 dense peak
with the same MFU. It says the expected cost saved.

Passes::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}

Fails::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: fp32}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.estimate.flops import load_peaks
from gate.policy.counterfactual import (
    BF16_SPEEDUP,
    TENSOR_CORE_GPUS,
    bf16_edits,
    bf16_measured,
    reprice,
)
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money
from gate.spec.trial import Precision

ID = "BG304"
SLUG = "fp32-on-tensor-cores"
TITLE = "FP32 on a tensor-core GPU"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag fp32 on an accelerator known to have tensor cores."""
    resources = ctx.spec.resources
    if resources.precision is Precision.FP32 and resources.accelerator in TENSOR_CORE_GPUS:
        yield Violation(
            f"fp32 on {resources.accelerator}: {_saving(ctx)}",
            ("resources", "precision")
            if "precision" in ctx.spec.resources.model_fields_set
            else ("resources",),
        )


def _saving(ctx: RuleContext) -> str:
    """``bf16/fp16 mixed precision roughly halves GPU-hours: bf16 … saves 120.00 of …``."""
    halves = "bf16/fp16 mixed precision roughly halves GPU-hours"
    measured = ctx.estimate.measured
    bf16 = reprice(
        ctx.spec, ctx.policy, ctx.estimate.quote, bf16_edits(ctx.spec), bf16_measured(measured)
    )
    if bf16 is None:  # e.g. a FLOPs prior on a GPU without a bf16 peak (T4, V100)
        return halves
    now = ctx.estimate.expected.cost
    saves = f"saves {money(now - bf16.expected.cost, ctx)} of {money(now, ctx)} (expected case)"
    epoch = measured.epoch if measured is not None else None
    if epoch is not None and epoch.prior:
        peaks = load_peaks()
        accelerator = ctx.spec.resources.accelerator
        fp32, half = peaks.peak(accelerator, "fp32"), peaks.peak(accelerator, "bf16")
        if fp32 is not None and half is not None:
            return (
                f"bf16 mixed precision runs at {half / 1e12:g} against {fp32 / 1e12:g} "
                f"TFLOP/s dense: by the FLOPs prior at the same MFU, bf16 {saves}"
            )
    of = " of the measured epoch time" if epoch is not None else ""
    return f"{halves}: bf16 at the stated {BF16_SPEEDUP}× speed-up{of} {saves}"
