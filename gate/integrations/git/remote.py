"""Which repository (``owner/name``) a launch is in, so a GitHub approval counts only there.

``GITHUB_REPOSITORY`` (set in every GitHub Actions job) names it; else the work tree's
``origin`` remote does (``git@host:owner/name.git``, ``https://host/owner/name``,
``ssh://git@host/owner/name.git``). Neither: unknown, and the launch says it did not check.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from gate.integrations.git.repo import repository_root

REPOSITORY_ENV = "GITHUB_REPOSITORY"
_NAME = r"[A-Za-z0-9_.-]+"
_FULL = re.compile(rf"^{_NAME}/{_NAME}$")
_REMOTE = re.compile(rf"(?:^[^/:]+@[^/:]+:|^[a-z+]+://[^/]+/)/?({_NAME})/({_NAME}?)(?:\.git)?/?$")


def this_repository(home: Path | None, env: Mapping[str, str] = os.environ) -> str | None:
    """``owner/name`` from ``GITHUB_REPOSITORY``, else from ``home``'s origin, else ``None``."""
    named = env.get(REPOSITORY_ENV, "").strip()
    if _FULL.match(named):
        return named
    root = repository_root(home) if home is not None else None
    if root is None:
        return None
    import subprocess  # NOTE: here, not at the top: every check imports this module

    try:
        proc = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=root,
            capture_output=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _REMOTE.match(proc.stdout.decode("utf-8", "replace").strip())
    if proc.returncode != 0 or match is None:
        return None
    owner, name = match.group(1), match.group(2).removesuffix(".git")
    return f"{owner}/{name}" if name else None
