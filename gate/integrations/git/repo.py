"""Git: the base version of specs (``check --base-ref``), the repository root, the identity.

The root is what waiver globs are relative to (:class:`RepoPaths`); the identity
(``git config user.email``) is stored with local ledger records.

Every path is located in its repository (``git rev-parse --show-toplevel``) and all blobs
of one repository are read through a single ``git cat-file --batch`` process, so a
thousand specs cost one subprocess, not a thousand.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import InputError
from gate.spec.loader import STDIN_NAME

if TYPE_CHECKING:
    import subprocess

_TIMEOUT_S = 60


def read_base(ref: str, paths: Sequence[str]) -> dict[str, bytes | None]:
    """The content of each path at ``ref``; None where the path is not a file there."""
    by_repo: dict[Path, list[tuple[str, str]]] = {}
    for path in paths:
        top = toplevel(_directory_of(path))
        by_repo.setdefault(top, []).append((path, _in_repo(path, top)))
    found: dict[str, bytes | None] = {}
    for top, entries in by_repo.items():
        commit = _verify(ref, top)
        blobs = _cat_files(top, [f"{commit}:{rel}" for _, rel in entries])
        found.update((path, blob) for (path, _), blob in zip(entries, blobs, strict=True))
    return found


def list_base(ref: str, directory: str, suffixes: tuple[str, ...]) -> list[str]:
    """Files under ``directory`` at ``ref`` ending in one of ``suffixes`` (any case)."""
    top = toplevel(Path(directory))
    prefix = _in_repo(directory, top)
    commit = _verify(ref, top)
    args = ["ls-tree", "-r", "-z", "--name-only", commit, "--", prefix]
    listed = _git(top, args).stdout.decode("utf-8", "surrogateescape").split("\0")
    return [
        str(Path(directory) / os.path.relpath(name, prefix))
        for name in listed
        if name.lower().endswith(suffixes)
    ]


def file_history(path: str, limit: int) -> list[tuple[str, bytes]]:
    """``path``'s content in each of the ``limit`` newest commits that touch it, newest first.

    Commits that delete the file are left out; one ``git log`` and one ``git cat-file``.
    A path outside a git work tree is bad input (:class:`gate.errors.InputError`).
    """
    top = toplevel(_directory_of(path))
    rel = _in_repo(path, top)
    args = ["log", f"-n{limit}", "--format=%H", "--end-of-options", "HEAD", "--", rel]
    commits = _git(top, args).stdout.decode("ascii").split()
    blobs = _cat_files(top, [f"{commit}:{rel}" for commit in commits])
    return [(c, blob) for c, blob in zip(commits, blobs, strict=True) if blob is not None]


class RepoPaths:
    """Spec paths relative to the repository root, as waiver globs match them.

    The root is the git work tree that holds the policy directory, else the policy
    directory's parent; it is looked up once, on first use, by the nearest ``.git`` upward
    (what ``git rev-parse --show-toplevel`` prints, without starting git). A spec outside the
    root is named by its absolute path: the relative one it was given by (from a working
    directory outside the repository) would read as a path in it, and match its globs.
    """

    def __init__(self, policy_dir: str | Path) -> None:
        self.policy_dir = Path(policy_dir)
        self._root: Path | None = None
        self._seen: dict[str, str] = {}
        self._folders: dict[str, str | None] = {}

    @property
    def root(self) -> Path:
        """The repository root (git top level, else the policy directory's parent)."""
        if self._root is None:
            found = repository_root(self.policy_dir.resolve())
            self._root = found.resolve() if found else self.policy_dir.resolve().parent
        return self._root

    def __call__(self, spec_file: str) -> str:
        """``spec_file`` relative to the root, with ``/`` separators.

        ``<stdin>`` stays as it is: a spec read from stdin lies in no directory, so no team
        owns it, wherever the command runs (a file named ``<x>`` is a file like any other).
        """
        if spec_file == STDIN_NAME:
            return spec_file
        found = self._seen.get(spec_file)
        if found is None:
            found = self._seen[spec_file] = self._relative(spec_file)
        return found

    def _relative(self, spec_file: str) -> str:
        """Joined as strings from the folder's place under the root, found once a folder.

        NOTE: pathlib's joins and ``relative_to`` took 2 % of a thousand specs' check.
        """
        folder, name = os.path.split(spec_file)
        try:
            if name in ("", ".", "..") or os.path.islink(spec_file):
                # NOTE: a file that is a symbolic link is resolved whole: its target's path
                place = self._under_root(Path(spec_file).resolve())
            else:
                if folder not in self._folders:
                    self._folders[folder] = self._under_root(Path(folder).resolve())
                place = self._folders[folder]
                if place is not None:
                    place = name if place == "." else f"{place}/{name}"
        except OSError:
            place = None
        return Path(os.path.abspath(spec_file)).as_posix() if place is None else place

    def _under_root(self, resolved: Path) -> str | None:
        """``resolved`` relative to the root, with ``/`` separators; ``None`` outside it."""
        try:
            return resolved.relative_to(self.root).as_posix()
        except ValueError:
            return None


def toplevel(directory: Path) -> Path:
    """The root of the git work tree that holds ``directory``."""
    out = _git(
        directory, ["rev-parse", "--show-toplevel"], what=f"{directory}: not in a git work tree"
    )
    return Path(out.stdout.decode("utf-8", "surrogateescape").strip()).resolve()


def user_email(directory: Path | None = None) -> str | None:
    """``git config user.email`` seen from ``directory`` (default: the current directory).

    ``None`` when it is unset, or git is missing or fails.
    """
    import subprocess  # NOTE: here, not at the top: check imports this module for RepoPaths

    try:
        proc = subprocess.run(
            ["git", "config", "user.email"],
            cwd=directory,
            capture_output=True,
            check=False,
            timeout=_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    email = proc.stdout.decode("utf-8", "replace").strip()
    return email if proc.returncode == 0 and email else None


def _directory_of(path: str) -> Path:
    parent = Path(path).parent
    while not parent.is_dir() and parent != parent.parent:
        parent = parent.parent  # a deleted spec may live in a deleted directory
    return parent


def _in_repo(path: str, top: Path) -> str:
    """``path`` relative to the work tree's root (its existing directories resolved)."""
    parent = _directory_of(path)
    absolute = os.path.normpath(parent.resolve() / os.path.relpath(path, parent))
    try:
        return Path(absolute).relative_to(top).as_posix()
    except ValueError:
        raise InputError(f"{path}: outside the git work tree {top}") from None


def _verify(ref: str, top: Path) -> str:
    out = _git(
        top,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        what=f"--base-ref {ref}: no such commit in {top}",
    )
    return out.stdout.decode("ascii").strip()


def _cat_files(top: Path, objects: list[str]) -> list[bytes | None]:
    if any("\n" in name for name in objects):  # one object per line in --batch
        raise InputError("a spec path contains a line break", hint="rename the file")
    request = "".join(f"{name}\n" for name in objects).encode("utf-8", "surrogateescape")
    out = _git(top, ["cat-file", "--batch"], stdin=request).stdout
    blobs: list[bytes | None] = []
    pos = 0
    for _ in objects:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if header[-1] in (b"missing", b"ambiguous"):
            blobs.append(None)
            continue
        size = int(header[2])
        blobs.append(out[pos : pos + size] if header[1] == b"blob" else None)
        pos += size + 1
    return blobs


def _git(
    cwd: Path, args: list[str], *, what: str = "", stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    import subprocess  # NOTE: here, not at the top: check imports this module for RepoPaths

    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            check=False,
            timeout=_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise InputError("git is not installed", hint="--base-ref needs git on PATH") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git {args[0]} took over {_TIMEOUT_S} s", hint="try again") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        message = what or f"git {args[0]} failed: {detail[-1] if detail else proc.returncode}"
        raise InputError(message, hint="check --base-ref and that the specs are in the repository")
    return proc


def repository_root(start: Path) -> Path | None:
    """The git work tree's top level that holds ``start``, or ``None`` outside one."""
    here = Path(os.path.abspath(start))
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return None
