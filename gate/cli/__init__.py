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
import importlib
import os
import sys
from collections.abc import Sequence
from keyword import iskeyword
from typing import NoReturn

from gate.cli.base import EXIT_USAGE
from gate.cli.parser import build_parser, command_named
from gate.errors import GateError, InputError, InputErrors, one_line

__all__ = ["EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "build_parser", "main", "run"]

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


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
    code = main()
    if _quick_exit:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # the reader left (``| head``): nothing more to say
            pass
        else:
            os._exit(code)
    sys.exit(code)


_quick_exit = False
"""Set by :func:`main` when the command it ran says it may leave that way."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete extra)
        _complete(build_parser())
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_named(words))
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
        global _quick_exit
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
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"budget-gate: internal error: {type(exc).__name__}: {exc} "
            "(rerun with --debug for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
