"""A real MLflow tracking server on loopback for tests, and a proxy that stops it mid-command.

Registered from ``tests/conftest.py`` with ``pytest_plugins``. Fixtures:

Each is MLflow's own tracking server app under uvicorn, with the environment ``mlflow
server`` gives it (:meth:`MlflowServer._app_env`), forked ready from
:mod:`tests.zygote`; ``via_cli`` starts it through the CLI itself.

- ``mlflow_server``: one server per test session (under pytest-xdist, one per worker; the
  first server of a process costs 3–20 s, later ones under a second), sqlite backend in a
  temporary directory, in memory where the machine has room (:func:`store_dir`); tests
  keep apart by using their own team and spec names.
- ``doomed_mlflow``: a short-lived server of its own behind :class:`KillingProxy`, which
  kills the server (SIGKILL to its process group) when a chosen request arrives and drops
  the connection, so a command sees the outage exactly between two of its requests.

Every test process talks to MLflow with no retries and a short timeout, so an outage costs
milliseconds, and MLflow never prints run links to stdout.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.loopback import serve_in_background

# Two xdist workers start theirs at once, on a machine others load too: 60 s was not enough.
START_TIMEOUT_S = 180.0
# A tmpfs to keep the servers' sqlite stores in, when it has this much room (Docker's default
# /dev/shm has 64 MB): SQLite syncs every commit to disk, and on a busy shared disk a server's
# start (its schema migrations) took over a minute. Same MLflow, same SQLite, minus the waits.
MEMORY = Path("/dev/shm")
MEMORY_NEEDED = 2 * 2**30
CLIENT_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
}


@contextlib.contextmanager
def store_dir(fallback: Path) -> Iterator[Path]:
    """A fresh folder in memory (:data:`MEMORY`) for a server's store, else ``fallback``."""
    try:
        room = os.statvfs(MEMORY)
        in_memory = room.f_bavail * room.f_frsize >= MEMORY_NEEDED and os.access(MEMORY, os.W_OK)
    except OSError:
        in_memory = False
    if not in_memory:
        yield fallback
        return
    path = Path(tempfile.mkdtemp(prefix="budget-gate-mlflow-", dir=MEMORY))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Forked:
    """A server or CLI step forked by :mod:`tests.zygote`: what the tests use of ``Popen``."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None

    def terminate(self) -> None:
        if self.returncode is None:  # once reaped, the pid may be another process's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def poll(self) -> int | None:
        return self._status(0.0)

    def wait(self, timeout: float) -> int:
        code = self._status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"{self.zygote.kind} child {self.pid}", timeout)
        return code

    def _status(self, timeout: float) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.ask({"wait": self.pid, "timeout": timeout})["status"]
        return self.returncode


class Zygote:
    """The test process's :mod:`tests.zygote` of one kind, started with its first child."""

    def __init__(self, kind: str, env: dict[str, str], warnings: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.process = subprocess.Popen(
            [sys.executable, *warnings, "-m", "tests.zygote", kind], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
            start_new_session=True,
        )  # fmt: skip
        self._lock = threading.Lock()  # a KillingProxy kills from its own thread
        atexit.register(self.close)

    def close(self) -> None:
        """End of input: the zygote kills what still runs, removes its template and exits."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()

    def fork(self, start: dict[str, object]) -> Forked:
        """A child of this kind (``start`` as :mod:`tests.zygote` reads it)."""
        return Forked(self, self.ask({"start": start})["pid"])

    def ask(self, request: dict[str, object]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self._lock:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.kind} zygote exited ({self.process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer


_ZYGOTES: dict[str, Zygote] = {}


def zygote(kind: str, env: dict[str, str], warnings: tuple[str, ...] = ()) -> Zygote:
    """This test process's zygote of ``kind``, started with ``env`` by its first child."""
    if kind not in _ZYGOTES:
        _ZYGOTES[kind] = Zygote(kind, env, warnings)
    return _ZYGOTES[kind]


@dataclass
class MlflowServer:
    """One ``mlflow server`` process group with its sqlite store under ``root``."""

    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | Forked | None = None
    started_in_s: float = 0.0
    options: tuple[str, ...] = ()  # more ``mlflow server`` options (benchmarks/)
    via_cli: bool = False  # start it with ``mlflow server`` itself (always with options)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def sqlite_uri(self) -> str:
        """The server's own store, readable directly once the server is gone."""
        return f"sqlite:///{self.root / 'mlflow.db'}"

    def start(self) -> MlflowServer:
        self.root.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        if self.via_cli or self.options:
            command = [
                sys.executable, "-m", "mlflow", "server",
                "--backend-store-uri", self.sqlite_uri,
                "--default-artifact-root", str(self.root / "artifacts"),
                "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
                *self.options,
            ]  # fmt: skip
            began = time.monotonic()
            with (self.root / "server.log").open("wb") as log:
                self.process = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
        else:
            began = time.monotonic()
            env = self._app_env(env)
            quiet = ("-W", "ignore:starlette.middleware.wsgi is deprecated")  # MLflow's import
            self.process = zygote("mlflow", env, quiet).fork(
                {"env": env, "port": self.port, "stdout": f"{self.root}/server.log",
                 "stderr": f"{self.root}/server.log", "store": f"{self.root}/mlflow.db"}
            )  # fmt: skip
        self._wait_healthy(began)
        self.started_in_s = time.monotonic() - began
        return self

    def _app_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment ``mlflow server`` gives its app under uvicorn, for this store.

        NOTE: ``mlflow server`` is a process of its own that imports MLflow, creates the
        store (its migrations), sets these variables and runs uvicorn, which imports the
        app again. Here the app is forked ready from :mod:`tests.zygote`, imported
        once per test process, and the store starts as a copy of one MLflow created there:
        of a server's 4 s of CPU to its first answer, 3 s were the import and 1 s the
        migrations, on each of the twenty servers a run of the suite starts. The variables
        are those MLflow 3.17's CLI sets (read off a running server's ``/proc/PID/environ``;
        the artifact destination is kept in ``root``); the report's tests and every
        benchmark start the server through the CLI (``via_cli``), so a change there shows.
        """
        return env | {
            "MLFLOW_SERVER_X_FRAME_OPTIONS": "SAMEORIGIN",
            "MLFLOW_ENABLE_WORKSPACES": "false",
            "_MLFLOW_SERVER_FILE_STORE": self.sqlite_uri,
            "_MLFLOW_SERVER_REGISTRY_STORE": self.sqlite_uri,
            "_MLFLOW_SERVER_ARTIFACT_ROOT": str(self.root / "artifacts"),
            "_MLFLOW_SERVER_SERVE_ARTIFACTS": "true",
            "_MLFLOW_SERVER_ARTIFACT_DESTINATION": str(self.root / "mlartifacts"),
            "_MLFLOW_SERVER_BOOT_ID": uuid.uuid4().hex,
            "_MLFLOW_IN_JOB_EXECUTOR": "false",
            "_MLFLOW_SGI_NAME": "uvicorn",
        }

    def _wait_healthy(self, began: float) -> None:
        assert self.process is not None
        while time.monotonic() - began < START_TIMEOUT_S:
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=1) as answer:
                    if answer.status == 200:
                        self._open_store()
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        log = (self.root / "server.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"mlflow server did not become healthy:\n{log}")

    def _open_store(self) -> None:
        """One API call, so the app has opened its store before a test's first one.

        ``/health`` answers before the app has touched its store; the first test to call
        would otherwise pay for opening it (and, on a store of its own, its migrations).
        """
        query = f"{self.uri}/api/2.0/mlflow/experiments/get?experiment_id=0"
        with urllib.request.urlopen(query, timeout=START_TIMEOUT_S) as answer:
            assert answer.status == 200

    def kill(self) -> None:
        """Stop at once, as a crash or a pulled cable would."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL if it lingers."""
        self._signal(signal.SIGTERM)

    def _signal(self, sig: signal.Signals) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        except ProcessLookupError:
            process.wait(timeout=15)


class KillingProxy:
    """Forwards HTTP to a server and kills it when a request path contains ``kill_on``.

    Every request is logged in ``seen``; ``max_line`` refuses long request lines with 400;
    the first ``fail_times`` requests whose path contains ``fail_once_on`` get a 503 (a server
    that stumbles), later ones go through.

    The request that triggers the kill, and every later one, gets its connection dropped
    without an answer: what a client sees when the server dies under it.
    """

    def __init__(
        self,
        server: MlflowServer,
        kill_on: str,
        max_line: int | None = None,
        fail_once_on: str | None = None,
        fail_times: int = 1,
        before_answer: Callable[[str], None] | None = None,
    ) -> None:
        self.server = server
        self.before_answer = before_answer  # runs with the path, before the answer is sent
        self.kill_on = kill_on
        self.max_line = max_line  # answer 400, as gunicorn does, to longer request lines
        self.fail_once_on = fail_once_on
        self.fail_times = fail_times
        self.seen: list[str] = []
        self.killed = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def __enter__(self) -> KillingProxy:
        serve_in_background(self._http)
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                proxy.seen.append(f"{self.command} {self.path}")
                if proxy.kill_on in self.path and not proxy.killed.is_set():
                    proxy.server.kill()
                    proxy.killed.set()
                if proxy.killed.is_set():
                    self.close_connection = True
                    return
                if proxy.max_line is not None and len(self.requestline) > proxy.max_line:
                    self._refuse_long_line()
                    return
                if proxy.fail_once_on and proxy.fail_once_on in self.path:
                    proxy.fail_times -= 1
                    if proxy.fail_times <= 0:
                        proxy.fail_once_on = None
                    self._answer(503, b"Service Unavailable")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.server.port, timeout=10)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                payload = answer.read()
                if proxy.before_answer is not None:
                    proxy.before_answer(self.path)  # e.g. another writer, between two pages
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                upstream.close()

            def _refuse_long_line(self) -> None:
                self._answer(400, b"Bad Request\nRequest Line is too large")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = _forward

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@pytest.fixture(scope="session", autouse=True)
def _mlflow_client_env() -> Iterator[None]:
    """No retries, short timeouts, no run links on stdout; no tracking URI from the shell."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in CLIENT_ENV.items():
            patch.setenv(key, value)
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        yield


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """One real MLflow tracking server for the whole session (per xdist worker)."""
    with running_server(tmp_path_factory.mktemp("mlflow")) as server:
        yield server


@pytest.fixture
def doomed_mlflow(tmp_path: Path) -> Iterator[MlflowServer]:
    """A server of the test's own, to be killed by a :class:`KillingProxy`."""
    with running_server(tmp_path / "doomed") as server:
        yield server


@contextlib.contextmanager
def running_server(folder: Path, *, via_cli: bool = False) -> Iterator[MlflowServer]:
    """A real MLflow tracking server on a store in ``folder``, stopped on the way out."""
    with store_dir(folder) as root:
        server = MlflowServer(root, via_cli=via_cli).start()
        try:
            yield server
        finally:
            server.stop()
