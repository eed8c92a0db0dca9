"""Which spec files a command is given: directories searched, quoted globs matched.

A directory gives every spec file under it in path order; a glob is matched by the rules of
:mod:`gate.spec.globs`. Nothing under the paths given may be left out unsaid: a link to a
directory is named as not searched, and a directory that cannot be read is bad input.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path
from typing import NoReturn

from gate.errors import InputError, one_line
from gate.spec import globs

STDIN = "-"
"""The name ``check`` reads a spec from stdin for; no other command reads stdin."""


def refuse_stdin(command: str, *paths: str) -> None:
    """Refuse ``-`` where only files are read: looked for as a file, it was "no such file"."""
    if STDIN in paths:
        raise InputError(
            f"{command} does not read a spec from stdin (-): only budget-gate check does",
            hint="save the spec to a file and pass its path (a file named - is ./-), or pipe "
            "it to budget-gate check -",
        )


def require_specs(paths: list[str], patterns: list[str]) -> list[str]:
    """``paths``, refused when empty: as in ``check``, no spec found is no success."""
    if not paths:
        raise InputError(
            f"no specs found in {one_line(' '.join(patterns))} (directories are searched for "
            "*.yaml, *.yml and *.json, in any case)",
            hint="check the path",
        )
    return paths


def expand_specs(patterns: list[str]) -> list[str]:
    """Expand directories and quoted globs into spec paths, keeping the order given.

    A directory gives every spec file under it (``.yaml``, ``.yml``, ``.json``, any case); a
    quoted glob is matched by the rules of :mod:`gate.spec.globs` (gitignore's, as in the
    Action and the waivers) against paths relative to the current directory. A name that
    exists is itself, wildcards in it or not.
    """
    found: list[str] = []
    for pattern in patterns:
        if os.path.isdir(pattern):
            links: list[str] = []
            top = str(Path(pattern))
            _spec_files(top if top != "." else "", top, found, links)
            _say_links(links)
        elif glob.has_magic(pattern) and not os.path.lexists(pattern):
            # NOTE: a file named experiments/[x].yaml is that file (a pre-commit hook passes
            # names), not a glob that selects experiments/x.yaml in its place
            matches = _glob(pattern)
            if not matches:
                raise InputError(f"{pattern}: no file matches", hint="check the glob")
            found.extend(matches)
        else:
            found.append(pattern)
    for path in found:
        _refuse_unnamable(path)
    return list(dict.fromkeys(found))


def _spec_files(prefix: str, directory: str, found: list[str], links: list[str]) -> None:
    """Add the spec files under ``directory`` to ``found``, in path order, and links to ``links``.

    Every entry whose name ends as a spec's counts, hidden or not; a link to a directory is
    not followed. ``prefix`` is how the paths found start (``""`` for the current directory).
    """
    stack = [iter(_listing(prefix, directory))]  # NOTE: not recursion: no depth limit to hit
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        path, entry = item
        if globs.is_spec_file(entry.name):
            found.append(path)
        if entry.is_dir(follow_symlinks=False):
            stack.append(iter(_listing(path, entry.path)))
        elif entry.is_symlink() and _leads_to_directory(entry):
            links.append(path)


def _leads_to_directory(link: os.DirEntry[str]) -> bool:
    """Whether a link reaches a directory; a loop or a target out of reach does not."""
    try:
        return link.is_dir()
    except OSError:  # NOTE: ELOOP, EACCES: as pathlib took them, no directory to search
        return False


def _listing(prefix: str, directory: str) -> list[tuple[str, os.DirEntry[str]]]:
    """A directory's entries by name, each with its path as the report names it.

    A directory that cannot be read is bad input, not a place without specs: the specs in
    it would go unjudged.
    """
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as exc:
        _unreadable(directory, exc)
    return [(os.path.join(prefix, e.name) if prefix else e.name, e) for e in entries]


def _unreadable(directory: str, exc: OSError) -> NoReturn:
    raise InputError(
        f"{one_line(directory)}: cannot read the directory ({exc.strerror})",
        hint="let the check read every directory it searches, or name the ones it may",
    ) from None


def _refuse_unnamable(path: str) -> None:
    """Refuse a path whose name is not UTF-8: no report could name the spec it holds."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"{one_line(path)}: the file name is not UTF-8",
            hint="rename the file: reports (JSON, SARIF, Markdown) name each spec in UTF-8",
        ) from None


def _glob(pattern: str) -> list[str]:
    """The spec files under the glob's literal directory that it selects.

    Spec files only (``.yaml``, ``.yml``, ``.json``), as ``check DIR`` and the Action take
    them, so ``'experiments/**'`` passes over a ``.gitkeep``. Hidden files count as they do
    there: skipped, ``experiments/.big.yaml`` would pass unjudged. Hidden directories
    (``.venv``, ``.drafts``) are not searched, and said (but ``.git``).
    """
    absolute = os.path.isabs(pattern)
    base = os.sep if absolute else os.curdir
    top = os.path.join(base, globs.literal_root(pattern))
    found: list[str] = []
    links: list[str] = []

    def refuse(exc: OSError) -> NoReturn:
        _unreadable(exc.filename or top, exc)

    if not os.path.isdir(top):
        raise InputError(
            f"{one_line(pattern)}: no file matches ({globs.literal_root(pattern)} is no directory)",
            hint="check the glob's directory",
        )
    hidden: list[str] = []
    for directory, subdirs, files in os.walk(top, onerror=refuse):
        hidden.extend(os.path.join(directory, d) for d in subdirs if d[:1] == "." and d != ".git")
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        links.extend(os.path.join(directory, d) for d in subdirs)
        subdirs[:] = [d for d in subdirs if not os.path.islink(os.path.join(directory, d))]
        for name in files:
            path = os.path.join(directory, name)
            shown = path if absolute else os.path.relpath(path)
            if not globs.is_spec_file(name):
                continue
            _refuse_unnamable(shown)  # NOTE: before matching: the glob engine takes UTF-8 only
            if globs.matches([pattern], shown):
                found.append(shown)
    _say_links([os.path.relpath(p) if not absolute else p for p in links if os.path.islink(p)])
    for folder in sorted(hidden):  # NOTE: .venv's files are no specs; a .drafts/ may hold some
        print(
            f"budget-gate: warning: {folder if absolute else os.path.relpath(folder)} is a "
            "hidden folder, not searched by a glob: check it by its own path",
            file=sys.stderr,
        )
    return sorted(found)


def _say_links(links: list[str]) -> None:
    """Directories reached by a symbolic link are not searched (no loops): say so."""
    for link in links:
        print(
            f"budget-gate: warning: {link} is a link to a directory, not searched: "
            f"check {os.path.realpath(link)} by its own path",
            file=sys.stderr,
        )
