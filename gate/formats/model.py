"""The values of an import: which format a file is, and where each spec field came from."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from gate.errors import Location
from gate.formats import Format
from gate.spec.loader import DataPath, LoadedDoc


class Origin(str, Enum):
    """Where one field's value came from."""

    FILE = "file"
    """A field of the engine's own config, at its line and column."""
    EXTENSION = "extension"
    """The file's x-budget-gate block, budget-gate/ annotation or BUDGET_GATE_ env."""
    ENGINE = "engine default"
    """What the engine does when the file says nothing (Katib's parallelTrialCount 3)."""
    POLICY = "policy default"
    """The team policy's ``defaults:``."""
    CALIBRATION = "calibration"
    """Measured by ``budget-gate calibrate`` from past runs."""
    GATE = "budget-gate default"
    """The spec model's own default (capacity on-demand, precision fp32, one seed)."""
    DERIVED = "derived"
    """Fixed by the translation itself (apiVersion, the name from the file name)."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where a value came from, in words a report can print."""

    origin: Origin
    detail: str
    location: Location | None = None

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.origin.value} — {self.detail}"


@dataclass(frozen=True, slots=True)
class Traced:
    """One spec field's value with its source."""

    value: Any
    source: Source


Draft = dict[DataPath, Traced]
"""A spec in the making: spec path (e.g. ``("resources", "accelerator")``) → traced value."""
FactMap = dict[str, Traced]
"""Fact name (``epoch_minutes``) → its value and where it was written."""

Spell = Callable[[DataPath, Any], "str | None"]
"""A spec edit (path, new value) written with the engine's own key, or None."""


def _pairs(facts: Mapping[str, str]) -> str:
    return ", ".join(f"{name}: {value}" for name, value in facts.items())


@dataclass(frozen=True, slots=True)
class Point:
    """How to add facts to a file's extension point, as the file stands now.

    Written anew (``# x-budget-gate: {gpus_per_trial: ...}``, ``envs: {...}``), a point the
    file already has would be a second one: a second comment block is refused, a second
    ``envs:`` key is a duplicate. So where it exists, the facts are entries to add to it,
    at its line; where it does not, the hint says that one holds every fact
    (:mod:`gate.formats.extension`).
    """

    whole: Callable[[Mapping[str, str]], str] = _pairs
    """The point written anew with these facts (name → value as YAML flow)."""
    entries: Callable[[Mapping[str, str]], str] = _pairs
    """The facts as entries to add at :attr:`at`."""
    at: str | None = None
    """Where to add :attr:`entries` (``under envs: (line 4)``); None: write :attr:`whole`."""
    exists: bool = False
    """Whether the file has the point (not only the place for it, Katib's ``metadata:``)."""
    once: str = ""
    """Said where the point is written anew: ``one envs: holds every fact``."""

    def add(self, facts: Mapping[str, str], note: str = "") -> str:
        """What to add for ``facts``, and where (the text after a hint's "add")."""
        text = self.whole(facts) if self.at is None else f"{self.entries(facts)} {self.at}"
        notes = "; ".join(t for t in ("" if self.exists else self.once, note) if t)
        return f"{text} ({notes})" if notes else text


def _unspelt(path: DataPath, value: Any) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class Mapped:
    """What a format's mapper read: the engine's fields, the extension facts, notes."""

    draft: Draft
    facts: FactMap
    notes: tuple[str, ...] = ()
    point: Point = field(default_factory=Point)
    """How to add a fact (its name, its value as YAML flow) to this file's extension point:
    ``# x-budget-gate: {epoch_minutes: 3}``, or an entry of the block it has."""
    native: Mapping[str, str] = field(default_factory=dict)
    """The engine's own way to give a fact, where it has one (Katib: GPUs from the trial
    pods' ``nvidia.com/gpu`` limits)."""
    spell: Spell = _unspelt
    """A spec edit as a change of the engine's own key (``run_cap: 12``)."""
    candidates: tuple[tuple[str, int, bool, Location | None], ...] = ()
    """Accelerators the engine may pick from (name, GPUs per trial, spot, where): the
    dearest is priced."""
    pinned: tuple[tuple[str, str, Location | None], ...] = ()
    """GPU models node labels pin the pods to (label, model, where): the accelerator priced,
    however it is given, must be that model (:mod:`gate.formats.katib_nodes`)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """One line of the report's "read from" section: field, value, source."""

    field: str
    value: str
    source: Source


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What a report says about an imported file: its format, each field's source, notes."""

    format: Format
    fields: tuple[Provenance, ...]
    notes: tuple[str, ...] = ()
    """Engine facts with no spec field (Katib's failure budget, a SkyPilot fallback list)."""


class Words(Protocol):
    """Changes to an imported file in its engine's own words (:mod:`gate.formats.spelling`)."""

    def edit(self, path: DataPath, value: Any) -> str:
        """The spec edit ``path: value`` as a change to the engine's file."""
        ...

    def missing(self, path: DataPath) -> str | None:
        """Where in the engine's file to add a field no source set; None if one did."""
        ...


@dataclass(frozen=True, slots=True)
class Imported:
    """An engine file as a spec document: the data, a source map into the original file."""

    doc: LoadedDoc
    summary: ImportSummary
    words: Words


def dotted(path: DataPath) -> str:
    """``search.parameters.lr``: a data path as a file's author writes it."""
    return ".".join(str(p) for p in path)


def finite_number(value: Any) -> bool:
    """A finite int or float (not a bool, which YAML's ``true`` is, nor an int past floats)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # a 400-digit YAML integer is past any float
        return False


def whole_epochs(value: Any) -> int | None:
    """An epoch count as a trainer takes it, rounded up (``1000.0``, ``"1000"``), or None.

    Sweeps hand a trial its epochs as a number or as the text of one (a command-line
    word); the worst case is the next whole epoch of what it is handed.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return math.ceil(value)
    return None


def most_epochs(values: list[Any]) -> int | None:
    """The most epochs any of ``values`` hands a trial, or None when none is a count."""
    counts = [epochs for epochs in map(whole_epochs, values) if epochs is not None]
    return max(counts) if counts else None


def within(values: list[Any], most: int) -> list[Any]:
    """The values that hand a trial at most ``most`` epochs (:func:`whole_epochs`)."""
    return [v for v in values if (epochs := whole_epochs(v)) is not None and epochs <= most]


def value_at(data: dict[str, Any], path: DataPath) -> Any:
    """The value at ``path`` of nested mappings, or None where a part is missing."""
    node: Any = data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def has_path(data: Any, path: DataPath) -> bool:
    """Whether nested mappings write ``path`` (``key: null`` too, unlike :func:`value_at`)."""
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one (engine files are loosely shaped)."""
    return value if isinstance(value, dict) else {}
