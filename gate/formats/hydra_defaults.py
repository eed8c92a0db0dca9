"""A Hydra config's defaults list: the groups it picks, and what those groups would set.

``override hydra/sweeper: optuna`` picks the sweeper the mapping reads. Any other group
(``trainer: long``) is a file beside the config that Hydra composes into it; budget-gate
does not compose, so a group that sets what the mapping reads — the epochs, a ``hydra:``
key, the ``x-budget-gate`` facts — is refused where the composed value could differ from
the one read: when the group comes after ``_self_`` (it wins), or sets a key the config does
not (nothing would be read). A group file that is not beside the config, picks further
groups, or is chosen on the command line (``???``) cannot be read, and is refused too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gate.errors import InputError, Location
from gate.formats.command_lines import names_epochs
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
    order = [item for item in defaults if item == SELF]
    self_at = defaults.index(SELF) if order else len(defaults)
    for index, item in enumerate(defaults):
        where = doc.source_map.locate(("defaults", index))
        swept = _swept(doc.data)
        for group, file, package, optional in _entries(item, Path(doc.file).parent, where, swept):
            if not file.is_file():
                if optional:
                    continue
                raise InputError(
                    f"{group} in the defaults list: {file} is not beside the config, so what "
                    "it sets is not read",
                    location=where,
                    hint=_HINT,
                )
            _refuse_read_keys(doc, load_file(file), group, package, after_self=index > self_at)


_Entry = tuple[str, Path, DataPath, bool]


def _swept(data: dict[str, Any]) -> dict[str, Any]:
    """The sweep's params: a group left ``???`` takes its options from there."""
    hydra = data.get("hydra")
    sweeper = hydra.get("sweeper") if isinstance(hydra, dict) else None
    params = sweeper.get("params") if isinstance(sweeper, dict) else None
    return params if isinstance(params, dict) else {}


def _options(group: str, value: Any, base: Path, swept: dict[str, Any]) -> list[Any]:
    """The options an entry may pick: its own, or the sweep's for a group left ``???``.

    A sweep's comma list names them; any other sweep of the group (``glob(*)``) may pick
    any file of the group's directory.
    """
    if value != "???" or group not in swept:
        return value if isinstance(value, list) else [value]
    text = str(swept[group])
    if re.fullmatch(r"[\w.-]+(?:,[\w.-]+)*", text):
        return text.split(",")
    return sorted(p.stem for p in (base / group).glob("*.yaml")) or ["???"]


def _entries(item: Any, base: Path, where: Location | None, swept: dict[str, Any]) -> list[_Entry]:
    """Each group file an entry composes: its group, path, package and whether optional."""
    if item == SELF:
        return []
    if isinstance(item, str):  # a config by its path: db/mysql, at the package db
        return [(item, base / f"{item}.yaml", tuple(item.split("/")[:-1]), False)]
    found = []
    for key, value in item.items() if isinstance(item, dict) else ():
        group, optional, package = _group(str(key))
        if group == "hydra" or group.startswith("hydra/"):
            continue  # the sweeper and launcher the mapping reads, Hydra's own settings
        for option in _options(group, value, base, swept):
            if option is None:
                continue
            if not isinstance(option, str) or option == "???" or "${" in option:
                raise InputError(
                    f"{key}: {option} in the defaults list: the option is chosen on the "
                    "command line, so what it sets is not in the files",
                    location=where,
                    hint=_HINT,
                )
            home = package if package is not None else tuple(group.split("/"))
            found.append((f"{key}: {option}", base / group / f"{option}.yaml", home, optional))
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


def _refuse_read_keys(
    doc: LoadedDoc, group_doc: LoadedDoc, entry: str, package: DataPath, after_self: bool
) -> None:
    """Refuse a key the group sets that the mapping reads, unless the config's own wins."""
    header = _PACKAGE.match(group_doc.text.lstrip())
    if header is not None:
        named = header.group(1)
        package = (
            ()
            if named == "_global_"
            else package
            if named == "_group_"
            else tuple(named.split("."))
        )
    if "defaults" in group_doc.data and any(i != SELF for i in group_doc.data["defaults"] or []):
        raise InputError(
            f"{entry} in the defaults list picks further groups, which budget-gate does not "
            "compose",
            location=group_doc.source_map.locate(("defaults",), key=True),
            hint=_HINT,
        )
    for path in _leaves(group_doc.data):
        whole = (*package, *path)
        if not _read(whole) or (not after_self and _has(doc.data, whole)):
            continue
        raise InputError(
            f"{entry} in the defaults list sets {'.'.join(map(str, whole))}, which budget-gate "
            "does not compose with the config: the value it reads may not be the one Hydra runs",
            location=group_doc.source_map.locate(path, key=True),
            hint=_HINT,
        )


def _leaves(data: Any, path: DataPath = ()) -> list[DataPath]:
    """The paths of a mapping's values that are not mappings (an empty one sets nothing)."""
    if not isinstance(data, dict):
        return [path] if path else []
    return [leaf for key, value in data.items() for leaf in _leaves(value, (*path, str(key)))]


def _read(path: DataPath) -> bool:
    """Whether the mapping reads a value at ``path``: the epochs, Hydra's, the facts."""
    if path and path[0] in ("hydra", EXTENSION_KEY):
        return True
    return any(names_epochs(str(part)) for part in path)


def _has(data: Any, path: DataPath) -> bool:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True
