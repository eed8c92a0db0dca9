"""The Kueue admission check's test rig: a local API server, a team's repository, a controller.

The API server enforces the ClusterRole that ``budget-gate init --kueue`` writes, so every
test also proves those rules are enough; the ledger is the session's real MLflow server.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.admission.check_state import Options
from gate.integrations.kubernetes.api import KueueApi
from gate.integrations.kubernetes.controller import Controller, Settings
from tests.kueue import objects
from tests.kueue.fake_kube import FakeKube
from tests.ledger_kit import Team

MANIFESTS = Path(__file__).resolve().parents[2] / "gate" / "data" / "kueue.yaml"
# 8 × A100 (40 GB) per trial, on-demand: 2 trials need no approval; over 4 need one.
A100_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: llm-{trials}, team: {team}, owner: carol, labels: {{cost-center: cc-1}}}}
resources: {{accelerator: A100, gpus_per_trial: 8, precision: bf16{resources}}}
workload: {{max_epochs: 2, epoch_minutes: 6}}
search: {{strategy: random, max_trials: {trials}}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""
FLAVORS = {
    "a100": {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"},
    "a100-spot": {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
                  "cloud.google.com/gke-spot": "true"},
    "h100": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    "gpu-pool": {},
    "a100-pool": {},  # an accelerator's name, no nodeLabels
    "mig": {"budget-gate/accelerator": "A100"},
    "default": {},
}  # fmt: skip


def cluster_role_rules() -> list[dict[str, Any]]:
    """The rules of the ClusterRole ``init --kueue`` writes."""
    docs = yaml.safe_load_all(MANIFESTS.read_text(encoding="utf-8"))
    return next(d for d in docs if d["kind"] == "ClusterRole")["rules"]


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    """The API server with our AdmissionCheck, another controller's, and the GPU flavors."""
    with FakeKube(rules=cluster_role_rules()) as server:
        server.add(objects.admission_check())
        server.add(objects.admission_check("provisioning", "kueue.x-k8s.io/provisioning-request"))
        for name, labels in FLAVORS.items():
            server.add(objects.resource_flavor(name, labels))
        yield server
        server.assert_clean()


@pytest.fixture
def repo(team: Team, monkeypatch: pytest.MonkeyPatch) -> Team:
    """The team's directory as the repository the controller reads specs from."""
    (team.root / "experiments").mkdir()
    monkeypatch.chdir(team.root)  # the CLI records approvals with paths from the root
    return team


def spec_path(team: Team) -> str:
    return f"experiments/{team.name}.yaml"


def write_spec(team: Team, trials: int = 2, resources: str = "") -> str:
    path = spec_path(team)
    text = A100_SPEC.format(trials=trials, team=team.name, resources=resources)
    (team.root / path).write_text(text, encoding="utf-8")
    return path


def approve(team: Team, spec: str) -> None:
    code, _, err = team.cli("approve", spec, "--by", "alice", "--reason", "worth it")
    assert code == 0, err


def controller(
    team: Team,
    kube: FakeKube,
    *,
    uri: str | None = None,
    clock: Any = None,
    **options: Any,
) -> Controller:
    settings = Settings(
        team.root, Path(team.policy_dir), uri or team.uri, options=Options(**options),
        batch_window=0.05, ledger_retry=0.3, resync=2.0,
    )  # fmt: skip
    if clock is None:
        return Controller(KueueApi(kube.client()), settings)
    return Controller(KueueApi(kube.client()), settings, clock=clock)


def submit(kube: FakeKube, job_and_pod_sets: tuple[Any, Any], **kw: Any) -> dict[str, Any]:
    """Kueue's Workload for the job, quota reserved, our check Pending; the job stored too."""
    job, pod_sets = job_and_pod_sets
    kube.add_other(job, {"Job": "jobs", "JobSet": "jobsets", "PyTorchJob": "pytorchjobs",
                         "TrainJob": "trainjobs"}[job["kind"]])  # fmt: skip
    return kube.add(objects.workload_for(job, pod_sets, **kw))


class LedgerSwitch:
    """A TCP proxy in front of MLflow that can refuse every connection (the ledger down)."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.down = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
