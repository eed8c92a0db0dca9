"""A Hydra config's defaults list: the groups it picks, and what those groups would set.

``override hydra/sweeper: optuna`` picks the sweeper the mapping reads. Any other group
(``trainer: long``, ``- hydra: default``, ``callbacks: default`` and the configs it
composes in turn) is a file beside the config that Hydra composes into it; budget-gate does
not compose, so a group that sets what the mapping reads — the sweeper, the launcher, the
``x-budget-gate`` facts, or more epochs than the config itself names — is refused where the
composed value could differ from the one read: when the group comes after ``_self_`` (it
wins), or sets a key the config does not. A group's package is the one its entry names
(``group@pkg``), else its ``# @package`` header's, else its path. A group file that is not
beside the config (other than a plugin's ``hydra/`` config), or is chosen on the command
line (``???``), is refused too; an empty one sets nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import InputError, Location
from gate.formats.command_lines import names_epochs
from gate.formats.hydra_steps import refuse_group_step
from gate.formats.model import dotted, finite_number, has_path
from gate.spec.facts import EXTENSION_KEY
from gate.spec.loader import DataPath, LoadedDoc, load_file

SELF = "_self_"
_PACKAGE = re.compile(r"#\s*@package\s+(\S+)")
_HINT = (
    "set the epochs, GPUs and sweeper in the config itself (or in its x-budget-gate block), "
    "or write the experiment as a budget-gate spec"
)


def chosen(defaults: Any) -> dict[str, str]:
    """Config groups the defaults list picks: ``override hydra/sweeper: optuna`` → optuna."""
    out: dict[str, str] = {}
    for item in defaults or []:
        if isinstance(item, dict):
            for key, value in item.items():
                out[_group(str(key))[0]] = str(value)
    return out


def picked(defaults: Any, group: str) -> int:
    """The place in the defaults list of the entry that picks ``group``."""
    for index, item in enumerate(defaults or []):
        if isinstance(item, dict) and group in chosen([item]):
            return index
    return 0  # pragma: no cover - only asked of a group the list picks


def refuse_unread_groups(doc: LoadedDoc) -> None:
    """Refuse a group of the defaults list whose values the mapping would read unseen."""
    defaults = doc.data.get("defaults") or []
    if not isinstance(defaults, list):
        return  # NOTE: the mapping reads no group of a defaults list that is none
    self_at = defaults.index(SELF) if SELF in defaults else len(defaults)
    base = Path(doc.file).parent
    context = _Context(doc, base, _swept(doc.data), _most_epochs(doc.yaml12()))
    for index, item in enumerate(defaults):
        where = doc.source_map.locate(("defaults", index))
        for entry in _entries(item, where, context.swept, base, base, ()):
            _check(context, entry, after_self=index > self_at, depth=0)
    listed = chosen(defaults)
    for key in _params(doc.data):  # NOTE: +model appends the group, after _self_
        group = key.lstrip("+")
        if key.startswith("+") and group not in listed and (base / group).is_dir():
            where = doc.source_map.locate(("hydra", "sweeper", "params", key))
            for entry in _entries({group: "???"}, where, context.swept, base, base, ()):
                _check(context, entry, after_self=True, depth=0)


@dataclass(frozen=True, slots=True)
class _Context:
    doc: LoadedDoc
    base: Path
    swept: dict[str, Any]
    most_epochs: float
    """The most epochs the config itself names (the mapping reads the largest)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """One config a defaults entry composes, and where its values land."""

    label: str
    file: Path
    package: DataPath | None
    """The package the entry names (``group@pkg``), which wins over the file's header."""
    home: DataPath
    """The package by default: the group's path under the including config's."""
    optional: bool
    plugin: bool
    """A hydra/ group: when no file is beside the config, a plugin's (the sweeper's)."""
    where: Location | None


def _params(data: dict[str, Any]) -> dict[str, Any]:
    """``hydra.sweeper.params`` as written."""
    hydra = data.get("hydra")
    sweeper = hydra.get("sweeper") if isinstance(hydra, dict) else None
    params = sweeper.get("params") if isinstance(sweeper, dict) else None
    return {str(k): v for k, v in params.items()} if isinstance(params, dict) else {}


def _swept(data: dict[str, Any]) -> dict[str, Any]:
    """The sweep's params by group (``+model`` as ``model``): each option of it is read."""
    return {key.lstrip("+"): value for key, value in _params(data).items()}


def _options(group: str, value: Any, directory: Path, swept: dict[str, Any]) -> list[Any]:
    """The options an entry may pick: its own, and each one the sweep names for the group.

    Hydra runs every option of ``model: small,large``, so each is read as the default is (a
    ``???`` default is then no option of its own); any other sweep of the group
    (``glob(*)``) may pick any file of the group's directory.
    """
    own = value if isinstance(value, list) else [value]
    if group not in swept:
        return own
    text = str(swept[group])
    if re.fullmatch(r"[\w.-]+(?:,[\w.-]+)*", text.replace(" ", "")):
        listed = text.replace(" ", "").split(",")
    else:
        listed = sorted(p.stem for p in directory.glob("*.yaml")) or ["???"]
    return [o for o in own if o != "???"] + [o for o in listed if o not in own]


def _entries(
    item: Any,
    where: Location | None,
    swept: dict[str, Any],
    base: Path,
    here: Path,
    parent: DataPath,
) -> list[_Entry]:
    """Each config an entry composes (``here``: the including config's directory)."""
    if item == SELF:
        return []
    if isinstance(item, str):  # a config by its path: db/mysql, at the package db
        root, name = (base, item.lstrip("/")) if item.startswith("/") else (here, item)
        home = (*parent, *name.split("/")[:-1])
        return [_Entry(item, root / f"{name}.yaml", None, home, False, False, where)]
    found = []
    for key, value in item.items() if isinstance(item, dict) else ():
        group, optional, package = _group(str(key))
        root = base if str(key).split()[-1].startswith("/") else here
        home = (*parent, *group.split("/")) if root is here else tuple(group.split("/"))
        plugin = home[:1] == ("hydra",) and len(home) > 1  # hydra/launcher, hydra/hydra_logging
        own = value if isinstance(value, list) else [value]
        _refuse_outside(str(key), root / group, base, where)  # NOTE: before its glob lists it
        for option in _options(group, value, root / group, swept):
            if option is None:
                continue
            if not isinstance(option, str) or option == "???" or "${" in option:
                raise InputError(
                    f"{key}: {option} in the defaults list: the option is chosen on the "
                    "command line, so what it sets is not in the files",
                    location=where,
                    hint=_HINT,
                )
            file = root / group / f"{option}.yaml"
            label = f"{key}: {option}" + ("" if option in own else ", which the sweep runs,")
            found.append(_Entry(label, file, package, home, optional, plugin, where))
    return found


def _group(key: str) -> tuple[str, bool, DataPath | None]:
    """A defaults key's group, whether optional, and the package ``group@pkg`` names."""
    words = key.split()
    optional = "optional" in words[:-1]
    name, _, package = (words[-1] if words else "").partition("@")
    # NOTE: /hydra/sweeper is the same group as hydra/sweeper (an absolute path)
    group = name.strip().lstrip("/")
    if not package:
        return group, optional, None
    return group, optional, () if package == "_global_" else tuple(package.split("."))


_MAX_NESTING = 8


def _check(context: _Context, entry: _Entry, after_self: bool, depth: int) -> None:
    """Refuse what the entry's config (and the configs it composes) sets unseen."""
    _refuse_outside(entry.label, entry.file, context.base, entry.where)
    if not entry.file.is_file():
        if entry.optional or entry.plugin:
            return  # NOTE: a plugin's config (the Optuna sweeper's) is the mapping's to read
        raise InputError(
            f"{entry.label} in the defaults list: {entry.file} is not beside the config, so "
            "what it sets is not read",
            location=entry.where,
            hint=_HINT,
        )
    if depth > _MAX_NESTING:
        raise InputError(
            f"{entry.label} in the defaults list is composed over {_MAX_NESTING} groups deep",
            location=entry.where,
            hint=_HINT,
        )
    group_doc = load_file(entry.file, empty_ok=True)  # NOTE: Hydra takes an empty group
    package = entry.package if entry.package is not None else _header(group_doc, entry.home)
    nested = group_doc.data.get("defaults") or []
    for index, item in enumerate(nested if isinstance(nested, list) else []):
        where = group_doc.source_map.locate(("defaults", index))
        for inner in _entries(item, where, {}, context.base, entry.file.parent, package):
            _check(context, inner, after_self, depth + 1)
    for path, value in _leaves(group_doc.yaml12()):  # NOTE: as OmegaConf reads it
        whole = (*package, *path)
        refuse_group_step(whole, value, group_doc.source_map.locate(path, key=True), entry.label)
        if path[:1] == ("defaults",) or not _read(whole):
            continue
        if _counts_no_more(whole, value, context.most_epochs):
            continue
        if not after_self and has_path(context.doc.data, whole):
            continue
        raise InputError(
            f"{entry.label} in the defaults list sets {dotted(whole)}, which "
            "budget-gate does not compose with the config: the value it reads may not be the "
            "one Hydra runs",
            location=group_doc.source_map.locate(path, key=True),
            hint=_HINT,
        )


def _refuse_outside(label: str, path: Path, base: Path, where: Location | None) -> None:
    """Refuse a group path that leaves the config's folder, before anything reads it.

    ``model: /tmp/cfg`` or ``model: ../../../tmp/cfg`` (or a symlink out) would read a file
    of the machine that runs the check (in the Action: a pull request probing the runner),
    and name it and its keys in the errors. Hydra's group paths stay in its search path.
    """
    try:
        inside = path.resolve().is_relative_to(base.resolve())
    except (OSError, RuntimeError):  # NOTE: a symlink loop
        inside = False
    if not inside:
        raise InputError(
            f"{label} in the defaults list: the group path leaves the config's folder, "
            "so it is not read",
            location=where,
            hint="name a group option beside the config (group/option.yaml), without a "
            "leading / or ..",
        )


def _header(group_doc: LoadedDoc, home: DataPath) -> DataPath:
    """The package a ``# @package`` header names, else the group's own."""
    header = _PACKAGE.match(group_doc.text.lstrip())
    if header is None or header.group(1) == "_group_":
        return home
    named = header.group(1)
    return () if named == "_global_" else tuple(named.split("."))


def _leaves(data: Any, path: DataPath = ()) -> list[tuple[DataPath, Any]]:
    """The values of a mapping that are not mappings (an empty one sets nothing)."""
    if not isinstance(data, dict):
        return [(path, data)] if path else []
    return [leaf for key, value in data.items() for leaf in _leaves(value, (*path, str(key)))]


def _read(path: DataPath) -> bool:
    """Whether the mapping reads ``path``: the sweeper, the launcher, the facts, epochs."""
    if path[:2] in (("hydra", "sweeper"), ("hydra", "launcher")) or path[:1] == (EXTENSION_KEY,):
        return True
    return any(names_epochs(str(part)) for part in path)


def _counts_no_more(path: DataPath, value: Any, most: float) -> bool:
    """An epochs-named number no larger than the config's own: the largest is the one read."""
    if path[:1] in (("hydra",), (EXTENSION_KEY,)):
        return False
    return finite_number(value) and value <= most


def _most_epochs(data: dict[str, Any]) -> float:
    """The most epochs the config names itself (any epochs-named number, the facts' too)."""
    return max(
        [0.0]
        + [
            float(value)
            for path, value in _leaves(data)
            if path[:1] != ("hydra",)
            and any(names_epochs(str(part)) for part in path)
            and finite_number(value)
        ]
    )
