"""The Kubernetes API calls the AdmissionCheck controller makes, with the official client.

Every write is server-side apply on a ``/status`` subresource, as Kueue's own admission
check controllers write (``client.Apply`` with ``ForceOwnership``): ``PATCH`` with
``application/apply-patch+yaml``, ``fieldManager`` set and ``force=true``. A Workload's
``status.admissionChecks`` is a list-map keyed by ``name``, so applying our one entry
leaves every other check's entry alone; the Workload's ``uid`` and ``resourceVersion`` go
in the patch as preconditions, so a Workload that changed since it was read is a 409, not
a decision about a state that is gone. Errors become :class:`KubeError`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

import kubernetes
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from gate.admission.workload import Workload
from gate.integrations.whole_files import why_not_regular

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"
FIELD_MANAGER = "budget-gate"
APPLY = "application/apply-patch+yaml"
TIMEOUT = (5, 30)
"""Connect and read timeouts of one request, seconds."""
PAGE = 500
PLURALS = {
    "Job": "jobs",
    "JobSet": "jobsets",
    "TrainJob": "trainjobs",
    "PyTorchJob": "pytorchjobs",
    "TFJob": "tfjobs",
    "XGBoostJob": "xgboostjobs",
    "PaddleJob": "paddlejobs",
    "JAXJob": "jaxjobs",
    "MPIJob": "mpijobs",
    "RayJob": "rayjobs",
    "RayCluster": "rayclusters",
    "SparkApplication": "sparkapplications",
    "AppWrapper": "appwrappers",
    "LeaderWorkerSet": "leaderworkersets",
}
"""The resource of each job kind Kueue integrates; another kind is its lower case + ``s``."""


class KubeError(Exception):
    """A Kubernetes API call failed: ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def _kubeconfig_files(kubeconfig: str | None) -> list[str]:
    """The files the client reads: ``kubeconfig``, else each existing one of $KUBECONFIG."""
    from kubernetes.config import kube_config

    if kubeconfig is not None:
        return [kubeconfig]
    listed = kube_config.KUBE_CONFIG_DEFAULT_LOCATION.split(
        kube_config.ENV_KUBECONFIG_PATH_SEPARATOR
    )
    return [os.path.expanduser(p) for p in listed if p and os.path.exists(os.path.expanduser(p))]


def connect(kubeconfig: str | None = None, context: str | None = None) -> KueueApi:
    """The API of the cluster the controller runs for.

    ``kubeconfig`` if given; in a pod, its service account; else ``$KUBECONFIG`` or
    ``~/.kube/config``.

    Raises:
        KubeError: the configuration cannot be loaded.
    """
    configuration = kubernetes.client.Configuration()
    in_cluster = kubeconfig is None and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    files = [] if in_cluster else _kubeconfig_files(kubeconfig)
    for file in files:
        refused = why_not_regular(file, "kubeconfig")
        if refused is not None:
            raise KubeError(f"cannot load the Kubernetes configuration: {refused}")
    try:
        if in_cluster:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        else:
            kubernetes.config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
    # NOTE: the client parses the file with PyYAML and walks what it finds unchecked: a
    # malformed file raises YAMLError, a list where a mapping belongs TypeError and so on
    except (
        kubernetes.config.ConfigException, yaml.YAMLError, OSError, ValueError, TypeError,
        AttributeError, KeyError, IndexError, RecursionError,
    ) as exc:  # fmt: skip
        named = f"{', '.join(files)}: " if files else ""
        raise KubeError(f"cannot load the Kubernetes configuration: {named}{_why(exc)}") from None
    configuration.retries = 1
    return KueueApi(kubernetes.client.ApiClient(configuration))


def _why(exc: Exception) -> str:
    """What is wrong with a kubeconfig the client failed on, in one line."""
    text = " ".join(str(exc).split())[:300]
    if isinstance(exc, yaml.YAMLError):
        return f"invalid YAML: {text}"
    if isinstance(exc, RecursionError):
        return "nested too deep to read"
    if isinstance(exc, KeyError):
        return f"no field {text} where kubectl expects one"
    if isinstance(exc, (TypeError, AttributeError, IndexError)):
        return f"a field is not of the shape kubectl expects (a list, a mapping): {text}"
    return text or type(exc).__name__


class KueueApi:
    """Workloads, AdmissionChecks, ResourceFlavors and jobs, as plain dicts."""

    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self.client = client
        self.objects = kubernetes.client.CustomObjectsApi(client)

    @property
    def host(self) -> str:
        """The API server's address, for messages."""
        return str(self.client.configuration.host)

    def list_workloads(self) -> tuple[list[dict[str, Any]], str]:
        """Every Workload in every namespace, and the list's resourceVersion (to watch from)."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self._call(
                self.objects.list_cluster_custom_object,
                GROUP, VERSION, "workloads", limit=PAGE, **({"_continue": token} if token else {}),
            )  # fmt: skip
            items.extend(page.get("items", []))
            token = page.get("metadata", {}).get("continue")
            if not token:
                return items, str(page.get("metadata", {}).get("resourceVersion", ""))

    def watch_workloads(
        self, resource_version: str, timeout: int
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(type, object)`` for each change after ``resource_version``, for ``timeout`` s.

        Raises:
            KubeError: the watch failed; status 410 means the version is too old (list again).
        """
        watch = kubernetes.watch.Watch()
        try:
            for event in watch.stream(
                self.objects.list_cluster_custom_object, GROUP, VERSION, "workloads",
                resource_version=resource_version, allow_watch_bookmarks=True,
                timeout_seconds=timeout, _request_timeout=(TIMEOUT[0], timeout + 10),
            ):  # fmt: skip
                kind = str(event["type"])
                obj = event["raw_object"]
                if kind == "ERROR":
                    status = int(obj.get("code", 0)) if isinstance(obj, dict) else 0
                    raise KubeError(f"watch of workloads: {obj}", status)
                yield kind, obj
        except ApiException as exc:
            raise _error("watch of workloads", exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeError(f"watch of workloads: {exc}") from None
        finally:
            watch.stop()

    def get_workload(self, namespace: str, name: str) -> Any:
        """One Workload, or ``None`` when it is gone."""
        return self._get(
            self.objects.get_namespaced_custom_object, GROUP, VERSION, namespace, "workloads", name
        )

    def apply_check(self, workload: Workload, entry: Mapping[str, Any]) -> Any:
        """Server-side apply our admission check's ``entry`` to ``workload``'s status."""
        body = {
            "apiVersion": API_VERSION,
            "kind": "Workload",
            "metadata": {
                "name": workload.name,
                "namespace": workload.namespace,
                "uid": workload.uid,
                "resourceVersion": workload.resource_version,
            },
            "status": {"admissionChecks": [dict(entry)]},
        }
        return self._call(
            self.objects.patch_namespaced_custom_object_status,
            GROUP, VERSION, workload.namespace, "workloads", workload.name, body,
            field_manager=FIELD_MANAGER, force=True, _content_type=APPLY,
        )  # fmt: skip

    def list_admission_checks(self) -> list[dict[str, Any]]:
        """Every AdmissionCheck (cluster-scoped)."""
        page = self._call(
            self.objects.list_cluster_custom_object, GROUP, VERSION, "admissionchecks"
        )
        return list(page.get("items", []))

    def apply_active(self, check: Mapping[str, Any], condition: Mapping[str, Any]) -> None:
        """Server-side apply the ``Active`` condition to an AdmissionCheck's status."""
        name = check["metadata"]["name"]
        body = {
            "apiVersion": API_VERSION,
            "kind": "AdmissionCheck",
            "metadata": {"name": name, "uid": check["metadata"].get("uid", "")},
            "status": {"conditions": [dict(condition)]},
        }
        self._call(
            self.objects.patch_cluster_custom_object_status,
            GROUP, VERSION, "admissionchecks", name, body,
            field_manager=FIELD_MANAGER, force=True, _content_type=APPLY,
        )  # fmt: skip

    def flavor_labels(self) -> dict[str, dict[str, str]]:
        """Each ResourceFlavor's ``spec.nodeLabels``, by name."""
        page = self._call(
            self.objects.list_cluster_custom_object, GROUP, VERSION, "resourceflavors"
        )
        return {
            f["metadata"]["name"]: dict((f.get("spec") or {}).get("nodeLabels") or {})
            for f in page.get("items", [])
        }

    def get_owner(self, namespace: str, api_version: str, kind: str, name: str) -> Any:
        """The job a Workload belongs to, or ``None`` when it is gone or in the core group."""
        group, _, version = api_version.rpartition("/")
        if not group:
            return None  # core kinds (a Pod) carry the template themselves
        plural = PLURALS.get(kind, kind.lower() + "s")
        return self._get(
            self.objects.get_namespaced_custom_object, group, version, namespace, plural, name
        )

    def _get(self, call: Any, *args: Any) -> Any:
        try:
            return self._call(call, *args)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def _call(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("_request_timeout", TIMEOUT)
        what = f"{call.__name__.replace('_', ' ')} {'/'.join(str(a) for a in args[2:5])}"
        try:
            return call(*args, **kwargs)
        except ApiException as exc:
            raise _error(what, exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeError(f"{what}: {exc}") from None


def _error(what: str, exc: ApiException) -> KubeError:
    status = int(exc.status or 0)
    reason = exc.reason or ""
    with contextlib.suppress(ValueError, AttributeError):
        reason = json.loads(exc.body or "{}").get("message", reason)
    return KubeError(f"{what}: {status} {reason}".strip(), status)
