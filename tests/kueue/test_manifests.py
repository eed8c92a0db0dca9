"""The manifests ``budget-gate init --kueue`` writes: valid, consistent, and what kubectl takes.

Built-in kinds are validated with Kubernetes' own JSON schemas (kubernetes-validate, strict:
an unknown field is an error), Kueue's with the vendored CRDs; ``kubectl apply
--dry-run=client`` maps every document to a resource of the local API server's discovery.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from gate.cli import build_parser, main
from gate.commands.init import KUEUE_MANIFESTS, packaged
from gate.integrations.kubernetes.controller import CONTROLLER_NAME
from tests.kueue.crds import crd
from tests.kueue.fake_kube import FakeKube, _meta_errors, _plural

KUBERNETES = ("1.29", "1.33")
"""The oldest Kubernetes that Kueue 0.15 supports and a current one."""


def documents() -> list[dict]:
    return list(yaml.safe_load_all(packaged("kueue.yaml")))


def by_kind(kind: str) -> dict:
    return next(d for d in documents() if d["kind"] == kind)


def kueue_errors(doc: dict) -> list[str]:
    schema = crd(_plural(doc["kind"]))
    return schema.errors(schema.default(doc)) + _meta_errors(doc, schema)


def test_init_kueue_writes_the_manifests_and_never_overwrites(tmp_path, capsys):
    assert main(["init", "--kueue", "--dir", str(tmp_path)]) == 0
    written = tmp_path / KUEUE_MANIFESTS
    assert written.read_text(encoding="utf-8") == packaged("kueue.yaml")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.*")) == [
        KUEUE_MANIFESTS
    ]
    err = capsys.readouterr().err
    assert f"wrote {written}" in err and f"kubectl apply --server-side -f {written}" in err
    assert main(["init", "--kueue", "--dir", str(tmp_path)]) == 3
    assert "already exists; init never overwrites" in capsys.readouterr().err


@pytest.mark.parametrize("version", KUBERNETES)
def test_the_built_in_kinds_are_valid_kubernetes(version):
    built_in = [d for d in documents() if not d["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert [d["kind"] for d in built_in] == [
        "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment",
    ]  # fmt: skip
    for doc in built_in:
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_typo_in_a_built_in_kind_is_caught():
    deployment = copy.deepcopy(by_kind("Deployment"))
    spec = deployment["spec"]["template"]["spec"]
    spec["serviceAcountName"] = spec.pop("serviceAccountName")
    with pytest.raises(kubernetes_validate.ValidationError, match="serviceAcountName"):
        kubernetes_validate.validate(deployment, KUBERNETES[-1], strict=True)


def test_the_kueue_kinds_are_valid_under_kueues_crds():
    kueue = [d for d in documents() if d["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert [d["kind"] for d in kueue] == ["AdmissionCheck", "ResourceFlavor", "ClusterQueue"]
    for doc in kueue:
        assert kueue_errors(doc) == [], doc["kind"]
    old_style = copy.deepcopy(by_kind("ClusterQueue"))
    old_style["spec"]["admissionChecks"] = ["budget-gate"]  # the v1beta1 field
    assert any("'admissionChecks' was unexpected" in e for e in kueue_errors(old_style))


def test_the_manifests_agree_with_each_other_and_with_the_cli():
    account = by_kind("ServiceAccount")["metadata"]
    binding = by_kind("ClusterRoleBinding")
    role = by_kind("ClusterRole")
    deployment = by_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert pod["serviceAccountName"] == account["name"]
    assert deployment["metadata"]["namespace"] == account["namespace"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == (
        "Recreate"
    )
    [controller] = [c for c in pod["containers"] if c["name"] == "controller"]
    args = build_parser().parse_args(controller["args"])  # real options of the real CLI
    assert (args.command, args.service, args.repo) == ("serve", "kueue-admission", "/repo/current")
    check = by_kind("AdmissionCheck")
    assert check["spec"]["controllerName"] == CONTROLLER_NAME == args.controller_name
    strategy = by_kind("ClusterQueue")["spec"]["admissionChecksStrategy"]["admissionChecks"]
    assert strategy == [{"name": check["metadata"]["name"]}]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_apply_dry_run_client_takes_every_document(tmp_path):
    manifests = tmp_path / "budget-gate-kueue.yaml"
    manifests.write_text(packaged("kueue.yaml"), encoding="utf-8")
    with FakeKube(anonymous=True) as kube:
        config = kube.kubeconfig(tmp_path / "kubeconfig")
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", str(config), "apply", "--dry-run=client",
             "--validate=false", "-f", str(manifests)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        writes = [r for r in kube.requests if r.method != "GET"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "namespace/budget-gate created (dry run)",
        "serviceaccount/budget-gate created (dry run)",
        "clusterrole.rbac.authorization.k8s.io/budget-gate-kueue-admission created (dry run)",
        "clusterrolebinding.rbac.authorization.k8s.io/budget-gate-kueue-admission created "
        "(dry run)",
        "deployment.apps/budget-gate-kueue-admission created (dry run)",
        "admissioncheck.kueue.x-k8s.io/budget-gate created (dry run)",
        "resourceflavor.kueue.x-k8s.io/a100-80gb created (dry run)",
        "clusterqueue.kueue.x-k8s.io/gpu created (dry run)",
    ]
    assert writes == []  # a client-side dry run writes nothing


def test_the_docs_page_shows_the_manifests_init_writes():
    page = (Path(__file__).resolve().parents[2] / "docs" / "kueue.md").read_text("utf-8")
    assert packaged("kueue.yaml").strip() in page
