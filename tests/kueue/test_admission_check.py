"""Each admission check state, through the controller, against the local API server.

The Workloads are Kueue's own shapes (:mod:`tests.kueue.objects`), the server validates
every body against Kueue's CRDs and enforces the shipped ClusterRole, and the ledger is the
real MLflow server with approvals recorded by the real ``budget-gate approve``.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest

from gate.integrations import open_ledger
from gate.ledger import tracking
from gate.ledger.records import LedgerRecord, RecordKind
from gate.policy.loader import PolicySet
from tests.kueue import objects
from tests.kueue.conftest import (
    LedgerSwitch,
    approve,
    controller,
    spec_path,
    submit,
    utc_now,
    write_spec,
)
from tests.ledger_kit import fingerprint_of, github_approval
from tests.mlflow_server import KillingProxy, free_port


def only(outcomes):
    assert len(outcomes) == 1, outcomes
    return outcomes[0]


def expected_label(value: str) -> str:
    """The label rule, computed again here: invalid characters to '-', long ones cut + hash."""
    out = "".join(c if c.isalnum() or c in "._-" else "-" for c in value).strip("-_.")
    if len(out) > 63:
        out = out[:54].strip("-_.") + "-" + hashlib.sha256(value.encode()).hexdigest()[:8]
    return out


def test_a_cleared_batch_job_is_ready_and_its_pods_carry_the_run_tags(repo, kube):
    spec = write_spec(repo, trials=2)  # no approval needed
    workload = submit(kube, objects.batch_job("train", spec=spec, gpus=8))
    outcome = only(controller(repo, kube).sync())
    assert outcome.state == "Ready" and outcome.applied
    check = kube.check(workload)
    fp = fingerprint_of(spec)
    assert check["state"] == "Ready"
    assert check["message"] == (
        f"budget-gate: cleared under {spec} ({fp[:19]}; no approval needed)"
    )
    [update] = check["podSetUpdates"]
    assert update["name"] == "main"
    assert update["labels"] == {
        "budget-gate/team": repo.name,
        "budget-gate/spec": f"experiments-{repo.name}.yaml",
        "budget-gate/fingerprint": expected_label(fp),
    }
    assert len(update["labels"]["budget-gate/fingerprint"]) == 63
    tags = json.loads(update["annotations"]["budget-gate/run-tags"])
    assert tags[tracking.FINGERPRINT] == fp and tags[tracking.SPEC] == spec
    assert tags[tracking.TEAM] == repo.name and tags[tracking.GPUS] == "8"
    assert tracking.APPROVAL_ID not in tags
    [write] = kube.writes("/workloads/")
    assert write.headers["content-type"] == "application/apply-patch+yaml"
    assert write.query == {"fieldManager": ["budget-gate"], "force": ["true"]}
    assert write.body["metadata"]["resourceVersion"] == workload["metadata"]["resourceVersion"]
    assert write.body["metadata"]["uid"] == workload["metadata"]["uid"]
    assert set(write.body) == {"apiVersion", "kind", "metadata", "status"}
    # the other check's entry and Kueue's own status are untouched
    stored = kube.workload(workload)
    assert stored["status"]["conditions"] == workload["status"]["conditions"]
    assert stored["status"]["admission"] == workload["status"]["admission"]


def test_an_approved_pytorchjob_is_ready_and_every_pod_set_is_labelled(repo, kube):
    spec = write_spec(repo, trials=8)  # over 4 trials: needs an approval
    approve(repo, spec)
    workload = submit(kube, objects.pytorch_job("ddp", spec=spec, workers=1, gpus=4))
    assert only(controller(repo, kube).sync()).state == "Ready"
    check = kube.check(workload)
    record = repo.records(spec)[0]
    assert check["message"].endswith(f"; approval {record.record_id} by alice)")
    assert [u["name"] for u in check["podSetUpdates"]] == ["master", "worker"]
    for update in check["podSetUpdates"]:
        assert update["labels"]["budget-gate/approval"] == record.record_id


def test_a_github_approval_admits_only_in_its_own_repository(repo, kube, monkeypatch):
    """With one ledger and CI key for several repositories, repository B's Workload was
    admitted by an approval given on repository A's pull request (``verify`` refused it)."""
    spec = write_spec(repo, trials=8)  # needs an approval
    github_approval(repo, spec, spec=spec)  # CI's record of org/repo-a's pull request
    workload = submit(kube, objects.batch_job("b", spec=spec))
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/repo-b")
    assert only(controller(repo, kube).sync()).state == "Retry"
    assert "was given on GitHub in org/repo-a, not in org/repo-b" in kube.check(workload)["message"]
    kube.kueue_requeue(workload)
    monkeypatch.setenv("GITHUB_REPOSITORY", "org/repo-a")
    assert only(controller(repo, kube).sync()).state == "Ready"


def test_each_admission_is_a_launch_that_uses_its_approval(repo, kube):
    spec = write_spec(repo, trials=8)  # needs an approval; one launch per approval
    approve(repo, spec)
    for name in ("first", "second"):
        submit(kube, objects.batch_job(name, spec=spec))
    outcomes = controller(repo, kube).sync()  # one pass: the first launch counts at once
    assert sorted(o.state for o in outcomes) == ["Ready", "Retry"]
    [ready] = [o for o in outcomes if o.state == "Ready"]
    [refused] = [o for o in outcomes if o.state == "Retry"]
    [launch] = [r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]
    assert launch.launch_key == f"kueue-{ready.uid}" and launch.worst_cost > 0
    assert "covers 1 launch (approval.launches) and was used by the launch" in refused.message
    assert len([r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]) == 1


def test_a_workload_whose_key_names_a_launch_that_committed_too_little_is_rejected(repo, kube):
    """A launch of the spec at 0 USD, written by hand under the Workload's own launch key
    before the check decides, was joined: admitted with nothing committed to the month."""
    repo.policy(limits=", monthly_budget: 50")  # the spec: 10.32 USD worst case, no approval
    spec = write_spec(repo, trials=2)
    workload = submit(kube, objects.batch_job("free", spec=spec))
    forged = LedgerRecord(
        kind=RecordKind.LAUNCH, spec=spec, fingerprint=fingerprint_of(repo.root / spec),
        experiment="free", recorded_at=dt.datetime.now(dt.timezone.utc), currency="USD",
        worst_cost=Decimal(0), team=repo.name, launch_key=f"kueue-{workload['metadata']['uid']}",
    )  # fmt: skip
    open_ledger(repo.uri, PolicySet(repo.policy_dir).trust()).append(forged, None)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "names a launch that committed 0.00 USD, below this launch's worst case" in message
    launches = [r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]
    assert [r.worst_cost for r in launches] == [Decimal(0)]  # nothing joined, nothing written


def test_a_pass_records_one_versions_launches_in_one_record_that_counts_each(repo, kube):
    repo.policy(limits=", monthly_budget: 50")  # the spec: 10.32 USD worst case, 4 fit
    spec = write_spec(repo, trials=2)
    first = [submit(kube, objects.batch_job(f"first-{i}", spec=spec)) for i in range(3)]
    gate = controller(repo, kube)
    assert [o.state for o in gate.sync()] == ["Ready"] * 3
    launches = [r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]
    keys = sorted(f"kueue-{w['metadata']['uid']}" for w in first)
    assert sorted(r.launch_key for r in launches) == keys
    assert len({r.run_id for r in launches}) == 1  # one MLflow run holds the three
    assert len({r.record_id for r in launches}) == 3
    # read back from the ledger by the next pass, the record commits three launches
    for i in range(2):
        submit(kube, objects.batch_job(f"second-{i}", spec=spec))
    outcomes = gate.sync()
    assert sorted(o.state for o in outcomes) == ["Ready", "Retry"]
    [refused] = [o for o in outcomes if o.state == "Retry"]
    assert "over this month's budget: BG120" in refused.message
    assert len([r for r in repo.records(spec) if r.kind is RecordKind.LAUNCH]) == 4


def test_a_jobset_counts_the_gpus_of_every_replicated_job(repo, kube):
    spec = write_spec(repo, trials=2)
    shape = (("driver", 1, 1, 0), ("workers", 2, 1, 4))  # 2 pods × 4 GPUs = 8
    workload = submit(kube, objects.jobset("sweep", spec=spec, replicated=shape))
    assert only(controller(repo, kube).sync()).state == "Ready"
    check = kube.check(workload)
    assert [u["name"] for u in check["podSetUpdates"]] == ["driver", "workers"]


def test_no_approval_releases_the_quota_and_comes_back_once_approved(repo, kube):
    spec = write_spec(repo, trials=8)
    workload = submit(kube, objects.batch_job("big", spec=spec))
    gate = controller(repo, kube)
    assert only(gate.sync()).state == "Retry"
    check = kube.check(workload)
    assert check["state"] == "Retry" and check["requeueAfterSeconds"] == 300
    assert check["message"].startswith(
        f"budget-gate: {spec} needs a fresh approval before "
        "launch: BG110 8 trials is over the approval trigger"
    )
    assert check["message"].endswith(
        f"— budget-gate approve {spec} --by NAME --reason TEXT; its quota is released and it "
        "is tried again in 300 s"
    )
    kube.kueue_requeue(workload)  # Kueue, 300 s later: quota reserved again, check Pending
    assert only(gate.sync()).state == "Retry"  # still no approval
    kube.kueue_requeue(workload)
    approve(repo, spec)
    assert only(gate.sync()).state == "Ready"
    check = kube.check(workload)
    assert check["state"] == "Ready" and check["retryCount"] == 2
    assert check["podSetUpdates"][0]["labels"]["budget-gate/approval"]


def test_over_the_months_budget_waits_for_the_month_to_reset(repo, kube):
    repo.policy(limits=", monthly_budget: 50")  # the spec: 10.32 USD worst case
    spec = write_spec(repo, trials=2)
    repo.reconcile(repo.spec(1, file="experiments/other.yaml"), "45")  # 5 left
    moment = (utc_now() + dt.timedelta(seconds=1)).replace(microsecond=250000)  # after the record
    workload = submit(kube, objects.batch_job("over", spec=spec))
    assert only(controller(repo, kube, clock=lambda: moment).sync()).state == "Retry"
    check = kube.check(workload)
    month = dt.datetime(moment.year + moment.month // 12, moment.month % 12 + 1, 1,
                        tzinfo=dt.timezone.utc)  # fmt: skip
    assert check["requeueAfterSeconds"] == int((month - moment.replace(microsecond=0))
                                               .total_seconds())  # fmt: skip
    assert check["lastTransitionTime"] == moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"{spec} is over this month's budget: BG120 " in check["message"]
    assert f"when the month resets ({month:%Y-%m-%d} 00:00 UTC, in " in check["message"]


def test_a_spec_no_month_could_hold_is_rejected(repo, kube):
    repo.policy(limits=", monthly_budget: 10")  # the spec's worst case is more than 10
    spec = write_spec(repo, trials=2)
    workload = submit(kube, objects.batch_job("never", spec=spec))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert message.startswith(f"budget-gate: {spec} breaks the policy: BG120 ")
    assert message.endswith(f"— change the spec (budget-gate check {spec})")


# The fix each mismatch names, with its workload; the A100 flavor is the default.
MISMATCHES = [
    (
        "gpus",
        lambda spec: objects.batch_job("x", spec=spec, parallelism=2),
        {},
        "asks for 16 × A100 (main: 2 pods × 8 nvidia.com/gpu), but {spec} is cleared for "
        "8 × A100 (resources.gpus_per_trial) — make pods × GPUs per pod 8 in all, or change "
        "the spec and clear it again (budget-gate check {spec})",
    ),
    (
        "flavor",
        lambda spec: objects.batch_job("x", spec=spec),
        {"flavor": "h100"},
        "runs pod set main on H100 (flavor h100 nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3), "
        "but {spec} is cleared for 8 × A100 (resources.accelerator) — queue it where A100 "
        "nodes are, or change the spec and clear it again (budget-gate check {spec})",
    ),
    (
        "node selector",
        lambda spec: objects.batch_job(
            "x", spec=spec, node_selector={"cloud.google.com/gke-accelerator": "nvidia-l4"}
        ),
        {},
        "runs pod set main on L4 (nodeSelector cloud.google.com/gke-accelerator=nvidia-l4), "
        "but {spec} is cleared for 8 × A100 (resources.accelerator)",
    ),
    (
        "unknown",
        lambda spec: objects.batch_job("x", spec=spec),
        {"flavor": "gpu-pool"},
        "runs pod set main on an unknown accelerator (the name of flavor gpu-pool) — label "
        "its ResourceFlavor's nodeLabels with budget-gate/accelerator: A100, or select the "
        "GPU nodes in the pod template's nodeSelector",
    ),
    (
        "spot",
        lambda spec: objects.batch_job("x", spec=spec),
        {"flavor": "a100-spot"},
        "runs pod set main on spot (flavor a100-spot cloud.google.com/gke-spot=true), but "
        "{spec} is cleared for 8 × A100 on-demand (resources.capacity) — keep it off spot "
        "nodes, or change the spec and clear it again (budget-gate check {spec})",
    ),
    (  # the pods pick H100 nodes by required affinity, not by their nodeSelector
        "node affinity",
        lambda spec: _with_affinity(objects.batch_job("x", spec=spec), ["NVIDIA-H100-80GB-HBM3"]),
        {},
        "runs pod set main on H100 (nodeAffinity nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3), "
        "but {spec} is cleared for 8 × A100 (resources.accelerator)",
    ),
    (  # affinity lets them land on either
        "node affinity, two models",
        lambda spec: _with_affinity(
            objects.batch_job("x", spec=spec), ["NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3"]
        ),
        {},
        "runs pod set main on NVIDIA-A100-SXM4-40GB or NVIDIA-H100-80GB-HBM3 (nodeAffinity ",
    ),
    (  # a flavor named a100 without nodeLabels; the pods pick a p5 (8 × H100) machine
        "machine type",
        lambda spec: objects.batch_job(
            "x", spec=spec, node_selector={"node.kubernetes.io/instance-type": "p5.48xlarge"}
        ),
        {"flavor": "a100-pool"},
        "runs pod set main on an unknown accelerator (the pods pick their nodes by node."
        "kubernetes.io/instance-type=p5.48xlarge, and their flavor's nodeLabels name no "
        "accelerator, so its name proves no GPU model) — label its ResourceFlavor's nodeLabels",
    ),
    (
        "no gpu",
        lambda spec: objects.batch_job("x", spec=spec, gpus=0),
        {},
        "asks for no GPU, but {spec} is cleared for 8 × A100 (resources.gpus_per_trial) — "
        "request nvidia.com/gpu in its pods",
    ),
]


def _with_affinity(job_and_pod_sets: Any, products: list[str]) -> Any:
    """The job with its pods' required node affinity on the GPU model: any of ``products``."""
    rule = {"key": "nvidia.com/gpu.product", "operator": "In", "values": products}
    terms = {"nodeSelectorTerms": [{"matchExpressions": [rule]}]}
    job, pod_sets = job_and_pod_sets
    for template in (job["spec"]["template"], pod_sets[0]["template"]):
        template["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}
        }
    return job, pod_sets


@pytest.mark.parametrize(
    ("case", "job", "placed", "message"), MISMATCHES, ids=[m[0] for m in MISMATCHES]
)
def test_resources_unlike_the_spec_are_rejected_with_what_to_change(
    repo, kube, case, job, placed, message
):
    spec = write_spec(repo, trials=8)
    approve(repo, spec)
    workload = submit(kube, job(spec), **placed)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    text = kube.check(workload)["message"]
    key = f"{workload['metadata']['namespace']}/{workload['metadata']['name']}"
    assert text.startswith(f"budget-gate: workload {key} " + message.format(spec=spec)), text
    assert "\n" not in text


def test_on_demand_pods_for_a_spot_spec_and_mig_slices_are_compared(repo, kube):
    spec = write_spec(repo, trials=2, resources=", capacity: spot, checkpoint_every_minutes: 10")
    workload = submit(kube, objects.batch_job("od", spec=spec))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert (
        "runs pod set main on on-demand (no spot node label), but"
        in kube.check(workload)["message"]
    )
    spot = submit(kube, objects.batch_job("sp", spec=spec), flavor="a100-spot")
    assert only(controller(repo, kube).sync()).state == "Ready"
    assert kube.check(spot)["state"] == "Ready"


def test_a_mig_spec_needs_its_slices_not_whole_gpus(repo, kube):
    spec = write_spec(repo, trials=2, resources=", mig_profile: 1g.10gb")
    path = repo.root / spec  # 4 slices of one A100: a trial's slices must fit on one GPU
    path.write_text(path.read_text().replace("gpus_per_trial: 8", "gpus_per_trial: 4"))
    job, pod_sets = objects.batch_job("whole", spec=spec, gpus=4)
    workload = submit(kube, (job, pod_sets), flavor="mig")
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert kube.check(workload)["message"].endswith(
        "as MIG slices 1g.10gb (resources.mig_profile) — request nvidia.com/mig-1g.10gb only, "
        f"or change the spec and clear it again (budget-gate check {spec})"
    )
    job, pod_sets = objects.batch_job("sliced", spec=spec)
    limits = pod_sets[0]["template"]["spec"]["containers"][0]["resources"]["limits"]
    limits.clear()
    limits["nvidia.com/mig-1g.10gb"] = "4"
    sliced = kube.add(objects.workload_for(job, pod_sets, flavor="mig"))
    assert only(controller(repo, kube).sync()).state == "Ready"
    assert kube.check(sliced)["state"] == "Ready"


def test_a_gpu_workload_that_names_no_spec(repo, kube):
    workload = submit(kube, objects.batch_job("anon"))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    key = f"ml/{workload['metadata']['name']}"
    assert kube.check(workload)["message"] == (
        f"budget-gate: workload {key} asks for main: 1 pod × 8 nvidia.com/gpu but names no "
        "spec — add the annotation budget-gate/spec: experiments/NAME.yaml (its path in the "
        "repository) to the job's pod template and clear it (budget-gate check "
        "experiments/NAME.yaml)"
    )
    allowed = submit(kube, objects.batch_job("anon2"))
    assert only(controller(repo, kube, missing_spec_allowed=True).sync()).state == "Ready"
    assert kube.check(allowed)["message"].endswith(": admitted, because --missing-spec allow")
    assert "podSetUpdates" not in kube.check(allowed)
    cpu = submit(kube, objects.batch_job("cpu", gpus=0))
    assert only(controller(repo, kube).sync()).state == "Ready"
    assert kube.check(cpu)["message"].endswith("asks for no GPU and names no spec")


def test_the_spec_named_on_the_job_is_found_through_its_owner_reference(repo, kube):
    spec = write_spec(repo, trials=2)
    _, pod_sets = objects.batch_job("trainer-made")  # the pod templates name no spec
    owner = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ml", "uid": "uid-tj",
                     "labels": {objects.QUEUE_LABEL: "gpu"},
                     "annotations": {"budget-gate/spec": spec}},
    }  # fmt: skip
    workload = submit(kube, (owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"
    assert kube.check(workload)["podSetUpdates"][0]["labels"]["budget-gate/team"] == repo.name
    [read] = [r for r in kube.requests if "/trainjobs/" in r.path]
    assert read.path == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/tj"


def test_an_owner_the_role_may_not_read_is_a_rejection_naming_the_fix(repo, kube):
    write_spec(repo, trials=2)
    _, pod_sets = objects.batch_job("runtime-made")
    owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": "tj2", "namespace": "ml", "uid": "uid-tj2",
                          "labels": {objects.QUEUE_LABEL: "gpu"}}}  # fmt: skip
    workload = submit(kube, (owner, pod_sets))
    kube.rules = [r for r in kube.rules if "trainjobs" not in r["resources"]]
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert (
        "its TrainJob tj2 cannot be read for the spec it names (get namespaced custom object "
        "ml/trainjobs/tj2: " in message
    )
    assert '403 trainjobs is forbidden: User "system:serviceaccount:budget-gate:budget-gate" ' in (
        message
    )
    assert message.endswith(
        "let budget-gate get TrainJob objects (the ClusterRole of budget-gate init --kueue), "
        "or add the annotation budget-gate/spec to the pod template"
    )


def test_a_job_whose_template_reaches_the_workload_is_not_read(repo, kube):
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.batch_job("annotated-job")
    job["metadata"]["annotations"] = {"budget-gate/spec": spec}  # on the Job, not its template
    workload = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert "names no spec — add the annotation budget-gate/spec" in kube.check(workload)["message"]
    assert not [r for r in kube.requests if "/jobs/" in r.path]  # the Job is never read


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        ("../../etc/passwd", "is outside the repository"),
        ("experiments/none.yaml", "names no readable spec in"),
    ],
)
def test_a_spec_that_cannot_be_read_is_rejected(repo, kube, named, expected):
    workload = submit(kube, objects.batch_job("bad", spec=named))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert message.startswith(f"budget-gate: annotation budget-gate/spec={named} ")
    assert expected in message


def test_an_invalid_spec_and_a_policy_violation_are_rejected(repo, kube):
    path = spec_path(repo)
    (repo.root / path).write_text("apiVersion: budget-gate/v1\nkind: Experiment\n")
    invalid = submit(kube, objects.batch_job("invalid", spec=path))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert kube.check(invalid)["message"].startswith(
        f"budget-gate: {path} is not a valid spec: {path}:1:1: missing"
    )
    repo.policy(cap="1")
    spec = write_spec(repo, trials=2)
    costly = submit(kube, objects.batch_job("costly", spec=spec))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert kube.check(costly)["message"].startswith(f"budget-gate: {spec} breaks the policy: BG")


def test_only_the_namespaces_a_team_lists_spend_its_budget(repo, kube):
    (repo.root / "policies" / f"{repo.name}.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\n"
        "owns: {specs: [experiments/**], namespaces: [ml-team, ml-batch]}\n"
    )
    spec = write_spec(repo, trials=2)  # needs no approval: only where it runs is judged
    ours = submit(kube, objects.batch_job("ours", namespace="ml-team", spec=spec))
    theirs = submit(kube, objects.batch_job("theirs", namespace="ml", spec=spec))
    states = {o.workload.split("/")[0]: o.state for o in controller(repo, kube).sync()}
    assert states == {"ml-team": "Ready", "ml": "Rejected"}
    assert kube.check(ours)["message"].startswith(f"budget-gate: cleared under {spec} (")
    key = f"ml/{theirs['metadata']['name']}"
    assert kube.check(theirs)["message"] == (
        f"budget-gate: workload {key} runs in namespace 'ml', but {spec} spends team "
        f"{repo.name}'s budget, which only namespaces ml-team, ml-batch may spend "
        f"(owns.namespaces) — submit it there, or add ml to owns.namespaces in team "
        f"{repo.name}'s policy"
    )


def test_a_policy_that_cannot_be_read_is_retried(repo, kube):
    spec = write_spec(repo, trials=2)
    (repo.root / "policies" / "default.yaml").write_text("kind: Policy\nlimits: [\n")
    workload = submit(kube, objects.batch_job("p", spec=spec))
    assert only(controller(repo, kube).sync()).state == "Retry"
    check = kube.check(workload)
    assert check["requeueAfterSeconds"] == 300
    assert f"{spec} cannot be cleared: a policy or a setting is invalid (" in check["message"]


def test_pod_sets_naming_two_specs_and_labels_that_clash_are_rejected(repo, kube):
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.pytorch_job("mixed", spec=spec, workers=1, gpus=4)
    pod_sets[1]["template"]["metadata"]["annotations"]["budget-gate/spec"] = "experiments/b.yaml"
    mixed = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert "name different specs (experiments/b.yaml, " in kube.check(mixed)["message"]
    labelled = objects.batch_job("clash", spec=spec, labels={"budget-gate/team": "someone-else"})
    clash = submit(kube, labelled)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert kube.check(clash)["message"] == (
        f"budget-gate: pod set main of workload ml/{clash['metadata']['name']} already sets "
        f"budget-gate/team='someone-else', and budget-gate sets it to '{repo.name}' — remove "
        "it from the pod template (the run tags are set on admission)"
    )


def test_a_workload_whose_gpus_cannot_be_read_is_rejected(repo, kube):
    job, pod_sets = objects.batch_job("half", spec=write_spec(repo))
    pod_sets[0]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = (
        "500m"
    )
    workload = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert (
        "cannot be read (ValueError: nvidia.com/gpu: '500m' is not a whole number"
        in (kube.check(workload)["message"])
    )


@pytest.mark.parametrize(
    ("ask", "said"),
    [
        ({"google.com/tpu": "8"}, "google.com/tpu is an accelerator budget-gate does not price"),
        ({"nvidia.com/gpu.shared": "8"}, "nvidia.com/gpu.shared is an accelerator budget-gate"),
        ({"habana.ai/gaudi": "8"}, "habana.ai/gaudi is an accelerator budget-gate does not"),
        ({"k8s.amazonaws.com/vgpu": "8"}, "k8s.amazonaws.com/vgpu is an accelerator budget-"),
        ({"tencent.com/vcuda-core": "8"}, "tencent.com/vcuda-core is an accelerator budget-gate"),
        (None, "asks for devices through resourceClaims (dynamic resource allocation)"),
        ("visible", "sets NVIDIA_VISIBLE_DEVICES=all, which reaches the node's GPUs without"),
        ("visible from", "sets NVIDIA_VISIBLE_DEVICES=(valueFrom, a value outside the object)"),
    ],
)
def test_accelerators_it_cannot_count_are_rejected_not_taken_as_no_gpu(repo, kube, ask, said):
    """A workload naming no spec that asks for GPUs it cannot count was Ready ("no GPU")."""
    job, pod_sets = objects.batch_job("other-devices")
    pod = pod_sets[0]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    limits.pop("nvidia.com/gpu", None)
    if ask is None:
        pod["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]
    elif ask == "visible":  # the container toolkit shows every GPU of the node
        pod["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    elif ask == "visible from":
        source = {"configMapKeyRef": {"name": "gpus", "key": "visible"}}
        pod["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": source}]
    else:
        limits.update(ask)
    workload = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert said in kube.check(workload)["message"]


def test_an_unreachable_ledger_is_never_ready_and_the_check_recovers(repo, kube):
    spec = write_spec(repo, trials=8)
    approve(repo, spec)
    switch = LedgerSwitch(repo.uri)
    try:
        switch.down = True
        workload = submit(kube, objects.batch_job("outage", spec=spec))
        gate = controller(repo, kube, uri=switch.uri)
        outcome = only(gate.sync())
        assert outcome.state == "Pending" and outcome.waits_on_ledger
        check = kube.check(workload)
        assert check["state"] == "Pending"
        assert check["message"].startswith(f"budget-gate: {spec} cannot be cleared: the ledger "
                                           "is unreachable (")  # fmt: skip
        assert "(fail closed)" in check["message"]
        assert check["message"].endswith("; decided as soon as it answers")
        assert only(gate.sync()).state == "Pending"  # still down: still not Ready
        switch.down = False
        assert only(gate.sync()).state == "Ready"
        assert kube.check(workload)["state"] == "Ready"
    finally:
        switch.close()


def test_a_launch_record_that_cannot_be_written_admits_none_of_its_workloads(
    repo, kube, doomed_mlflow
):
    repo.policy(limits=", monthly_budget: 1000")  # every admission is a launch to record
    spec = write_spec(repo, trials=2)
    workloads = [submit(kube, objects.batch_job(f"lost-{i}", spec=spec)) for i in range(3)]
    with KillingProxy(doomed_mlflow, kill_on="/runs/create") as proxy:
        outcomes = controller(repo, kube, uri=proxy.uri).sync()
    assert [o.state for o in outcomes] == ["Pending"] * 3  # their one record failed: none
    for workload in workloads:
        check = kube.check(workload)
        assert check["state"] == "Pending"
        assert check["message"].startswith("budget-gate: the ledger could not record the launch")
    assert any("/runs/create" in line for line in proxy.seen)  # the write was tried


def test_a_dead_ledger_port_is_pending_too(repo, kube):
    spec = write_spec(repo, trials=8)
    workload = submit(kube, objects.batch_job("dead", spec=spec))
    gate = controller(repo, kube, uri=f"http://127.0.0.1:{free_port()}")
    assert only(gate.sync()).state == "Pending"
    assert "the ledger is unreachable" in kube.check(workload)["message"]
    assert (
        ": connection refused — is the tracking server running?)" in kube.check(workload)["message"]
    )
    assert only(gate.sync()).state == "Pending"
    assert len(kube.writes("/workloads/")) == 1  # the same words again: nothing written


def test_a_workload_changed_since_it_was_read_is_decided_again(repo, kube):
    spec = write_spec(repo, trials=2)
    workload = submit(kube, objects.batch_job("moved", spec=spec))
    gate = controller(repo, kube)
    gate.activate()
    stale = kube.workload(workload)
    kube.touch("workloads", workload["metadata"]["name"], "ml")  # another writer
    outcome = only(gate.decide([stale]))
    assert outcome.conflict and not outcome.applied
    assert kube.check(workload)["state"] == "Pending"
    [refused] = kube.writes("/workloads/")
    assert refused.status == 409
    assert only(gate.sync()).state == "Ready"


def test_workloads_not_waiting_on_our_check_are_left_alone(repo, kube):
    spec = write_spec(repo, trials=2)
    theirs = submit(kube, objects.batch_job("theirs", spec=spec), checks=("provisioning",))
    waiting = submit(kube, objects.batch_job("waiting", spec=spec), reserved=False)
    both = submit(kube, objects.batch_job("both", spec=spec), checks=("budget-gate",
                                                                      "provisioning"))  # fmt: skip
    gate = controller(repo, kube)
    assert [o.workload.split("/")[1] for o in gate.sync()] == [both["metadata"]["name"]]
    assert kube.workload(theirs) == theirs and kube.workload(waiting) == waiting
    entries = {c["name"]: c["state"] for c in kube.workload(both)["status"]["admissionChecks"]}
    assert entries == {"budget-gate": "Ready", "provisioning": "Pending"}  # list-map merge
    assert gate.sync() == []  # decided: nothing is pending any more


def test_a_job_that_reruns_its_pods_is_rejected(repo, kube):
    """completions: 1000 at parallelism 1 is one pod in the Workload and 1,000 pod runs."""
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.batch_job("reruns", spec=spec)
    job["spec"]["completions"] = 1000
    workload = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert kube.check(workload)["message"] == (
        "budget-gate: workload ml/" + workload["metadata"]["name"] + ": its Job reruns runs "
        "1000 pods (completions), 1 at a time (parallelism), but its Workload shows only those "
        "at once — make completions equal parallelism, and run the repeats as the trials of "
        "the spec's search"
    )
    same, pod_sets = objects.batch_job("once", spec=spec)  # completions = parallelism
    assert submit(kube, (same, pod_sets)) and only(controller(repo, kube).sync()).state == "Ready"


def _pod(name: str, spec: str, restart: str | None, kind: str = "Pod") -> tuple[dict, list]:
    """A plain Pod (Kueue's pod integration), or a pod of another owner, and its pod sets."""
    tmpl = objects.template(8, spec=spec, restart=restart or "Never")
    if restart is None:
        del tmpl["spec"]["restartPolicy"]  # Kubernetes' default for a Pod: Always
    api = {"Pod": "v1", "Deployment": "apps/v1", "RayJob": "ray.io/v1"}[kind]
    meta = {"name": name, "namespace": "ml", "uid": str(uuid.uuid4()),
            "labels": {"kueue.x-k8s.io/queue-name": "gpu"}}  # fmt: skip
    return {"apiVersion": api, "kind": kind, "metadata": meta}, [
        {"name": "main", "count": 1, "template": tmpl}
    ]


@pytest.mark.parametrize(
    ("restart", "kind"), [("Always", "Pod"), (None, "Pod"), ("Always", "Deployment")]
)
def test_a_gpu_pod_that_restarts_after_every_exit_is_rejected(repo, kube, restart, kind):
    """A bare Pod's default restarts its training after each exit, under one launch."""
    spec = write_spec(repo, trials=2)
    owner, pod_sets = _pod("again", spec, restart, kind)
    workload = kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "the pods of its pod set main restart after every exit (restartPolicy Always" in message
    assert message.endswith("run the training as a Job with restartPolicy: Never (or OnFailure)")


@pytest.mark.parametrize(("restart", "kind"), [("Never", "Pod"), ("Always", "RayJob")])
def test_a_gpu_pod_that_ends_is_admitted(repo, kube, restart, kind):
    spec = write_spec(repo, trials=2)
    owner, pod_sets = _pod(f"once-{restart.lower()}", spec, restart, kind)
    kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"


def test_a_bare_gpu_pod_that_restarts_on_failure_is_rejected(repo, kube):
    """A Pod has no backoffLimit: under ``OnFailure`` the kubelet restarts a training that
    fails (on purpose, say) for ever, holding its GPUs under one launch."""
    spec = write_spec(repo, trials=2)
    owner, pod_sets = _pod("on-failure", spec, "OnFailure")
    workload = kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "restart after every failure (restartPolicy OnFailure on a bare Pod" in message


def test_a_kubeflow_job_written_as_upstream_writes_it_is_admitted(repo, kube):
    """Kubeflow keeps ``restartPolicy`` on the replica spec, not in the template Kueue copies:
    a template without one is no bare Pod's (it was rejected as restarting after every exit)."""
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.pytorch_job("upstream", spec=spec, workers=0)
    for pod_set in pod_sets:
        del pod_set["template"]["spec"]["restartPolicy"]
    submit(kube, (job, pod_sets))  # its replica specs are read: OnFailure
    assert only(controller(repo, kube).sync()).state == "Ready"


@pytest.mark.parametrize("replica", ["Worker", "Launcher"])
def test_a_kubeflow_gpu_replica_that_restarts_after_every_exit_is_rejected(repo, kube, replica):
    """``restartPolicy: Always`` on a replica spec (which the operator writes into its pods
    over the template's) reruns the training after it ends well: the job never ends. A
    replica the Workload has no pod set for (``Launcher`` here) is taken to hold GPUs."""
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.pytorch_job("forever", spec=spec, workers=1)
    replicas = job["spec"]["pytorchReplicaSpecs"]
    replicas.setdefault(replica, copy.deepcopy(replicas["Worker"]))["restartPolicy"] = "Always"
    workload = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert kube.check(workload)["message"] == (
        f"budget-gate: workload ml/{workload['metadata']['name']}: its PyTorchJob forever "
        f"restarts the pods of its replica {replica} after every exit (pytorchReplicaSpecs."
        f"{replica}.restartPolicy Always), so their training runs again and again and the job "
        "never ends, which no spec prices — set restartPolicy: OnFailure (or Never, ExitCode) "
        "on the replica"
    )


def _wrapped(name: str, components: list[dict], pod_sets: list[dict]) -> tuple[dict, list]:
    """An AppWrapper holding ``components``, and ``pod_sets`` as Kueue reads them."""
    meta = {"name": name, "namespace": "ml", "uid": str(uuid.uuid4()),
            "labels": {objects.QUEUE_LABEL: "gpu"}}  # fmt: skip
    owner = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": meta,
        "spec": {"components": [{"template": c} for c in components]},
    }
    return owner, pod_sets  # fmt: skip


@pytest.mark.parametrize(
    ("inside", "said"),
    [
        ("completions", "holds a Job batch that runs 1000 pods (completions), 1 at a time"),
        ("replica", "holds a PyTorchJob pt that restarts the pods of its replica Master after"),
        ("raycluster", "holds a RayCluster #1 that keeps its pods running, each replaced"),
    ],
)
def test_an_appwrapper_is_judged_by_the_components_it_holds(repo, kube, inside, said):
    """Kueue sees an AppWrapper's pods at once; what its components run again was unread."""
    spec = write_spec(repo, trials=2)
    batch, pod_sets = objects.batch_job("batch", spec=spec)
    components = [batch]
    if inside == "completions":
        components = [{**batch, "spec": {**batch["spec"], "completions": 1000}}]
    elif inside == "replica":
        job, pod_sets = objects.pytorch_job("pt", spec=spec, workers=0)
        job["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "Always"
        components = [job]
    else:
        components.append({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {}})
    owner, pod_sets = _wrapped(f"aw-{inside}", components, pod_sets)
    kube.add_other(owner, "appwrappers")
    workload = kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert f"its AppWrapper aw-{inside} {said}" in message, message
    assert "which no spec prices" in message or "the trials of the spec's search" in message
    plain, pod_sets = _wrapped("aw-plain", [batch], objects.batch_job("batch", spec=spec)[1])
    kube.add_other(plain, "appwrappers")
    kube.add(objects.workload_for(plain, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"


def test_a_kubeflow_replica_without_gpus_may_restart_always(repo, kube):
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.pytorch_job("cpu-sidecar", spec=spec, workers=1)
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "Always"
    for limits in (c["resources"]["limits"] for c in pod_sets[1]["template"]["spec"]["containers"]):
        limits.pop("nvidia.com/gpu")
    submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"


def test_a_kubeflow_job_the_role_may_not_read_is_rejected(repo, kube):
    spec = write_spec(repo, trials=2)
    workload = submit(kube, objects.pytorch_job("old-role", spec=spec, workers=0))
    kube.rules = [r for r in kube.rules if "pytorchjobs" not in r["resources"]]
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "its PyTorchJob old-role cannot be read for its replicas' restartPolicy (" in message


def test_a_job_the_role_may_not_read_is_rejected_with_the_role_to_grant(repo, kube):
    """An upgrade that kept the old ClusterRole: the rerun check cannot read the Job."""
    spec = write_spec(repo, trials=2)
    workload = submit(kube, objects.batch_job("old-role", spec=spec))
    kube.rules = [r for r in kube.rules if "jobs" not in r["resources"]]
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "its Job old-role cannot be read for how often it runs its pods (" in message
    assert message.endswith(
        "— let budget-gate get Job objects (the ClusterRole of budget-gate init --kueue)"
    )


@pytest.mark.parametrize("wrapped", ["pytorch", "rayjob"])
def test_an_appwrapper_of_jobs_that_end_is_admitted_without_a_written_policy(repo, kube, wrapped):
    """A PyTorchJob keeps restartPolicy on its replica spec, a RayJob's Ray pods end with
    it: wrapped in an AppWrapper, their templates without a policy were rejected as a bare
    Pod's ("restartPolicy Always, a Pod's default"), though each is admitted unwrapped."""
    spec = write_spec(repo, trials=2)
    if wrapped == "pytorch":
        job, pod_sets = objects.pytorch_job("pt", spec=spec, workers=0)
    else:
        job, pod_sets = objects.pytorch_job("ray", spec=spec, workers=0)
        job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": job["metadata"]}
    for pod_set in pod_sets:
        del pod_set["template"]["spec"]["restartPolicy"]
    owner, pod_sets = _wrapped(f"aw-{wrapped}", [job], pod_sets)
    kube.add_other(owner, "appwrappers")
    kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"
    bare, pod_sets = _wrapped("aw-pod", [{"apiVersion": "v1", "kind": "Pod"}], pod_sets)
    kube.add_other(bare, "appwrappers")  # a bare Pod's template without one: Always
    workload = kube.add(objects.workload_for(bare, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert "restartPolicy Always, a Pod's default" in kube.check(workload)["message"]
