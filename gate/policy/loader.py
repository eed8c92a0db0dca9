"""Find, load and deep-merge a team's policy chain (``<team>.yaml`` → ``extends`` → ...).

Policies come from a directory on disk, or from file contents already read elsewhere (the
pull-request flow reads them from the base commit through the API, never from the
checkout, which the pull request controls). ``default`` is the implicit base of every
other policy; only ``extends: none`` leaves it out, and the loaded policy says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.errors import InputError, InputErrors, Location
from gate.estimate.prices import load_catalog
from gate.ledger.tracking import COST_CENTER_LABEL
from gate.policy import files as naming
from gate.policy.files import misnamed_error, policy_like, read_as_policy, team_of
from gate.policy.merge import deep_merge, refuse_lifted
from gate.policy.model import BUILTIN_NAME, NO_BASE, Ownership, Policy
from gate.policy.names import check_accelerator_names
from gate.policy.rules import all_rule_ids
from gate.spec.loader import (
    DataPath,
    LoadedDoc,
    SourceMap,
    load_bytes,
    load_file,
    read_small_file,
)
from gate.spec.validation import validate
from gate.words import closest

if TYPE_CHECKING:
    from gate.ledger.signing import Trust

MAX_CHAIN = 8
DEFAULT = "default"
BUILTIN_DIR = "<built-in>"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
CALIBRATION_FILE = "calibration.json"
"""The calibration beside the policies that ``check`` and ``estimate`` price with (written by
``budget-gate calibrate --write``)."""


@dataclass(frozen=True, slots=True)
class LoadedPolicy:
    """A validated, merged policy with positions (for waiver findings) and its chain of names."""

    policy: Policy
    source_map: SourceMap
    chain: tuple[str, ...]
    left_default: Location | None = None
    """Where a policy of the chain says ``extends: none`` (so ``default`` does not apply)."""
    builtin: bool = False
    """The packaged default policy, used where no policy directory exists."""

    @property
    def name(self) -> str:
        """``vision ← default`` style label for reports (``built-in default`` when packaged)."""
        if self.builtin:
            return BUILTIN_NAME
        return " ← ".join(self.chain)


class PolicySet:
    """Policies of one directory, loaded on first use and reused for every spec of a run.

    With ``files`` (file name → bytes, e.g. ``{"default.yaml": b"..."}``) the directory is
    not read: those contents stand for its files, and positions still name
    ``policy_dir/<file>``.
    """

    def __init__(
        self,
        policy_dir: str | Path,
        files: Mapping[str, bytes] | None = None,
        *,
        builtin: bool = False,
    ) -> None:
        self.policy_dir = Path(policy_dir)
        self.builtin = builtin
        self._files = dict(files) if files is not None else None
        self._by_name: dict[str, LoadedPolicy] = {}
        self._names: list[str] | None = None
        self._misnamed_files: list[str] | None = None
        self._present: dict[str, bool] = {}
        self._owners: dict[str, Ownership] | None = None
        self._trust: Trust | None = None

    def trust(self) -> Trust:
        """Who may sign ledger records: the directory's ``allowed_signers`` file, if any.

        Read from the same place as the policies (the base commit on a pull request), once.
        Without the file, records are read unsigned, and the commands say so.
        """
        if self._trust is None:
            from gate.ledger.signing import SIGNERS_FILE, Signers, Trust

            name = (self.policy_dir / SIGNERS_FILE).as_posix()
            content = self._read_other(SIGNERS_FILE)
            signers = Signers.parse(content, name) if content is not None else None
            self._trust = Trust(signers, name)
        return self._trust

    def _read_other(self, file_name: str) -> bytes | None:
        """A file of the policy directory that is not a policy, or ``None`` when absent."""
        if self._files is not None:
            return self._files.get(file_name)
        if self.builtin:
            return None
        return read_small_file(self.policy_dir / file_name)

    def for_team(self, team: str | None) -> LoadedPolicy:
        """The team's policy if ``<team>.yaml`` exists, else the default policy."""
        if team is None or team == DEFAULT or not _NAME.fullmatch(team):
            return self.load(DEFAULT)
        if self._exists(f"{team}.yaml"):
            return self.load(team)
        for file in self._misnamed():
            if team_of(file) == team:
                raise misnamed_error(self.policy_dir, file)
        return self.load(DEFAULT)

    def load(self, name: str) -> LoadedPolicy:
        """The policy ``<name>.yaml`` merged over its chain (loaded once per set)."""
        if name not in self._by_name:
            self._by_name[name] = self._load(name)
        return self._by_name[name]

    def names(self) -> list[str]:
        """Every policy in the directory (``*.yaml`` files directly in it), sorted."""
        if self._names is None:
            self._names = self._list()
        return self._names

    def _list(self) -> list[str]:
        return sorted(f.removesuffix(".yaml") for f in self._files_here() if read_as_policy(f))

    def _files_here(self) -> list[str]:
        if self._files is not None:
            return [f for f in self._files if "/" not in f]
        self.require_dir()
        # NOTE: an entry named as a policy counts whatever it is (a broken link, a directory,
        # a FIFO): left out, the team it names would be judged by the default in silence; a
        # hidden one is an editor's lock link (.#default.yaml), which no one reads
        return [
            p.name
            for p in self.policy_dir.iterdir()
            if p.is_file() or (policy_like(p.name) and not p.name.startswith("."))
        ]

    def _misnamed(self) -> list[str]:
        """Files that look like policies but are never read (:mod:`gate.policy.files`)."""
        if self._misnamed_files is None:
            here = self._files_here()
            below = self._files if self._files is not None else naming.folder_files(self.policy_dir)
            self._misnamed_files = sorted(
                [
                    f
                    for f in here
                    if policy_like(f) and not read_as_policy(f) and f != CALIBRATION_FILE
                ]
                + naming.in_folders(below)
            )
        return self._misnamed_files

    def teams(self) -> list[str]:
        """The teams that have a policy file of their own."""
        return [n for n in self.names() if n != DEFAULT and _NAME.fullmatch(n)]

    def owners(self) -> dict[str, Ownership]:
        """Each team whose own policy says what it owns (``owns:``), by team name.

        Loads every team policy: who owns a spec's path is a question about all of them.
        """
        if self._owners is None:
            self._owners = {
                team: owns for team in self.teams() if (owns := self.load(team).policy.owns)
            }
        return self._owners

    def load_all(self) -> list[LoadedPolicy]:
        """Load every policy of the directory; all their errors together, or every policy.

        Raises:
            gate.errors.InputErrors: one entry per broken policy (file:line:col each).
        """
        loaded: list[LoadedPolicy] = []
        errors: list[InputError] = []
        names = self.names()
        if DEFAULT not in names:
            raise InputError(
                f"no {DEFAULT}.yaml in {self.policy_dir}",
                hint="every team policy extends the default policy: create it",
            )
        for name in names:
            found = self._try_load(name)
            if isinstance(found, LoadedPolicy):
                loaded.append(found)
            else:
                errors.extend(found)
        errors.extend(misnamed_error(self.policy_dir, f) for f in self._misnamed())
        if errors:
            raise InputErrors(list({str(e): e for e in errors}.values()))
        return loaded

    def _try_load(self, name: str) -> LoadedPolicy | list[InputError]:
        try:
            return self.load(name)
        except InputErrors as exc:
            return exc.errors
        except InputError as exc:
            return [exc]

    def _exists(self, file_name: str) -> bool:
        if self._files is not None:
            return file_name in self._files
        if file_name not in self._present:  # NOTE: asked for each spec, looked for once a run
            path = self.policy_dir / file_name
            # NOTE: a broken link too: read, and refused
            self._present[file_name] = path.is_symlink() or path.exists()
        return self._present[file_name]

    def require_dir(self) -> None:
        """Refuse a policy directory that is not there (exit 3), before anything is judged."""
        if self._files is None and not self.policy_dir.is_dir():
            if self.policy_dir.exists():  # a file, a FIFO, a device
                raise InputError(
                    f"policy directory {str(self.policy_dir)!r} is not a directory",
                    hint=f"pass the directory that holds it: {self.policy_dir.parent}",
                )
            raise InputError(
                f"policy directory {str(self.policy_dir)!r} not found",
                hint=_nearby_dir(self.policy_dir)
                or "pass the directory that holds default.yaml (--policy-dir DIR, or "
                "policy check DIR)",
            )

    def _load(self, name: str) -> LoadedPolicy:
        self.require_dir()
        docs: list[LoadedDoc] = []
        left: Location | None = None
        current: str | None = name
        while current is not None:
            if current in (Path(d.file).stem for d in docs) or len(docs) >= MAX_CHAIN:
                raise InputError(
                    f"policy {current!r} extends itself (cycle or chain over {MAX_CHAIN})",
                    location=_extends_location(docs[-1]),
                    hint="make the chain end at default.yaml",
                )
            doc = self._read(current, docs[-1] if docs else None)
            docs.append(doc)
            current = _parent(doc, current)
            if current == NO_BASE:  # meaningless (and not reported) in default.yaml itself
                left = _extends_location(doc) if Path(doc.file).stem != DEFAULT else None
                current = None
        data: dict[str, Any] = {}
        source_map = SourceMap()
        for doc in reversed(docs):
            refuse_lifted(data, doc, docs)
            data = deep_merge(data, doc.yaml12())  # NOTE: 2e3 a number, as YAML 1.2 reads it
            source_map = source_map.merged(doc.source_map)
        data.pop("extends", None)  # resolved into the chain; "none" is not a policy name
        _own_ownership(data, docs)
        ambiguous = tuple(e for d in docs for e in d.ambiguous)
        merged = LoadedDoc(docs[0].file, data, source_map, ambiguous=ambiguous)
        policy = validate(Policy, merged)
        _check_rule_ids(policy, source_map)
        _check_budget_keys(policy, source_map)
        check_accelerator_names(policy, source_map, load_catalog().prices)
        chain = tuple(Path(d.file).stem for d in docs)
        return LoadedPolicy(policy, source_map, chain, left, self.builtin)

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


def _nearby_dir(missing: Path) -> str | None:
    """``did you mean 'policies'?`` for a mistyped directory beside it that holds policies."""
    parent = missing.parent
    try:
        beside = [d.name for d in parent.iterdir() if (d / f"{DEFAULT}.yaml").is_file()]
    except OSError:
        return None
    close = closest(missing.name, beside)
    return f"did you mean {(parent / close).as_posix()!r}?" if close else None


def builtin_policies() -> PolicySet:
    """The default policy that ships in the package, for a repository without ``policies/``.

    Positions name ``<built-in>/default.yaml``; every report labels it ``built-in default``.
    """
    packaged = Path(__file__).resolve().parent.parent / "data" / "default-policy.yaml"
    return PolicySet(BUILTIN_DIR, {f"{DEFAULT}.yaml": packaged.read_bytes()}, builtin=True)


def _parent(doc: LoadedDoc, name: str) -> str | None:
    """The policy ``doc`` extends: checked before any file is looked up.

    Without ``extends`` every policy but ``default`` extends ``default``.
    """
    if "extends" not in doc.data:
        return None if name == DEFAULT else DEFAULT
    parent = doc.data["extends"]
    if isinstance(parent, str) and _NAME.fullmatch(parent):
        return parent
    shown = repr(parent) if len(repr(parent)) <= 40 else repr(parent)[:37] + "..."
    raise InputError(
        f"extends: {shown} is not a policy name",
        location=_extends_location(doc),
        hint=f"name a policy file of the directory without .yaml (lower case, digits, - and _, "
        f"at most 63 characters), e.g. extends: {DEFAULT}, or extends: {NO_BASE}",
    )


def _check_rule_ids(policy: Policy, source_map: SourceMap) -> None:
    """Refuse rule ids that no rule has, in ``severity:`` and in waivers."""
    known = set(all_rule_ids())
    errors = [
        InputError(
            f"severity: {rule_id} is not a rule",
            location=source_map.locate(("severity", rule_id), key=True),
            hint="budget-gate rules lists the rule ids",
        )
        for rule_id in policy.severity
        if rule_id not in known
    ]
    errors.extend(
        InputError(
            f"waivers[{index}]: {waiver.rule} is not a rule",
            location=source_map.locate(("waivers", index, "rule")),
            hint="budget-gate rules lists the rule ids",
        )
        for index, waiver in enumerate(policy.waivers)
        if waiver.rule not in known
    )
    if errors:
        raise InputErrors(errors)


def _own_ownership(data: dict[str, Any], docs: list[LoadedDoc]) -> None:
    """Keep only the policy's own ``owns:``: a team does not inherit what another owns.

    Raises:
        gate.errors.InputError: ``default.yaml`` says ``owns:`` (the default is no team's).
    """
    first = docs[0]
    if Path(first.file).stem == DEFAULT and "owns" in first.data:
        raise InputError(
            "the default policy cannot own specs: it is no team's",
            location=first.source_map.locate(("owns",), key=True),
            hint="put owns: in policies/<team>.yaml, for the team that owns the specs",
        )
    if "owns" in first.data:
        data["owns"] = first.data["owns"]
    else:
        data.pop("owns", None)


def _check_budget_keys(policy: Policy, source_map: SourceMap) -> None:
    """A budget per cost center needs the closed list of cost centers that have one."""
    limits = policy.limits
    if limits.monthly_budget is None or limits.budget_scope != "cost-center":
        return
    if not policy.labels.allowed.get(COST_CENTER_LABEL):
        raise InputError(
            "limits.budget_scope: cost-center needs the list of cost centers that have a "
            "budget, or any made-up cost-center label would get a fresh one",
            location=source_map.locate(("limits", "budget_scope")),
            hint="list them: labels: {allowed: {cost-center: [cc-1042, ...]}}",
        )


def _extends_location(doc: LoadedDoc) -> Location | None:
    path: DataPath = ("extends",)
    return doc.source_map.locate(path)
