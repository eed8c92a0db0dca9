"""Many specs evaluated in forked worker processes: a directory of a thousand on every core.

One spec's evaluation reads nothing another's writes (policies, prices and the date are the
evaluator's, loaded before the fork), so ``check`` deals a long list of specs out to
processes forked from itself, evaluates a share itself, and gathers the results in the
order given: the same results, the same output, as one process gives. It stays serial where
fork is not the platform's way (only Linux forks here), for short lists, and when the
ledger may be read (each worker would read it again, and the report tells of the parent's
read). When a spec fails anywhere (a broken policy), the parent evaluates them all again in
one process, so the error it raises is the very one a serial run raises.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")

MIN_PER_WORKER = 25
"""Specs a worker must have to pay for its fork (about 10 ms, a few specs' worth)."""


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def workers_for(count: int, jobs: int | None) -> int:
    """How many processes evaluate ``count`` specs: ``jobs``, or one per core, if it pays."""
    if sys.platform != "linux":
        return 1
    wanted = jobs if jobs is not None else available_cores()
    return max(1, min(wanted, count // MIN_PER_WORKER))


def evaluate_all(evaluate: Callable[[str], R], paths: list[str], workers: int) -> list[R]:
    """``evaluate`` of each path, in order, over ``workers`` processes (this one included)."""
    if workers <= 1:
        return [evaluate(path) for path in paths]
    shares = [paths[i::workers] for i in range(workers)]
    gc.freeze()  # NOTE: what is loaded stays shared with the workers, not copied on write
    children: list[tuple[int, int]] = []
    for share in shares[1:]:
        children.append(_fork(evaluate, share, [pipe for _, pipe in children]))
    gathered: list[list[R] | None] = []
    try:
        try:
            gathered.append([evaluate(path) for path in shares[0]])
        except Exception:
            gathered.append(None)
        while children:
            gathered.append(_gather(*children.pop(0)))
    finally:
        for pid, pipe in children:  # interrupted: the workers' work is not wanted
            _stop(pid, pipe)
        gc.unfreeze()
    if any(done is None for done in gathered):
        # NOTE: a spec failed somewhere (a broken policy, a ledger outage): a serial run
        # raises the first failure in the order given, with everything it carries.
        return [evaluate(path) for path in paths]
    results: list[R] = [None] * len(paths)  # type: ignore[list-item]
    for i, done in enumerate(gathered):
        results[i::workers] = done  # type: ignore[assignment]
    return results


def _fork(evaluate: Callable[[str], R], share: list[str], others: list[int]) -> tuple[int, int]:
    """A worker evaluating ``share``; ``others``: the earlier workers' pipes, not its own."""
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    for pipe in (read, *others):  # NOTE: no worker can read another's results
        os.close(pipe)
    # the worker: evaluate, send, and leave without the parent's exit hooks
    import pickle  # NOTE: here, not at the top: a check of a few specs never forks

    try:
        payload = pickle.dumps([evaluate(path) for path in share], pickle.HIGHEST_PROTOCOL)
    except BaseException:
        payload = b""
    try:
        with os.fdopen(write, "wb") as out:
            out.write(payload)
    finally:
        os._exit(0)


def _gather(pid: int, pipe: int) -> list[R] | None:
    """A worker's results, or ``None`` when it failed."""
    with os.fdopen(pipe, "rb") as source:
        payload = source.read()
    _, status = os.waitpid(pid, 0)
    if not payload or os.waitstatus_to_exitcode(status) != 0:
        return None
    import pickle

    try:
        done: list[R] = pickle.loads(payload)
    except Exception:  # a payload cut short: the parent evaluates them all again
        return None
    return done


def _stop(pid: int, pipe: int) -> None:
    os.close(pipe)
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):  # pragma: no cover - already gone
        pass
