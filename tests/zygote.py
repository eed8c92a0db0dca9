"""Forks servers and CLI runs from one process that has imported what they import already.

NOTE: a process started afresh spends its first seconds of CPU on imports: 3 s for MLflow's
tracking app, 2.8 s for SkyPilot under ``budget-gate serve skypilot-policy``, 0.4 s for
``budget-gate ci``; the suite starts some twenty servers of each kind and about a hundred
``ci`` steps. ``python -m tests.zygote KIND`` (from the repository's root) imports them once,
under the environment of its first child, and forks one child per request:

- ``mlflow``: MLflow's app under uvicorn, as ``python -m uvicorn mlflow.server.fastapi_app:app``
  runs it, with the server's own environment (store, artifact root, boot id), port, log and
  session; a store that does not exist yet starts as a copy of one MLflow created
  (:func:`_template`).
- ``skypilot-policy`` and ``ci``: the program itself, ``budget-gate ARGV`` as ``python -m
  gate`` runs it (:func:`_program`), in the child's environment, working directory, output
  and session.

No Python thread runs here when it forks (checked), so a child inherits no held lock.

Requests come one JSON line each on stdin; each gets one JSON line on stdout:

- ``{"start": {"env": {...}, "stdout": PATH, "stderr": PATH, ...}}`` → ``{"pid": P}``; the
  rest of ``start`` is the kind's: ``port`` and ``store`` for MLflow, ``argv`` and ``cwd``
  for the program
- ``{"wait": P, "timeout": S}`` → ``{"status": null}`` while P still runs after up to S
  seconds, else its exit status

Children stay this process's until waited for (so a pid is never reused while a test holds
it); at end of input every child still running gets SIGKILL.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
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
    """In the child: its own session, environment and output, and no input."""
    os.setsid()
    out = os.open(start["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = out
    if start["stderr"] != start["stdout"]:
        err = os.open(start["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.environ.clear()
    os.environ.update(start["env"])


Child = Callable[[dict[str, Any]], None]


def _mlflow() -> tuple[Child, Callable[[], None]]:
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


def _program(preload: tuple[str, ...]) -> tuple[Child, Callable[[], None]]:
    """The program with ``preload`` imported: the child is ``budget-gate ARGV``.

    It runs as ``python -m gate`` runs from ``cwd`` and ends as that process would: the
    program's ``SystemExit`` leaves this module's loop and Python exits with its code,
    running what the program registered with ``atexit``. Unlike fresh processes, every
    child shares this process's hash seed.
    """
    import gate.cli

    for name in preload:
        importlib.import_module(name)

    def run(start: dict[str, Any]) -> None:
        _become(start)
        os.chdir(start["cwd"])
        sys.path[0] = start["cwd"]
        sys.argv = ["budget-gate", *start["argv"]]
        gate.cli.run()

    return run, lambda: None


KINDS = {
    "mlflow": _mlflow,
    # SkyPilot: 2.8 s of imports
    "skypilot-policy": functools.partial(_program, ("gate.integrations.skypilot_endpoint",)),
    # PyGithub and the CI path (run under -W error, as the tests run ``ci`` with
    # PYTHONWARNINGS=error)
    "ci": functools.partial(_program, ("gate.commands.ci", "github")),
}


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
                os._exit(70)  # not reached: a child never answers requests
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
            os.killpg(pid, signal.SIGKILL)  # the child and what it started
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # forked a moment ago: not yet its own group
        os.waitpid(pid, 0)
    clean_up()


if __name__ == "__main__":  # python -m tests.zygote KIND, from the repository's root
    main(sys.argv[1])
