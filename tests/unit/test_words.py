"""The "did you mean" of every typo message: case counts for nothing."""

from __future__ import annotations

import pytest

from gate.words import closest


@pytest.mark.parametrize(
    ("typed", "options", "meant"),
    [
        ("BF16", ["fp16", "bf16", "fp32", "tf32"], "bf16"),  # was fp16: another precision
        ("FP32", ["fp16", "bf16", "fp32", "tf32"], "fp32"),  # was tf32
        ("h100", ["H100", "A100-80GB"], "H100"),
        ("epoch_minute", ["epoch_minutes", "epochs"], "epoch_minutes"),
        ("zzz", ["bf16", "fp16"], None),
    ],
)
def test_the_closest_option_ignores_case(typed, options, meant):
    assert closest(typed, options) == meant
