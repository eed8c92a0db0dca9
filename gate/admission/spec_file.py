"""The spec a launch names, found in the repository the enforcement point is given.

A launch names its spec by its path in the repository (an env var for SkyPilot, an
annotation for Kueue). The path must stay inside the repository, symlinks included, and
name a readable file; anything else is refused with what to change.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class SpecRefError(Exception):
    """The named spec cannot be used; the message is one line: what, why and the fix."""


def read_spec(named: str, repo: Path, *, subject: str) -> tuple[str, bytes]:
    """The spec's normalized path in ``repo`` and its bytes.

    ``subject`` is how the launch named it, for messages (``BUDGET_GATE_SPEC=x.yaml``).

    Raises:
        SpecRefError: outside the repository, unreadable, or not a path at all.
    """
    if "\0" in named:
        raise SpecRefError(
            f"{subject!r} holds a NUL byte — name the spec by its path in the repository, "
            "e.g. experiments/sweep.yaml"
        )
    relative = PurePosixPath(named.replace("\\", "/"))
    root = repo.resolve()
    path = (root / relative).resolve()
    if relative.is_absolute() or not path.is_relative_to(root):
        raise SpecRefError(
            f"{subject} is outside the repository {repo} — "
            "name the spec by its path in the repository, e.g. experiments/sweep.yaml"
        )
    try:
        return relative.as_posix(), path.read_bytes()
    except OSError as exc:
        raise SpecRefError(
            f"{subject} names no readable spec in {repo} ({exc.strerror}) — "
            "commit the spec there, or fix the path"
        ) from None
