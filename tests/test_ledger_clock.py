"""A writer whose clock is off the tracking server's records nothing (docs/threat-model.md).

The server here is a loopback HTTP server whose ``Date`` header is an hour ahead: the
append asks for ``/health`` first and refuses before any other request, so nothing is
written. A server within the bound gets the append's other requests.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gate.errors import BackendError
from gate.integrations.mlflow.rest import RestLedger
from gate.ledger.records import LedgerRecord, RecordKind
from tests.ledger_kit import UNSIGNED
from tests.loopback import serve_in_background

UTC = dt.timezone.utc


class _Clock:
    """A server whose clock is ``offset`` from this machine's; what it was asked, in order."""

    def __init__(self, offset: dt.timedelta) -> None:
        self.offset = offset
        self.seen: list[str] = []

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def date_time_string(self, timestamp: float | None = None) -> str:
                return email.utils.format_datetime(dt.datetime.now(UTC) + server.offset, True)

            def _answer(self) -> None:
                server.seen.append(f"{self.command} {self.path.split('?')[0]}")
                body = b"OK" if self.path == "/health" else json.dumps({}).encode()
                status = 200 if self.path == "/health" else 404
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                return

        return Handler


@pytest.fixture
def serve() -> Iterator[Callable[[_Clock], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(clock: _Clock) -> str:
        http = ThreadingHTTPServer(("127.0.0.1", 0), clock.handler())
        serve_in_background(http)
        servers.append(http)
        return f"http://127.0.0.1:{http.server_address[1]}"

    yield start
    for http in servers:
        http.shutdown()
        http.server_close()


def _record() -> LedgerRecord:
    return LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec="experiments/sweep.yaml",
        fingerprint="sha256:" + "0" * 64,
        experiment="sweep",
        recorded_at=dt.datetime.now(UTC),
        currency="USD",
        worst_cost=Decimal("100"),
        team="vision",
        by="alice",
        reason="worth it",
    )


def test_a_writer_an_hour_behind_the_server_writes_nothing(serve):
    clock = _Clock(dt.timedelta(hours=1))
    uri = serve(clock)
    with pytest.raises(BackendError) as refused:
        RestLedger(uri, UNSIGNED).append(_record())
    said = str(refused.value)  # the Date header has whole seconds: 3,599 or 3,600
    behind = rf"this machine's clock is 3,(599|600) s behind the tracking server at {uri} "
    assert re.match(behind, said), said
    assert clock.seen == ["GET /health"]  # refused before any ledger request


def test_a_writer_within_the_bound_goes_on_to_the_ledger(serve):
    clock = _Clock(dt.timedelta(seconds=30))
    uri = serve(clock)
    with pytest.raises(BackendError):  # this server has no ledger: the next request fails
        RestLedger(uri, UNSIGNED).append(_record())
    assert clock.seen[0] == "GET /health"
    assert clock.seen[1] == "GET /api/2.0/mlflow/experiments/get-by-name"
