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


MODEL_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: llm, team: nlp, owner: dana, labels: {model: llama-8b}}
resources: {accelerator: ACCELERATOR, gpus_per_trial: 8, precision: fp32}
workload: {max_epochs: 3, model: {parameters: 8.0e9, tokens_per_epoch: 2.0e8}}
search: {strategy: random, max_trials: 4}
"""


def test_a_model_sized_spec_is_priced_in_bf16_by_the_flops_prior(tmp_path, capsys):
    from gate.cli import main

    spec = tmp_path / "llm.yaml"
    spec.write_text(MODEL_SPEC.replace("ACCELERATOR", "A100"), encoding="utf-8")
    main(["check", str(spec), "--format", "text"])
    out = capsys.readouterr().out
    assert "bf16 mixed precision runs at 312 against 19.5 TFLOP/s dense: by the FLOPs " in out


def test_a_gpu_without_a_bf16_peak_keeps_the_finding_without_money(tmp_path, capsys):
    """T4 has no bf16: the FLOPs prior cannot price it, and the check must not fail on that."""
    from gate.cli import main

    spec = tmp_path / "llm.yaml"
    spec.write_text(MODEL_SPEC.replace("ACCELERATOR", "T4"), encoding="utf-8")
    code = main(["check", str(spec), "--format", "text"])
    out = capsys.readouterr().out
    assert code != 3, out
    assert "BG304 fp32 on T4: bf16/fp16 mixed precision roughly halves GPU-hours\n" in out
    assert main(["estimate", str(spec), "--alternatives"]) == 0
    alternatives = capsys.readouterr().out.split("cheaper plans", 1)[1]
    assert "bf16" not in alternatives.split("\n\n")[0]
