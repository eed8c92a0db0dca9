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


def _cpu_task(tmp: Path, config: dict | None = None, **more) -> sky.Task:
    """A task that asks for no GPU (no spec needed), with a ``config:`` of its own."""
    task = {"name": "prep", "resources": {"cpus": 4}, "run": "python prep.py", **more}
    if config is not None:
        task["config"] = config
    path = tmp / "cpu.yaml"
    path.write_text(json.dumps(task))
    return sky.Task.from_yaml(str(path))


def _client(t: sky.Task, config: dict, name=sky.AdminPolicyRequestName.CLUSTER_LAUNCH):
    return sky.UserRequest(task=t, skypilot_config=sky.Config(config), request_name=name, user=None)


def _pod(container: dict, *, init: bool = False) -> dict:
    return {"spec": {"initContainers" if init else "containers": [container]}}


PRIVILEGED = {"securityContext": {"privileged": True}}
REACHING = {  # each reaches every GPU of its node with no GPU asked (as the Kueue check says)
    "privileged": {"kubernetes": {"pod_config": _pod(PRIVILEGED)}},
    "SYS_ADMIN": {
        "kubernetes": {
            "pod_config": _pod({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}})
        }
    },
    "CAP_SYS_ADMIN in an init container": {
        "kubernetes": {
            "pod_config": _pod(
                {"securityContext": {"capabilities": {"add": ["cap_sys_admin"]}}}, init=True
            )
        }
    },
    "ALL in a context's pod config": {
        "kubernetes": {
            "context_configs": {
                "gpu-ctx": {
                    "pod_config": _pod({"securityContext": {"capabilities": {"add": ["ALL"]}}})
                }
            }
        }
    },
    "privileged in ssh.pod_config": {"ssh": {"pod_config": _pod(PRIVILEGED)}},
    "a device-list mount": {
        "kubernetes": {
            "pod_config": _pod(
                {
                    "volumeMounts": [
                        {"name": "d", "mountPath": "/var/run/nvidia-container-devices/all"}
                    ]
                }
            )
        }
    },
    "a device-list mount spelled apart": {
        "kubernetes": {
            "pod_config": _pod(
                {
                    "volumeMounts": [
                        {"name": "d", "mountPath": "//run/x/../nvidia-container-devices/"}
                    ]
                }
            )
        }
    },
}
SAID = {
    "privileged": "is privileged (securityContext.privileged)",
    "privileged in ssh.pod_config": "is privileged (securityContext.privileged)",
    "a device-list mount": "mounts a volume at /var/run/nvidia-container-devices/all",
    "a device-list mount spelled apart": "mounts a volume at /run/nvidia-container-devices,",
}


@pytest.mark.parametrize("placed", sorted(REACHING))
@pytest.mark.parametrize("where", ["config", "the client's SkyPilot config"])
def test_a_pod_config_that_reaches_every_gpu_of_its_node_is_refused(repo, tmp_path, placed, where):
    """Privileged, SYS_ADMIN or a device-list mount: the NVIDIA toolkit hands a 'CPU task' every
    GPU of its node (the Kueue check refused them; the SkyPilot policy let them through)."""
    config = REACHING[placed]
    t = _cpu_task(tmp_path, config if where == "config" else None)
    message = rejection(_client(t, {} if where == "config" else config), settings(repo))
    assert message.startswith(
        f"budget-gate: task 'prep' has a container in a pod config in {where}"
    )
    said = SAID.get(placed, "adds the capability SYS_ADMIN (securityContext.capabilities.add)")
    assert f" that {said}" in message and "reaches every GPU of its node" in message


def test_a_cleared_one_gpu_task_cannot_reach_every_gpu_of_its_node(repo, tmp_path):
    spec = write_spec(repo, 2)  # 1 × L4, no approval needed
    t = _task(tmp_path, {"BUDGET_GATE_SPEC": spec}, accelerators="L4:1")
    apply_policy(request(t), settings(repo))  # as priced
    message = rejection(_client(t, REACHING["privileged"]), settings(repo))
    assert "is privileged (securityContext.privileged)" in message


@pytest.mark.parametrize(
    "name",
    [sky.AdminPolicyRequestName.JOBS_LAUNCH_CONTROLLER, sky.AdminPolicyRequestName.SERVE_UP],
)
def test_a_controller_or_a_service_cannot_reach_every_gpu_either(repo, tmp_path, name):
    """A controller's pod, placed on a GPU node by the client's pod config, held them all."""
    message = rejection(_client(_cpu_task(tmp_path), REACHING["SYS_ADMIN"], name), settings(repo))
    assert "adds the capability SYS_ADMIN" in message
    assert apply_policy(_client(_cpu_task(tmp_path), {}, name), settings(repo))


def test_a_pod_config_without_privileges_passes(repo, tmp_path):
    calm = {
        "securityContext": {"privileged": False, "capabilities": {"add": ["NET_ADMIN"]}},
        "volumeMounts": [{"name": "d", "mountPath": "/var/run/other"}],
    }
    t = _cpu_task(tmp_path, {"kubernetes": {"pod_config": _pod(calm)}})
    assert apply_policy(_client(t, {}), settings(repo)).task is t


SBATCH = {
    "slurm.sbatch_options": lambda o: {"slurm": {"sbatch_options": o}},
    "cluster_configs": lambda o: {"slurm": {"cluster_configs": {"c1": {"sbatch_options": o}}}},
    "partition_configs": lambda o: {
        "slurm": {"cluster_configs": {"c1": {"partition_configs": {"gpu": {"sbatch_options": o}}}}}
    },
}


OPTIONS = [
    "gpus-per-node",
    "gpus_per_task",
    "gres",
    "tres-per-task",
    "array",
    "arr",
    "ntasks",
    "exclusive",
    "nodelist",
    "constraint",
    "nodes",
    "time",
    "dependency",
    "requeue",
    "G",
]
WHERE = ["config", "the client's SkyPilot config"]


@pytest.mark.parametrize(
    ("option", "level", "where"),
    [(o, sorted(SBATCH)[i % 3], WHERE[i % 2]) for i, o in enumerate(OPTIONS)],
)  # fmt: skip
def test_sbatch_options_that_may_ask_for_gpus_or_repeat_the_job_are_refused(
    repo, tmp_path, option, level, where
):
    """SkyPilot writes each as an #SBATCH line: h100:8, or a job array of 100, for a 'CPU task'."""
    config = SBATCH[level]({option: "h100:8" if "gpu" in option else "1-100"})
    t = _cpu_task(tmp_path, config if where == "config" else None)
    message = rejection(_client(t, {} if where == "config" else config), settings(repo))
    assert message.startswith(
        f"budget-gate: task 'prep' sets slurm.sbatch_options {option} in {where}, which may ask "
        "for GPUs or run the job again or wider"
    )
    assert "ask for GPUs in resources.accelerators (e.g. H100:8)" in message
    assert "sbatch_options may set only A, account, comment," in message


def test_sbatch_options_that_set_no_count_pass_with_one_word_each(repo, tmp_path):
    plain = {"account": "ml-team", "qos": "normal", "mail_type": "END", "comment": "run-7"}
    t = _cpu_task(tmp_path, SBATCH["partition_configs"](plain))
    assert apply_policy(_client(t, SBATCH["slurm.sbatch_options"]({"A": "x"})), settings(repo))
    hidden = {"account": "ml-team --gpus-per-node=h100:8"}  # sbatch reads a line's words
    message = rejection(_client(_cpu_task(tmp_path, SBATCH["cluster_configs"](hidden)), {}),
                        settings(repo))  # fmt: skip
    assert "whose space, quote or # sbatch would read as options of their own" in message


@pytest.mark.parametrize(
    ("run", "envs", "said"),
    [
        ("python t.py --num_train_epochs 2 --max_steps 9000000", {}, "--max_steps 9000000 in run"),
        ("accelerate launch train.py --max_train_steps=9999", {}, "--max_train_steps=9999 in run"),
        ("python train.py trainer.max_steps=10000000", {}, "trainer.max_steps=10000000 in run"),
        ("python t.py --num-train-steps 500 --total_steps -1", {}, "--num-train-steps 500 in run"),
        ("python train.py --max_st 500", {}, "--max_st 500 in run"),  # argparse's unique prefix
        ("python train.py --max_steps $STEPS", {"STEPS": "-1"}, "--max_steps $STEPS in run"),
        ("python train.py", {"MAX_STEPS": "10000"}, "envs MAX_STEPS: 10000"),
    ],
)  # fmt: skip
def test_a_task_that_bounds_its_training_by_steps_is_refused(repo, tmp_path, run, envs, said):
    """Hugging Face's Trainer runs max_steps over the epochs: 10 epochs priced, 10M steps run."""
    spec = write_spec(repo, 2)  # 10 epochs; two trials need no approval
    named = {"BUDGET_GATE_SPEC": spec}
    message = rejection(request(_task(tmp_path, {**named, **envs}, run=run)), settings(repo))
    assert message == (
        f"budget-gate: task 'train' bounds its training by steps ({said}), but {spec} prices "
        "epochs, not steps (workload.max_epochs: 10) — a positive steps budget trains past the "
        "epochs (Hugging Face's Trainer and Lightning stop at the steps): drop it, or set it to "
        "-1, and bound the training by its epochs"
    )
    off = "python train.py --epochs 10 --max_steps -1 --save_steps 500 --warmup_steps 100"
    assert apply_policy(request(_task(tmp_path, named, run=off)), settings(repo))


@pytest.mark.parametrize(
    "run",
    ["python train.py $'--max_steps=500'", "python train.py --max_steps ' 500'",
     "python train_net.py --config-file c.yaml SOLVER.MAX_ITER 90000",
     "python train.py --max_number_of_steps 1000",
     "bash -c 'python train.py --max-train-steps 9'"],
)  # fmt: skip
def test_a_steps_budget_the_reader_cannot_read_is_refused_too(repo, tmp_path, run):
    """A steps budget in bash's quotes, a yacs pair or a long name is refused as check reads it."""
    spec = write_spec(repo, 2)
    message = rejection(
        request(_task(tmp_path, {"BUDGET_GATE_SPEC": spec}, run=run)), settings(repo)
    )
    assert message.startswith("budget-gate: task 'train' bounds its training by steps (")


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ("python train.py --epochs ' 1000'", "trains 1000 epochs (--epochs ' 1000' in run)"),
        ("python train.py --epochs '1000 '", "trains 1000 epochs (--epochs '1000 ' in run)"),
        ("python train.py --epochs=1000 # --epochs=2", "trains 1000 epochs (--epochs 1000 in"),
        ("python train.py $'--epochs=1000'", "trains 1000 epochs (--epochs 1000 in run)"),
        ('python train.py $"--epochs=1000"', "trains 1000 epochs (--epochs 1000 in run)"),
        ('python train.py --epochs "$(echo 1000)"', "a command's output is not in the file"),
        ("python train.py --epochs $(echo 1000)", "the epochs it trains are not in the file"),
    ],
)  # fmt: skip
def test_a_tasks_command_is_read_as_bash_and_argparse_read_it(repo, tmp_path, run, said):
    """Red-team launch report §4: a spaced value, a comment, bash's quotes passed at 10."""
    spec = write_spec(repo, 2)  # 10 epochs
    message = rejection(
        request(_task(tmp_path, {"BUDGET_GATE_SPEC": spec}, run=run)), settings(repo)
    )
    assert said in message


@pytest.mark.parametrize(
    "run",
    [
        "python train.py -m seed='range(1,1000)' --epochs 10",
        "python train.py --multirun seed=1,2 --epochs 10",
        "wandb agent --count 500 ent/proj/abc123",
        "python -m wandb agent --count 500 ent/proj/abc123",
        "torchrun --nproc_per_node 1 --max-restarts 1000 train.py --epochs 10",
        "python -m torch.distributed.run --max_restarts 3 train.py --epochs 10",
    ],
)
def test_a_task_whose_command_repeats_its_training_is_refused(repo, tmp_path, run):
    """Red-team foreign report F4, F5: 999 Hydra jobs or 1000 restarts cleared as one run."""
    spec = write_spec(repo, 2)  # 10 epochs, no retries priced
    message = rejection(
        request(_task(tmp_path, {"BUDGET_GATE_SPEC": spec}, run=run)), settings(repo)
    )
    assert "a number of trainings the file does not price" in message or (
        "reruns the whole training after a failure" in message
    )


def test_torchrun_may_restart_as_often_as_the_policy_prices_retries(repo, tmp_path):
    """The policy priced 3 retries a trial (reliability.max_retries): torchrun's restarts up
    to that many are what it priced, as a managed job's max_restarts_on_errors are."""
    repo.policy(extra="  launches: 1000\nreliability: {failure_rate: 0.1, max_retries: 3}\n")
    spec = write_spec(repo, 2)  # 10 epochs
    run = "torchrun --nproc_per_node 1 --max-restarts {} train.py --epochs 10"
    cleared = apply_policy(
        request(_task(tmp_path, {"BUDGET_GATE_SPEC": spec}, run=run.format(3))), settings(repo)
    )
    assert cleared.task is not None
    message = rejection(
        request(_task(tmp_path, {"BUDGET_GATE_SPEC": spec}, run=run.format(4))), settings(repo)
    )
    assert "reruns the whole training after a failure" in message


@pytest.mark.parametrize(
    "run",
    [
        "python train.py --epochs 10 --save_steps 500 --warmup_steps 100 --logging_steps 10",
        "python train.py trainer.callbacks.model_checkpoint.every_n_train_steps=1000",
        "accelerate launch train_unconditional.py --ddpm_num_steps 1000 --num_epochs 10",
        "python train.py --epochs 10 # --max_steps 500 (a comment bash drops)",
        "vllm bench latency --model m --num-iters 100",
    ],
)
def test_steps_that_do_not_bound_the_training_pass(repo, tmp_path, run):
    """A cadence, noise steps, a comment or a serving benchmark's iterations: false refusals
    found in real configs (Lightning, diffusers, vLLM), none a training's length."""
    spec = write_spec(repo, 2)  # 10 epochs
    task = _task(tmp_path, {"BUDGET_GATE_SPEC": spec}, run=run)
    assert apply_policy(request(task), settings(repo)).task is not None
