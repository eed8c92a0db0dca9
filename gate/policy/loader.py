"""Find, load and deep-merge a team's policy chain (``<team>.yaml`` → ``extends`` → ...).

Policies come from a directory on disk, or from file contents already read elsewhere (the
pull-request flow reads them from the base commit through the GitHub API, never from the
checkout, which the pull request controls).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import InputError, Location
from gate.policy.model import Policy
from gate.spec.loader import DataPath, LoadedDoc, SourceMap, load_bytes, load_file
from gate.spec.validation import validate

MAX_CHAIN = 8
DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class LoadedPolicy:
    """A validated, merged policy with positions (for waiver findings) and its chain of names."""

    policy: Policy
    source_map: SourceMap
    chain: tuple[str, ...]

    @property
    def name(self) -> str:
        """``vision ← default`` style label for reports."""
        return " ← ".join(self.chain)


class PolicySet:
    """Policies of one directory, loaded on first use and reused for every spec of a run.

    With ``files`` (file name → bytes, e.g. ``{"default.yaml": b"..."}``) the directory is
    not read: those contents stand for its files, and positions still name
    ``policy_dir/<file>``.
    """

    def __init__(self, policy_dir: str | Path, files: Mapping[str, bytes] | None = None) -> None:
        self.policy_dir = Path(policy_dir)
        self._files = dict(files) if files is not None else None
        self._by_name: dict[str, LoadedPolicy] = {}

    def for_team(self, team: str | None) -> LoadedPolicy:
        """The team's policy if ``<team>.yaml`` exists, else the default policy."""
        name = team if team and self._exists(f"{team}.yaml") else DEFAULT
        if name not in self._by_name:
            self._by_name[name] = self._load(name)
        return self._by_name[name]

    def _exists(self, file_name: str) -> bool:
        if self._files is not None:
            return file_name in self._files
        return (self.policy_dir / file_name).is_file()

    def _load(self, name: str) -> LoadedPolicy:
        if self._files is None and not self.policy_dir.is_dir():
            raise InputError(
                f"policy directory {str(self.policy_dir)!r} not found",
                hint="run from the repository root or pass --policy-dir DIR",
            )
        docs: list[LoadedDoc] = []
        current: str | None = name
        while current is not None:
            if current in (Path(d.file).stem for d in docs) or len(docs) >= MAX_CHAIN:
                raise InputError(
                    f"policy {current!r} extends itself (cycle or chain over {MAX_CHAIN})",
                    location=_extends_location(docs[-1]),
                    hint="make the chain end at default.yaml",
                )
            docs.append(self._read(current, docs[-1] if docs else None))
            parent = docs[-1].data.get("extends")
            current = parent if isinstance(parent, str) else None
        data: dict[str, Any] = {}
        source_map = SourceMap()
        for doc in reversed(docs):
            data = deep_merge(data, doc.data)
            source_map = source_map.merged(doc.source_map)
        merged = LoadedDoc(docs[0].file, data, source_map)
        return LoadedPolicy(
            validate(Policy, merged), source_map, tuple(Path(d.file).stem for d in docs)
        )

    def _read(self, name: str, child: LoadedDoc | None) -> LoadedDoc:
        path = self.policy_dir / f"{name}.yaml"
        if not self._exists(path.name):
            raise InputError(
                f"policy {name!r} not found in {self.policy_dir}",
                location=_extends_location(child) if child else None,
                hint=f"create {path} or fix extends:",
            )
        if self._files is not None:
            doc = load_bytes(self._files[path.name], path.as_posix())
        else:
            doc = load_file(path)
        if doc.data.get("kind") != "Policy":
            raise InputError(
                f"{path} is not a policy (kind is {doc.data.get('kind')!r})",
                location=doc.source_map.locate(("kind",)),
                hint="policies start with kind: Policy",
            )
        return doc


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Merge mappings recursively; the override wins, and lists are replaced, not joined."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def _extends_location(doc: LoadedDoc) -> Location | None:
    path: DataPath = ("extends",)
    return doc.source_map.locate(path)
