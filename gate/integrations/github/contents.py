"""A repository's files at a commit, through GitHub's contents API (part of the client).

A spec or policy is read from its own file only: a symbolic link is refused, whatever its
target. Large files (over the API's 1 MB) are refused too.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable

from github import GithubException
from github.ContentFile import ContentFile
from github.Repository import Repository

from gate.errors import BackendError, InputError
from gate.ledger.signing import SIGNERS_FILE
from gate.policy.files import in_folders

_FOLDER_FILES = 1_000
"""The files listed in a folder of the policy directory, for the policies misplaced there."""
_CONTENT_LIMIT = 1_000_000  # the contents API returns no content for larger files


class RepositoryContents:
    """The contents reads of :class:`gate.integrations.github.client.GitHubClient`."""

    _repo: Repository
    _failing: Callable[[str], contextlib.AbstractContextManager[None]]
    """The client's: GitHub's failures as budget-gate errors naming what was being done."""

    def _contents(self, path: str, ref: str, doing: str) -> ContentFile | list[ContentFile] | None:
        """What the contents API answers for ``path`` at ``ref``; None when nothing is there."""
        with self._failing(f"{doing} at {ref[:12]}"):
            try:
                return self._repo.get_contents(path, ref=ref)
            except GithubException as exc:
                if exc.status == 404:
                    return None
                raise

    def read_file(self, path: str, ref: str) -> bytes | None:
        """The file at ``ref``, or None when there is no file at ``path`` there."""
        found = self._contents(path, ref, f"reading {path}")
        if found is None or isinstance(found, list) or found.type not in ("file", "symlink"):
            return None
        if found.type == "symlink" or found.path != posixpath.normpath(path).lstrip("/"):
            # NOTE: GitHub answers a link to a file with that file. A commit that changes only
            # the target lists the target, not the link: an approval of the link's old target
            # would count for its new one. A spec or policy is read from its own file only.
            target = found.path if found.type == "file" else found.target
            raise InputError(
                f"{path}: a symbolic link (to {target}); "
                "budget-gate reads a spec or policy from its own file only, since a change to "
                "the link's target is no change to the link",
                hint="commit the file itself in place of the link",
            )
        if found.encoding != "base64":
            raise InputError(
                f"{path}: {found.size:,} bytes, too large for GitHub's contents API "
                f"({_CONTENT_LIMIT:,} bytes at most)",
                hint="keep specs and policies small",
            )
        return found.decoded_content

    def read_dir(self, path: str, ref: str) -> dict[str, bytes] | None:
        """The policy files directly in directory ``path`` at ``ref``, or None if absent.

        Policy files: the ``*.yaml`` files and the ledger's signers file, and the files
        named like policies that are not read (``nlp.yml``, ``NLP.yaml``, ``teams/nlp.yaml``
        in a folder, given empty: only their names count), so that the policy set refuses
        them here as it does on disk.
        """
        listing = self._contents(path, ref, f"listing {path}")
        if not isinstance(listing, list):
            return None
        names = sorted(
            e.name
            for e in listing
            if e.type == "file"
            and (e.name.lower().endswith((".yaml", ".yml")) or e.name == SIGNERS_FILE)
        )
        files = {name: self.read_file(f"{path}/{name}", ref) for name in names}
        found = {name: data for name, data in files.items() if data is not None}
        top = "" if path == "." else f"{path.strip('/')}/"
        folders = [e for e in listing if e.type == "dir" and e.name != "tests"]
        for folder in (f for f in folders if not f.name.startswith(".")):
            below = self.list_files(folder.path, ref, _FOLDER_FILES) or []
            found.update(dict.fromkeys(in_folders(p.removeprefix(top) for p in below), b""))
        return found

    def list_files(self, path: str, ref: str, limit: int) -> list[str] | None:
        """Paths of the files under directory ``path`` at ``ref``, at any depth, sorted.

        Walks the directory with the contents API (one request per directory) and stops
        after ``limit`` files; None when ``path`` is not a directory there.
        """
        top = "" if path == "." else path.strip("/")
        pending, files = [top], list[str]()
        while pending and len(files) < limit:
            current = pending.pop()
            listing = self._contents(current, ref, f"listing {current or 'the repository'}")
            if listing is None and current != top:  # a folder listed a moment ago is gone
                raise BackendError(f"{current} at {ref[:12]} vanished while it was listed")
            if not isinstance(listing, list):
                return None
            files.extend(e.path for e in listing if e.type == "file")
            pending.extend(e.path for e in listing if e.type == "dir")
        return sorted(files[:limit])
