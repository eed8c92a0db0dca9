"""The spec version a run was launched from, found by its fingerprint on disk or in git history.

Runs carry the spec path as given to :func:`gate.tracking.run_tags` and the fingerprint of
the spec then. The file at that path (relative to the current directory, then to the root
of the git work tree the current directory is in) is used when its fingerprint matches;
else the path's git history is read, newest first, up to :data:`HISTORY_LIMIT` commits
that touch it (one ``git log`` and one ``git cat-file`` per path), for the version whose
fingerprint matches. Each path is read once however many versions are asked for.

A launcher may tag the path relative to where *it* ran (``run_tags("sweep.yaml")`` in
``experiments/``): when neither place holds the fingerprint, the repository's files whose
path ends with the tagged one (``experiments/sweep.yaml``; leading ``./`` and ``../``
dropped) are tried the same way, up to :data:`NAMESAKE_LIMIT` of them. The fingerprint,
not the path, is what ties a run to a version: a tag could name any file anyway.

The path is a run's tag, its job's to write: one reader looks up at most
:data:`HISTORY_BUDGET` paths in git history (a job that tagged its runs with 20,000
made-up paths held the monthly report for minutes); past it, :attr:`SpecVersions.exhausted`
says that later versions were not searched for in full.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import InputError, InputErrors
from gate.integrations.git.repo import file_history, toplevel
from gate.spec.experiment import Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import LoadedDoc, load_bytes, read_raw
from gate.spec.validation import validate

HISTORY_LIMIT = 100
"""How many of the newest commits touching a spec path are searched for a version."""
NAMESAKE_LIMIT = 20
"""How many of the repository's files ending with a tagged relative path are tried."""
HISTORY_BUDGET = 1_000
"""How many spec paths one reader looks up in git history (about 5 ms each)."""


@dataclass(frozen=True, slots=True)
class SpecVersion:
    """A spec's bytes at one fingerprint, its path, and where they were found (``path@sha``).

    ``doc`` is the bytes as loaded to find the fingerprint, so a caller that evaluates the
    version does not parse it again (the monthly report prices thousands).
    """

    content: bytes
    path: str
    where: str
    doc: LoadedDoc | None = None
    spec: Experiment | None = None
    """``doc`` validated (as its fingerprint was computed)."""


if TYPE_CHECKING:
    from gate.policy.loader import PolicySet


class SpecVersions:
    """Finds spec versions by path and fingerprint; caches what each path holds."""

    def __init__(
        self,
        cwd: Path | None = None,
        limit: int = HISTORY_LIMIT,
        home: Path | None = None,
        budget: int = HISTORY_BUDGET,
    ) -> None:
        self.cwd = cwd or Path.cwd()
        self.limit = limit
        self.home = home
        """The policies' repository, whose files may be read beside the working one's."""
        self.budget = budget
        self.exhausted = False
        """Whether a path went unsearched in git history, the budget spent."""
        self._on_disk: dict[str, dict[str, SpecVersion]] = {}
        self._in_history: dict[str, dict[str, SpecVersion]] = {}

    def find(self, path: str, wanted: str) -> SpecVersion | None:
        """The version of the spec at ``path`` whose fingerprint is ``wanted``, if any."""
        if not path or not wanted:
            return None
        candidates = self._candidates(path)
        found = self._among(candidates, wanted)
        if found is None and not Path(path).is_absolute():
            tried = set(candidates)
            namesakes = [p for p in self._namesakes(path) if p not in tried and self._inside(p)]
            found = self._among(namesakes, wanted)
        return found

    def _among(self, candidates: list[Path], wanted: str) -> SpecVersion | None:
        """The version among ``candidates``: every file on disk first, then their history."""
        for candidate in candidates:
            found = self._disk(candidate).get(wanted)
            if found is not None:
                return found
        for candidate in candidates:
            found = self._history(candidate).get(wanted)
            if found is not None:
                return found
        return None

    def _namesakes(self, path: str) -> list[Path]:
        """The repository's files whose path ends with ``path`` (relative to the launcher)."""
        parts = tuple(p for p in Path(path).parts if p not in (".", ".."))
        root = self._repo_root
        if not parts or root is None:
            return []
        found = [
            root / name
            for name in self._repo_files.get(parts[-1], ())
            if tuple(name.split("/")[-len(parts) :]) == parts
        ]
        return sorted(found)[:NAMESAKE_LIMIT]

    @cached_property
    def _repo_files(self) -> dict[str, list[str]]:
        """Every file git knows in the work tree, by file name (tracked, or not ignored).

        By name: a made-up path is matched against the files of its name only.
        """
        by_name: dict[str, list[str]] = {}
        for name in self._listed_files():
            by_name.setdefault(name.rsplit("/", 1)[-1], []).append(name)
        return by_name

    def _listed_files(self) -> tuple[str, ...]:
        root = self._repo_root
        if root is None:
            return ()
        import subprocess

        listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        try:
            proc = subprocess.run(listing, cwd=root, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ()
        if proc.returncode != 0:
            return ()
        return tuple(n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n)

    def _candidates(self, path: str) -> list[Path]:
        """Where a run's tagged path may be: from the launcher's directory, or the root.

        NOTE: the path is the run's word: ``/proc/kmsg`` (root reads it, and it never ends)
        hung the report, and any file of the host was read whole. Only files inside the
        repository (or the working directory, outside one), not in ``.git``, are looked at.
        """
        given = Path(path)
        found = [given] if given.is_absolute() else [self.cwd / given]
        for root in (self._repo_root, self.home):
            if not given.is_absolute() and root is not None and root / given not in found:
                found.append(root / given)
        return [candidate for candidate in found if self._inside(candidate)]

    def _inside(self, candidate: Path) -> bool:
        """Whether ``candidate`` lies in the working repository, or the policies', not .git."""
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError, ValueError):  # a loop, a NUL, a name the OS refuses
            return False
        return any(
            resolved.is_relative_to(home) and ".git" not in resolved.relative_to(home).parts
            for home in self._homes
        )

    @cached_property
    def _homes(self) -> tuple[Path, ...]:
        """The directories a run's spec may be read from, resolved once."""
        working = (self._repo_root or self.cwd).resolve()
        return (working,) if self.home is None else (working, self.home.resolve())

    @cached_property
    def _repo_root(self) -> Path | None:
        try:
            return toplevel(self.cwd)
        except InputError:  # not in a git work tree, or no git
            return None

    def _disk(self, path: Path) -> dict[str, SpecVersion]:
        key = str(path)
        if key not in self._on_disk:
            versions: dict[str, SpecVersion] = {}
            try:  # the path is a run tag: anything (too long, unreadable) means "not here"
                content = read_raw(path) if path.is_file() else None
            except (OSError, ValueError):
                content = None
            if content is not None:
                _add(versions, SpecVersion(content, str(path), str(path)))
            self._on_disk[key] = versions
        return self._on_disk[key]

    def _history(self, path: Path) -> dict[str, SpecVersion]:
        key = str(path)
        if key not in self._in_history:
            if len(self._in_history) >= self.budget:
                self.exhausted = True
                return {}
            versions: dict[str, SpecVersion] = {}
            try:
                history = file_history(str(path), self.limit)
            except (InputError, OSError, ValueError):  # outside git, no git, odd path (a NUL)
                history = []
            for commit, blob in history:
                _add(versions, SpecVersion(blob, str(path), f"{path}@{commit[:12]}"))
            self._in_history[key] = versions
        return self._in_history[key]


def policies_home(policies: PolicySet) -> Path | None:
    """The repository of the policies in use (their git top level, else their parent).

    A run's tagged spec is looked for there only: the policies' repository is the one the
    gate judges (None for the built-in default: the working directory's).
    """
    from gate.integrations.git.repo import RepoPaths

    return None if policies.builtin else RepoPaths(policies.policy_dir).root


def _add(versions: dict[str, SpecVersion], version: SpecVersion) -> None:
    """Index one version by its fingerprint (the newest wins); invalid ones are skipped."""
    try:
        doc = load_bytes(version.content, version.where)
        spec = validate(Experiment, doc)
    except (InputError, InputErrors):
        return
    versions.setdefault(fingerprint(spec), dataclasses.replace(version, doc=doc, spec=spec))
