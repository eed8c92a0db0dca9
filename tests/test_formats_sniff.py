"""A file is read as the engine that runs it, whatever app keys it also carries.

A Hydra app's own config may hold ``method`` and ``parameters``; a W&B sweep never has a
top-level ``hydra`` or ``defaults`` (W&B's schema allows neither), so those make it Hydra.
A SkyPilot task with a sweep's keys is neither (SkyPilot refuses them): it is refused, not
read as a sweep that leaves its GPUs unpriced. Every file goes through ``budget-gate check``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main

FACTS = "{accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 1, max_epochs: 10}"
APP_KEYS = "method: grid\nparameters:\n  lr: {values: [0.1]}\n"


def check(tmp_path: Path, capsys: Any, text: str) -> tuple[int, Any]:
    """``budget-gate check FILE --format json`` under a policy that asks nothing more."""
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text("apiVersion: budget-gate/v1\nkind: Policy\n")
    path = tmp_path / "config.yaml"
    path.write_text(text)
    capsys.readouterr()
    code = main(["check", str(path), "--policy-dir", str(policies), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["results"][0]


OPTUNA = f"""\
defaults:
  - override hydra/sweeper: optuna
{APP_KEYS}hydra:
  sweeper:
    n_trials: 500
    n_jobs: 8
# x-budget-gate: {FACTS}
"""


def test_a_hydra_sweep_with_wandb_like_app_keys_is_read_as_hydra(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, OPTUNA)
    assert code == 0, result["errors"]
    assert result["imported"]["format"] == "Hydra sweep"
    assert result["estimate"]["worst"]["trials"] == 500  # n_trials, not the "grid" of 1
    concurrent = next(
        f for f in result["imported"]["fields"] if f["field"] == "search.max_concurrent_trials"
    )
    assert concurrent["value"] == "8"
    assert any("not as a W&B sweep" in note for note in result["imported"]["notes"])


@pytest.mark.parametrize(
    "markers",
    [
        "hydra:\n  job: {name: lr}\n",  # a top-level hydra key, no sweeper
        "defaults:\n  - override hydra/launcher: basic\n  - _self_\n",  # a hydra/ group
        "defaults:\n  - /hydra/sweeper: basic\n",
    ],
)
def test_any_hydra_marker_beside_method_and_parameters_is_hydra(
    tmp_path, capsys, markers: str
) -> None:
    code, result = check(tmp_path, capsys, f"{markers}{APP_KEYS}# x-budget-gate: {FACTS}\n")
    assert result["imported"]["format"] == "Hydra sweep", result["errors"]
    assert code == 0, result["errors"]


def test_a_defaults_list_of_no_hydra_group_is_refused_not_read_as_wandb(tmp_path, capsys) -> None:
    # no W&B sweep has a defaults key; without a hydra/ group nothing says what this is
    code, result = check(tmp_path, capsys, f"defaults: [db]\n{APP_KEYS}# x-budget-gate: {FACTS}\n")
    assert code == 3 and result.get("imported") is None  # read as a spec, which refuses it
    (error,) = result["errors"]  # one line, not an error per missing spec key
    assert error["message"].startswith("not a budget-gate spec")
    assert "a Hydra sweep names a hydra/ group in defaults" in error["hint"]


def test_a_skypilot_task_with_a_sweeps_keys_is_refused_not_read_as_wandb(tmp_path, capsys) -> None:
    text = (
        'resources: {accelerators: "H100:8"}\nnum_nodes: 4\nrun: python train.py\n'
        f"{APP_KEYS}# x-budget-gate: {FACTS}\n"
    )
    code, result = check(tmp_path, capsys, text)
    assert code == 3
    (error,) = result["errors"]
    assert error["message"].startswith("a top-level resources key beside method and parameters")
    assert (error["line"], error["col"]) == (1, 1)
    assert "BUDGET_GATE_SPEC" in error["hint"]


def test_a_katib_experiment_with_top_level_sweep_keys_stays_katib(tmp_path, capsys) -> None:
    text = (
        "apiVersion: kubeflow.org/v1beta1\nkind: Experiment\n"
        "metadata:\n  name: k\n  annotations:\n"
        '    budget-gate/accelerator: A100-80GB\n    budget-gate/gpus_per_trial: "1"\n'
        '    budget-gate/epoch_minutes: "1"\n    budget-gate/max_epochs: "10"\n'
        f"{APP_KEYS}hydra: {{}}\n"
        "spec:\n  maxTrialCount: 7\n  algorithm: {algorithmName: random}\n"
        "  objective: {type: minimize, objectiveMetricName: loss}\n"
        '  parameters:\n    - {name: lr, parameterType: double, feasibleSpace: {min: "0.1", '
        'max: "0.2"}}\n'
        "  trialTemplate:\n    trialSpec:\n      apiVersion: batch/v1\n      kind: Job\n"
        "      spec:\n        template:\n"
        "          spec:\n            containers:\n"
        "              - {name: t, resources: {limits: {nvidia.com/gpu: 1}}}\n"
    )
    code, result = check(tmp_path, capsys, text)
    assert result["imported"]["format"] == "Katib Experiment", result["errors"]
    assert code == 0 and result["estimate"]["worst"]["trials"] == 7


@pytest.mark.parametrize(
    ("api", "kind", "said"),
    [
        ("batch/v1", "Job", "Job (batch/v1)"),
        ("v1", "Pod", "Pod (v1)"),
        ("ray.io/v1", "RayJob", "RayJob (ray.io/v1)"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet", "JobSet (jobset.x-k8s.io/v1alpha2)"),
        ("budget-gate/v2", "Experiment", None),  # a spec of a mistyped version
        ("v1", "Experiment", None),
    ],
)
def test_a_kubernetes_object_given_as_a_spec_is_named_so(api, kind, said) -> None:
    """A Kueue sample Job checked as a spec got budget-gate's schema errors ("did you mean
    'budget-gate/v1'?"): it is judged when Kueue admits it."""
    from gate.formats import kubernetes_object

    assert kubernetes_object({"apiVersion": api, "kind": kind}) == said
