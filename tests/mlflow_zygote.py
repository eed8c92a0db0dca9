"""Forks MLflow tracking servers from one process that has imported MLflow's app already.

NOTE: a tracking server started afresh spends some 3 s of CPU importing MLflow's app before
it serves a request, and the suite starts about twenty (each test that kills its server
needs its own). This process imports the app once, under the environment every server of
:class:`tests.mlflow_server.MlflowServer` shares, and forks one child per server: the same
app object under uvicorn, as ``python -m uvicorn mlflow.server.fastapi_app:app`` runs it,
with the server's own environment (store, artifact root, boot id), port, log and session.
No thread runs here when it forks (checked), so the child inherits no held lock.

Requests come one JSON line each on stdin; each gets one JSON line on stdout:

- ``{"start": {"env": {...}, "port": N, "log": PATH, "store": PATH}}`` → ``{"pid": P}``
  (a store that does not exist yet starts as a copy of one MLflow created: :func:`_template`)
- ``{"wait": P, "timeout": S}`` → ``{"status": null}`` while P still runs after up to S
  seconds, else its exit status

Children stay this process's until waited for (so a pid is never reused while a test holds
it); at end of input every child still running gets SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import uvicorn  # first: MLflow's app checks for it to set up its server middleware
from mlflow.server.fastapi_app import app
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

HOST = "127.0.0.1"


def _template() -> Path:
    """A store MLflow has created and migrated, in memory where there is room, made once.

    NOTE: a new server spends a second creating its store (MLflow's schema migrations); a
    copy of a store made the same way, before any run or experiment is in it, skips that.
    """
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(dir=shm if os.access(shm, os.W_OK) else None))
    store = SqlAlchemyStore(f"sqlite:///{folder / 'mlflow.db'}", str(folder / "artifacts"))
    store.engine.dispose()  # no connection is carried into a child
    return folder / "mlflow.db"


def _serve(env: dict[str, str], port: int, log: str, store: str, template: Path) -> None:
    """In the child: become the server (its own session, output, environment and store)."""
    os.setsid()
    if not os.path.exists(store):
        shutil.copyfile(template, store)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.clear()
    os.environ.update(env)
    try:
        uvicorn.run(app, host=HOST, port=port, workers=1)
    finally:
        os._exit(0)


def _status(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(code)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def main() -> None:
    children: set[int] = set()
    answers = sys.stdout
    template = _template()
    for line in sys.stdin:
        request = json.loads(line)
        if "start" in request:
            assert threading.active_count() == 1, "a thread would be forked mid-lock"
            start = request["start"]
            sys.stderr.flush()  # nothing of ours is left for the child to write
            pid = os.fork()
            if pid == 0:
                _serve(start["env"], start["port"], start["log"], start["store"], template)
            children.add(pid)
            answer: dict[str, int | None] = {"pid": pid}
        else:
            pid = request["wait"]
            status = _status(pid, request["timeout"])
            if status is not None:
                children.discard(pid)
            answer = {"status": status}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    shutil.rmtree(template.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
