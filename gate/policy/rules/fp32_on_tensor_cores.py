"""FP32 training on a GPU with tensor cores.

On tensor-core GPUs (V100 and newer: A100, H100, L4, ...) bf16 or fp16 mixed precision
roughly halves the GPU-hours for the same batch. A spec without ``precision`` is read as
fp32, the framework default. The finding prices the same work in bf16 at a stated 2×
speed-up (the epoch time halved; setup and evaluation overhead as they are): the expected
cost saved.

Passes::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}

Fails::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: fp32}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.counterfactual import BF16_SPEEDUP, TENSOR_CORE_GPUS, bf16_edits, reprice
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money
from gate.spec.experiment import Precision

ID = "BG304"
SLUG = "fp32-on-tensor-cores"
TITLE = "FP32 on a tensor-core GPU"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag fp32 on an accelerator known to have tensor cores."""
    resources = ctx.spec.resources
    if resources.precision is Precision.FP32 and resources.accelerator in TENSOR_CORE_GPUS:
        yield Violation(
            f"fp32 on {resources.accelerator}: bf16/fp16 mixed precision roughly halves "
            f"GPU-hours{_saving(ctx)}",
            ("resources", "precision")
            if "precision" in ctx.spec.resources.model_fields_set
            else ("resources",),
        )


def _saving(ctx: RuleContext) -> str:
    """``: bf16 at the stated 2× speed-up saves 120.00 of 240.00 USD (expected case)``."""
    bf16 = reprice(ctx.spec, ctx.policy, ctx.estimate.quote, bf16_edits(ctx.spec))
    if bf16 is None:
        return ""
    now = ctx.estimate.expected.cost
    return (
        f": bf16 at the stated {BF16_SPEEDUP}× speed-up saves "
        f"{money(now - bf16.expected.cost, ctx)} of {money(now, ctx)} (expected case)"
    )
