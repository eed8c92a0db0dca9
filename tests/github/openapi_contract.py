"""GitHub's published OpenAPI description (cut to budget-gate's 36 operations) as a test oracle.

Why: the fake GitHub must not drift into a server that only agrees with our own client. Every
request it receives is matched to an operation of GitHub's description and validated with
openapi-core (path/query parameters and JSON body); the fake's responses are validated against
the same description. Routing is our own (data-driven from the description's paths): openapi-core
matches ``{param}`` against one path segment only, but ``repos/get-content``'s ``{path}`` and
``repos/get-commit``'s ``{ref}`` may contain slashes, so we hand openapi-core the matched
template (its ``path_pattern`` protocol) and the decoded parameters instead.

Four deliberate deviations, where the description contradicts what GitHub does:

1. ``issues/add-labels`` and ``issues/set-labels`` also accept a bare JSON array of label names
   (documented in tests/fixtures/github/openapi/SOURCES.md): GitHub's text allows it, PyGithub
   sends it, but the schema's ``oneOf`` leaves it out.
2. A ``nullable`` enum also accepts null. GitHub writes ``{"nullable": true, "enum": [...]}``
   without null in the enum (check-run ``conclusion``, issue ``state_reason``, ...); OpenAPI 3.0.3
   reads that as "null is not allowed", yet GitHub returns null there (an in-progress check run).
3. ``repos/get-content``'s 200 ``oneOf`` loses its ``discriminator``: it maps ``type`` to the
   branches, but a directory answer is a JSON array, which has no ``type`` to discriminate on.
4. A ``nullable`` ``oneOf`` without a ``type`` also accepts null. OpenAPI 3.0.3 lets
   ``nullable`` add null only beside a ``type``, but GitHub writes ``{"nullable": true,
   "oneOf": [simple-user, empty-object]}`` for a commit's ``author`` and ``committer`` and
   returns null there when the commit's email is linked to no account.
"""

from __future__ import annotations

import copy
import json
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from werkzeug.datastructures import Headers, ImmutableMultiDict

from tests.conftest import FIXTURES

SPEC_PATH = FIXTURES / "github" / "openapi" / "github-rest-budget-gate.json"
# The host the description's single server names; requests are validated as if sent there.
SPEC_HOST = "https://api.github.com"
METHODS = ("get", "post", "put", "patch", "delete")
# Path parameters that may span several segments (GitHub accepts `a/b.yaml` and `feature/x`).
MULTI_SEGMENT = frozenset({"path", "ref"})
BARE_LABEL_ARRAY_OPS = ("issues/add-labels", "issues/set-labels")


@dataclass(frozen=True)
class Operation:
    """One operation of the description: what the router matches and the validators need."""

    operation_id: str
    method: str
    template: str
    regex: re.Pattern[str]
    docs_url: str
    statuses: frozenset[str]
    paginated: bool

    @property
    def specificity(self) -> int:
        """Literal characters in the template: the most literal match wins a tie."""
        return len(re.sub(r"\{[^}]+\}", "", self.template))


@dataclass
class ValidatedRequest:
    """The parts of an HTTP request openapi-core reads (its ``Request`` + ``path_pattern``)."""

    method: str
    path: str
    path_pattern: str
    path_params: dict[str, str]
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    body: bytes | None
    content_type: str = "application/json"
    host_url: str = SPEC_HOST
    parameters: RequestParameters = field(init=False)

    def __post_init__(self) -> None:
        self.parameters = RequestParameters(
            path=self.path_params,
            query=ImmutableMultiDict([(k, v) for k, vs in self.query.items() for v in vs]),
            header=Headers(list(self.headers.items())),
        )


@dataclass
class ValidatedResponse:
    """A response as openapi-core's ``Response`` protocol reads it."""

    status_code: int
    data: bytes | None
    headers: Headers
    content_type: str = "application/json"


def _null_in_nullable_enums(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("nullable") and "enum" in node and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
        for value in node.values():
            _null_in_nullable_enums(value)
    elif isinstance(node, list):
        for value in node:
            _null_in_nullable_enums(value)


def _null_in_nullable_choices(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("nullable") and "oneOf" in node and "type" not in node:
            node["oneOf"] = [*node["oneOf"], {"type": "object", "nullable": True, "enum": [None]}]
        for value in node.values():
            _null_in_nullable_choices(value)
    elif isinstance(node, list):
        for value in node:
            _null_in_nullable_choices(value)


def _patched_description() -> dict[str, Any]:
    """The description with the four deviations applied (see module docstring)."""
    spec: dict[str, Any] = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    for item in spec["paths"].values():
        for method in METHODS:
            op = item.get(method)
            if op and op["operationId"] in BARE_LABEL_ARRAY_OPS:
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                schema["oneOf"].append({"type": "array", "items": {"type": "string"}})
    content = spec["paths"]["/repos/{owner}/{repo}/contents/{path}"]["get"]
    content["responses"]["200"]["content"]["application/json"]["schema"].pop("discriminator")
    _null_in_nullable_enums(spec)
    _null_in_nullable_choices(spec)
    return spec


@cache
def description() -> dict[str, Any]:
    """The parsed (and patched) description, loaded once per session."""
    return _patched_description()


@cache
def openapi() -> OpenAPI:
    """openapi-core's validator for the description (about 0.3 s to build, so cached)."""
    return OpenAPI.from_dict(description())


def _compile(template: str) -> re.Pattern[str]:
    def param(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"(?P<{name}>.+)" if name in MULTI_SEGMENT else f"(?P<{name}>[^/]+)"

    return re.compile("^" + re.sub(r"\{(\w+)\}", param, template) + "$")


def _operation(template: str, method: str, op: dict[str, Any]) -> Operation:
    params = op.get("parameters", [])
    return Operation(
        operation_id=op["operationId"],
        method=method.upper(),
        template=template,
        regex=_compile(template),
        docs_url=op.get("externalDocs", {}).get("url", "https://docs.github.com/rest"),
        statuses=frozenset(op["responses"]),
        paginated=any(p.get("$ref", "").endswith("/page") for p in params),
    )


@cache
def operations() -> tuple[Operation, ...]:
    """Every operation in the description."""
    return tuple(
        _operation(template, method, item[method])
        for template, item in description()["paths"].items()
        for method in METHODS
        if method in item
    )


def route(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    """The operation ``method path`` calls and its decoded path parameters, or None.

    ``path`` is the raw (still percent-encoded) path below the API root, so an encoded ``%2F``
    stays inside one segment.
    """
    matches = [
        (op, m)
        for op in operations()
        if op.method == method and (m := op.regex.match(path)) is not None
    ]
    if not matches:
        return None
    op, m = max(matches, key=lambda pair: pair[0].specificity)
    return op, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}


def path_exists(path: str) -> bool:
    """Whether some operation's template matches ``path`` (for any method)."""
    return any(op.regex.match(path) for op in operations())


def _messages(errors: Iterator[Exception]) -> list[str]:
    out = []
    for error in errors:
        causes = getattr(error.__cause__, "schema_errors", None) or ()
        details = "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in causes)
        out.append(f"{type(error).__name__}: {details or error}")
    return out


def request_errors(request: ValidatedRequest) -> list[str]:
    """openapi-core's complaints about a request (empty when it is valid)."""
    return _messages(openapi().iter_request_errors(request))


def response_errors(request: ValidatedRequest, response: ValidatedResponse) -> list[str]:
    """openapi-core's complaints about a response to ``request`` (empty when it is valid)."""
    return _messages(openapi().iter_response_errors(request, response))


def example(name: str) -> Any:
    """A fresh copy of ``components/examples/<name>``'s value (GitHub's own sample data)."""
    return copy.deepcopy(description()["components"]["examples"][name]["value"])
