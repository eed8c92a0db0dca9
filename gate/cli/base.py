"""What every command's parser shares: usage errors exit 3, the exit-code epilog, validators."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

EXIT_USAGE = 3
_MEANINGS = {
    0: "0 pass",
    1: "1 policy violation",
    2: "2 approval required",
    3: "3 invalid input",
    4: "4 backend failure",
}


def exit_codes(*codes: int) -> str:
    """The epilog of a command's --help: only the exit codes that command can return."""
    return "exit codes: " + ", ".join(_MEANINGS[code] for code in codes)


EPILOG = exit_codes(0, 1, 2, 3, 4) + "; 70 a bug in budget-gate (run with --debug and report it)"
"""The exit codes of budget-gate as a whole (the top-level --help)."""


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors, which would read as "approval required".

    Abbreviations are off: ``--fail-on error`` must not be read as ``--fail-on-warn``. Sub-
    parsers are built from this class too, so the setting holds for every command.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print the usage and the message; exit 3."""
        self.print_usage(sys.stderr)
        print(f"budget-gate: error: {message} — see --help", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def text_or_json(parser: argparse.ArgumentParser) -> None:
    """``--format text|json``."""
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )


def non_negative(text: str) -> float:
    """A finite number ≥ 0 (``--min-delta``)."""
    try:
        value = float(text) if text.isascii() else -1.0  # NOTE: float() reads "１.５" too
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return value


def ascii_int(text: str) -> int | None:
    """``text`` as a whole number when it is ASCII digits only, else None.

    NOTE: ``str.isdigit`` and ``int`` take full-width (``８０``) and other scripts' digits
    too, and ``isdigit`` superscripts (``²``) that ``int`` then refuses.
    """
    return int(text) if text.isascii() and text.isdigit() else None


def port(text: str) -> int:
    """A TCP port, 0 to 65535."""
    number = ascii_int(text)
    if number is None or number > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0-65535)")
    return number


def positive_int(text: str) -> int:
    """A whole number from 1 (``--jobs``); at most a thousand."""
    number = ascii_int(text)
    if number is None or not 1 <= number <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 1000")
    return number


def pr_number(text: str) -> int:
    """A pull request number, from 1."""
    number = ascii_int(text)
    if number is None or number == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pull request number")
    return number


def who_and_why(parser: Parser, who: str) -> None:
    """The spec, ``--by`` and ``--reason`` of approve and revoke."""
    parser.add_argument("spec", metavar="SPEC", help="the spec file")
    parser.add_argument("--by", required=True, metavar="NAME", help=who)
    parser.add_argument("--reason", required=True, metavar="TEXT", help="kept in the record")
