"""JSON over HTTP to one MLflow tracking server, with the settings MLflow's own client reads.

``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (or
``user:password@`` in the URI), ``MLFLOW_TRACKING_INSECURE_TLS``,
``MLFLOW_TRACKING_SERVER_CERT_PATH``, ``MLFLOW_TRACKING_CLIENT_CERT_PATH``,
``MLFLOW_HTTP_REQUEST_TIMEOUT``, ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` and
``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``; the standard library only, so no MLflow import.
"""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from gate.errors import BackendError, InputError
from gate.integrations.mlflow.clock import date_header, skew_error
from gate.integrations.mlflow.patience import ENV as PATIENCE_ENV
from gate.integrations.mlflow.patience import RETRIES, Patience
from gate.integrations.mlflow.search import reason
from gate.integrations.mlflow.tracking_uri import redact

API = "/api/2.0/mlflow/"
AJAX_API = "/ajax-api/2.0/mlflow/"
"""Where MLflow serves what only its UI uses (the bulk metric histories)."""
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})  # as MLflow's client retries


class RestError(Exception):
    """The server answered a request with an error (MLflow's code and message)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.status = status
        self.code = code


class Rest:
    """JSON requests to one tracking server's REST API, with MLflow's auth and TLS settings.

    Raises:
        gate.errors.InputError: ``BUDGET_GATE_LEDGER_TIMEOUT`` or a TLS file is unusable.
    """

    def __init__(
        self,
        tracking_uri: str,
        environ: Mapping[str, str],
        patience: Patience | None = None,
        *,
        check_clock: bool = True,
    ) -> None:
        try:
            parts = urllib.parse.urlsplit(tracking_uri)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError as exc:
            raise InputError(
                f"the tracking URI {redact(tracking_uri)!r} is not a URL ({exc})",
                hint="fix --tracking-uri or MLFLOW_TRACKING_URI, e.g. http://mlflow:5000",
            ) from None
        host = parts.netloc.rsplit("@", 1)[-1]
        self.base = urllib.parse.urlunsplit(parts._replace(netloc=host)).rstrip("/")
        self.headers = {"Content-Type": "application/json", "User-Agent": "budget-gate"}
        user = urllib.parse.unquote(parts.username or environ.get("MLFLOW_TRACKING_USERNAME", ""))
        secret = urllib.parse.unquote(parts.password or environ.get("MLFLOW_TRACKING_PASSWORD", ""))
        if environ.get("MLFLOW_TRACKING_TOKEN"):
            self.headers["Authorization"] = f"Bearer {_token(environ['MLFLOW_TRACKING_TOKEN'])}"
        elif user:
            basic = base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {basic}"
        self.patience = patience or Patience.from_env(environ)
        self.clock_checked = not check_clock
        try:
            self.context = _tls(environ) if parts.scheme == "https" else None
        except OSError as exc:  # ssl.SSLError is one too
            raise InputError(
                f"the TLS settings for {redact(tracking_uri)} cannot be used: {exc}",
                hint="check MLFLOW_TRACKING_SERVER_CERT_PATH and MLFLOW_TRACKING_CLIENT_CERT_PATH",
            ) from None

    def call(
        self,
        method: str,
        endpoint: str,
        *,
        body: dict[str, Any] | None = None,
        query: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        api: str = API,
    ) -> dict[str, Any]:
        """One request's JSON answer, retried on outages and 5xx within the patience.

        Each attempt may wait for what is left of the budget; a failure that came fast is
        retried (at most :data:`RETRIES` times) while a pause still fits in it. ``query``
        may repeat a name (``run_id`` of the bulk histories, under :data:`AJAX_API`).
        """
        url = self.base + api + endpoint
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        deadline = time.monotonic() + self.patience.seconds
        for retry in range(RETRIES + 1):
            request = urllib.request.Request(url, data, self.headers, method=method)
            left = deadline - time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=left, context=self.context) as answer:
                    self._check_clock(answer.headers.get("Date"))
                    return _object(answer.status, answer.read())
            except urllib.error.HTTPError as exc:
                failure: Exception = _error(exc)
                if exc.code not in _RETRY_STATUSES:
                    raise failure from None
            except TimeoutError:
                failure = self._timed_out()
            except (urllib.error.URLError, ConnectionError) as exc:
                timed_out = isinstance(getattr(exc, "reason", None), TimeoutError)
                failure = self._timed_out() if timed_out else exc
            except http.client.HTTPException as exc:  # a reply that is not HTTP, cut short
                failure = ConnectionError(f"the server's answer is not HTTP ({exc!r})")
            pause = self.patience.pause(retry)
            if retry == RETRIES or time.monotonic() + pause >= deadline:
                raise failure from None
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def server_time(self) -> dt.datetime | None:
        """The server's clock, from the ``Date`` header of ``GET /health`` (no retries)."""
        request = urllib.request.Request(self.base + "/health", None, self.headers)
        try:
            with urllib.request.urlopen(
                request, timeout=self.patience.seconds, context=self.context
            ) as answer:
                return date_header(answer.headers.get("Date"))
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise BackendError(
                f"MLflow at {redact(self.base)} failed while reading its clock: {reason(exc)}"
            ) from exc

    def _check_clock(self, header: str | None) -> None:
        """On the first answer: refuse when this machine's clock is off the server's."""
        if self.clock_checked:
            return
        self.clock_checked = True
        server = date_header(header)
        if server is not None:
            error = skew_error(server, dt.datetime.now(dt.timezone.utc), redact(self.base))
            if error is not None:
                raise error

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"no answer within {self.patience.seconds:g} s (set by {PATIENCE_ENV})")


def _tls(environ: Mapping[str, str]) -> ssl.SSLContext:
    if environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
        return ssl._create_unverified_context()
    context = ssl.create_default_context(cafile=environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH"))
    if environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH"):
        context.load_cert_chain(environ["MLFLOW_TRACKING_CLIENT_CERT_PATH"])
    return context


def _token(token: str) -> str:
    """The bearer token, refused when an HTTP header cannot carry it (a trailing newline).

    NOTE: the HTTP library's refusal quoted the header, token and all, into a CI log.
    """
    if not (token.isascii() and token.isprintable()):
        raise InputError(
            "MLFLOW_TRACKING_TOKEN holds a line break or a character an HTTP header cannot carry",
            hint="set it to the token alone: the usual cause is a file's trailing newline",
        )
    return token


def _object(status: int, raw: bytes) -> dict[str, Any]:
    """The answer's JSON object; anything else (a proxy's HTML page, a list) is an error."""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the limit
        parsed = None
    if not isinstance(parsed, dict):
        shown = raw[:80].decode("utf-8", "replace")
        raise RestError(status, "", f"the server's answer is not a JSON object ({shown!r})")
    return parsed


def _error(exc: urllib.error.HTTPError) -> RestError:
    text = exc.read().decode("utf-8", "replace")
    try:
        answer = json.loads(text)
        return RestError(exc.code, str(answer.get("error_code", "")), str(answer.get("message")))
    except (ValueError, AttributeError):
        first = text.strip().splitlines()[0] if text.strip() else exc.reason
        return RestError(exc.code, "", f"HTTP {exc.code}: {first}")


def experiment_by_name(rest: Rest, name: str) -> dict[str, Any] | None:
    """The experiment ``name`` as the server describes it, deleted ones too; ``None``: none."""
    try:
        answer = rest.call("GET", "experiments/get-by-name", query={"experiment_name": name})
    except RestError as exc:
        if exc.code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise
    experiment: dict[str, Any] = answer["experiment"]
    return experiment


def check_clock(rest: Rest, now: dt.datetime) -> None:
    """Refuse when this machine's clock is off the server's (one ``GET /health``)."""
    server = rest.server_time()
    if server is not None:
        error = skew_error(server, now, redact(rest.base))
        if error is not None:
            raise error
