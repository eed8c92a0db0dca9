"""The controller as it runs: Active checks, the watch, ``serve kueue-admission``, RBAC."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from gate.integrations.kubernetes.api import KueueApi
from gate.integrations.kubernetes.controller import Controller, Settings
from tests.conftest import ROOT
from tests.kueue import objects
from tests.kueue.conftest import (
    LedgerSwitch,
    approve,
    cluster_role_rules,
    controller,
    submit,
    write_spec,
)
from tests.kueue.fake_kube import Fault
from tests.mlflow_server import CLIENT_ENV, free_port


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_our_admission_checks_are_made_active_and_others_left_alone(repo, kube):
    gate = controller(repo, kube)
    assert gate.activate() == frozenset({"budget-gate"})
    condition = kube.get("admissionchecks", "budget-gate")["status"]["conditions"][0]
    assert condition["type"] == "Active" and condition["status"] == "True"
    assert condition["reason"] == "Active" and condition["observedGeneration"] == 1
    assert (
        condition["message"] == f"budget-gate decides the workloads from the ledger at {repo.uri}"
    )
    assert "status" not in kube.get("admissionchecks", "provisioning")
    [write] = kube.writes("/admissionchecks/")
    assert write.path == "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/budget-gate/status"
    assert write.query == {"fieldManager": ["budget-gate"], "force": ["true"]}
    gate.activate()
    assert len(kube.writes("/admissionchecks/")) == 1  # already Active: nothing written
    kube.add(objects.admission_check("budget-gate-eu"))
    assert gate.activate() == frozenset({"budget-gate", "budget-gate-eu"})


def test_the_loop_decides_workloads_as_they_come_and_recovers_from_an_outage(repo, kube):
    repo.policy(extra="  launches: 10\n")  # four jobs of one approved spec: four launches
    spec = write_spec(repo, trials=8)
    approve(repo, spec)
    switch = LedgerSwitch(repo.uri)
    gate = controller(repo, kube, uri=switch.uri)
    stop = threading.Event()
    loop = threading.Thread(target=gate.run, args=(stop,), daemon=True)
    try:
        first = submit(kube, objects.batch_job("first", spec=spec))  # there before the start
        loop.start()
        wait_for(lambda: kube.check(first)["state"] == "Ready")
        later = submit(kube, objects.batch_job("later", spec=spec))  # seen by the watch
        wait_for(lambda: kube.check(later)["state"] == "Ready")
        switch.down = True
        outage = submit(kube, objects.batch_job("outage", spec=spec))
        wait_for(lambda: "the ledger is unreachable" in kube.check(outage)["message"])
        assert kube.check(outage)["state"] == "Pending"
        time.sleep(1.0)  # several retries (every 0.3 s): never Ready while down
        assert kube.check(outage)["state"] == "Pending"
        switch.down = False
        wait_for(lambda: kube.check(outage)["state"] == "Ready")
        kube.compact()  # the watch's version is gone: 410, list again, carry on
        after = submit(kube, objects.batch_job("after-compaction", spec=spec))
        wait_for(lambda: kube.check(after)["state"] == "Ready")
    finally:
        stop.set()
        loop.join(timeout=10)
        switch.close()
    assert not loop.is_alive()
    watches = [r for r in kube.requests if r.query.get("watch") == ["true"]]
    assert watches and all(r.status == 200 for r in watches)


def test_serve_kueue_admission_runs_until_sigterm(repo, kube, tmp_path):
    spec = write_spec(repo, trials=2)
    process = _serve(repo, kube, tmp_path, "--tracking-uri", repo.uri, "--resync", "600")
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first == (
            f"budget-gate: Kueue admission check controller on {kube.url} — checks: "
            f"budget-gate; specs in {repo.root}, policies in {repo.root}/policies, ledger "
            f"{repo.uri}; GPU workloads without a spec: reject\n"
        )
        workload = submit(kube, objects.batch_job("served", spec=spec))
        wait_for(lambda: kube.check(workload)["state"] == "Ready")
        time.sleep(1)  # idle, waiting for a change until the resync 600 s away
    finally:
        process.send_signal(signal.SIGTERM)
        err = _stopped(process)
    assert process.returncode == 0, err
    assert f"Ready ml/{workload['metadata']['name']}: budget-gate: cleared under {spec}" in err
    assert "Traceback" not in err


def test_serve_kueue_admission_says_a_ledger_that_is_not_there(repo, kube, tmp_path):
    store = tmp_path / "mlfow.db"  # a typo: MLflow's client would make an empty store there
    process = _serve(repo, kube, tmp_path, "--tracking-uri", f"sqlite:///{store}")
    try:
        assert process.stderr is not None
        process.stderr.readline()  # the start-up line
        second = process.stderr.readline()
    finally:
        process.send_signal(signal.SIGTERM)
        err = _stopped(process)
    assert second.startswith(f"budget-gate: warning: no ledger at sqlite:///{store}: read as ")
    assert process.returncode == 0, err
    assert not store.exists()  # nothing launched, nothing made


def _serve(repo, kube, tmp_path, *options: str) -> subprocess.Popen[str]:
    """``serve kueue-admission`` on ``repo`` against ``kube``, its stderr piped."""
    command = [
        sys.executable, "-X", "faulthandler", "-m", "gate", "serve", "kueue-admission",
        "--kubeconfig", str(kube.kubeconfig(tmp_path / "kubeconfig")),
        "--repo", str(repo.root), *options,
    ]  # fmt: skip
    env = {**os.environ, **CLIENT_ENV}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _stopped(process: subprocess.Popen[str]) -> str:
    """Its stderr once it exits; if it does not within 30 s, its threads' stacks, then fail."""
    try:
        return process.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
        _, err = process.communicate(timeout=30)
        raise AssertionError(f"still running 30 s after SIGTERM:\n{err}") from None


@pytest.mark.parametrize(
    ("args", "code", "start"),
    [
        (["--repo", "/no/such/dir"], 3, "budget-gate: --repo /no/such/dir is not a directory"),
        (["--kubeconfig", "/no/such/kubeconfig"], 3, "budget-gate: cannot load the Kubernetes "
         "configuration: "),
        (["--approval-recheck", "0"], 3, "usage: "),
    ],
)  # fmt: skip
def test_serve_kueue_admission_says_what_is_wrong(tmp_path, args, code, start):
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "serve", "kueue-admission", "--tracking-uri",
         f"http://127.0.0.1:{free_port()}", *args],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.startswith(start), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_cluster_without_kueue_v1beta2_is_exit_4_naming_the_version(tmp_path, kube):
    kube.faults.append(Fault("GET", r"/admissionchecks$", 404, times=5))
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "serve", "kueue-admission", "--kubeconfig",
         str(kube.kubeconfig(tmp_path / "kubeconfig")), "--tracking-uri",
         f"http://127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    assert "serves no kueue.x-k8s.io/v1beta2 AdmissionChecks (" in proc.stderr
    assert proc.stderr.endswith(" — install Kueue 0.15 or newer\n")


def test_an_api_server_that_fails_at_the_start_is_exit_4(tmp_path, kube):
    kube.unavailable = True
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "serve", "kueue-admission", "--kubeconfig",
         str(kube.kubeconfig(tmp_path / "kubeconfig")), "--tracking-uri",
         f"http://127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.startswith(f"budget-gate: the Kubernetes API at {kube.url} failed: ")
    assert "503" in proc.stderr


def test_serve_without_the_kubernetes_client_says_which_extra_to_install():
    probe = (
        "import sys\n"
        "sys.modules['kubernetes'] = None  # as if the client were not installed\n"
        "from gate.cli import main\n"
        "sys.exit(main(['serve', 'kueue-admission']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 3
    assert proc.stderr.startswith("budget-gate: the Kueue admission check needs the Kubernetes "
                                  "client (")  # fmt: skip
    assert proc.stderr.endswith(" — pip install 'budget-gate[kueue]'\n")


KUBEFLOW_REPLICAS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}


def test_every_rule_of_the_cluster_role_is_needed(repo, kube):
    """With the shipped rules the flows above work; without any one of them, one breaks."""
    spec = write_spec(repo, trials=2)
    rules = cluster_role_rules()
    _, pod_sets = objects.batch_job("tj-pods")
    owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": "tj", "namespace": "ml", "uid": "uid-tj",
                          "labels": {objects.QUEUE_LABEL: "gpu"},
                          "annotations": {"budget-gate/spec": spec}}}  # fmt: skip
    submit(kube, (owner, pod_sets))
    spark = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
             "metadata": {"name": "sp", "namespace": "ml", "uid": "uid-sp",
                          "labels": {objects.QUEUE_LABEL: "gpu"},
                          "annotations": {"budget-gate/spec": spec}}}  # fmt: skip
    kube.add_other(spark, "sparkapplications")
    kube.add(objects.workload_for(spark, objects.batch_job("sp-pods")[1]))
    submit(kube, objects.batch_job("bj", spec=spec))  # its completions are read
    submit(kube, objects.jobset("js", spec=spec, replicated=(("workers", 1, 2, 4),)))
    for kind, replicas in KUBEFLOW_REPLICAS.items():  # their replicas' restartPolicy is read
        job, pod_sets = objects.pytorch_job(kind.lower(), spec=spec, workers=0)
        job["kind"] = kind
        job["spec"][replicas] = job["spec"].pop("pytorchReplicaSpecs")
        kube.add_other(job, kind.lower() + "s")
        kube.add(objects.workload_for(job, pod_sets))
    wrapper = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {
            "name": "aw",
            "namespace": "ml",
            "uid": "uid-aw",
            "labels": {objects.QUEUE_LABEL: "gpu"},
        },
        "spec": {"components": [{"template": objects.batch_job("in-aw")[0]}]},
    }
    kube.add_other(wrapper, "appwrappers")  # its components are read
    kube.add(objects.workload_for(wrapper, objects.batch_job("aw-pods", spec=spec)[1]))
    grants = [(i, res, verb) for i, r in enumerate(rules) for res in r["resources"]
              for verb in r["verbs"]]  # fmt: skip
    assert len(grants) == 18
    spared = [grant for grant in grants if not _forbidden(repo, kube, _without(rules, *grant))]
    assert spared == []
    kube.rules = rules
    kube.requests.clear()
    assert {o.state for o in controller(repo, kube).sync()} == {"Ready"}
    assert all(r.status != 403 for r in kube.requests)


def _without(rules, index, resource, verb):
    """``rules`` less one grant: ``verb`` on ``resource`` in rule ``index``."""
    out = []
    for i, rule in enumerate(rules):
        if i != index:
            out.append(rule)
            continue
        for res in rule["resources"]:
            verbs = [v for v in rule["verbs"] if (res, v) != (resource, verb)]
            if verbs:
                out.append({**rule, "resources": [res], "verbs": verbs})
    return out


def _forbidden(repo, kube, rules) -> bool:
    """Whether a sync, a watch and a re-read of each Workload hit a 403 under ``rules``."""
    kube.rules = rules
    kube.requests.clear()
    api = KueueApi(kube.client())
    gate = Controller(api, Settings(repo.root, repo.root / "policies", repo.uri))
    try:
        gate.sync()
        list(api.watch_workloads("1", 1))
        for obj in api.list_workloads()[0]:
            api.get_workload(obj["metadata"]["namespace"], obj["metadata"]["name"])
    except Exception:
        pass
    hit = any(r.status == 403 for r in kube.requests)
    kube.rules = None
    _reset_checks(kube)
    return hit


def _reset_checks(kube) -> None:
    """Every Workload's check back to Pending and our AdmissionCheck not yet Active, so the
    next rule set starts where the first did."""
    with kube.lock:
        kube.objects[("admissionchecks", "", "budget-gate")].pop("status", None)
    for (plural, _, _), obj in list(kube.objects.items()):
        if plural == "workloads":
            kube.kueue_requeue(obj)
