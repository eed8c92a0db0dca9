"""The FLOPs prior: 6·N·D ÷ (dense peak × GPUs × MFU), stated in the estimate."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.errors import InputError
from gate.estimate.flops import epoch_minutes, load_peaks
from gate.spec.experiment import Experiment
from tests.conftest import make_estimate, make_policy, make_spec, spec_data

LLM = {
    "resources": {"accelerator": "H100", "gpus_per_trial": 8, "precision": "bf16"},
    "workload": {"max_epochs": 2, "epoch_minutes": None, "model": {"parameters": 8.0e9,
                 "tokens_per_epoch": 2.0e8}},
}  # fmt: skip


def _spec(overrides=None):
    data = spec_data({**LLM, **(overrides or {})})
    data["workload"] = {k: v for k, v in data["workload"].items() if v is not None}
    return Experiment.model_validate(data)


def test_the_peak_table_names_its_source_and_date():
    peaks = load_peaks()
    assert "NVIDIA" in peaks.source and "Lightning" in peaks.source and peaks.date
    assert peaks.peak("A100", "bf16") == 312e12 and peaks.peak("H100", "bf16") == 989.4e12
    assert peaks.peak("T4", "bf16") is None  # T4 has no bf16


def test_epoch_minutes_is_six_n_d_over_the_delivered_flops():
    # 6 × 8e9 × 2e8 = 9.6e18 FLOPs; 989.4e12 × 8 × 0.35 = 2.77032e15 FLOP/s: 3465.3 s
    minutes = epoch_minutes(9.6e18, 989.4e12, 8, 0.35)
    assert float(minutes) == pytest.approx(9.6e18 / (989.4e12 * 8 * 0.35) / 60)
    assert round(minutes, 2) == Decimal("57.76")


def test_a_spec_with_a_model_size_is_priced_from_the_prior_and_says_so():
    est = make_estimate(_spec(), make_policy(), "10")
    hours = Decimal("9.6e18") / (Decimal("989.4e12") * 8 * Decimal("0.35")) / 3600
    assert est.worst.hours_per_trial == (2 * hours).quantize(Decimal("1e-9"))
    [note] = [a for a in est.worst.assumptions if a.startswith("epoch time")]
    assert note.startswith("epoch time 57.76 min: FLOPs prior 9.6e+18 FLOPs ÷ (989.4 TFLOP/s")
    assert "MFU 0.35" in note


def test_the_policy_sets_the_mfu_and_flops_per_sample_works():
    policy = make_policy({"estimation": {"mfu": 0.5}})
    work = {"max_epochs": 1, "epoch_minutes": None, "train_samples": 1000,
            "model": {"flops_per_sample": 1.0e15}}  # fmt: skip
    spec = _spec({"workload": work})
    est = make_estimate(spec, policy, "10")
    seconds = Decimal("1e18") / (Decimal("989.4e12") * 8 * Decimal("0.5"))
    assert est.worst.hours_per_trial == (seconds / 3600).quantize(Decimal("1e-9"))


def test_an_accelerator_without_the_precision_is_bad_input():
    spec = _spec({"resources": {"accelerator": "T4", "gpus_per_trial": 1, "precision": "bf16"}})
    with pytest.raises(InputError, match="no dense peak FLOP/s for T4 at bf16"):
        make_estimate(spec)


@pytest.mark.parametrize(
    "workload",
    [
        {
            "max_epochs": 1,
            "epoch_minutes": 3,
            "model": {"parameters": 1e9, "tokens_per_epoch": 1e6},
        },
        {"max_epochs": 1, "model": {"parameters": 1e9}},
        {"max_epochs": 1, "model": {"flops_per_sample": 1e9}},
    ],
)
def test_a_model_size_with_a_declared_time_or_incomplete_is_refused(workload):
    with pytest.raises(Exception, match=r"epoch time given twice|incomplete|go together"):
        make_spec({"workload": workload})


def test_a_mig_slice_trains_at_its_share_of_the_gpu():
    """Two ``1g.10gb`` slices of an H100 are 2/7 of one: an epoch takes 7/2 × one GPU's
    time, so the slices cost what the whole GPU would (they were priced at 1/7 of it)."""
    whole = make_estimate(_spec({"resources": {**LLM["resources"], "gpus_per_trial": 2}}),
                          make_policy(), "10")  # fmt: skip
    sliced = _spec(
        {"resources": {**LLM["resources"], "gpus_per_trial": 2, "mig_profile": "1g.10gb"}}
    )
    est = make_estimate(sliced, make_policy(), "10")
    seconds = Decimal("9.6e18") / (Decimal("989.4e12") * 2 / 7 * Decimal("0.35"))
    assert est.worst.hours_per_trial == (2 * seconds / 3600).quantize(Decimal("1e-9"))
    assert abs(est.worst.hours_per_trial - 7 * whole.worst.hours_per_trial) < Decimal("1e-8")
    assert abs(est.worst.gpu_hours - whole.worst.gpu_hours) < Decimal("1e-6")  # the same GPU
    [note] = [a for a in est.worst.assumptions if a.startswith("epoch time")]
    assert "× 2 1g.10gb slices (0.143 GPU each) × MFU" in note
