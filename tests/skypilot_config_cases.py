"""Issue 24 item 6: the SkyPilot admin policy reads the configs teams already launch.

Run inside the network namespace by ``tests/test_skypilot_policy.py`` (as
``tests/skypilot_cases.py``). A task that says what it runs (``X_BUDGET_GATE_*`` envs) is
judged by itself, with no ``BUDGET_GATE_SPEC``; a task that launches a W&B sweep names the
sweep, and the sweep is priced on the task's hardware.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sky
from sky import exceptions

from gate.integrations import open_ledger
from gate.integrations.skypilot import apply_policy
from gate.ledger.records import LedgerQuery, RecordKind
from tests import skypilot_cases
from tests.ledger_kit import UNSIGNED, Team
from tests.skypilot_cases import rejection, request, settings, write_spec

# The fixtures of tests/skypilot_cases.py: the namespace guard (autouse) and the repository.
_inside_a_network_namespace = skypilot_cases._inside_a_network_namespace
repo = skypilot_cases.repo

SWEEP = """\
# x-budget-gate:
#   team: {team}
#   epoch_minutes: 6
#   quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
#   labels: {{cost-center: cc-1}}
method: grid
parameters:
  lr: {{values: [0.1, 0.01]}}
  epochs: {{value: 10}}
"""


def _task(
    tmp: Path,
    envs: dict[str, str],
    accelerators: str = "L4:1",
    nodes: int = 1,
    run: str = "python train.py --epochs 10",
    secrets: dict[str, str] | None = None,
):
    config = {
        "name": "train",
        "num_nodes": nodes,
        "resources": {"accelerators": accelerators},
        "run": run,
        "envs": envs,
        **({"secrets": secrets} if secrets else {}),
    }
    path = tmp / "task.yaml"
    path.write_text(json.dumps(config))
    return sky.Task.from_yaml(str(path))


def _facts(team: Team, trials: int) -> dict[str, str]:
    return {
        "X_BUDGET_GATE_TEAM": team.name,
        "X_BUDGET_GATE_MAX_TRIALS": str(trials),
        "X_BUDGET_GATE_EPOCH_MINUTES": "6",
        "X_BUDGET_GATE_QUALITY_GATE": '[{"metric": "val_f1", "op": ">=", "value": 0.8}]',
        "X_BUDGET_GATE_LABELS": '{"cost-center": "cc-1"}',
    }


def test_a_task_that_says_what_it_runs_is_judged_by_itself(repo, tmp_path):
    cleared = apply_policy(request(_task(tmp_path, _facts(repo, 2))), settings(repo))
    envs = cleared.task.envs
    assert envs["BUDGET_GATE_SPEC"] == "skypilot-task:train"  # no BUDGET_GATE_SPEC was given
    tags = json.loads(envs["BUDGET_GATE_RUN_TAGS"])
    assert tags["budget_gate.gpus"] == "1" and tags["budget_gate.accelerator"] == "L4"


def test_a_task_judged_by_itself_is_priced_with_its_setup(repo, tmp_path):
    """setup runs on the task's GPU nodes too: dropped, its 5,000 epochs went unpriced."""
    task = _task(tmp_path, _facts(repo, 2))
    task.setup = "python pretrain.py --epochs 50"
    cleared = apply_policy(request(task), settings(repo))
    tags = json.loads(cleared.task.envs["BUDGET_GATE_RUN_TAGS"])
    assert tags["budget_gate.max_epochs"] == "60"  # setup's 50, then run's 10


def test_a_task_that_needs_an_approval_is_told_how_to_get_one(repo, tmp_path):
    message = rejection(request(_task(tmp_path, _facts(repo, 8))), settings(repo))
    assert "skypilot-task:train needs an approval, and an approval is bound to a spec's path" in (
        message
    )
    assert "BUDGET_GATE_SPEC: tasks/NAME.yaml" in message


def test_a_task_without_its_facts_or_a_spec_still_names_the_fix(repo, tmp_path):
    message = rejection(request(_task(tmp_path, {"LR": "0.1"})), settings(repo))
    assert "names no spec" in message


def test_a_sweep_is_priced_on_the_hardware_of_the_task_that_launches_it(repo, tmp_path):
    sweep = "experiments/sweep.yaml"
    (repo.root / sweep).write_text(SWEEP.format(team=repo.name))
    task = _task(tmp_path, {"BUDGET_GATE_SPEC": sweep}, accelerators="L4:2")
    cleared = apply_policy(request(task), settings(repo))  # 2 trials: no approval needed
    tags = json.loads(cleared.task.envs["BUDGET_GATE_RUN_TAGS"])
    assert (tags["budget_gate.gpus"], tags["budget_gate.accelerator"]) == ("2", "L4")

    more = _task(tmp_path, {"BUDGET_GATE_SPEC": sweep}, accelerators="L4:8", nodes=2)
    cleared = apply_policy(request(more), settings(repo))  # 16 GPUs a trial: 320 USD
    assert json.loads(cleared.task.envs["BUDGET_GATE_RUN_TAGS"])["budget_gate.gpus"] == "16"


def test_an_approved_sweep_launches_once_on_its_task(repo, tmp_path):
    sweep = "experiments/sweep.yaml"
    text = SWEEP.format(team=repo.name).replace("[0.1, 0.01]", "[0.1, 0.03, 0.01, 0.003, 0.001]")
    hardware = "#   accelerator: L4\n#   gpus_per_trial: 1\n"  # approved as it will run
    (repo.root / sweep).write_text(
        text.replace("#   epoch_minutes", hardware + "#   epoch_minutes")
    )
    # 5 trials: over the policy's 4
    task = _task(tmp_path, {"BUDGET_GATE_SPEC": sweep}, accelerators="L4:1")
    assert "needs a fresh approval" in rejection(request(task), settings(repo))
    repo.policy()  # one launch per approval
    code, _, err = repo.cli("approve", sweep, "--by", "alice", "--reason", "worth it")
    assert code == 0, err
    apply_policy(request(task), settings(repo))
    records = open_ledger(repo.uri, UNSIGNED).query(LedgerQuery(spec=sweep))
    launches = [r for r in records if r.kind is RecordKind.LAUNCH]
    assert len(launches) == 1 and launches[0].spec == sweep
    try:
        apply_policy(request(task), settings(repo))
    except exceptions.UserRequestRejectedByPolicy as exc:
        assert "covers 1 launch (approval.launches)" in str(exc)
    else:
        raise AssertionError("the approval's one launch was used")


def test_a_task_judged_by_itself_reads_its_secrets_as_skypilot_applies_them(repo, tmp_path):
    """A secret wins over an env of its name at run time: dropped, EPOCHS was the env's 10."""
    task = _task(
        tmp_path,
        {**_facts(repo, 2), "EPOCHS": "10"},
        run="python train.py --epochs $EPOCHS",
        secrets={"EPOCHS": "20"},
    )
    cleared = apply_policy(request(task), settings(repo))
    tags = json.loads(cleared.task.envs["BUDGET_GATE_RUN_TAGS"])
    assert tags["budget_gate.max_epochs"] == "20"


@pytest.mark.parametrize(
    ("run", "envs", "said"),
    [
        ("python train.py --epochs 1000", {}, "trains 1000 epochs (--epochs 1000 in run), but"),
        ("python train.py", {"EPOCHS": "1000"}, "trains 1000 epochs (envs EPOCHS: 1000, in the"),
        (
            "for i in $(seq 100); do python train.py --epochs 10; done",
            {},
            "a script that also runs `for`",
        ),
        ("EPOCHS=1000 python train.py", {}, "trains 1000 epochs (EPOCHS 1000 in run), but"),
        ("export EPOCHS=1000\npython train.py", {}, "trains 1000 epochs (EPOCHS 1000 in run)"),
        ("python train.py trainer.max_epochs=1000", {}, "trains 1000 epochs (trainer.max_epochs"),
    ],
)
def test_a_task_trains_no_more_epochs_than_the_spec_it_names(repo, tmp_path, run, envs, said):
    """Naming a cleared spec cleared whatever the task ran: its run and envs were not read."""
    spec = write_spec(repo, 2)  # 10 epochs; two trials need no approval
    named = {"BUDGET_GATE_SPEC": spec}
    apply_policy(request(_task(tmp_path, named)), settings(repo))  # --epochs 10, as priced
    message = rejection(request(_task(tmp_path, {**named, **envs}, run=run)), settings(repo))
    assert said in message
    if "trains" in said:
        assert message.endswith(
            f"but {spec} is cleared for 10 (workload.max_epochs) — train at most 10 epochs, or "
            f"change the spec and clear it again (budget-gate check {spec})"
        )
