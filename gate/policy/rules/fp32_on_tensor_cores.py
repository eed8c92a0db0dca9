"""FP32 training on a GPU with tensor cores.

On tensor-core GPUs (V100 and newer: A100, H100, L4, ...) bf16 or fp16 mixed precision
roughly halves the GPU-hours for the same batch. A spec without ``precision`` is read as
fp32, the framework default.

Passes::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}

Fails::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: fp32}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.experiment import Precision

ID = "BG304"
SLUG = "fp32-on-tensor-cores"
TITLE = "FP32 on a tensor-core GPU"
DEFAULT_SEVERITY = Severity.WARN

TENSOR_CORE_GPUS = frozenset(
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


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag fp32 on an accelerator known to have tensor cores."""
    resources = ctx.spec.resources
    if resources.precision is Precision.FP32 and resources.accelerator in TENSOR_CORE_GPUS:
        yield Violation(
            f"fp32 on {resources.accelerator}: bf16/fp16 mixed precision roughly halves GPU-hours",
            ("resources", "precision")
            if "precision" in ctx.spec.resources.model_fields_set
            else ("resources",),
        )
