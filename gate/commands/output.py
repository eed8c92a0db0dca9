"""Where reports go: ``--format NAME[=PATH]`` targets, atomic file writes, the job summary.

One evaluation is rendered once per requested format. Files are written through a
temporary file in the same directory and renamed, so a failure never leaves half a file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import InputError
from gate.reporters import REPORTERS, load_reporter

if TYPE_CHECKING:
    from gate.evaluation.report import Report

_FILE_MODE = 0o644


@dataclass(frozen=True, slots=True)
class FormatTarget:
    """One ``--format`` value: a reporter name and a file, or stdout when ``path`` is None."""

    name: str
    path: str | None = None


def parse_target(value: str, names: Sequence[str] = tuple(REPORTERS)) -> FormatTarget:
    """Parse ``NAME``, ``NAME=PATH`` or ``NAME=-`` (stdout, as ``NAME``) of ``names``.

    argparse turns the exception into a usage error.
    """
    name, sep, path = value.partition("=")
    if name not in names:
        choices = ", ".join(names)
        raise argparse.ArgumentTypeError(f"unknown format {name!r} (choose from {choices})")
    if sep and not path:
        raise argparse.ArgumentTypeError(f"--format {value}: the file name after '=' is empty")
    return FormatTarget(name, None if path in ("", "-") else path)


def plan_targets(
    targets: Sequence[FormatTarget] | None, example: str = "sarif=gate.sarif"
) -> list[FormatTarget]:
    """The targets to write: text on stdout by default; at most one stdout, no file twice.

    ``example`` is the ``NAME=FILE`` the hint shows: one of the command's own formats.
    """
    planned = list(targets or [FormatTarget("text")])
    on_stdout = [t.name for t in planned if t.path is None]
    if len(on_stdout) > 1:
        raise InputError(
            f"formats {', '.join(on_stdout)} all want stdout",
            hint=f"send all but one to a file, e.g. --format {example}",
        )
    # NOTE: resolved as write_atomically resolves them: a link to the other file is that file
    paths = [os.path.realpath(t.path) for t in planned if t.path is not None]
    if len(set(paths)) < len(paths):
        raise InputError("two formats write the same file", hint="give each format its own file")
    return planned


def emit(report: Report, targets: Sequence[FormatTarget]) -> None:
    """Render every target first, then write the files, then stdout."""
    rendered = [(t, load_reporter(t.name).render(report)) for t in targets]
    for target, text in rendered:
        if target.path is not None:
            write_atomically(target.path, text)
    for target, text in rendered:
        if target.path is None:
            write_stdout(text)


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout, all of it; a stdout that cannot take it is bad output (3).

    A full disk or a closed device gets one line and exit 3, as a ``--format NAME=FILE``
    that cannot be written does (never exit 0 for a report that went nowhere, never 70);
    a reader that left (``| head``) is the CLI's to answer.
    """
    try:
        _write_all(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        drop_stdout()
        raise stdout_error(exc) from None


def _write_all(text: str) -> None:
    """Every byte of ``text`` to stdout, or the error of the write that failed.

    NOTE: Python's text stdout takes a short write to a pipe whose reader left (``| head``)
    for a whole one and says nothing; the file descriptor is written to directly, so the
    write after it fails (EPIPE) and a report that was not read whole is never a pass.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured or replaced: no descriptor
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    encoding = sys.stdout.encoding or "utf-8"
    # NOTE: a stdout that cannot show a dash (PYTHONIOENCODING=ascii) gets \u2014, not a crash
    data = text.replace("\n", os.linesep).encode(encoding, "backslashreplace")
    view = memoryview(data)
    while view:
        view = view[_write_some(fd, view) :]


def _write_some(fd: int, data: memoryview) -> int:
    """What ``os.write`` wrote; 0 once a non-blocking stdout, full for now, can take more."""
    try:
        return os.write(fd, data)
    except BlockingIOError:  # NOTE: the reader is slow, not gone: wait for it
        import select

        select.select([], [fd], [])
        return 0


def stdout_error(exc: OSError) -> InputError:
    """What a stdout that cannot take the report (a full disk) is: bad output, exit 3."""
    return InputError(
        f"cannot write the output ({exc.strerror or exc})",
        hint="free the space where stdout goes, or write the report to a file: --format NAME=FILE",
    )


def drop_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered goes nowhere, without a complaint."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    finally:
        os.close(null)


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename; on failure the old file is untouched.

    A link is written through (the file it names is replaced, the link stays); what is no
    regular file (``/dev/stdout``, a FIFO, a device) is written to, never replaced.
    """
    dest = Path(os.path.realpath(path))
    if dest.exists() and not dest.is_file():
        try:
            with open(dest, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except OSError as exc:
            raise _write_error(path, exc) from None
        return
    try:
        import tempfile  # NOTE: only to write a file: stdout needs none of it

        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    except OSError as exc:  # NOTE: the folder's refusal (/proc: ENOENT), not the file's
        raise InputError(
            f"{path}: cannot write: no file can be made in {dest.parent} ({exc.strerror})",
            hint="write it to a folder that takes new files",
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, dest)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _write_error(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def refuse_overwriting(
    targets: Sequence[FormatTarget], inputs: Sequence[str], policy_dir: str | None = None
) -> None:
    """Refuse a report file that is one of the files judged, or in the policy directory.

    The report would replace a spec, a policy or the signers' file this run read (or add a
    file the next run reads as a policy).
    """
    guarded = os.path.realpath(policy_dir) if policy_dir and os.path.isdir(policy_dir) else None
    for target in targets:
        if target.path is None:
            continue
        where = os.path.realpath(target.path)
        if guarded is not None and os.path.commonpath([guarded, where]) == guarded:
            raise InputError(
                f"--format {target.name}={target.path} would write into {policy_dir}, the "
                "policy directory this run reads",
                hint="write the report outside the policy directory",
            )
        for given in inputs:
            # NOTE: by name too: a journal SQLite has not made yet is no file to compare
            if where == os.path.realpath(given) or _same_file(target.path, given):
                raise InputError(
                    f"--format {target.name}={target.path} would write over {given}, which "
                    "this run reads",
                    hint="write the report to a file of its own",
                )


def _same_file(one: str, other: str) -> bool:
    """Whether two paths are one existing file (a hard link too)."""
    return os.path.exists(one) and os.path.exists(other) and os.path.samefile(one, other)


def append_step_summary(report: Report, env: Mapping[str, str]) -> None:
    """Append the Markdown report to ``$GITHUB_STEP_SUMMARY`` when GitHub Actions set it."""
    summary = env.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    text = load_reporter("markdown").render(report)
    try:
        with open(summary, "a", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise _write_error(summary, exc) from None


def _write_error(path: str, exc: OSError) -> InputError:
    if os.path.isdir(path):
        return InputError(f"{path}: cannot write: it is a directory", hint="name a file in it")
    return InputError(
        f"{path}: cannot write ({exc.strerror})",
        hint="check that the directory exists and is writable",
    )
