"""Red-team findings on W&B Launch sweeps: what ``wandb launch-sweep`` runs that was unread.

``launch.resource_args`` put each run on an 8-GPU pod priced as the comment block's 1 GPU;
``scheduler.settings.method: random`` ran a random sweep without a cap priced as the file's
grid of 3; a ``scheduler.job`` of the user's decided every run. Each is refused or read.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_formats_epochs import check as epochs_check
from tests.test_formats_epochs import field, only_error

INVALID = 3

SWEEP = """\
method: grid
job: ent/proj/job-train:latest
{launch}parameters:
  lr: {{values: [0.1, 0.01, 0.001]}}
  epochs: {{value: 20}}
metric: {{name: val_acc, goal: maximize, target: 0.9}}
# x-budget-gate:
#   accelerator: A100-80GB
#   gpus_per_trial: 1
#   epoch_minutes: 2.5
"""

POD = (
    "{kubernetes: {spec: {template: {spec: "
    "{containers: [{resources: {limits: {nvidia.com/gpu: 8}}}]}}}}}"
)


def check(tmp_path: Any, capsys: Any, launch: str) -> tuple[int, Any]:
    return epochs_check(tmp_path, capsys, SWEEP.format(launch=launch), "sweep.yaml")


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    ("launch", "said", "needle"),
    [
        (
            f"launch:\n  queue: gpu\n  resource_args: {POD}\n",
            "launch.resource_args",
            "resource_args",
        ),
        (
            "launch:\n  resource_args:\n"
            "    sagemaker: {ResourceConfig: {InstanceType: ml.p4d.24xlarge}}\n",
            "launch.resource_args",
            "sagemaker",
        ),
        ("launch:\n  template_variables: {gpus: 8}\n", "launch.template_variables", "template"),
        (
            f"scheduler:\n  num_workers: 64\n  resource_args: {POD}\n",
            "scheduler.resource_args",
            "resource_args",
        ),
    ],
)
def test_resources_a_launch_sweep_gives_its_runs_are_refused(
    tmp_path, capsys, launch, said, needle
) -> None:
    """An 8-GPU pod per run was priced as the comment block's 1 GPU."""
    code, result = check(tmp_path, capsys, launch)
    assert code == INVALID, result
    error = only_error(result)
    assert error["message"].startswith(said), error
    assert error["line"] == line_of(SWEEP.format(launch=launch), needle)


def test_a_launch_sweep_on_its_queues_own_resources_passes(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, "launch:\n  queue: gpu\nscheduler:\n  num_workers: 4\n")
    assert code != INVALID, result["errors"]
    assert field(result, "search.strategy")["value"] == "grid"


def test_the_schedulers_method_is_the_sweeps_method(tmp_path, capsys) -> None:
    """``settings.method: random`` runs until stopped: refused as a random sweep without run_cap."""
    launch = "scheduler:\n  settings:\n    method: random\n"
    code, result = check(tmp_path, capsys, launch)
    assert code == INVALID, result
    error = only_error(result)
    assert "scheduler.settings.method random without run_cap" in error["message"], error
    assert error["line"] == line_of(SWEEP.format(launch=launch), "    method: random")


def test_the_schedulers_method_with_a_cap_is_read_as_the_method(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, "run_cap: 5\nscheduler:\n  settings: {method: bayes}\n")
    assert code != INVALID, result["errors"]
    strategy = field(result, "search.strategy")
    assert strategy["value"] == "bayesian"
    assert "scheduler.settings.method: bayes" in strategy["detail"]


def test_a_custom_scheduler_job_is_refused(tmp_path, capsys) -> None:
    launch = "scheduler:\n  job: ent/proj/my-scheduler:latest\n  num_workers: 8\n"
    code, result = check(tmp_path, capsys, launch)
    assert code == INVALID, result
    error = only_error(result)
    assert error["message"].startswith("scheduler.job: ent/proj/my-scheduler:latest"), error
