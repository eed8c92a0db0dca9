"""Where the policies are: found from the repository root, as the ledger is, from any directory.

Without ``--policy-dir`` (or the API's ``policy_dir``) the policies are ``policies/`` at the
root of the git work tree that holds the current directory (the nearest ``.git`` upward,
:func:`gate.integrations.git.repo.repository_root`), so ``check`` run from
``experiments/`` judges by the same files as from the root. A repository without one
there uses the nearest ``policies/`` between the current directory and the root (a project
set up with ``init --dir`` inside a larger repository); outside a repository, the one in
the current directory, else (for a command that judges one spec) from the spec's own folder
the same way. Where none is found the built-in default policy applies, and every report
names it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from gate.errors import InputError
from gate.integrations.git.repo import repository_root
from gate.policy.loader import PolicySet, builtin_policies

POLICY_DIR = "policies"
"""The policy directory's name at the repository root."""


def find_policy_dir(cwd: Path | None = None) -> Path | None:
    """The ``policies/`` directory that applies in ``cwd`` (default: the current one), or None.

    The path is relative to ``cwd`` (``../policies`` from ``experiments/``) where it can be,
    so positions in messages stay short and clickable.
    """
    here = Path(os.path.abspath(cwd or Path.cwd()))
    root = repository_root(here)
    candidates = [root / POLICY_DIR] if root is not None else []
    top = root or here
    candidates += [d / POLICY_DIR for d in (here, *here.parents) if d.is_relative_to(top)]
    for candidate in candidates:
        if candidate.is_dir():
            return _shown(candidate, here)
    return None


def expected_policy_dir(cwd: Path | None = None) -> Path:
    """Where the policies are, or would be: the found one, else ``policies/`` at the root.

    For reading policies at a git ref (``--base-ref``), where the work tree may lack them.
    """
    here = Path(os.path.abspath(cwd or Path.cwd()))
    found = find_policy_dir(here)
    if found is not None:
        return found
    return _shown((repository_root(here) or here) / POLICY_DIR, here)


def open_policies(
    given: str | Path | None, cwd: Path | None = None, spec: str | Path | None = None
) -> PolicySet:
    """The policies of ``given`` (relative to ``cwd``), else those found, else the built-in ones.

    Found from ``cwd``, else from the folder of ``spec``: a launch script run outside the
    repository (``verify /repo/experiments/a.yaml`` from ``/tmp``) is judged by the
    repository's policies, not by the looser built-in default. The caller says when the
    built-in default applies (``PolicySet.builtin``); the reports name it too
    (``policy: built-in default``).
    """
    found = policy_dir_for(given, cwd, [] if spec is None else [spec])
    return builtin_policies() if found is None else PolicySet(found)


def policy_dir_for(
    given: str | Path | None, cwd: Path | None = None, specs: Sequence[str | Path] = ()
) -> Path | None:
    """The policy directory :func:`open_policies` reads, or ``None`` for the built-in one.

    None found from ``cwd``, the specs' own folders are searched the same way (``check
    a/b/experiments/`` from the root of a repository whose policies are in ``a/b/``, as
    ``verify`` of one of them does); specs under different policies are refused. The
    default ledger lies beside it (:mod:`gate.integrations.mlflow.tracking_uri`), so every
    command reads the ledger of the policies that judge, from any directory.

    Raises:
        gate.errors.InputError: the specs lie under different policy directories.
    """
    if given is not None:
        return Path(given)
    found = find_policy_dir(cwd)
    if found is not None or not specs:
        return found
    near = {_near(Path(os.path.abspath(spec))) for spec in specs}
    if len(near) > 1:
        shown = ", ".join(sorted(str(d) if d else "the built-in default" for d in near))
        raise InputError(
            f"the specs given lie under different policy directories ({shown})",
            hint="check each directory's specs on their own, or pass --policy-dir",
        )
    return near.pop()


def _near(spec: Path) -> Path | None:
    """The policy directory found from a spec's folder (a directory's own), absolute."""
    folder = spec if spec.is_dir() else spec.parent
    near = find_policy_dir(folder)
    return Path(os.path.normpath(folder / near)) if near is not None else None


def _shown(path: Path, here: Path) -> Path:
    """``path`` relative to ``here`` when it is below ``here``'s repository (else absolute)."""
    try:
        return Path(os.path.relpath(path, here))
    except ValueError:  # another drive on Windows
        return path
