"""The spec a launch names, found in the repository the enforcement point is given.

A launch names its spec by its path in the repository (an env var for SkyPilot, an
annotation for Kueue, an argument for ``verify`` and ``gate.require_approval``). The path
must stay inside the repository, symlinks included, and name a readable file; anything else
is refused with what to change. Every launch path also refuses, by
:func:`check_launchable`, a spec the Action could never have judged on its pull request.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from gate.errors import InputError, one_line
from gate.spec.globs import SPEC_SUFFIXES, is_spec_file

MAX_NAME = 1024
"""A spec name longer than this is not a path anyone commits."""


class SpecRefError(Exception):
    """The named spec cannot be used; the message is one line: what, why and the fix."""


def read_spec(named: str, repo: Path, *, subject: str) -> tuple[str, bytes]:
    """The spec's normalized path in ``repo`` and its bytes.

    ``subject`` is how the launch named it, for messages (``BUDGET_GATE_SPEC=x.yaml``).

    Raises:
        SpecRefError: outside the repository, unreadable, not a path at all, or a file
            the Action never judges (:func:`check_launchable`).
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
    if relative.is_absolute():
        inside = path.relative_to(root).as_posix() if path.is_relative_to(root) else None
        raise SpecRefError(
            f"{subject} is an absolute path — name the spec by its path in the repository"
            + (f" ({inside})" if inside else ", e.g. experiments/sweep.yaml")
        )
    if not path.is_relative_to(root):
        raise SpecRefError(
            f"{subject} is outside the repository {repo} — "
            "name the spec by its path in the repository, e.g. experiments/sweep.yaml"
        )
    try:
        check_launchable(named, path, root)
    except InputError as exc:
        raise SpecRefError(f"{subject}: {exc}") from None
    try:
        # NOTE: the path as resolved, the file read: ``vision/link/../x.yaml`` through a
        # symlink into nlp's directory is nlp's file, and is matched as nlp's.
        return path.relative_to(root).as_posix(), path.read_bytes()
    except OSError as exc:
        raise SpecRefError(
            f"{subject} names no readable spec in {repo} ({exc.strerror}) — "
            "commit the spec there, or fix the path"
        ) from None


def check_launched(spec: str | Path, root: Path, *, policies_there: bool = True) -> None:
    """:func:`check_launchable` for a spec named by a path from the current directory.

    ``root`` is the repository the policies come from (``verify``'s, the launch API's);
    ``policies_there``: they are its own (not the built-in default), so a spec outside it
    is refused even where it is no git work tree (an image built without ``.git``).

    Raises:
        InputError: the Action never judges a file so named, or so placed.
    """
    try:
        path = Path(spec).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name the OS refuses
        raise InputError(
            f"{one_line(str(spec))}: cannot be resolved ({exc})",
            hint="name the spec by its path in the repository, e.g. experiments/sweep.yaml",
        ) from None
    check_launchable(str(spec), path, root.resolve(), policies_there=policies_there)


def check_launchable(named: str, path: Path, root: Path, *, policies_there: bool = True) -> None:
    """Refuse a spec the Action never judges: every launch path calls this before judging.

    The Action judges the files a pull request changes whose names
    :func:`gate.spec.globs.is_spec_file` picks, and sees only the repository's own files. A
    launch judges any file it is given, so a spec named ``small`` or ``a.yaml.bak``, or one
    inside a submodule (``experiments/nlp/ext/big.yaml``), would launch under its team's
    policy without the review (BG205, the approvals) its pull request should have had.
    ``path`` is the spec resolved, ``root`` the repository's root resolved.

    Raises:
        InputError: the name, or the place, is one the Action never judges (fail closed).
    """
    shown = one_line(named)
    if path.is_dir():
        raise InputError(
            f"{shown}: a directory — a launch judges the one spec file it launches",
            hint=f"name the spec file, e.g. {shown.rstrip('/')}/sweep.yaml",
        )
    if not (is_spec_file(named) and is_spec_file(path.name)):
        own = path.name == os.path.basename(named.replace("\\", "/").rstrip("/"))
        target = "" if own else f" (a link to the file {one_line(path.name)})"
        raise InputError(
            f"{shown}: not a spec file name{target}: the Action judges only files whose "
            f"names end in {', '.join(SPEC_SUFFIXES)} (any case), so no pull request judged "
            "this one",
            hint=f"rename it to end in .yaml (e.g. {_suggested(path.name)}), commit it under "
            "the Action's specs globs, and launch that file",
        )
    if (policies_there or os.path.lexists(root / ".git")) and not path.is_relative_to(root):
        raise InputError(
            f"{shown}: lies outside the repository {one_line(str(root))} whose policies judge "
            f"it{_through_a_link(named, path)}, so no pull request judged this spec",
            hint="commit the spec in the repository, under the Action's specs globs, and "
            "launch it from there",
        )
    home = _repository_apart(path, root)
    if home is not None:
        raise InputError(
            f"{shown}: lies in the git repository {home}, and the policies in use lie outside "
            f"it (under {one_line(str(root))})",
            hint="pass --policy-dir with that repository's policies, or none: they are found "
            "from the spec's repository",
        )
    where = _apart(path, root) or _submodule(root)
    if where is not None:
        raise InputError(
            f"{shown}: lies inside {where}, so no pull request judged this spec",
            hint="commit the spec in the repository itself, under the Action's specs globs "
            "(not in a submodule or a nested clone), and launch it from there",
        )


def _through_a_link(named: str, path: Path) -> str:
    """`` (a link to PATH)`` when a link leads the name given elsewhere, else nothing."""
    given = Path(os.path.abspath(named))  # NOTE: ``..`` folded as the path reads, no link
    return "" if given == path else f" (a link to {one_line(str(path))})"


def _repository_apart(path: Path, root: Path) -> str | None:
    """The repository ``path`` lies in below ``root``, where ``root`` is no repository.

    The policies given (``--policy-dir``) are then not that repository's: no submodule.
    """
    if os.path.lexists(root / ".git") or not path.is_relative_to(root):
        return None
    return next(
        (
            one_line(str(f))
            for f in path.parents
            if f.is_relative_to(root) and f != root and os.path.lexists(f / ".git")
        ),
        None,
    )


def _apart(path: Path, root: Path) -> str | None:
    """Where ``path`` lies apart from the root repository's own files, or ``None``.

    A ``.git`` (a directory, or the file a submodule or worktree has) in a folder below the
    root makes that folder another repository; a file inside a ``.git`` directory is no
    commit's file at all. ``None`` for a path outside the root: no folder lies between.
    """
    if not path.is_relative_to(root):
        return None
    for folder in path.parents:
        if folder == root:
            break
        shown = one_line(folder.relative_to(root).as_posix())
        if folder.name.lower() == ".git":
            return f"{shown}, a git directory, whose files no commit holds"
        if os.path.lexists(folder / ".git"):
            return (
                f"{shown}, a nested git repository or submodule (a .git of its own) below "
                f"the repository {one_line(str(root))}: the Action judges that repository's "
                "pull requests and never sees the files of another"
            )
    return None


def _submodule(root: Path) -> str | None:
    """The root itself, said, when it is a submodule of another repository.

    Its ``.git`` is a file pointing into the superproject's ``.git/modules/``: a launch from
    inside one found no policies of the repository whose pull requests hold it, and judged
    by the default.
    """
    try:
        text = (root / ".git").read_text("utf-8", errors="replace")[:4096]
    except OSError:  # NOTE: a directory (a repository's own) or none: no submodule
        return None
    gitdir = text.removeprefix("gitdir:").strip().replace("\\", "/")
    if text.startswith("gitdir:") and "/modules/" in f"/{gitdir}":
        return (
            f"{one_line(str(root))}, a submodule of another repository: the Action judges "
            "that repository's pull requests and never sees the files of a submodule"
        )
    return None


def _suggested(name: str) -> str:
    """A spec name for ``name``: its last ending dropped when it follows a spec ending."""
    stem = name.rpartition(".")[0]
    if stem and is_spec_file(stem):
        return stem  # small.yaml.bak → small.yaml
    return f"{name or 'spec'}.yaml"
