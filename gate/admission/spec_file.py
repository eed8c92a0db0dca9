"""The spec a launch names, found in the repository the enforcement point is given.

A launch names its spec by its path in the repository (an env var for SkyPilot, an
annotation for Kueue). The path must stay inside the repository, symlinks included, and
name a readable file; anything else is refused with what to change.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

MAX_NAME = 1024
"""A spec name longer than this is not a path anyone commits."""


class SpecRefError(Exception):
    """The named spec cannot be used; the message is one line: what, why and the fix."""


def read_spec(named: str, repo: Path, *, subject: str) -> tuple[str, bytes]:
    """The spec's normalized path in ``repo`` and its bytes.

    ``subject`` is how the launch named it, for messages (``BUDGET_GATE_SPEC=x.yaml``).

    Raises:
        SpecRefError: outside the repository, unreadable, or not a path at all.
    """
    if any(ord(c) < 32 or ord(c) == 127 for c in named) or len(named) > MAX_NAME:
        label = subject.removesuffix(named)  # "BUDGET_GATE_SPEC=", "annotation …="
        raise SpecRefError(
            f"{label}{named[:80]!r} is not a file name (a control character, or over "
            f"{MAX_NAME} characters) — name the spec by its path in the repository, e.g. "
            "experiments/sweep.yaml"
        )
    relative = PurePosixPath(named.replace("\\", "/"))
    root = repo.resolve()
    try:
        path = (root / relative).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name the OS refuses
        raise SpecRefError(f"{subject} cannot be resolved in {repo} ({exc})") from None
    if relative.is_absolute() or not path.is_relative_to(root):
        raise SpecRefError(
            f"{subject} is outside the repository {repo} — "
            "name the spec by its path in the repository, e.g. experiments/sweep.yaml"
        )
    try:
        # NOTE: the path as resolved, the file read: ``vision/link/../x.yaml`` through a
        # symlink into nlp's directory is nlp's file, and is matched as nlp's.
        return path.relative_to(root).as_posix(), path.read_bytes()
    except OSError as exc:
        raise SpecRefError(
            f"{subject} names no readable spec in {repo} ({exc.strerror}) — "
            "commit the spec there, or fix the path"
        ) from None
