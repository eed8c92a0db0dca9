"""Files read whole at start-up (a secret, a kubeconfig, a GitHub event payload).

Each must be a regular file of at most 25 MB, asked before it is opened: a FIFO with no
writer waits for one for ever, and a device (``/dev/zero``) reads until memory runs out.
"""

from __future__ import annotations

import os
import stat

from gate.errors import InputError

MAX_READ_BYTES = 25 * 1024 * 1024
"""The most a secret, kubeconfig or GitHub event file may hold (an event is a few MB)."""


def why_not_regular(path: str, what: str, limit: int = MAX_READ_BYTES) -> str | None:
    """Why ``path`` (links followed) is not a file to read whole; ``None`` when it is.

    NOTE: asked before the file is opened: a FIFO with no writer waits for one forever,
    and a device (/dev/zero) reads until memory runs out. A missing file is the reader's
    to say.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{what} {path}: cannot be read ({getattr(exc, 'strerror', None) or exc})"
    if stat.S_ISDIR(info.st_mode):
        return f"{what} {path}: is a directory, not a file"
    if not stat.S_ISREG(info.st_mode):
        return f"{what} {path}: is not a regular file (a pipe or a device), which is never read"
    if info.st_size > limit:
        return f"{what} {path}: holds {info.st_size:,} bytes, past the {limit // 2**20} MB limit"
    return None


def read_regular(path: str, what: str, hint: str, limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises:
        gate.errors.InputError: missing, unreadable, not a regular file or too large (exit 3).
    """
    refused = why_not_regular(path, what, limit)
    if refused is not None:
        raise InputError(refused, hint=hint)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise InputError(f"{what} {path}: cannot be read ({reason})", hint=hint) from None
    if len(data) > limit:  # NOTE: grew since it was asked about, or a /proc file
        raise InputError(f"{what} {path}: is past the {limit // 2**20} MB limit", hint=hint)
    return data
