"""Errors that end a command, each carrying the exit code the CLI maps it to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


def one_line(text: str) -> str:
    r"""``text`` with its control characters shown as escapes (``\n``, ``\x1b``).

    A file name or a value may hold a line break or a terminal escape: printed raw, it
    would start a line of its own (which a GitHub runner reads as a workflow command when
    it begins with ``::``) or drive the terminal.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


class Location(NamedTuple):
    """A 1-based position in a source file.

    NOTE: a named tuple, not a dataclass: the loader makes one per key and value of every
    spec (a hundred each), and a tuple is made in half the time.
    """

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        # NOTE: a file name may hold a line break: shown escaped, it cannot start a line.
        return f"{one_line(self.file)}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One input error as a value: what is wrong, where, and how to fix it."""

    message: str
    location: Location | None = None
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        how = f" — {self.hint}" if self.hint else ""
        return f"{where}{self.message}{how}"


class GateError(Exception):
    """Base of every error the CLI turns into an exit code instead of a traceback."""

    exit_code = 70


class InputError(GateError):
    """Bad input: YAML, schema, unknown accelerator, policy error (exit 3).

    The message says what is wrong and the hint how to fix it; the location points at the
    offending value so editors and CI annotations can jump to it.
    """

    exit_code = 3

    def __init__(self, message: str, *, location: Location | None = None, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    @property
    def problem(self) -> Problem:
        """This error as a value that a report can carry."""
        return Problem(self.message, self.location, self.hint)

    def __str__(self) -> str:
        return str(self.problem)


class MissingExtra(InputError):
    """An optional dependency a command needs is not installed (exit 3).

    The hint names the extra to install, e.g. ``pip install 'budget-gate[mlflow]'``.
    """


class BackendError(GateError):
    """A backend (MLflow, GitHub) failed or could not be reached (exit 4)."""

    exit_code = 4


class WriteForbidden(BackendError):
    """A backend refused a write for lack of permission (GitHub's 403 to a read-only token).

    The pull-request flow notes it and carries on with annotations and the job summary.
    """


class InputErrors(GateError):
    """Several input errors found in one document, reported together (exit 3)."""

    exit_code = 3

    def __init__(self, errors: list[InputError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


class PolicyViolation(GateError):
    """The spec breaks the policy; no approval can lift an error (exit 1)."""

    exit_code = 1


class ApprovalRequired(GateError):
    """The spec needs an approval and no fresh one is recorded (exit 2).

    ``reasons`` says why each recorded approval does not count, or that none exists.
    """

    exit_code = 2

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message + "".join(f"\n  - {r}" for r in reasons))
        self.reasons = reasons
