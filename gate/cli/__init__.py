# PYTHON_ARGCOMPLETE_OK
"""Command-line entry point: parse arguments, run one command, map errors to exit codes.

This package is the only place that exits. Exit codes (DESIGN.md §3): 0 pass, 1 policy
violation, 2 approval required, 3 invalid input or usage, 4 backend failure, 70 internal
bug, 130 interrupted. Command modules are imported only when chosen, so start-up stays
fast. The parser (:mod:`gate.cli.parser`) is built from one module per journey:
:mod:`~gate.cli.pricing` (before launch), :mod:`~gate.cli.approvals` (at launch and on pull
requests) and :mod:`~gate.cli.afterwards` (after the runs), over :mod:`~gate.cli.base`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from keyword import iskeyword
from typing import NoReturn

from gate.cli.base import EXIT_USAGE
from gate.cli.parser import build_parser, command_named
from gate.commands.output import drop_stdout, stdout_error
from gate.errors import GateError, InputError, InputErrors, one_line

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "build_parser",
    "main",
    "run",
]

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""The output's reader left before it was written (``| head``): 128 + SIGPIPE, as a shell
reports a process a closed pipe stopped; never 0, which would pass a failing spec."""


def _shown(exc: GateError, located: bool) -> str:
    """The error's lines, each an input error's with its control characters escaped."""
    if isinstance(exc, InputErrors):
        return "\n".join(one_line(str(e)) for e in exc.errors)
    text = str(exc) if located else f"budget-gate: {exc}"
    return one_line(text) if isinstance(exc, InputError) else text


def _complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit; without argcomplete, do nothing."""
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


def run() -> NoReturn:
    """The ``budget-gate`` program (and ``python -m gate``): :func:`main`, then exit.

    A command that holds nothing to finish at exit (``QUICK_EXIT``: no ledger write, no
    client thread) leaves without the interpreter's teardown, once its output is flushed:
    freeing a thousand specs' results took ``check`` 20 ms.
    """
    code = _flushed(main())
    if _quick_exit and _nothing_waits_for_exit():
        os._exit(code)
    sys.exit(code)


def _nothing_waits_for_exit() -> bool:
    """No profiler, tracer (coverage), exit hook or other thread that the teardown serves."""
    import atexit

    hooks = getattr(atexit, "_ncallbacks", None)  # NOTE: CPython's; elsewhere, no quick exit
    threads = sys.modules.get("threading")  # NOTE: not imported, no thread was started by it
    return (
        sys.gettrace() is None
        and sys.getprofile() is None
        and hooks is not None
        and hooks() == 0
        and (threads is None or threads.active_count() == 1)
    )


_quick_exit = False
"""Set by :func:`main` when the command it ran says it may leave that way."""


def _flushed(code: int) -> int:
    """``code``, once the output still buffered is written; a write that fails says so.

    A reader that left (``| head``) leaves a failing verdict as it is, and turns a pass into
    141 (the report was not read whole); any other failure (a full disk) is one line on
    stderr, and a passing run that could not write its report is not a pass (exit 3, as for
    a ``--format NAME=FILE`` that cannot be written).
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()
        code = code or EXIT_BROKEN_PIPE
    except OSError as exc:
        drop_stdout()
        print(_shown(stdout_error(exc), located=False), file=sys.stderr)
        code = code or EXIT_USAGE
    with contextlib.suppress(OSError):  # nowhere left to say it
        sys.stderr.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    global _quick_exit
    _quick_exit = False
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete extra)
        _complete(build_parser())
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_named(words))
    if not words:  # NOTE: a first try with no command: the commands, not one error line
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0)
    try:
        name = args.command.replace("-", "_")
        module = importlib.import_module(
            f"gate.commands.{name}_" if iskeyword(name) else f"gate.commands.{name}"
        )
        code = int(module.run(args))
        _quick_exit = getattr(module, "QUICK_EXIT", False)
        return code
    except GateError as exc:
        located = isinstance(exc, InputErrors) or getattr(exc, "location", None) is not None
        # NOTE: located errors start with file:line:col so editors and CI can jump to them.
        print(_shown(exc, located), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("budget-gate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader left before the report was written: no verdict
        drop_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if not _stdout_failed(exc):
            return _internal(exc, args.debug)
        drop_stdout()  # NOTE: a command that printed straight to a full disk: bad output (3)
        print(_shown(stdout_error(exc), located=False), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        return _internal(exc, args.debug)


def _stdout_failed(exc: OSError) -> bool:
    """Whether ``exc`` is a write that found no room, the machine's failing, not ours.

    A full disk (stdout on /dev/full), a quota, a file past its limit, a failed device.
    """
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _internal(exc: Exception, debug: bool) -> int:
    """Our bug: one line (the traceback with ``--debug``), exit 70."""
    if debug:
        raise exc
    print(
        f"budget-gate: internal error: {type(exc).__name__}: {exc} "
        "(rerun with --debug for the traceback, and please report it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL
