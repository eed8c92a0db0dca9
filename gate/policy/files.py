"""How policy files are named: ``<team>.yaml``, in lower case; what only looks like one.

A file named as a policy but not as one is read (``nlp.yml``, ``NLP.yaml``, ``nlp.json``,
``nlp.yaml.yaml``, ``'nlp.yaml '``) is refused where its team is judged: read as no policy,
the team would be judged by the default one in silence. So is one in a folder of the
policy directory (``teams/nlp.yaml``): only the files directly in it are read, and
``tests/`` holds the fixtures of ``policy test``, not policies.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gate.errors import InputError

_SUFFIXES = (".yaml", ".yml", ".json")


def policy_like(file: str) -> bool:
    """Whether a file name looks like a policy's: ends ``.yaml``, ``.yml`` or ``.json``."""
    return file.lower().rstrip().endswith(_SUFFIXES)


def team_of(file: str) -> str:
    """The team a policy-like file name names: ``NLP.Yaml``, ``teams/nlp.yaml`` → ``nlp``."""
    stem = file.rsplit("/", 1)[-1].lower().strip()
    while stem.endswith(_SUFFIXES):
        stem = stem.rsplit(".", 1)[0].rstrip()
    return stem


def read_as_policy(file: str) -> bool:
    """Whether ``file`` is named as a policy is read: ``<team>.yaml``, in lower case."""
    return file == f"{team_of(file)}.yaml"


def misnamed_error(policy_dir: Path, file: str) -> InputError:
    """A policy file that is never read: only ``<name>.yaml`` is, directly in the directory."""
    path, stem = policy_dir / file, team_of(file)
    if "/" in file:
        return InputError(
            f"{path}: not read — only the files directly in {policy_dir} are policies, so "
            f"team {stem}'s specs would be judged by the default policy",
            hint=f"move it to {policy_dir / f'{stem}.yaml'} (policy test fixtures go in tests/)",
        )
    return InputError(
        f"{path}: not read — a policy file is named <team>.yaml, so team {stem}'s "
        "specs would be judged by the default policy",
        hint=f"rename it to {stem}.yaml",
    )


def in_folders(paths: Iterable[str]) -> list[str]:
    """The policy-like files of ``paths`` (relative, ``/``-separated) inside folders.

    ``tests/`` (the fixtures) and hidden files and folders are left out.
    """
    found = []
    for path in paths:
        parts = path.split("/")
        hidden = any(part.startswith(".") for part in parts)
        if len(parts) > 1 and parts[0] != "tests" and not hidden and policy_like(parts[-1]):
            found.append(path)
    return found


def folder_files(policy_dir: Path) -> list[str]:
    """The files in the folders of ``policy_dir``, relative; not ``tests/`` or hidden ones.

    Links to folders are not followed (``os.walk``'s default).
    """
    found: list[str] = []
    for folder, folders, names in os.walk(policy_dir):
        here = Path(folder).relative_to(policy_dir)
        top = here == Path(".")
        folders[:] = [f for f in folders if not f.startswith(".") and not (top and f == "tests")]
        if not top:
            found.extend((here / name).as_posix() for name in names)
    return found
