"""A local Kubernetes API server for the paths the Kueue admission check uses, over real HTTP.

Why: no Kubernetes API server runs on these machines, and patching the ``kubernetes``
client would test our assumptions instead of our behaviour. This server speaks HTTP/1.1 on
127.0.0.1 and keeps state, and it is strict where kube-apiserver is:

- every object it stores or returns, and every body it receives, is validated against
  Kueue's own CRD schemas (:mod:`tests.kueue.crds`); a complaint answers 422 and is
  recorded, so :meth:`FakeKube.assert_clean` fails the test;
- list, watch (chunked JSON lines, ``resourceVersion``, ``timeoutSeconds``, bookmarks, 410
  for a compacted version), get, and server-side apply on the ``status`` subresource:
  ``application/apply-patch+yaml`` only, ``fieldManager`` required, ``metadata.uid`` and
  ``metadata.resourceVersion`` as preconditions (409), only ``status`` changes, list-map
  entries merged by their keys, fields owned per manager (a field its manager stops
  applying is removed unless another manager owns it; taking another manager's field
  needs ``force``, else 409), a no-op apply keeps the resourceVersion;
- bearer-token authentication (401), and RBAC (403) when given a ClusterRole's rules.

Usage::

    with FakeKube() as kube:
        kube.add(workload)                      # validated, defaulted, as Kueue wrote it
        api = KueueApi(kube.client())           # or a kubeconfig file: kube.kubeconfig(path)
        ...
        kube.assert_clean()
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import socket
import threading
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.kueue.crds import Crd, crd, label_errors
from tests.kueue.discovery import document
from tests.loopback import serve_in_background

KUEUE = "kueue.x-k8s.io"
VERSION = "v1beta2"
TOKEN = "fake-kube-token-0000000000000000"
APPLY = "application/apply-patch+yaml"
KUEUE_MANAGER = "kueue-admission"
"""The field manager of what Kueue writes into a Workload's status (``constants.AdmissionName``)."""

Path_ = tuple[Any, ...]


class ApiError(Exception):
    """An error answer, as a Kubernetes ``Status``."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def body(self) -> dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}  # fmt: skip


@dataclass
class Recorded:
    """One request as received, with what the server made of it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Fault:
    """Answer ``status`` to the next ``times`` requests matching ``method`` and ``pattern``."""

    method: str
    pattern: str
    status: int
    times: int = 1


class FakeKube:
    """The state and the HTTP server."""

    def __init__(
        self,
        rules: list[dict[str, Any]] | None = None,
        *,
        anonymous: bool = False,
        cel: bool = True,
    ) -> None:
        self.rules = rules
        self.cel = cel
        """Evaluate the CRDs' CEL rules on writes (answers are checked without them: what is
        stored was checked when written)."""
        self.anonymous = anonymous
        """Serve unauthenticated requests (kubectl sends no bearer token over plain HTTP)."""
        self.lock = threading.Condition()
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.owners: dict[tuple[str, str, str], dict[str, set[Path_]]] = {}
        self.others: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []
        self.version = 100
        self.compacted = 0
        self.requests: list[Recorded] = []
        self.errors: list[str] = []
        self.faults: list[Fault] = []
        self.unavailable = False
        self.stopping = False
        self.server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> FakeKube:
        fake = self

        class Handler(_Handler):
            kube = fake

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        serve_in_background(self.server)
        return self

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig file for this server, with its bearer token."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "controller", "user": {"token": TOKEN}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "controller"}}],
        }  # fmt: skip
        path.write_text(yaml.safe_dump(config))
        return path

    def client(self) -> Any:
        """A ``kubernetes`` ApiClient configured for this server."""
        import kubernetes

        configuration = kubernetes.client.Configuration(host=self.url)
        configuration.api_key = {"authorization": TOKEN}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        configuration.retries = 0
        return kubernetes.client.ApiClient(configuration)

    # -- state ---------------------------------------------------------------------------

    def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create a Kueue object as the API server would: validated, defaulted, versioned.

        Its status fields are owned by Kueue's field manager, as if Kueue had applied them.
        """
        plural = _plural(obj["kind"])
        schema = crd(plural)
        stored = schema.default(obj)
        meta = stored["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", "2026-11-20T09:00:00Z")
        with self.lock:
            self.version += 1
            meta["resourceVersion"] = str(self.version)
            problems = schema.errors(stored) + _meta_errors(stored, schema)
            assert not problems, f"fixture is not valid: {problems}"
            key = (plural, meta.get("namespace", ""), meta["name"])
            assert key not in self.objects, f"{key} exists"
            self.objects[key] = stored
            self.owners[key] = {
                "kueue": _fields(schema, {k: v for k, v in stored.items() if k != "status"}),
                KUEUE_MANAGER: _fields(schema, {"status": stored.get("status", {})}),
            }
            self._event("ADDED", plural, stored)
        return copy.deepcopy(stored)

    def add_other(self, obj: dict[str, Any], plural: str) -> None:
        """Store a non-Kueue object (a job), served read-only at its group's path."""
        meta = obj["metadata"]
        group, _, version = obj["apiVersion"].rpartition("/")
        with self.lock:
            self.others[(f"{group}/{version}", plural, meta["namespace"], meta["name"])] = (
                copy.deepcopy(obj)
            )

    def get(self, plural: str, name: str, namespace: str = "") -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self.objects[(plural, namespace, name)])

    def workload(self, workload: dict[str, Any]) -> dict[str, Any]:
        meta = workload["metadata"]
        return self.get("workloads", meta["name"], meta["namespace"])

    def check(self, workload: dict[str, Any], name: str = "budget-gate") -> dict[str, Any]:
        """The admission check entry ``name`` of ``workload`` as stored now."""
        checks = self.workload(workload)["status"]["admissionChecks"]
        return next(c for c in checks if c["name"] == name)

    def touch(self, plural: str, name: str, namespace: str = "") -> None:
        """Bump an object's resourceVersion, as another writer would."""
        with self.lock:
            obj = self.objects[(plural, namespace, name)]
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            self._event("MODIFIED", plural, obj)

    def kueue_requeue(self, workload: dict[str, Any], name: str = "budget-gate") -> None:
        """What Kueue does to a ``Retry`` check when the Workload is evicted and queued again
        (``resetChecksOnEviction``): back to ``Pending``, ``retryCount`` counted up."""
        meta = workload["metadata"]
        key = ("workloads", meta["namespace"], meta["name"])
        schema = crd("workloads")
        with self.lock:
            live = self.objects[key]
            check = next(c for c in live["status"]["admissionChecks"] if c["name"] == name)
            entry = {
                "name": name, "state": "Pending", "lastTransitionTime": _utc_stamp(),
                "message": "Reset to Pending after eviction. Previously: " + check["state"],
                "retryCount": check.get("retryCount", 0) + (check["state"] == "Retry"),
            }  # fmt: skip
            if "requeueAfterSeconds" in check:
                entry["requeueAfterSeconds"] = check["requeueAfterSeconds"]
            # NOTE: Kueue applies its whole admission status (patching.prepareWorkloadPatch),
            # so fields it owned stay; each entry goes as Kueue read it, this one reset.
            status = copy.deepcopy(live["status"])
            status["admissionChecks"] = [
                entry if c["name"] == name else c for c in status["admissionChecks"]
            ]
            merged, owners = _server_side_apply(
                schema, live, {"status": status}, KUEUE_MANAGER, True, self.owners[key]
            )
            problems = schema.errors(merged, old=live)
            assert not problems, problems
            self.owners[key] = owners
            self.version += 1
            merged["metadata"]["resourceVersion"] = str(self.version)
            self.objects[key] = merged
            self._event("MODIFIED", "workloads", merged)

    def compact(self) -> None:
        """Forget the events so far: a watch from an older version gets 410 Gone."""
        with self.lock:
            self.compacted = self.version
            self.events.clear()

    def _event(self, kind: str, plural: str, obj: dict[str, Any]) -> None:
        self.events.append((self.version, kind, plural, copy.deepcopy(obj)))
        self.lock.notify_all()

    def writes(self, path_part: str = "") -> list[Recorded]:
        """The PATCH requests received (whose path contains ``path_part``)."""
        return [r for r in self.requests if r.method == "PATCH" and path_part in r.path]

    def assert_clean(self) -> None:
        """No request or answer broke a schema or the API's rules."""
        assert not self.errors, "\n".join(self.errors)

    # -- request handling (called by the handler, under no lock) -------------------------

    def handle(self, request: Recorded) -> tuple[int, Any]:
        self._authorize(request)
        if request.method == "GET" and (found := document(request.path, self.url[7:])):
            return 200, found
        with self.lock:
            for fault in self.faults:
                if (
                    fault.times
                    and fault.method == request.method
                    and re.search(fault.pattern, request.path)
                ):
                    fault.times -= 1
                    raise ApiError(fault.status, "InternalError", "injected fault")
        if self.unavailable:
            raise ApiError(503, "ServiceUnavailable", "the server is currently unavailable")
        route = _route(request.path)
        if route is None:
            raise ApiError(404, "NotFound", f"the server could not find {request.path}")
        kind, parts = route
        if kind == "other":
            return 200, self._other(request, parts)
        plural, namespace, name, sub = parts
        schema = crd(plural)
        if name is None:
            if request.method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{request.method} on a collection")
            return 200, self._list(request, schema, namespace)
        if request.method == "GET" and sub is None:
            with self.lock:
                obj = self.objects.get((plural, namespace or "", name))
            if obj is None:
                raise ApiError(404, "NotFound", f'{plural}.{KUEUE} "{name}" not found')
            return 200, self._answer(schema, obj)
        if request.method == "PATCH" and sub == "status":
            return 200, self._apply(request, schema, namespace or "", name)
        raise ApiError(405, "MethodNotAllowed", f"{request.method} {request.path} is not served")

    def _authorize(self, request: Recorded) -> None:
        if self.anonymous and "authorization" not in request.headers:
            return
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            raise ApiError(401, "Unauthorized", "Unauthorized")
        if self.rules is None:
            return
        verb, group, resource = _attributes(request)
        for rule in self.rules:
            if (
                (group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
                and resource in rule.get("resources", [])
                and verb in rule.get("verbs", [])
            ):
                return
        raise ApiError(
            403, "Forbidden",
            f'{resource} is forbidden: User "system:serviceaccount:budget-gate:budget-gate" '
            f'cannot {verb} resource "{resource}" in API group "{group}"',
        )  # fmt: skip

    def _answer(self, schema: Crd, obj: dict[str, Any]) -> dict[str, Any]:
        problems = schema.errors(obj, cel=False) + _meta_errors(obj, schema)
        self.errors += [f"answer {obj['metadata']['name']}: {p}" for p in problems]
        return copy.deepcopy(obj)

    def _list(self, request: Recorded, schema: Crd, namespace: str | None) -> Any:
        query = {k: v[-1] for k, v in request.query.items()}
        if query.get("watch") in ("true", "1"):
            return _Watch(self, schema, namespace, query)
        with self.lock:
            items = [
                obj for (plural, ns, _), obj in sorted(self.objects.items())
                if plural == schema.plural and (namespace is None or ns == namespace)
            ]  # fmt: skip
            version = str(self.version)
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": version}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        return {
            "apiVersion": f"{KUEUE}/{VERSION}",
            "kind": f"{schema.kind}List",
            "metadata": meta,
            "items": [self._answer(schema, obj) for obj in page],
        }

    def _apply(self, request: Recorded, schema: Crd, namespace: str, name: str) -> Any:
        if request.headers.get("content-type", "").split(";")[0] != APPLY:
            raise ApiError(415, "UnsupportedMediaType", "this server takes only apply patches")
        query = {k: v[-1] for k, v in request.query.items()}
        manager = query.get("fieldManager", "")
        if not manager:
            raise ApiError(422, "Invalid", "fieldManager: Required value: is required for apply")
        force = query.get("force") == "true"
        body = request.body
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the apply body is not an object")
        problems = self._body_errors(body, schema, namespace, name)
        if problems:
            request.errors += problems
            raise ApiError(422, "Invalid", "; ".join(problems))
        key = (schema.plural, namespace, name)
        with self.lock:
            live = self.objects.get(key)
            if live is None:
                raise ApiError(404, "NotFound", f'{schema.plural}.{KUEUE} "{name}" not found')
            self._preconditions(body, live)
            applied = {"status": body.get("status", {})}
            merged, owners = _server_side_apply(schema, live, applied, manager, force,
                                                self.owners[key])  # fmt: skip
            problems = schema.status_errors(merged, live, cel=self.cel)
            problems += _update_errors(merged)
            if problems:
                request.errors += problems
                raise ApiError(422, "Invalid", "; ".join(problems))
            self.owners[key] = owners
            if merged != live:
                self.version += 1
                merged["metadata"]["resourceVersion"] = str(self.version)
                self.objects[key] = merged
                self._event("MODIFIED", schema.plural, merged)
            return copy.deepcopy(self.objects[key])  # validated above

    def _body_errors(
        self, body: dict[str, Any], schema: Crd, namespace: str, name: str
    ) -> list[str]:
        problems = [f"apply body: {p}" for p in schema.errors(body, partial=True)]
        if body.get("apiVersion") != f"{KUEUE}/{VERSION}" or body.get("kind") != schema.kind:
            problems.append(f"apply body: apiVersion/kind must be {KUEUE}/{VERSION} {schema.kind}")
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            problems.append(f"apply body: metadata.name {meta.get('name')!r} is not {name!r}")
        if schema.scope == "Namespaced" and meta.get("namespace", namespace) != namespace:
            problems.append("apply body: metadata.namespace does not match the URL")
        if set(body) - {"apiVersion", "kind", "metadata", "status"}:
            problems.append(f"apply body: a status apply sends no {set(body) - {'status'}}")
        return problems

    def _preconditions(self, body: dict[str, Any], live: dict[str, Any]) -> None:
        meta, have = body.get("metadata") or {}, live["metadata"]
        if meta.get("uid") and meta["uid"] != have["uid"]:
            raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: "
                           f"{meta['uid']}, UID in object meta: {have['uid']}")  # fmt: skip
        if meta.get("resourceVersion") and meta["resourceVersion"] != have["resourceVersion"]:
            raise ApiError(
                409, "Conflict",
                f'Operation cannot be fulfilled on {live["kind"].lower()}s.{KUEUE} '
                f'"{have["name"]}": the object has been modified; please apply your changes '
                "to the latest version and try again",
            )  # fmt: skip

    def _other(self, request: Recorded, parts: tuple[str, ...]) -> Any:
        group_version, namespace, plural, name = parts
        with self.lock:
            obj = self.others.get((group_version, plural, namespace, name))
        if obj is None:
            raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
        return copy.deepcopy(obj)


class _Watch:
    """A watch answer: events after a version, until the timeout or the server stops."""

    def __init__(self, kube: FakeKube, schema: Crd, namespace: str | None, query: dict) -> None:
        self.kube, self.schema, self.namespace = kube, schema, namespace
        self.since = int(query.get("resourceVersion") or 0)
        self.timeout = float(query.get("timeoutSeconds") or 30)
        self.bookmarks = query.get("allowWatchBookmarks") == "true"

    def lines(self) -> Iterator[bytes]:
        kube = self.kube
        deadline = dt.datetime.now().timestamp() + self.timeout
        seen = self.since
        with kube.lock:
            if self.since and self.since < kube.compacted:
                yield _line({"type": "ERROR", "object": ApiError(
                    410, "Expired", f"too old resource version: {self.since} ({kube.compacted})"
                ).body()})  # fmt: skip
                return
        while True:
            with kube.lock:
                ready = [e for e in kube.events if e[0] > seen and e[2] == self.schema.plural]
                if not ready:
                    left = deadline - dt.datetime.now().timestamp()
                    if left <= 0 or kube.stopping:
                        break
                    kube.lock.wait(min(left, 0.5))
                    continue
            for version, kind, _, obj in ready:
                seen = version
                if self.namespace is None or obj["metadata"].get("namespace") == self.namespace:
                    yield _line({"type": kind, "object": kube._answer(self.schema, obj)})
        if self.bookmarks:
            yield _line({"type": "BOOKMARK", "object": {
                "apiVersion": f"{KUEUE}/{VERSION}", "kind": self.schema.kind,
                "metadata": {"resourceVersion": str(kube.version)},
            }})  # fmt: skip


def _utc_stamp() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event) + "\n").encode()


class _Handler(BaseHTTPRequestHandler):
    kube: FakeKube
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # NOTE: headers and body go out in two writes; without NODELAY, Nagle's algorithm
        # and the client's delayed ACK add 40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = yaml.safe_load(raw) if raw else None
        except yaml.YAMLError:
            body = raw
        request = Recorded(
            self.command, url.path, urllib.parse.parse_qs(url.query),
            {k.lower(): v for k, v in self.headers.items()}, body,
        )  # fmt: skip
        self.kube.requests.append(request)
        try:
            status, answer = self.kube.handle(request)
        except ApiError as exc:
            status, answer = exc.code, exc.body()
        request.status = status
        if request.errors:
            self.kube.errors += [f"{request.method} {request.path}: {e}" for e in request.errors]
        if isinstance(answer, _Watch):
            self._stream(answer)
            return
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, watch: _Watch) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for line in watch.lines():
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass


_KUEUE_PATH = re.compile(
    rf"^/apis/{re.escape(KUEUE)}/{VERSION}(?:/namespaces/(?P<ns>[^/]+))?"
    r"/(?P<plural>workloads|admissionchecks|resourceflavors|clusterqueues)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>status))?)?$"
)
_OTHER_PATH = re.compile(r"^/apis/([^/]+/[^/]+)/namespaces/([^/]+)/([^/]+)/([^/]+)$")
_CORE_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?(?P<plural>[^/]+)/(?P<name>[^/]+)$"
)
_CLUSTER_PATH = re.compile(r"^/apis/(?P<gv>[^/]+/[^/]+)/(?P<plural>[^/]+)/(?P<name>[^/]+)$")


def _route(path: str) -> tuple[str, tuple[Any, ...]] | None:
    match = _KUEUE_PATH.match(path)
    if match:
        plural = match["plural"]
        namespaced = crd(plural).scope == "Namespaced"
        if bool(match["ns"]) and not namespaced:
            return None
        if namespaced and match["name"] and not match["ns"]:
            return None
        return "kueue", (plural, match["ns"], match["name"], match["sub"])
    match = _OTHER_PATH.match(path)
    if match and not match[1].startswith(KUEUE):
        return "other", match.groups()
    match = _CLUSTER_PATH.match(path)
    if match and not match["gv"].startswith(KUEUE):
        return "other", (match["gv"], "", match["plural"], match["name"])
    match = _CORE_PATH.match(path)
    if match:  # the core group (kubectl reading a Namespace or ServiceAccount): never stored
        return "other", ("v1", match["ns"] or "", match["plural"], match["name"])
    return None


def _attributes(request: Recorded) -> tuple[str, str, str]:
    """RBAC's view of a request: verb, API group, resource[/subresource]."""
    route = _route(request.path)
    if route is None:
        return request.method.lower(), "", request.path
    kind, parts = route
    if kind == "other":
        group = parts[0].rpartition("/")[0]
        return "get", group, parts[2]
    plural, _, name, sub = parts
    resource = f"{plural}/{sub}" if sub else plural
    if request.method == "PATCH":
        return "patch", KUEUE, resource
    if name is None:
        watch = request.query.get("watch", [""])[-1] in ("true", "1")
        return ("watch" if watch else "list"), KUEUE, resource
    return "get", KUEUE, resource


def _plural(kind: str) -> str:
    return {"Workload": "workloads", "AdmissionCheck": "admissionchecks",
            "ClusterQueue": "clusterqueues", "ResourceFlavor": "resourceflavors"}[kind]  # fmt: skip


def _meta_errors(obj: dict[str, Any], schema: Crd) -> list[str]:
    """What kube-apiserver checks of ``metadata`` (the CRD schema leaves it open)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    out = []
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", name or ""):
        out.append(f"metadata.name {name!r} is not a DNS subdomain")
    if (schema.scope == "Namespaced") != bool(meta.get("namespace")):
        out.append(f"metadata.namespace {meta.get('namespace')!r} for a {schema.scope} kind")
    out += label_errors(meta.get("labels") or {}, "metadata.labels")
    if schema.plural == "workloads":
        for index, ps in enumerate((obj.get("spec") or {}).get("podSets", [])):
            labels = ((ps.get("template") or {}).get("metadata") or {}).get("labels") or {}
            out += label_errors(labels, f"spec.podSets[{index}].template.metadata.labels")
    return out


def _update_errors(obj: dict[str, Any]) -> list[str]:
    """podSetUpdates that could never apply: naming no pod set, or labels (and node
    selectors) Kubernetes refuses on a pod — checked here, whether Kueue's webhook checks
    them on the Workload or the pods fail later."""
    out = []
    names = {ps["name"] for ps in (obj.get("spec") or {}).get("podSets", [])}
    for check in (obj.get("status") or {}).get("admissionChecks", []):
        for update in check.get("podSetUpdates", []):
            where = f"status.admissionChecks[{check['name']}].podSetUpdates[{update['name']}]"
            if update["name"] not in names:
                out.append(f"{where}: no pod set is named {update['name']!r}")
            out += label_errors(update.get("labels") or {}, f"{where}.labels")
            out += label_errors(update.get("nodeSelector") or {}, f"{where}.nodeSelector")
    return out


# -- server-side apply ---------------------------------------------------------------------


def _fields(schema: Crd, obj: Any) -> set[Path_]:
    """The leaf fields ``obj`` sets, as SSA's field sets name them."""
    out: set[Path_] = set()
    _walk_fields(schema.schema, obj, (), out)
    return out


def _walk_fields(node: dict[str, Any], value: Any, path: Path_, out: set[Path_]) -> None:
    if (
        isinstance(value, dict)
        and node.get("x-kubernetes-map-type") != "atomic"
        and ("properties" in node or isinstance(node.get("additionalProperties"), dict))
    ):
        for key, item in value.items():
            sub = (node.get("properties") or {}).get(key) or node.get("additionalProperties")
            if isinstance(sub, dict):
                _walk_fields(sub, item, (*path, key), out)
            else:
                out.add((*path, key))
        return
    if isinstance(value, list) and node.get("x-kubernetes-list-type") == "map":
        keys = node.get("x-kubernetes-list-map-keys", [])
        for item in value:
            element = ("k", tuple((k, item.get(k)) for k in keys))
            for k in keys:
                out.add((*path, element, k))
            _walk_fields(node["items"], item, (*path, element), out)
        return
    out.add(path)


def _lookup(obj: Any, path: Path_) -> Any:
    for part in path:
        if isinstance(part, tuple):
            obj = next((i for i in obj if all(i.get(k) == v for k, v in part[1])), None)
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
        if obj is None:
            return None
    return obj


def _merge(node: dict[str, Any], live: Any, applied: Any) -> Any:
    if (
        isinstance(applied, dict)
        and isinstance(live, dict)
        and node.get("x-kubernetes-map-type") != "atomic"
    ):
        out = dict(live)
        for key, item in applied.items():
            sub = (node.get("properties") or {}).get(key) or node.get("additionalProperties")
            out[key] = _merge(sub if isinstance(sub, dict) else {}, live.get(key), item)
        return out
    if (
        isinstance(applied, list)
        and isinstance(live, list)
        and node.get("x-kubernetes-list-type") == "map"
    ):
        keys = node.get("x-kubernetes-list-map-keys", [])
        out_list = [copy.deepcopy(i) for i in live]
        for item in applied:
            index = next((n for n, i in enumerate(out_list)
                          if all(i.get(k) == item.get(k) for k in keys)), None)  # fmt: skip
            if index is None:
                out_list.append(copy.deepcopy(item))
            else:
                out_list[index] = _merge(node["items"], out_list[index], item)
        return out_list
    return copy.deepcopy(applied)


def _remove(obj: Any, path: Path_, node: dict[str, Any]) -> None:
    parent = _lookup(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if isinstance(parent, dict) and not isinstance(last, tuple):
        parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, tuple):
        parent[:] = [i for i in parent if not all(i.get(k) == v for k, v in last[1])]


def _server_side_apply(
    schema: Crd,
    live: dict[str, Any],
    applied: dict[str, Any],
    manager: str,
    force: bool,
    owners: dict[str, set[Path_]],
) -> tuple[dict[str, Any], dict[str, set[Path_]]]:
    """The object after ``manager`` applies ``applied``, and who owns which field then."""
    mine = _fields(schema, applied)
    owners = {m: set(paths) for m, paths in owners.items()}
    conflicts = [
        (other, path) for other, paths in owners.items() if other != manager
        for path in mine & paths if _lookup(live, path) != _lookup(applied, path)
    ]  # fmt: skip
    if conflicts and not force:
        listed = ", ".join(f"{_dotted(p)} (owned by {m})" for m, p in conflicts)
        raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflicts: {listed}")
    for other, path in conflicts:
        owners[other].discard(path)
    merged = _merge(schema.schema, live, applied)
    merged["metadata"] = copy.deepcopy(live["metadata"])
    others = set().union(*(p for m, p in owners.items() if m != manager))
    for path in sorted(owners.get(manager, set()) - mine - others, key=len, reverse=True):
        _remove(merged, path, schema.schema)
    owners[manager] = mine
    return merged, owners


def _dotted(path: Path_) -> str:
    return ".".join(f"[{dict(p[1])}]" if isinstance(p, tuple) else str(p) for p in path)
