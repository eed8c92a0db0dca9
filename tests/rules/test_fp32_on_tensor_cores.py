"""BG304 fp32-on-tensor-cores: fp32 (or no precision) on a tensor-core GPU (no threshold)."""

from __future__ import annotations

import pytest

from gate.policy.model import Severity
from gate.policy.rules import fp32_on_tensor_cores
from gate.spec.experiment import Experiment
from tests.conftest import make_spec, run_rule, spec_data


def _precision(precision: str, accelerator: str = "A100-80GB"):
    return make_spec({"resources": {"accelerator": accelerator, "precision": precision}})


def test_constants():
    assert (fp32_on_tensor_cores.ID, fp32_on_tensor_cores.SLUG) == (
        "BG304",
        "fp32-on-tensor-cores",
    )
    assert fp32_on_tensor_cores.DEFAULT_SEVERITY is Severity.WARN


@pytest.mark.parametrize("precision", ["bf16", "fp16", "tf32", "fp8"])
def test_mixed_or_reduced_precision_passes(precision: str):
    assert run_rule(fp32_on_tensor_cores, _precision(precision)) == []


def test_explicit_fp32_fails_at_the_precision_key():
    [violation] = run_rule(fp32_on_tensor_cores, _precision("fp32"))
    assert violation.message == (
        "fp32 on A100-80GB: bf16/fp16 mixed precision roughly halves GPU-hours: bf16 at the "
        "stated 2× speed-up saves 8.00 USD of 16.00 USD (expected case)"
    )
    assert violation.path == ("resources", "precision")


def test_missing_precision_reads_as_fp32_and_points_at_resources():
    data = spec_data()
    del data["resources"]["precision"]
    [violation] = run_rule(fp32_on_tensor_cores, Experiment.model_validate(data))
    assert violation.message == (
        "fp32 on A100-80GB: bf16/fp16 mixed precision roughly halves GPU-hours: bf16 at the "
        "stated 2× speed-up saves 8.00 USD of 16.00 USD (expected case)"
    )
    assert violation.path == ("resources",)


@pytest.mark.parametrize("accelerator", ["K80", "P100", "M60"])
def test_fp32_without_tensor_cores_passes(accelerator: str):
    assert run_rule(fp32_on_tensor_cores, _precision("fp32", accelerator)) == []


def test_fp32_on_h100_fails():
    [violation] = run_rule(fp32_on_tensor_cores, _precision("fp32", "H100"))
    assert violation.message.startswith("fp32 on H100:")
