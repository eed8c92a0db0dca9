"""Forks servers from one process that has imported what they import already.

NOTE: a server started afresh spends seconds of CPU on imports before it answers: 3 s for
MLflow's tracking app, 2.8 s for SkyPilot under ``budget-gate serve skypilot-policy``, and
the suite starts some twenty of each (a test that kills its server, or serves another
configuration, needs its own). ``python tests/zygote.py KIND`` imports them once, under the
environment of its first server, and forks one child per server:

- ``mlflow``: MLflow's app under uvicorn, as ``python -m uvicorn mlflow.server.fastapi_app:app``
  runs it, with the server's own environment (store, artifact root, boot id), port, log and
  session; a store that does not exist yet starts as a copy of one MLflow created
  (:func:`_template`).
- ``skypilot-policy``: the program itself, ``budget-gate`` with the server's arguments
  (:func:`gate.cli.run`, as ``python -m gate`` runs it), in the server's environment, working
  directory, log and session.

No thread runs here when it forks (checked), so a child inherits no held lock.

Requests come one JSON line each on stdin; each gets one JSON line on stdout:

- ``{"start": {"env": {...}, "log": PATH, ...}}`` → ``{"pid": P}``; the rest of ``start`` is
  the kind's: ``port`` and ``store`` for MLflow, ``argv`` and ``cwd`` for the policy
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def _template() -> Path:
    """A store MLflow has created and migrated, in memory where there is room, made once.

    NOTE: a new server spends a second creating its store (MLflow's schema migrations); a
    copy of a store made the same way, before any run or experiment is in it, skips that.
    """
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(dir=shm if os.access(shm, os.W_OK) else None))
    store = SqlAlchemyStore(f"sqlite:///{folder / 'mlflow.db'}", str(folder / "artifacts"))
    store.engine.dispose()  # no connection is carried into a child
    return folder / "mlflow.db"


def _become(start: dict[str, Any]) -> None:
    """In the child: its own session, environment, output (the log) and no input."""
    os.setsid()
    out = os.open(start["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.clear()
    os.environ.update(start["env"])


def _mlflow() -> tuple[Callable[[dict[str, Any]], None], Callable[[], None]]:
    """MLflow's app, imported, and a migrated store to copy: the child serves, then exits."""
    import uvicorn  # first: MLflow's app checks for it to set up its server middleware
    from mlflow.server.fastapi_app import app

    template = _template()

    def serve(start: dict[str, Any]) -> None:
        if not os.path.exists(start["store"]):
            shutil.copyfile(template, start["store"])
        _become(start)
        try:
            uvicorn.run(app, host=HOST, port=start["port"], workers=1)
        finally:
            os._exit(0)

    return serve, lambda: shutil.rmtree(template.parent, ignore_errors=True)


def _skypilot_policy() -> tuple[Callable[[dict[str, Any]], None], Callable[[], None]]:
    """The program and SkyPilot, imported: the child runs ``budget-gate ARGV`` and exits."""
    import gate.cli
    import gate.integrations.skypilot_endpoint  # and SkyPilot: 2.8 s of imports, once

    def serve(start: dict[str, Any]) -> None:
        os.chdir(start["cwd"])
        _become(start)
        sys.argv = ["budget-gate", *start["argv"]]
        code = 70
        try:
            gate.cli.run()
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    return serve, lambda: None


KINDS = {"mlflow": _mlflow, "skypilot-policy": _skypilot_policy}


def _status(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(code)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def main(kind: str) -> None:
    serve, clean_up = KINDS[kind]()
    children: set[int] = set()
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if "start" in request:
            assert threading.active_count() == 1, "a thread would be forked mid-lock"
            sys.stdout.flush()  # nothing of ours is left for the child to write
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                serve(request["start"])
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
    clean_up()


if __name__ == "__main__":
    main(sys.argv[1])
