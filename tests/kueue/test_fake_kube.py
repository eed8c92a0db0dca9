"""The local API server itself: Kueue's shapes, and the Kubernetes semantics the controller uses.

If the fake drifted from kube-apiserver, the controller's tests would prove nothing: each
rule the controller relies on is shown here against the fake directly.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from gate.admission.workload import read_workload
from gate.integrations.kubernetes.api import KubeError, KueueApi
from tests.kueue import objects
from tests.kueue.crds import FIXTURES, crd
from tests.kueue.fake_kube import FakeKube

UIDS = {
    "batch-job": "5f0d2c3e-8f5a-4c1e-9b7e-2d1a6c9e4b01",
    "jobset": "8b3e6f12-4d7c-4a59-b1e2-7c0f9d2a5e33",
    "pytorchjob": "c41a9e07-2b6d-4f38-8e15-93d7a0c6b2f4",
}
BUILT = {
    "batch-job": lambda: objects.batch_job(
        "llm-finetune", gpus=8, spec="experiments/llm.yaml", uid=UIDS["batch-job"],
        node_selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"},
    ),
    "jobset": lambda: objects.jobset(
        "llm-sweep", spec="experiments/llm.yaml", uid=UIDS["jobset"],
        replicated=(("driver", 1, 1, 0), ("workers", 2, 1, 4)),
    ),
    "pytorchjob": lambda: objects.pytorch_job(
        "llm-ddp", workers=1, gpus=4, spec="experiments/llm.yaml", uid=UIDS["pytorchjob"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(BUILT))
def test_the_workload_fixtures_are_what_kueues_code_builds(kind, golden):
    job, pod_sets = BUILT[kind]()
    workload = crd("workloads").default(objects.workload_for(job, pod_sets))
    text = yaml.safe_dump_all([job, workload], sort_keys=False, width=100)
    header = (
        f"# A {job['kind']} and the Workload Kueue v0.19.2 writes for it once quota is reserved\n"
        "# and the budget-gate check waits: built by tests/kueue/objects.py, which cites the\n"
        "# Kueue code each field follows; regenerate with pytest --update-goldens.\n"
    )
    golden(FIXTURES / f"workload-{kind}.yaml", header + text)
    assert crd("workloads").errors(workload) == []


def test_workload_names_match_kueues_own_test_vectors():
    # pkg/controller/jobframework/workload_names_test.go at v0.19.2
    assert objects.workload_name("Job", "batch", "name", "uid") == "job-name-ef3a1"
    long = (
        "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
        "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-"
        "by-engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-"
        "dept"
    )
    assert objects.workload_name("Job", "batch", long, "uid").endswith("-approved-by-l-218b8")
    assert len(objects.workload_name("Job", "batch", long, "uid")) == 253


def test_the_controller_reads_the_fixtures_pods_and_gpus():
    docs = {k: list(yaml.safe_load_all((FIXTURES / f"workload-{k}.yaml").read_text()))[1]
            for k in BUILT}  # fmt: skip
    shapes = {
        kind: [(ps.name, ps.pods, dict(ps.gpu_resources), ps.flavor, ps.spec_ref)
               for ps in read_workload(doc).pod_sets]
        for kind, doc in docs.items()
    }  # fmt: skip
    spec = "experiments/llm.yaml"
    assert shapes == {
        "batch-job": [("main", 1, {"nvidia.com/gpu": 8}, "a100", spec)],
        "jobset": [("driver", 1, {}, None, spec), ("workers", 2, {"nvidia.com/gpu": 4}, "a100",
                                                    spec)],
        "pytorchjob": [("master", 1, {"nvidia.com/gpu": 4}, "a100", spec),
                       ("worker", 1, {"nvidia.com/gpu": 4}, "a100", spec)],
    }  # fmt: skip
    main = docs["batch-job"]["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    assert main == {"batch.kubernetes.io/job-name": "llm-finetune"}  # cleanLabels


def test_the_crds_are_vendored_with_their_source_and_licence():
    readme = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert "kubernetes-sigs/kueue" in readme and "v0.19.2" in readme
    assert "c3785e520aeeb0e0a93e8a3785a6e46c51502246" in readme
    licence = (FIXTURES / "LICENSE").read_text().split()
    assert licence[:4] == ["Apache", "License", "Version", "2.0,"]
    for plural in ("workloads", "admissionchecks", "clusterqueues", "resourceflavors"):
        assert crd(plural).uncompiled == []  # every CEL rule is evaluated


@pytest.fixture
def kube():
    with FakeKube() as server:
        yield server


def a_workload(kube, name="w", checks=("budget-gate", "other")):
    job, pod_sets = objects.batch_job(name, spec="experiments/x.yaml")
    return kube.add(objects.workload_for(job, pod_sets, checks=checks))


def entry(state="Ready", **more):
    return {"name": "budget-gate", "state": state, "message": "m",
            "lastTransitionTime": "2026-11-20T10:00:00Z", **more}  # fmt: skip


def apply(api, workload, value, **changes):
    meta = {**workload["metadata"], **changes}
    ref = read_workload({**workload, "metadata": meta})
    return api.apply_check(ref, value)


def test_apply_merges_our_entry_by_name_and_keeps_everything_else(kube):
    api = KueueApi(kube.client())
    workload = a_workload(kube)
    answer = apply(api, workload, entry())
    checks = {c["name"]: c for c in answer["status"]["admissionChecks"]}
    assert checks["budget-gate"]["state"] == "Ready" and checks["other"]["state"] == "Pending"
    assert answer["status"]["admission"] == workload["status"]["admission"]
    assert int(answer["metadata"]["resourceVersion"]) > int(workload["metadata"]["resourceVersion"])
    again = apply(api, answer, entry())  # the same apply again: no change, same version
    assert again["metadata"]["resourceVersion"] == answer["metadata"]["resourceVersion"]


def test_a_field_we_stop_applying_is_removed_unless_someone_else_owns_it(kube):
    api = KueueApi(kube.client())
    workload = a_workload(kube)
    updates = [{"name": "main", "labels": {"budget-gate/team": "nlp"}}]
    first = apply(api, workload, entry(podSetUpdates=updates, requeueAfterSeconds=5))
    second = apply(api, first, entry("Retry"))
    ours = next(c for c in second["status"]["admissionChecks"] if c["name"] == "budget-gate")
    assert "podSetUpdates" not in ours and "requeueAfterSeconds" not in ours
    assert ours["lastTransitionTime"] == "2026-11-20T10:00:00Z"  # Kueue's field, now ours


def test_preconditions_and_schemas_refuse_what_kube_apiserver_refuses(kube):
    api = KueueApi(kube.client())
    workload = a_workload(kube)
    with pytest.raises(KubeError) as stale:
        apply(api, workload, entry(), resourceVersion="1")
    assert stale.value.status == 409 and "the object has been modified" in str(stale.value)
    with pytest.raises(KubeError) as other:
        apply(api, workload, entry(), uid="not-the-uid")
    assert other.value.status == 409 and "Precondition failed: UID" in str(other.value)
    with pytest.raises(KubeError) as bad:
        apply(api, workload, entry(state="Approved"))
    assert bad.value.status == 422 and "'Approved' is not one of" in str(bad.value)
    with pytest.raises(KubeError) as label:
        apply(api, workload, entry(podSetUpdates=[{"name": "main",
                                                   "labels": {"x": "a/b"}}]))  # fmt: skip
    assert label.value.status == 422 and "is not a valid label value" in str(label.value)
    with pytest.raises(KubeError) as pod_set:
        apply(api, workload, entry(podSetUpdates=[{"name": "nope"}]))
    assert "no pod set is named 'nope'" in str(pod_set.value)
    apply(api, workload, {"name": "budget-gate", "state": "Pending"})  # merged: Kueue's message
    with pytest.raises(KubeError) as missing:  # a new entry must bring its required fields
        apply(api, workload, {"name": "another", "state": "Ready"})
    assert "'message' is a required property" in str(missing.value)
    assert kube.check(workload)["state"] == "Pending"  # nothing of it was stored
    kube.errors.clear()  # the refusals above were meant


def test_an_apply_needs_the_apply_content_type_and_a_field_manager(kube):
    api = KueueApi(kube.client())
    workload = a_workload(kube)
    body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": workload["metadata"]["name"], "namespace": "ml"},
            "status": {"admissionChecks": [entry()]}}  # fmt: skip
    path = f"ml/workloads/{workload['metadata']['name']}"
    objects_api = api.objects
    group = ("kueue.x-k8s.io", "v1beta2", "ml", "workloads", workload["metadata"]["name"], body)
    with pytest.raises(Exception) as merge:
        objects_api.patch_namespaced_custom_object_status(*group)
    assert getattr(merge.value, "status", None) == 415, path
    with pytest.raises(Exception) as manager:
        objects_api.patch_namespaced_custom_object_status(
            *group, _content_type="application/apply-patch+yaml"
        )
    assert getattr(manager.value, "status", None) == 422
    assert "fieldManager: Required value" in json.loads(manager.value.body)["message"]


def test_taking_another_managers_field_needs_force(kube):
    api = KueueApi(kube.client())
    workload = a_workload(kube)
    import kubernetes

    body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": workload["metadata"]["name"], "namespace": "ml"},
            "status": {"admissionChecks": [entry()]}}  # fmt: skip
    with pytest.raises(kubernetes.client.exceptions.ApiException) as conflict:
        api.objects.patch_namespaced_custom_object_status(
            "kueue.x-k8s.io", "v1beta2", "ml", "workloads", workload["metadata"]["name"],
            copy.deepcopy(body), field_manager="budget-gate",
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip
    assert conflict.value.status == 409
    assert "owned by kueue-admission" in json.loads(conflict.value.body)["message"]


def test_lists_page_and_watches_stream_changes_then_410_after_compaction(kube):
    api = KueueApi(kube.client())
    first = a_workload(kube, "a")
    a_workload(kube, "b")
    items, version = api.list_workloads()
    assert [i["metadata"]["name"] for i in items] == sorted(
        i["metadata"]["name"] for i in items
    ) and len(items) == 2
    apply(api, first, entry())
    events = list(api.watch_workloads(version, 1))
    assert [(kind, obj["metadata"]["name"]) for kind, obj in events if kind != "BOOKMARK"] == [
        ("MODIFIED", first["metadata"]["name"])
    ]
    kube.compact()
    with pytest.raises(KubeError) as gone:
        list(api.watch_workloads(version, 1))
    assert gone.value.status == 410


def test_the_server_wants_the_token(kube):
    import kubernetes

    configuration = kubernetes.client.Configuration(host=kube.url)
    api = KueueApi(kubernetes.client.ApiClient(configuration))
    with pytest.raises(KubeError) as refused:
        api.list_workloads()
    assert refused.value.status == 401
