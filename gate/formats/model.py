"""The values of an import: which format a file is, and where each spec field came from."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from gate.errors import Location
from gate.spec.loader import DataPath, LoadedDoc


class Format(str, Enum):
    """The file formats budget-gate reads, as reports name them."""

    BUDGET_GATE = "budget-gate spec"
    WANDB = "W&B sweep"
    KATIB = "Katib Experiment"
    SKYPILOT = "SkyPilot task"
    HYDRA = "Hydra sweep"


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


@dataclass(frozen=True, slots=True)
class Imported:
    """An engine file as a spec document: the data, a source map into the original file."""

    doc: LoadedDoc
    summary: ImportSummary


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one (engine files are loosely shaped)."""
    return value if isinstance(value, dict) else {}
