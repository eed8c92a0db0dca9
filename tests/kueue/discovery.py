"""API discovery documents for the local API server, so kubectl can map manifests to resources.

Legacy (non-aggregated) discovery, which kubectl falls back to: ``/api`` (APIVersions),
``/apis`` (APIGroupList) and one APIResourceList per group version. The built-in resources
are the few the manifests use, with the names, kinds and scopes Kubernetes gives them; the
Kueue ones come from the vendored CRDs.
"""

from __future__ import annotations

from typing import Any

from tests.kueue.crds import KINDS, VERSION, crd

BUILT_IN = {
    "v1": [("namespaces", "Namespace", False), ("serviceaccounts", "ServiceAccount", True)],
    "apps/v1": [("deployments", "Deployment", True)],
    "rbac.authorization.k8s.io/v1": [
        ("clusterroles", "ClusterRole", False),
        ("clusterrolebindings", "ClusterRoleBinding", False),
    ],
    "batch/v1": [("jobs", "Job", True)],
}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _resources() -> dict[str, list[tuple[str, str, bool]]]:
    out = dict(BUILT_IN)
    out[f"kueue.x-k8s.io/{VERSION}"] = [
        (plural, kind, crd(plural).scope == "Namespaced") for plural, kind in KINDS.items()
    ]
    return out


def document(path: str, address: str) -> dict[str, Any] | None:
    """The discovery document served at ``path``, or ``None`` when it is not one."""
    resources = _resources()
    if path == "/version":
        return {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"}
    if path == "/api":
        cidr = [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": cidr}
    if path == "/apis":
        groups = []
        for group_version in resources:
            if "/" not in group_version:
                continue
            group, version = group_version.split("/")
            entry = {"groupVersion": group_version, "version": version}
            groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    group_version = path.removeprefix("/api/").removeprefix("/apis/")
    if path.startswith(("/api/", "/apis/")) and group_version in resources:
        listed = [
            {"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
             "kind": kind, "verbs": VERBS}
            for plural, kind, namespaced in resources[group_version]
        ]  # fmt: skip
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": listed}  # fmt: skip
    return None
