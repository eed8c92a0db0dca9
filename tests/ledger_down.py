"""Three ways the ledger goes down, for the tests that every enforcement path refuses in time.

- ``stopped``: a real MLflow tracking server (``tests/mlflow_server.py``) started, then
  stopped with SIGTERM: its port refuses connections.
- ``refused``: a loopback port nothing listens on.
- ``blackhole``: a socket that listens and never answers: the kernel completes the TCP
  handshake (the backlog), the request is sent, and no byte ever comes back — what a hung
  server or a dropped route looks like, and the case that only a timeout ends.

None of them sets ``MLFLOW_HTTP_REQUEST_*`` to small values: :data:`MLFLOW_DEFAULTS` puts
MLflow's own defaults (7 retries, 120 s) in place, which the ledger must not wait out.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.loopback import serve_in_background
from tests.mlflow_server import MlflowServer, free_port

LIMIT_S = 10.0
"""Every enforcement path refuses within this many seconds of the ledger going down."""
MLFLOW_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "7",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "120",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "2",
}
"""MLflow's defaults, stated: a ledger that honoured them would wait about three minutes."""
OUTAGES = ("stopped", "refused", "blackhole")


@contextmanager
def blackhole() -> Iterator[str]:
    """A tracking URI whose server accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)  # never accept(): connections wait in the backlog, unanswered
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def ledger_down(kind: str, stopped: MlflowServer | None = None) -> Iterator[str]:
    """The tracking URI of a ledger that is down in the given way."""
    if kind == "stopped":
        assert stopped is not None and stopped.process is not None
        stopped.stop()
        assert stopped.process.poll() is not None  # really gone
        yield stopped.uri
    elif kind == "refused":
        yield f"http://127.0.0.1:{free_port()}"
    else:
        with blackhole() as uri:
            yield uri


@contextmanager
def garbage(body: bytes, *, no_ledger: bool = False) -> Iterator[str]:
    """A tracking URI whose server answers every request 200 with ``body``: a proxy's page,
    a list, a run of the wrong shape (the server is up, its answers are not MLflow's).

    With ``no_ledger``, an experiment asked for by name does not exist (MLflow's 404), so
    a report goes on to read the runs.
    """

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if no_ledger and "/experiments/get-by-name" in self.path:
                missing = b'{"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no"}'
                self.send_response(404)
                self.send_header("Content-Length", str(len(missing)))
                self.end_headers()
                self.wfile.write(missing)
                return
            self.send_response(200)
            self.send_header("Date", formatdate(usegmt=True))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serve_in_background(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
