"""How policy files are named: ``<team>.yaml``, in lower case; what only looks like one.

A file named as a policy but not as one is read (``nlp.yml``, ``NLP.yaml``, ``nlp.json``,
``nlp.yaml.yaml``, ``'nlp.yaml '``) is refused where its team is judged: read as no policy,
the team would be judged by the default one in silence.
"""

from __future__ import annotations

from pathlib import Path

from gate.errors import InputError

_SUFFIXES = (".yaml", ".yml", ".json")


def policy_like(file: str) -> bool:
    """Whether a file name looks like a policy's: ends ``.yaml``, ``.yml`` or ``.json``."""
    return file.lower().rstrip().endswith(_SUFFIXES)


def team_of(file: str) -> str:
    """The team a policy-like file name names: ``NLP.Yaml``, ``nlp.yaml.yaml`` → ``nlp``."""
    stem = file.lower().strip()
    while stem.endswith(_SUFFIXES):
        stem = stem.rsplit(".", 1)[0].rstrip()
    return stem


def read_as_policy(file: str) -> bool:
    """Whether ``file`` is named as a policy is read: ``<team>.yaml``, in lower case."""
    return file == f"{team_of(file)}.yaml"


def misnamed_error(path: Path) -> InputError:
    """A policy file that is never read: only ``<name>.yaml`` is, in lower-case ``.yaml``."""
    stem = team_of(path.name)
    return InputError(
        f"{path}: not read — a policy file is named <team>.yaml, so team {stem}'s "
        "specs would be judged by the default policy",
        hint=f"rename it to {stem}.yaml",
    )
