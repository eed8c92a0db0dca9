"""Many specs evaluated in forked worker processes: a directory of a thousand on every core.

One spec's evaluation reads nothing another's writes (policies, prices and the date are the
evaluator's, loaded before the fork), so ``check`` forks workers from itself and every
process, this one included, claims the next batch of specs from a shared queue until none
is left: a process slowed by costly specs or a busy core simply claims fewer. A worker
sends each batch's results as soon as they are made, and this process takes them between
its own batches, so when the queue runs dry only the last batches are still on their way.
The results are put back in the order given: the same output, byte for byte, as one
process gives. It stays serial where fork is not the platform's way (only Linux forks
here), for short lists, and when the ledger may be read (each worker would read it again,
and the report tells of the parent's read). When a spec fails anywhere (a broken policy)
or a worker is lost, the parent evaluates them all again in one process, so the error it
raises is the very one a serial run raises.
"""

from __future__ import annotations

import gc
import os
import signal
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar

R = TypeVar("R")

MIN_PER_WORKER = 25
"""Specs a worker must have to pay for its fork (about 10 ms, a few specs' worth)."""
BATCHES_PER_PROCESS = 64
"""How finely the list is cut: batches small enough that the processes end together."""
MAX_BATCHES = 1024
"""The most batches in the queue: at 4 bytes a claim, the 4 KiB that any pipe holds."""
RESULTS_PIPE_BYTES = 1 << 20
"""What a worker may send before this process takes it (Linux's default most for a pipe)."""

_CLAIM = struct.Struct("<I")
"""A batch in the queue: the index of its first spec."""
_FRAME = struct.Struct("<I")
"""A worker's message: the length of the pickle of ``(first index, results)`` after it."""


class _Lost(Exception):
    """A spec failed, or a worker's results did not all come back."""


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


def batch_size(count: int, workers: int) -> int:
    """Specs per claim: :data:`BATCHES_PER_PROCESS` each, at most :data:`MAX_BATCHES` in all."""
    batches = max(1, min(MAX_BATCHES, workers * BATCHES_PER_PROCESS, count))
    return -(-count // batches)


def evaluate_all(evaluate: Callable[[str], R], paths: list[str], workers: int) -> list[R]:
    """``evaluate`` of each path, in order, over ``workers`` processes (this one included).

    What is loaded before (modules, policies, prices) is frozen out of the garbage
    collector's passes while they run: it lives as long as the process, and the passes
    over it took about 4 % of a thousand specs' evaluation.
    """
    gc.freeze()  # NOTE: and what is loaded stays shared with the workers, not copied on write
    try:
        if workers <= 1:
            return [evaluate(path) for path in paths]
        return _in_processes(evaluate, paths, workers)
    finally:
        gc.unfreeze()


def _in_processes(evaluate: Callable[[str], R], paths: list[str], workers: int) -> list[R]:
    size = batch_size(len(paths), workers)
    queue = _queue(len(paths), size)
    children: list[_Worker] = []
    try:
        for _ in range(workers - 1):
            if _Worker.fork(evaluate, paths, size, queue, children) is None:
                break  # NOTE: no process more to be had: fewer share the same queue
        return _share(evaluate, paths, size, queue, children)
    except _Lost:
        pass
    finally:
        os.close(queue)
        for child in children:  # interrupted or failed: no worker outlives the call
            child.stop()
    # NOTE: a spec failed somewhere (a broken policy, a ledger outage) or a worker was
    # lost: a serial run raises the first failure in the order given, with all it carries.
    return [evaluate(path) for path in paths]


def _queue(count: int, size: int) -> int:
    """A pipe holding a claim for each batch, closed for writing: it reads empty when done."""
    read, write = os.pipe()
    claims = b"".join(_CLAIM.pack(first) for first in range(0, count, size))
    try:
        os.write(write, claims)  # NOTE: at most 4 KiB, which a pipe takes in one write
    finally:
        os.close(write)
    return read


def _claims(queue: int) -> Iterator[int]:
    """The first index of each batch this process claims, until the queue is empty."""
    while claim := os.read(queue, _CLAIM.size):
        yield _CLAIM.unpack(claim)[0]


def _share(
    evaluate: Callable[[str], R], paths: list[str], size: int, queue: int, children: list[_Worker]
) -> list[R]:
    """This process's part: claim batches, take what the workers sent, then the rest."""
    results: list[Any] = [_MISSING] * len(paths)
    for first in _claims(queue):
        try:
            results[first : first + size] = [evaluate(p) for p in paths[first : first + size]]
        except Exception as exc:
            raise _Lost from exc
        for child in children:
            child.take(results, wait=False)
    for child in children:
        child.take(results, wait=True)
    if any(result is _MISSING for result in results):
        raise _Lost  # a batch claimed by a worker that sent no results (killed)
    return results


_MISSING: Any = object()


class _Worker:
    """A forked worker: its pid, the pipe its results come on, and what came so far."""

    def __init__(self, pid: int, pipe: int) -> None:
        self.pid, self.pipe, self.received = pid, pipe, bytearray()

    @classmethod
    def fork(
        cls,
        evaluate: Callable[[str], R],
        paths: Sequence[str],
        size: int,
        queue: int,
        others: list[_Worker],
    ) -> _Worker | None:
        """Fork a worker that evaluates the batches it claims and sends their results.

        ``None`` when the system gives no process or pipe more (``EAGAIN``, no descriptors
        left at a high ``-j``): the processes there are share the queue without it.
        """
        try:
            read, write = os.pipe()
        except OSError:
            return None
        _widen(write)
        # NOTE: Ctrl-C waits until the worker is known (then the parent kills it), and the
        # worker never takes it: its parent decides, so it is never reported twice.
        interrupt = {signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, interrupt)
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupt)
            os.close(read)
            os.close(write)
            return None
        if pid:
            os.close(write)
            os.set_blocking(read, False)
            worker = cls(pid, read)
            others.append(worker)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupt)
            return worker
        try:
            for pipe in (read, *(other.pipe for other in others)):  # NOTE: not another's
                os.close(pipe)
            _work(evaluate, paths, size, queue, write)  # never returns
        finally:
            os._exit(1)

    def take(self, results: list[Any], *, wait: bool) -> None:
        """Put the results received so far in their places; ``wait``: all, till it exits."""
        if self.pipe < 0:
            return
        if wait:
            os.set_blocking(self.pipe, True)
        ended = False
        while not ended:
            try:
                data = os.read(self.pipe, RESULTS_PIPE_BYTES)
            except BlockingIOError:
                break
            self.received += data
            ended = not data
        self._unpack(results)
        if ended:
            self._end()

    def _unpack(self, results: list[Any]) -> None:
        """Each whole message received: a batch's results, put at its first index."""
        import pickle  # NOTE: here, not at the top: a check of a few specs never forks

        view, at = memoryview(self.received), 0
        while len(view) - at >= _FRAME.size:
            length = _FRAME.unpack_from(view, at)[0]
            end = at + _FRAME.size + length
            if end > len(view):
                break
            try:
                first, done = pickle.loads(view[at + _FRAME.size : end])
            except Exception as exc:  # a message cut short or garbled: the worker is lost
                raise _Lost from exc
            if results[first : first + len(done)].count(_MISSING) != len(done):
                raise _Lost  # NOTE: never sent twice, never over another batch's results
            results[first : first + len(done)] = done
            at = end
        view.release()
        del self.received[:at]

    def _end(self) -> None:
        """The worker closed its pipe: it must exit cleanly, every message whole."""
        os.close(self.pipe)
        self.pipe = -1
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if os.waitstatus_to_exitcode(status) != 0 or self.received:
            raise _Lost

    def stop(self) -> None:
        """Kill and reap a worker still running (the call was interrupted, or failed)."""
        if self.pipe >= 0:
            os.close(self.pipe)
            self.pipe = -1
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):  # pragma: no cover - gone
                pass
            self.pid = 0


def _work(
    evaluate: Callable[[str], R], paths: Sequence[str], size: int, queue: int, pipe: int
) -> NoReturn:
    """The worker's life: each claimed batch evaluated and sent; leave without exit hooks."""
    import pickle

    code = 1
    try:
        with os.fdopen(pipe, "wb") as out:
            for first in _claims(queue):
                done = [evaluate(p) for p in paths[first : first + size]]
                message = pickle.dumps((first, done), pickle.HIGHEST_PROTOCOL)
                out.write(_FRAME.pack(len(message)))
                out.write(message)
                out.flush()
        code = 0
    finally:
        os._exit(code)  # NOTE: a failure exits 1 unsaid: the parent evaluates them all


def _widen(pipe: int) -> None:
    """Let the pipe hold a worker's results while this process evaluates its own batch."""
    try:
        import fcntl

        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, RESULTS_PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # pragma: no cover - a smaller pipe works
        pass
