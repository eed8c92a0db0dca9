"""MIG slices must exist and fit, or a spec is refused, not priced as slices (issue 21 #12).

``mig_profile: 1g.10gb`` on an 8 × A100-80GB spec turned a 5,269.84 USD violation into a
752.83 USD pass (8/7 of a GPU), and was priced the same on an L40S, which has no MIG.
Now a profile must be one its accelerator has (NVIDIA's MIG user guide, ``gate.spec.mig``)
and a trial's slices must fit on one GPU; both are input errors at their line. At launch
the SkyPilot policy prices a MIG spec's task as whole GPUs (``tests/skypilot_trust_cases.py``).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.cli import main
from gate.spec.mig import MIG_PROFILES, slice_share

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: mig, labels: {{}}}}
resources: {{accelerator: {accelerator}, gpus_per_trial: {gpus}, precision: bf16{mig}}}
workload: {{max_epochs: 10, epoch_minutes: 60}}
search: {{strategy: random, max_trials: 16}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {A100-80GB: {on-demand: 4}, L40S: {on-demand: 2}, A30: {on-demand: 1}}}
limits: {max_experiment_cost: 1000}
"""


def _check(write_yaml, capsys, accelerator: str, gpus: int, mig: str | None) -> tuple[int, str]:
    write_yaml("p/default.yaml", POLICY)
    extra = f", mig_profile: {mig}" if mig else ""
    spec = write_yaml("s.yaml", SPEC.format(accelerator=accelerator, gpus=gpus, mig=extra))
    capsys.readouterr()
    code = main(["check", "--policy-dir", spec.rsplit("/", 1)[0] + "/p", spec])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_slices_do_not_turn_a_violation_into_a_pass(write_yaml, capsys):
    # 16 trials × 10 h × 8 GPUs × 4 USD = 5,120 USD over the 1,000 USD cap
    code, out = _check(write_yaml, capsys, "A100-80GB", 8, None)
    assert code == 1 and "worst-case cost 5,120.00 USD exceeds max_experiment_cost" in out
    code, out = _check(write_yaml, capsys, "A100-80GB", 8, "1g.10gb")
    assert code == 3
    assert (
        "s.yaml:4:86: resources.mig_profile: 8 × 1g.10gb do not fit on one A100-80GB, which "
        "holds 7: a trial's MIG slices share one GPU — ask for at most 7, or for whole GPUs "
        "(remove mig_profile)"
    ) in out


def test_a_gpu_without_mig_has_no_slices(write_yaml, capsys):
    code, out = _check(write_yaml, capsys, "L40S", 1, "1g.10gb")
    assert code == 3
    assert (
        "resources.mig_profile: no MIG slices exist on L40S — remove mig_profile: it takes "
        "whole GPUs"
    ) in out
    code, out = _check(write_yaml, capsys, "A100-80GB", 1, "1g.5gb")  # a 40 GB profile
    assert code == 3
    assert "no MIG profile 1g.5gb exists on A100-80GB — use one of 1g.10gb, 1g.20gb, " in out


@pytest.mark.parametrize(
    ("accelerator", "gpus", "mig", "cost"),
    [
        ("A100-80GB", 7, "1g.10gb", "640.00"),  # 16 × 10 h × 7 × 4 USD ÷ 7 = 640
        # 3g.40gb holds 3/7 of the compute but half the memory: 16 × 10 × 2 × 4 × 1/2 = 640
        ("A100-80GB", 2, "3g.40gb", "640.00"),
        # four 1g.20gb fill the GPU's memory: each a quarter, 16 × 10 × 4 × 4 × 1/4 = 640
        ("A100-80GB", 4, "1g.20gb", "640.00"),
        ("A100-80GB", 3, "2g.20gb", "548.57"),  # compute 2/7 > memory 2/8: 16 × 10 × 3 × 4 × 2/7
        ("A30", 4, "1g.6gb", "160.00"),  # A30 has 4 slices: 16 × 10 × 4 × 1 × 1/4 = 160
    ],
)
def test_real_slices_are_priced_as_their_share(write_yaml, capsys, accelerator, gpus, mig, cost):
    code, out = _check(write_yaml, capsys, accelerator, gpus, mig)
    assert code == 0, out
    assert f"{cost} USD" in out.split("worst", 1)[1].splitlines()[0]


def test_the_table_shares_add_up():
    for accelerator, (slices, profiles) in MIG_PROFILES.items():
        for profile, fit in profiles.items():
            assert slice_share(accelerator, profile) * fit <= 1  # what fits is at most a GPU
        whole = max(profiles, key=lambda p: int(p.split("g.")[0]))
        assert slice_share(accelerator, whole) == Decimal(1), accelerator  # 7g (4g on A30)
        assert int(whole.split("g.")[0]) == slices
