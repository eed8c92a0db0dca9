"""The SkyPilot admin policy with SkyPilot's real classes, in a network namespace.

Not collected on its own (the name does not start with ``test_``):
``tests/test_skypilot_policy.py`` runs this module with pytest inside ``unshare --net`` with
only loopback up and a throwaway ``HOME``, because SkyPilot writes ``~/.sky`` and probes
the network. The ledger is the real MLflow server of ``tests/mlflow_server.py``; approvals
are recorded by the real ``budget-gate approve``. Nothing here runs ``sky launch`` or the
optimizer (they fetch catalogs).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import sky
from sky import admin_policy, exceptions, models, skypilot_config
from sky.utils import admin_policy_utils, config_utils

from gate.integrations.skypilot import CHECKED_REQUESTS, SERVICE_REQUESTS, apply_policy
from gate.integrations.skypilot_settings import MissingSpec, PolicySettings
from gate.ledger.records import RecordKind
from tests.conftest import ROOT
from tests.ledger_kit import Team, fingerprint_of
from tests.mlflow_server import CLIENT_ENV, free_port, zygote

LAUNCH = sky.AdminPolicyRequestName.CLUSTER_LAUNCH
# 8 × A100 per trial, on-demand; 2 trials need no approval under the test policy (over 4 do).
A100_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: llm-{trials}, team: {team}, owner: carol, labels: {{cost-center: cc-1}}}}
resources: {{accelerator: A100, gpus_per_trial: 8, precision: bf16}}
workload: {{max_epochs: 2, epoch_minutes: 6}}
search: {{strategy: random, max_trials: {trials}}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""


@pytest.fixture(autouse=True)
def _inside_a_network_namespace():
    """Refuse to run where a packet could leave the machine."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    names = [line.split(":")[1].strip() for line in links.stdout.splitlines()]
    assert names == ["lo"], f"run through tests/test_skypilot_policy.py, not directly: {names}"


@pytest.fixture
def repo(team: Team, monkeypatch) -> Team:
    """The team's directory as the repository; the CLI runs from its root, as users do.

    Its approvals cover many launches, so a case may apply the policy to a task again; how
    launches use an approval up is its own case.
    """
    (team.root / "experiments").mkdir()
    team.policy(extra="  launches: 1000\n")
    monkeypatch.chdir(team.root)
    return team


def settings(team: Team, **changes) -> PolicySettings:
    base = PolicySettings(team.root, Path(team.policy_dir), team.uri)
    return PolicySettings(**{**{f: getattr(base, f) for f in base.__slots__}, **changes})


def spec_of(team: Team) -> str:
    """The team's spec path: tests share one ledger, and approvals are found by path too."""
    return f"experiments/{team.name}.yaml"


def write_spec(team: Team, trials: int, path: str | None = None) -> str:
    path = path or spec_of(team)
    team.spec(trials, file=path)
    return path


def write_a100_spec(team: Team, trials: int = 2) -> str:
    path = spec_of(team)
    (team.root / path).write_text(A100_SPEC.format(trials=trials, team=team.name))
    return path


def task(
    tmp: Path,
    spec: str | None,
    accelerators: str | None = "L4:1",
    *,
    nodes: int = 1,
    spot: bool = False,
    infra: str | None = "",
) -> sky.Task:
    """A task YAML as a user writes it, read by SkyPilot itself.

    ``A100`` names a family SkyPilot widens to ``A100-80GB`` on Kubernetes, SSH and Slurm, so
    its tasks name a cloud (``infra: aws``) unless ``infra`` says otherwise (None: none).
    """
    if infra == "":
        infra = "aws" if (accelerators or "").startswith("A100:") else None
    resources = {"use_spot": spot, **({"accelerators": accelerators} if accelerators else {})}
    resources |= {"infra": infra} if infra else {}
    config = {"name": "train", "num_nodes": nodes, "resources": resources, "run": "python t.py"}
    if spec is not None:
        config["envs"] = {"BUDGET_GATE_SPEC": spec, "LR": "0.1"}
    path = tmp / "task.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return sky.Task.from_yaml(str(path))


def request(t: sky.Task, name=LAUNCH, user: str | None = None) -> sky.UserRequest:
    who = models.User(id=f"id-{user}", name=user) if user else None
    return sky.UserRequest(task=t, skypilot_config=sky.Config(), request_name=name, user=who)


def rejection(req: sky.UserRequest, s: PolicySettings, **kw) -> str:
    with pytest.raises(exceptions.UserRequestRejectedByPolicy) as raised:
        apply_policy(req, s, **kw)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("budget-gate: ")
    return message


def approve(team: Team, spec: str) -> None:
    code, _, err = team.cli("approve", spec, "--by", "alice", "--reason", "worth it")
    assert code == 0, err


def test_approved_task_is_allowed_and_carries_the_run_tags(repo, tmp_path):
    spec = write_spec(repo, 8)
    approve(repo, spec)
    original = request(task(tmp_path, spec))
    mutated = apply_policy(original, settings(repo))
    assert isinstance(mutated, sky.MutatedUserRequest)
    envs = mutated.task.envs
    record = repo.records(spec)[0]
    tags = json.loads(envs["BUDGET_GATE_RUN_TAGS"])
    assert (
        tags["budget_gate.fingerprint"] == fingerprint_of(spec) == envs["BUDGET_GATE_FINGERPRINT"]
    )
    assert tags["budget_gate.approval_id"] == record.record_id == envs["BUDGET_GATE_APPROVAL_ID"]
    assert tags["budget_gate.spec"] == envs["BUDGET_GATE_SPEC"] == spec
    assert tags["budget_gate.team"] == repo.name and envs["BUDGET_GATE_GPUS"] == "1"
    assert dt.datetime.fromisoformat(envs["BUDGET_GATE_SUBMITTED_AT"]).tzinfo is not None
    assert envs["LR"] == "0.1"  # the user's own envs are kept
    # what the API server does with the answer: encode, decode against the original
    again = sky.MutatedUserRequest.decode(mutated.encode(), original)
    assert again.task.envs == envs and again.task.num_nodes == 1


def test_each_admitted_task_is_a_launch_that_uses_its_approval(repo, tmp_path):
    repo.policy()  # one launch per approval, the default
    spec = write_spec(repo, 8)
    approve(repo, spec)
    first = apply_policy(request(task(tmp_path, spec)), settings(repo)).task.envs
    [launch] = [r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]
    assert first["BUDGET_GATE_LAUNCH_KEY"] == launch.launch_key  # the task's guard joins it
    assert launch.approval == repo.records(spec)[0].record_id and launch.worst_cost == 80
    again = task(tmp_path, spec)
    again.update_envs({"BUDGET_GATE_LAUNCH_KEY": str(launch.launch_key)})  # no way to rejoin
    message = rejection(request(again), settings(repo))
    assert "covers 1 launch (approval.launches) and was used by the launch on" in message


def test_a_managed_jobs_cluster_is_judged_and_joins_only_its_own_launch(repo, tmp_path):
    """``_is_launched_by_jobs_controller`` is a client's flag: the request it names is judged
    as a launch, which may join the launch key the task's ``jobs.launch`` admission gave."""
    repo.policy()  # one launch per approval, the default
    relaunch = sky.AdminPolicyRequestName.JOBS_LAUNCH_CLUSTER
    bare = rejection(request(task(tmp_path, None, "A100:8"), relaunch), settings(repo))
    assert "asks for 8 × A100 but names no spec" in bare
    spec = write_spec(repo, 8)
    approve(repo, spec)
    jobs = sky.AdminPolicyRequestName.JOBS_LAUNCH
    admitted = apply_policy(request(task(tmp_path, spec), jobs), settings(repo)).task
    cluster = apply_policy(request(admitted, relaunch), settings(repo)).task.envs
    assert cluster["BUDGET_GATE_LAUNCH_KEY"] == admitted.envs["BUDGET_GATE_LAUNCH_KEY"]
    launches = [r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]
    assert len(launches) == 1  # the controller's cluster is the job's own launch
    forged = task(tmp_path, spec)
    forged.update_envs({"BUDGET_GATE_LAUNCH_KEY": "made-up"})
    message = rejection(request(forged, relaunch), settings(repo))
    assert "covers 1 launch (approval.launches) and was used by the launch on" in message
    bad = task(tmp_path, spec)
    bad.update_envs({"BUDGET_GATE_LAUNCH_KEY": "no spaces allowed"})
    assert "is not a launch key" in rejection(request(bad, relaunch), settings(repo))


@pytest.mark.parametrize("count", ["5", "many"])
def test_the_clusters_of_many_jobs_launched_at_once_are_refused(repo, tmp_path, count):
    """``sky jobs launch --num-jobs 5`` is judged once as jobs.launch, then five clusters
    join its one launch: SkyPilot says how many only on the clusters' requests."""
    spec = write_spec(repo, 8)
    approve(repo, spec)
    jobs = sky.AdminPolicyRequestName.JOBS_LAUNCH
    admitted = apply_policy(request(task(tmp_path, spec), jobs), settings(repo)).task
    admitted.update_envs({"SKYPILOT_NUM_JOBS": count})
    relaunch = sky.AdminPolicyRequestName.JOBS_LAUNCH_CLUSTER
    message = rejection(request(admitted, relaunch), settings(repo))
    assert f"is one of {count} managed jobs launched at once" in message
    admitted.update_envs({"SKYPILOT_NUM_JOBS": "1"})
    assert apply_policy(request(admitted, relaunch), settings(repo))  # one job: its launch


def test_unapproved_task_is_rejected_with_the_approve_command(repo, tmp_path):
    spec = write_spec(repo, 8)
    message = rejection(request(task(tmp_path, spec)), settings(repo))
    assert message.startswith(f"budget-gate: {spec} needs a fresh approval before launch: ")
    assert "BG110 8 trials is over the approval trigger of 4" in message
    assert "no approval is recorded for this version (sha256:" in message
    assert "the spec changed" not in message
    assert message.endswith(f" — budget-gate approve {spec} --by NAME --reason TEXT")


def test_stale_approvals_are_rejected_with_why(repo, tmp_path):
    spec = write_spec(repo, 8)
    approve(repo, spec)
    approved_at = repo.records(spec)[0].recorded_at
    expired = rejection(
        request(task(tmp_path, spec)), settings(repo), now=approved_at + dt.timedelta(days=31)
    )
    assert "needs a fresh approval" in expired and "expired on" in expired
    assert "the spec changed" not in expired
    write_spec(repo, 9)  # the same path, a new version
    changed = rejection(request(task(tmp_path, spec)), settings(repo))
    assert "the spec changed since its last approval by alice" in changed
    assert "approve this version again" in changed


def test_over_the_monthly_budget_is_rejected(repo, tmp_path):
    repo.policy(limits=", monthly_budget: 50")
    spec = write_spec(repo, 2)  # 20 USD, no approval needed
    assert apply_policy(request(task(tmp_path, spec)), settings(repo)).task.envs["BUDGET_GATE_SPEC"]
    repo.reconcile(write_spec(repo, 1, "experiments/other.yaml"), "40")  # 40 of 50 spent
    message = rejection(request(task(tmp_path, spec)), settings(repo))
    assert message.startswith(f"budget-gate: {spec} breaks the policy: BG120 ")
    assert "monthly budget" in message
    assert message.endswith(f"(budget-gate check {spec})")


def test_a_task_must_ask_for_what_the_spec_was_cleared_for(repo, tmp_path):
    spec = write_a100_spec(repo, trials=8)
    approve(repo, spec)
    s = settings(repo)
    assert (
        apply_policy(request(task(tmp_path, spec, "A100:8")), s).task.envs["BUDGET_GATE_GPUS"]
        == "8"
    )
    assert apply_policy(request(task(tmp_path, spec, "A100:4", nodes=2)), s)  # 4 × 2 nodes = 8
    doubled = rejection(request(task(tmp_path, spec, "A100:8", nodes=2)), s)
    assert doubled == (
        "budget-gate: task 'train' asks for 16 × A100 (8 per node × 2 nodes) on-demand, but "
        f"{spec} is cleared for 8 × A100 on-demand (resources.gpus_per_trial) — ask for "
        "A100:8 in all with use_spot: false, or change the spec and clear it again "
        f"(budget-gate check {spec})"
    )
    assert "asks for 8 × H100 on-demand" in rejection(request(task(tmp_path, spec, "H100:8")), s)
    assert "asks for 8 × A100 spot" in rejection(
        request(task(tmp_path, spec, "A100:8", spot=True)), s
    )
    assert "asks for no GPU" in rejection(request(task(tmp_path, spec, None)), s)


def test_a_spec_priced_at_the_cloud_it_names_runs_only_there(repo, tmp_path):
    """``resources.cloud: lambda`` prices the spec at Lambda's (lower) price, over the policy's."""
    path = spec_of(repo)
    text = A100_SPEC.format(trials=8, team=repo.name)
    text = text.replace("precision: bf16}", "precision: bf16, cloud: lambda}")
    (repo.root / path).write_text(text)
    approve(repo, path)
    s = settings(repo)

    def on(*clouds: str | None) -> sky.Task:
        t = task(tmp_path, path, "A100:8", infra=None)
        candidates = [task(tmp_path, path, "A100:8", infra=None).resources for _ in clouds]
        pinned = [
            next(iter(c)).copy(infra=cloud) if cloud else next(iter(c))
            for c, cloud in zip(candidates, clouds, strict=True)
        ]
        t.set_resources(pinned if len(pinned) > 1 else pinned[0])
        return t

    assert apply_policy(request(on("lambda")), s).task.envs["BUDGET_GATE_SPEC"] == path
    unpinned = rejection(request(on(None)), s)
    assert unpinned == (
        f"budget-gate: task 'train' may run on any cloud SkyPilot picks, but {path} is priced "
        "at lambda's price (resources.cloud) — set resources: {infra: lambda} in every "
        f"candidate, or drop resources.cloud from the spec and clear it again (budget-gate "
        f"check {path})"
    )
    assert "may run on AWS, but" in rejection(request(on("aws")), s)
    assert "may run on GCP, but" in rejection(request(on("lambda", "gcp")), s)
    jobs = sky.AdminPolicyRequestName.JOBS_LAUNCH
    assert "may run on any cloud" in rejection(request(on(None), jobs), s)
    # an exec runs on its cluster, whose cloud its launch was checked for; another it names
    exec_ = sky.AdminPolicyRequestName.CLUSTER_EXEC
    assert apply_policy(request(on(None), exec_), s).task.envs["BUDGET_GATE_SPEC"] == path
    assert "may run on AWS, but" in rejection(request(on("aws"), exec_), s)


@pytest.mark.parametrize("infra", ["kubernetes", "ssh", "slurm", None])
def test_a_gpu_name_skypilot_widens_runs_only_on_a_named_cloud(repo, tmp_path, infra):
    """On Kubernetes SkyPilot lets ``A100`` match an ``A100-80GB`` node (and Slurm a GRES type
    holding its segments): a task cleared at A100's price ran on the dearer GPU."""
    spec = write_a100_spec(repo)
    s = settings(repo)
    message = rejection(request(task(tmp_path, spec, "A100:8", infra=infra)), s)
    where = f"on {next(iter(task(tmp_path, spec, 'A100:8', infra=infra).resources)).cloud}"
    assert message == (
        f"budget-gate: task 'train' may run {where if infra else 'on any cloud SkyPilot picks'}, "
        "where SkyPilot places A100 on A100-80GB GPUs too (it matches a GPU name to longer names "
        f"that start with it), dearer than {spec} is priced for — set resources: {{infra: aws}} "
        "(a cloud whose A100 is the one priced) in every candidate, or price A100-80GB in the "
        f"spec (resources.accelerator), ask for it, and clear it again (budget-gate check {spec})"
    )
    assert apply_policy(request(task(tmp_path, spec, "A100:8", infra="gcp")), s).task
    exec_ = sky.AdminPolicyRequestName.CLUSTER_EXEC  # runs on its cluster, checked at launch
    assert apply_policy(request(task(tmp_path, spec, "A100:8", infra=None), exec_), s).task
    (repo.root / spec).write_text(
        A100_SPEC.format(trials=2, team=repo.name).replace("A100,", "A100-80GB,")
    )
    assert apply_policy(request(task(tmp_path, spec, "A100-80GB:8", infra=infra)), s).task


def test_exec_and_jobs_launch_are_judged_too(repo, tmp_path):
    spec = write_a100_spec(repo, trials=8)
    s = settings(repo)
    jobs = request(task(tmp_path, spec, "A100:8"), sky.AdminPolicyRequestName.JOBS_LAUNCH)
    assert "needs a fresh approval" in rejection(jobs, s)
    approve(repo, spec)
    assert apply_policy(jobs, s).task.envs["BUDGET_GATE_SPEC"] == spec
    exec_ = sky.AdminPolicyRequestName.CLUSTER_EXEC
    on_cluster = apply_policy(request(task(tmp_path, spec, None), exec_), s)  # no accelerator
    assert on_cluster.task.envs["BUDGET_GATE_FINGERPRINT"] == fingerprint_of(spec)
    assert "asks for 4 × A100" in rejection(request(task(tmp_path, spec, "A100:4"), exec_), s)
    any_of = task(tmp_path, spec, "A100:8")
    any_of.set_resources([*any_of.resources, *task(tmp_path, spec, "H100:8").resources])
    assert "asks for 8 × H100" in rejection(request(any_of, jobs.request_name), s)


def test_a_cleared_cluster_goes_down_when_idle_unless_its_task_says_otherwise(repo, tmp_path):
    """A spec prices the training, not the cluster left idle after it: a cleared launch with
    no autostop of its own that acts within an hour gets autodown after 10 idle minutes; one
    with its own keeps it, and an exec or a managed job (whose controller tears its cluster
    down) is left alone."""
    spec = write_spec(repo, 2)
    s = settings(repo)
    (resources,) = apply_policy(request(task(tmp_path, spec)), s).task.resources
    config = resources.autostop_config
    assert (config.enabled, config.idle_minutes, config.down) == (True, 10, True)
    own = task(tmp_path, spec)
    own.set_resources({r.copy(autostop={"idle_minutes": 60}) for r in own.resources})
    (kept,) = apply_policy(request(own), s).task.resources
    assert (kept.autostop_config.idle_minutes, kept.autostop_config.down) == (60, False)
    for idle in (-1, 61, 525_600):  # cancelled (sky launch -i -1), past an hour, a year
        late = task(tmp_path, spec)
        late.set_resources({r.copy(autostop={"idle_minutes": idle}) for r in late.resources})
        (fixed,) = apply_policy(request(late), s).task.resources
        assert (fixed.autostop_config.idle_minutes, fixed.autostop_config.down) == (10, True)
    for name in (sky.AdminPolicyRequestName.CLUSTER_EXEC, sky.AdminPolicyRequestName.JOBS_LAUNCH):
        (untouched,) = apply_policy(request(task(tmp_path, spec), name), s).task.resources
        assert untouched.autostop_config is None
    (cpu,) = apply_policy(request(task(tmp_path, None, None)), s).task.resources
    assert cpu.autostop_config is None  # judged by no spec: not ours to tear down


def test_a_gpu_task_without_a_spec(repo, tmp_path):
    gpu = request(task(tmp_path, None, "A100:8"))
    message = rejection(gpu, settings(repo))
    assert message == (
        "budget-gate: task 'train' asks for 8 × A100 but names no spec — add envs: "
        f"{{BUDGET_GATE_SPEC: experiments/NAME.yaml}} (its path in {repo.root}) and clear it "
        "(budget-gate check experiments/NAME.yaml)"
    )
    allowed = apply_policy(gpu, settings(repo, missing_spec=MissingSpec.ALLOW))
    assert "BUDGET_GATE_FINGERPRINT" not in allowed.task.envs  # passed as it came
    cpu = apply_policy(request(task(tmp_path, None, None)), settings(repo))
    assert cpu.task.envs == {}
    controller = sky.AdminPolicyRequestName.JOBS_LAUNCH_CONTROLLER
    assert apply_policy(request(task(tmp_path, None, None), controller), settings(repo))


SERVICES = ("serve.up", "serve.update", "serve.launch_replica", "jobs.pool_apply")


@pytest.mark.parametrize("name", SERVICES)
def test_gpu_services_and_pools_are_refused_even_with_a_cleared_spec(repo, tmp_path, name):
    spec = write_a100_spec(repo)  # 2 trials: cleared for launch without an approval
    s = settings(repo)
    assert apply_policy(request(task(tmp_path, spec, "A100:8")), s).task.envs["BUDGET_GATE_SPEC"]
    kind = sky.AdminPolicyRequestName(name)
    message = rejection(request(task(tmp_path, spec, "A100:8"), kind), s)
    assert message == (
        f"budget-gate: task 'train' asks for 8 × A100 per replica of a SkyServe service or job "
        f"pool ({name}), which budget-gate does not price (replicas run as long as the "
        "service) — train with sky launch or sky jobs launch and envs: {BUDGET_GATE_SPEC: "
        "experiments/NAME.yaml}, or serve without GPUs here"
    )
    assert "asks for 8 × A100" in rejection(request(task(tmp_path, None, "A100:8"), kind), s)
    cpu = apply_policy(request(task(tmp_path, None, None), kind), s)
    assert cpu.task.envs == {}  # a CPU service passes as it came
    allowed = apply_policy(
        request(task(tmp_path, None, "A100:8"), kind),
        settings(repo, missing_spec=MissingSpec.ALLOW),
    )
    assert "BUDGET_GATE_FINGERPRINT" not in allowed.task.envs


def test_every_skypilot_request_kind_is_judged_refused_or_known_to_launch_nothing():
    """A request SkyPilot adds must be placed here before it passes unjudged."""
    passing = {"validate", "optimize", "jobs.launch_controller", "serve.launch_controller"}
    kinds = {kind.value for kind in sky.AdminPolicyRequestName}
    assert "jobs.launch_cluster" in CHECKED_REQUESTS  # a client can name a launch so
    assert set(SERVICES) == SERVICE_REQUESTS
    assert kinds == CHECKED_REQUESTS | SERVICE_REQUESTS | passing


GPU_LIMITS = {"limits": {"nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": 8}}
POD_CONFIGS = {
    "kubernetes.pod_config": {
        "kubernetes": {"pod_config": {"spec": {"containers": [{"resources": GPU_LIMITS}]}}}
    },
    "a context's pod_config": {
        "kubernetes": {
            "context_configs": {
                "my-ctx": {"pod_config": {"spec": {"containers": [{"resources": GPU_LIMITS}]}}}
            }
        }
    },
    "an init container": {
        "kubernetes": {"pod_config": {"spec": {"initContainers": [{"resources": GPU_LIMITS}]}}}
    },
    "ssh.pod_config": {
        "ssh": {"pod_config": {"spec": {"containers": [{"resources": GPU_LIMITS}]}}}
    },
    "NVIDIA_VISIBLE_DEVICES": {
        "kubernetes": {
            "pod_config": {
                "spec": {
                    "containers": [{"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]
                }
            }
        }
    },
    "NVIDIA_VISIBLE_DEVICES set twice": {  # the kubelet sets the last; SkyPilot appends
        "kubernetes": {
            "pod_config": {
                "spec": {
                    "containers": [
                        {
                            "env": [
                                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
                                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                            ]
                        }
                    ]
                }
            }
        }
    },
    "resourceClaims": {  # dynamic resource allocation: the count is in a claim template
        "kubernetes": {
            "pod_config": {
                "spec": {
                    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight"}],
                    "containers": [{"resources": {"claims": [{"name": "gpus"}]}}],
                }
            }
        }
    },
    "a device plugin named like a GPU": {
        "kubernetes": {
            "pod_config": {
                "spec": {"containers": [{"resources": {"limits": {"k8s.amazonaws.com/vgpu": 8}}}]}
            }
        }
    },
    "a CDI annotation": {  # a CDI-enabled runtime injects what it names, past any request
        "kubernetes": {
            "pod_config": {"metadata": {"annotations": {"cdi.k8s.io/x": "nvidia.com/gpu=all"}}}
        }
    },
}
SHOWN = {
    "a CDI annotation": "the annotation cdi.k8s.io/x",
    "NVIDIA_VISIBLE_DEVICES set twice": "NVIDIA_VISIBLE_DEVICES",
    "resourceClaims": "resourceClaims (dynamic resource allocation)",
    "a device plugin named like a GPU": "k8s.amazonaws.com/vgpu",
}


@pytest.mark.parametrize("placed", sorted(POD_CONFIGS))
@pytest.mark.parametrize("where", ["config", "the client's SkyPilot config"])
def test_gpus_asked_through_a_pod_config_are_refused(repo, tmp_path, placed, where):
    """SkyPilot merges pod configs (the task's config:, a context's, the client's own
    ~/.sky/config.yaml) into the pods it makes: eight GPUs there made a 'CPU task' that
    needed no spec."""
    config = {
        "name": "cpu",
        "resources": {"cpus": 8, "infra": "kubernetes"},
        "run": "python train.py",
    }
    if where == "config":
        config["config"] = POD_CONFIGS[placed]
    path = tmp_path / "pod.yaml"
    path.write_text(json.dumps(config))
    asked = request(sky.Task.from_yaml(str(path)))
    if where != "config":
        asked.skypilot_config = sky.Config(POD_CONFIGS[placed])
    message = rejection(asked, settings(repo))
    shown = placed if placed == "NVIDIA_VISIBLE_DEVICES" else SHOWN.get(placed, "nvidia.com/gpu")
    assert message == (
        f"budget-gate: task 'cpu' asks for {shown} through a pod config in {where}, which "
        "budget-gate does not count — ask for the GPUs in resources.accelerators (e.g. "
        "H100:8) and name the spec"
    )


def test_a_pod_config_that_asks_for_no_gpu_passes(repo, tmp_path):
    config = {
        "name": "cpu",
        "resources": {"cpus": 8, "infra": "kubernetes"},
        "run": "python train.py",
        "config": {"kubernetes": {"pod_config": {"metadata": {"labels": {"a": "b"}}}}},
    }
    path = tmp_path / "pod.yaml"
    path.write_text(json.dumps(config))
    assert apply_policy(request(sky.Task.from_yaml(str(path))), settings(repo))  # no GPUs


def test_bad_spec_names_are_rejected(repo, tmp_path):
    s = settings(repo)
    outside = rejection(request(task(tmp_path, "../../etc/passwd")), s)
    assert "is outside the repository" in outside
    missing = rejection(request(task(tmp_path, "experiments/none.yaml")), s)
    assert "names no readable spec" in missing and "No such file" in missing
    spec = spec_of(repo)
    (repo.root / spec).write_text("apiVersion: budget-gate/v1\nkind: Experiment\n")
    invalid = rejection(request(task(tmp_path, spec)), s)
    assert invalid.startswith(f"budget-gate: {spec} is not a valid spec: {spec}:1:1: missing")
    assert invalid.endswith(f"(and 2 more errors); see budget-gate check {spec}")


def test_an_unreachable_ledger_rejects(repo, tmp_path):
    spec = write_spec(repo, 8)
    dead = settings(repo, tracking_uri=f"http://127.0.0.1:{free_port()}")
    message = rejection(request(task(tmp_path, spec)), dead)
    assert "the ledger is unreachable" in message and "connection refused" in message
    assert "(fail closed)" in message


def test_skypilot_applies_the_policy_named_by_class_path(repo, tmp_path, monkeypatch):
    spec = write_spec(repo, 8)
    approve(repo, spec)
    monkeypatch.setenv("BUDGET_GATE_REPO", str(repo.root))
    monkeypatch.setenv("BUDGET_GATE_POLICY_DIR", "policies")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", repo.uri)
    config = config_utils.Config.from_dict(
        {"admin_policy": "gate.integrations.skypilot.BudgetGatePolicy"}
    )
    with skypilot_config.replace_skypilot_config_in_process(config):
        dag, _ = admin_policy_utils.apply(task(tmp_path, spec), LAUNCH)
        assert dag.tasks[0].envs["BUDGET_GATE_FINGERPRINT"] == fingerprint_of(spec)
        with pytest.raises(exceptions.UserRequestRejectedByPolicy, match="16 × L4"):
            admin_policy_utils.apply(task(tmp_path, spec, "L4:8", nodes=2), LAUNCH)


@dataclass(frozen=True)
class Timing:
    median: float
    max: float

    def __str__(self) -> str:
        return f"median {self.median * 1000:.1f} ms, max {self.max * 1000:.1f} ms"


def timed(call, n: int = 10) -> Timing:
    times = []
    for _ in range(n):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    times.sort()
    return Timing(statistics.median(times), times[-1])


SECRET = "test-secret-0123456789abcdef"
"""The endpoint's shared secret in these tests (BUDGET_GATE_POLICY_SECRET)."""


class PolicyServer:
    """``budget-gate serve skypilot-policy`` as a process of its own.

    The program runs as ``python -m gate`` runs it, forked from a process that has imported
    it and SkyPilot once (:mod:`tests.zygote`: 2.8 s of imports per server otherwise), in
    its own environment, working directory and session; its output goes to ``log``.
    ``url`` carries the shared secret as SkyPilot's config would (``user:secret@``);
    ``bare_url`` is the same address without it.
    """

    def __init__(
        self,
        root: Path,
        tracking_uri: str,
        *,
        env: dict[str, str] | None = None,
        options: tuple[str, ...] = (),
    ) -> None:
        argv = [
            "serve", "skypilot-policy", "--port", "0",
            "--repo", str(root), "--tracking-uri", tracking_uri, *options,
        ]  # fmt: skip
        if env is None:
            env = {**os.environ, **CLIENT_ENV, "BUDGET_GATE_POLICY_SECRET": SECRET}
        self.log = Path(tempfile.mkdtemp(prefix="policy-server-")) / "server.log"
        self.said: str | None = None
        log = str(self.log)
        start = {"env": env, "stdout": log, "stderr": log, "argv": argv, "cwd": os.getcwd()}
        self.process = zygote("skypilot-policy", env).fork(start)
        first = self._first_line()
        assert " SkyPilot admin policy on http" in first, first
        self.first_line = first
        self.bare_url = first.split(" on ", 1)[1].split("/ ", 1)[0] + "/"
        scheme, _, address = self.bare_url.partition("://")
        self.url = f"{scheme}://budget-gate:{SECRET}@{address}"

    def _first_line(self) -> str:
        """The line the server writes once it listens (or all it wrote before it ended)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ended = self.process.poll() is not None
            said = self.log.read_text() if self.log.exists() else ""
            if "\n" in said:
                return said.split("\n", 1)[0] + "\n"
            if ended:
                return said
            time.sleep(0.01)
        return "nothing within 60 s"

    def stop(self) -> str:
        """Ask it to end (SIGTERM, as ``Popen.terminate``); all it wrote (again if stopped)."""
        if self.said is None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.said = self.log.read_text()
            shutil.rmtree(self.log.parent, ignore_errors=True)
        return self.said


@pytest.fixture
def server(repo):
    running = PolicyServer(repo.root, repo.uri)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def bare_server(tmp_path_factory, mlflow_server):
    """One server for the malformed requests: they never reach the repository or ledger."""
    running = PolicyServer(tmp_path_factory.mktemp("bare"), mlflow_server.uri)
    yield running
    running.stop()


def test_the_http_endpoint_answers_skypilots_client(repo, tmp_path, server):
    spec = write_a100_spec(repo, trials=8)
    client = admin_policy.RestfulAdminPolicy(server.url)
    with pytest.raises(exceptions.UserRequestRejectedByPolicy, match="needs a fresh approval"):
        client.validate_and_mutate(request(task(tmp_path, spec, "A100:8")))
    approve(repo, spec)
    original = request(task(tmp_path, spec, "A100:8"), user="carol")
    mutated = client.validate_and_mutate(original)
    assert mutated.task.envs["BUDGET_GATE_FINGERPRINT"] == fingerprint_of(spec)
    (resources,) = mutated.task.resources  # the autodown crosses the wire too
    assert (resources.autostop_config.idle_minutes, resources.autostop_config.down) == (10, True)
    assert mutated.task.envs["BUDGET_GATE_APPROVAL_ID"] == repo.records(spec)[0].record_id
    with pytest.raises(exceptions.UserRequestRejectedByPolicy) as raised:
        client.validate_and_mutate(request(task(tmp_path, spec, "A100:8", nodes=2)))
    assert "asks for 16 × A100 (8 per node × 2 nodes)" in str(raised.value)
    assert "cleared for 8 × A100" in str(raised.value)
    with pytest.raises(exceptions.UserRequestRejectedByPolicy, match="names no spec"):
        client.validate_and_mutate(request(task(tmp_path, None, "A100:8")))

    over_http = timed(lambda: client.validate_and_mutate(request(task(tmp_path, spec, "A100:8"))))
    in_process = timed(
        lambda: apply_policy(request(task(tmp_path, spec, "A100:8")), settings(repo))
    )
    print(f"\nSKYPILOT-POLICY round trip, approved A100 task, 10 requests over loopback: "
          f"{over_http}; the same decision in process: {in_process}")  # fmt: skip
    assert over_http.median < 2.0
    with ThreadPoolExecutor(8) as pool:  # concurrent requests, as an API server sends them
        answers = list(pool.map(lambda _: client.validate_and_mutate(original), range(8)))
    assert {a.task.envs["BUDGET_GATE_FINGERPRINT"] for a in answers} == {fingerprint_of(spec)}

    config = config_utils.Config.from_dict({"admin_policy": server.url})
    with skypilot_config.replace_skypilot_config_in_process(config):
        dag, _ = admin_policy_utils.apply(task(tmp_path, spec, "A100:8"), LAUNCH)
    assert dag.tasks[0].envs["BUDGET_GATE_SPEC"] == spec
    log = server.stop()
    assert f"allowed launch of task 'train' by carol under {spec}" in log
    assert f"allowed launch of task 'train' by an unnamed user under {spec}" in log
    assert "rejected launch of task 'train' by an unnamed user: task 'train' asks for 16" in log


def encoded(**fields) -> bytes:
    """A body shaped like SkyPilot's: a JSON string holding the request's JSON."""
    body = {"task": "{}", "skypilot_config": "{}", "request_name": "launch", "user": ""}
    return json.dumps(json.dumps({**body, **fields})).encode()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "malformed request: JSONDecodeError: "),
        (b'{"task": "x"}', "malformed request: ValueError: expected a JSON string"),
        (json.dumps("{}").encode(), "malformed request: ValidationError: "),
        (encoded(task="run: ["), "malformed request: "),
        (encoded(task="resources: {accelerators: 7}"), "malformed request: "),
        (
            encoded(request_name="nope"),
            "malformed request: ValueError: 'nope' is not a valid AdminPolicyRequestName",
        ),
        (b"x" * (4 * 1024 * 1024 + 1), "malformed request: body over 4194304 bytes"),
    ],
)
def test_malformed_requests_get_400_with_a_reason(bare_server, body, reason):
    answer = requests.post(bare_server.url, data=body, timeout=30)
    assert answer.status_code == 400
    assert answer.text.startswith(f"budget-gate: {reason}"), answer.text
    assert "\n" not in answer.text.strip()
    assert requests.get(bare_server.bare_url + "health", timeout=30).text == "ok"  # serving


def test_the_http_endpoint_fails_closed_when_mlflow_is_down(repo, tmp_path):
    spec = write_spec(repo, 8)
    down = PolicyServer(repo.root, f"http://127.0.0.1:{free_port()}")
    try:
        client = admin_policy.RestfulAdminPolicy(down.url)
        with pytest.raises(exceptions.UserRequestRejectedByPolicy) as raised:
            client.validate_and_mutate(request(task(tmp_path, spec)))
    finally:
        down.stop()
    assert "the ledger is unreachable" in str(raised.value)
    assert "launches are refused until it answers (fail closed)" in str(raised.value)


def _serve(*options: str, secret: str | None = SECRET) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BUDGET_GATE_POLICY_SECRET"}
    if secret is not None:
        env["BUDGET_GATE_POLICY_SECRET"] = secret
    return subprocess.run(
        [sys.executable, "-m", "gate", "serve", "skypilot-policy", *options],
        capture_output=True, text=True, timeout=60, check=False, cwd=ROOT, env=env,
    )  # fmt: skip


def test_serve_says_what_is_wrong_with_its_options(repo, tmp_path):
    taken = PolicyServer(repo.root, repo.uri)
    port = taken.bare_url.rsplit(":", 1)[1].rstrip("/")
    try:
        proc = _serve("--port", port)
    finally:
        taken.stop()
    assert proc.returncode == 3
    assert proc.stderr.startswith(f"budget-gate: cannot listen on 127.0.0.1:{port}: ")
    assert "choose another --port" in proc.stderr and "Traceback" not in proc.stderr
    short = tmp_path / "short"
    short.write_text("abc\n")
    cases = [
        (_serve("--port", "0", secret=None), "budget-gate: the endpoint needs a shared secret "
         "and BUDGET_GATE_POLICY_SECRET holds none — set BUDGET_GATE_POLICY_SECRET or "),
        (_serve("--port", "0", "--secret-file", str(short)),
         f"budget-gate: the secret in --secret-file {short} has 3 characters, fewer than 16"),
        (_serve("--port", "0", "--secret-file", str(tmp_path / "none")),
         f"budget-gate: --secret-file {tmp_path / 'none'}: cannot be read (No such file"),
        (_serve("--port", "0", "--ssl-certfile", str(short)),
         "budget-gate: --ssl-certfile and --ssl-keyfile go together"),
        (_serve("--port", "0", "--ssl-certfile", str(short), "--ssl-keyfile", str(short)),
         f"budget-gate: --ssl-certfile {short} / --ssl-keyfile {short}: "),
    ]  # fmt: skip
    for proc, start in cases:
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr.startswith(start), proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "abc" not in "".join(p.stderr for p, _ in cases)  # a secret is never printed


@pytest.mark.parametrize("named", [False, True])
def test_an_instance_type_on_no_named_cloud_is_refused(repo, tmp_path, named):
    """SkyPilot reads p5.48xlarge's 8 × H100 only once it picks a cloud, after the policy:
    read as no GPU, it passed with no spec, and beside a cleared L4:1 candidate."""
    config = {"name": "train", "resources": {"instance_type": "p5.48xlarge"}, "run": "x"}
    if named:
        spec = write_spec(repo, 2)
        config["resources"] = {
            "ordered": [{"instance_type": "p5.48xlarge"}, {"accelerators": "L4:1"}]
        }
        config["envs"] = {"BUDGET_GATE_SPEC": spec}
    path = tmp_path / "task.yaml"
    path.write_text(json.dumps(config))
    message = rejection(request(sky.Task.from_yaml(str(path))), settings(repo))
    assert message == (
        "budget-gate: task 'train' asks for instance type p5.48xlarge on no named cloud, whose "
        "GPUs SkyPilot reads only after budget-gate judges the task — name its accelerators "
        "beside it (e.g. accelerators: H100:8), or its cloud (infra: aws)"
    )


@pytest.mark.parametrize(
    ("infra", "instance", "accelerators", "said"),
    [("aws", "p5.48xlarge", "T4:1", "T4:1"), ("gcp", "a2-highgpu-1g", None, "A100:1")],
)
def test_a_gpu_instance_type_on_a_named_cloud_is_refused(
    repo, tmp_path, infra, instance, accelerators, said
):
    """SkyPilot launches and bills p5.48xlarge (8 × H100) beside ``accelerators: T4:1``, which
    the ask then says: a spec cleared for one T4 admitted it. Without accelerators SkyPilot
    fills in the instance's own; either way the instance type decides, so it is refused."""
    spec = write_spec(repo, 2)
    resources = {"infra": infra, "instance_type": instance}
    if accelerators:
        resources["accelerators"] = accelerators
    config = {"name": "train", "resources": resources, "envs": {"BUDGET_GATE_SPEC": spec}}
    path = tmp_path / "task.yaml"
    path.write_text(json.dumps({**config, "run": "python train.py"}))
    message = rejection(request(sky.Task.from_yaml(str(path))), settings(repo))
    assert message.startswith(
        f"budget-gate: task 'train' asks for instance type {instance} with accelerators "
        f"{said}: SkyPilot bills the instance type whatever accelerators"
    ), message


def test_a_cpu_instance_type_on_a_named_cloud_passes(repo, tmp_path):
    """On a named cloud SkyPilot reads the type's GPUs itself: a CPU machine asks for none."""
    config = {"name": "prep", "resources": {"infra": "gcp", "instance_type": "n2-standard-8"}}
    path = tmp_path / "task.yaml"
    path.write_text(json.dumps({**config, "run": "python prep.py"}))
    assert apply_policy(request(sky.Task.from_yaml(str(path))), settings(repo))


@pytest.mark.parametrize(
    ("accelerators", "nodes"),
    [("A100:0.5", 16), ("A100:0.125", 64), ("A100:1e308", 10), ("A100:2048", 1)],
)
def test_a_count_that_is_no_whole_number_of_gpus_a_node_holds_is_refused(
    repo, tmp_path, accelerators, nodes
):
    """Kubernetes gives each pod of ``A100:0.5`` a whole GPU: 16 nodes held 16, priced as 8;
    ``A100:1e308`` on 10 nodes overflowed the product (a traceback, a 500)."""
    spec = write_a100_spec(repo)
    approve(repo, spec)
    message = rejection(request(task(tmp_path, spec, accelerators, nodes=nodes)), settings(repo))
    assert "not a whole number of GPUs a node holds" in message


def test_a_managed_job_restarts_no_more_often_than_the_policy_prices(repo, tmp_path):
    """``max_restarts_on_errors: 1000`` reran the training a thousand times under one launch."""
    spec = write_a100_spec(repo)
    approve(repo, spec)
    config = {
        "name": "train",
        "resources": {
            "accelerators": "A100:8",
            "infra": "aws",
            "job_recovery": {"strategy": "FAILOVER", "max_restarts_on_errors": 1000},
        },
        "envs": {"BUDGET_GATE_SPEC": spec},
        "run": "python train.py",
    }
    path = tmp_path / "task.yaml"
    path.write_text(json.dumps(config))
    jobs = sky.AdminPolicyRequestName.JOBS_LAUNCH
    message = rejection(request(sky.Task.from_yaml(str(path)), jobs), settings(repo))
    assert "restarts on errors up to 1000 times (job_recovery.max_restarts_on_errors)" in message
    assert "at most 0 retries (the policy's reliability.max_retries)" in message
    config["resources"]["job_recovery"] = {"strategy": "FAILOVER"}  # type: ignore[index]
    path.write_text(json.dumps(config))
    assert apply_policy(request(sky.Task.from_yaml(str(path)), jobs), settings(repo)).task


@pytest.mark.parametrize(
    ("recovery", "said"),
    [
        ({"max_restarts_on_errors": 0, "recover_on_exit_codes": [33]}, "exit codes [33] (job_"),
        ({"recover_on_exit_codes": 33}, "restarts on the exit codes 33 (job_recovery.recover_on"),
        ({"strategy": "FAILOVER", "restart_forever": True}, "sets job_recovery.restart_forever,"),
    ],
)
@pytest.mark.parametrize("name", ["jobs.launch", "jobs.launch_cluster"])
def test_a_managed_job_restarts_on_nothing_the_policy_does_not_bound(
    repo, tmp_path, recovery, said, name
):
    """``recover_on_exit_codes`` restarted past max_restarts_on_errors: ``|| exit 33`` retrained
    for ever under one launch; a key budget-gate does not read is refused the same way."""
    spec = write_a100_spec(repo)
    approve(repo, spec)
    config = {
        "name": "train",
        "resources": {"accelerators": "A100:8", "infra": "aws", "job_recovery": recovery},
        "envs": {"BUDGET_GATE_SPEC": spec},
        "run": "python train.py || exit 33",
    }
    path = tmp_path / "task.yaml"
    path.write_text(json.dumps(config))
    kind = sky.AdminPolicyRequestName(name)
    message = rejection(request(sky.Task.from_yaml(str(path)), kind), settings(repo))
    assert said in message
    config["resources"]["job_recovery"] = {"strategy": "FAILOVER", "recover_on_exit_codes": []}  # type: ignore[index]
    path.write_text(json.dumps(config))
    assert apply_policy(request(sky.Task.from_yaml(str(path)), kind), settings(repo)).task


def test_a_controller_that_asks_for_gpus_is_refused(repo, tmp_path):
    """``jobs.controller.resources`` is the client's: a controller with 8 × H100 trains nothing."""
    controller = sky.AdminPolicyRequestName.JOBS_LAUNCH_CONTROLLER
    message = rejection(request(task(tmp_path, None, "H100:8"), controller), settings(repo))
    assert "a controller trains nothing and would hold them idle" in message
    assert apply_policy(request(task(tmp_path, None, None), controller), settings(repo))
