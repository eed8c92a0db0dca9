"""The calibration file: what was measured, per key, from which runs and experiments (pure).

A ``kind: Calibration`` JSON document (JSON is YAML, so it is read with the same loader
and its errors carry file:line:col). Entries are keyed by model label, accelerator, GPUs
per trial and precision; a key part ``null`` means "any" (a coarser key, learned from
every run that matches the rest).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Literal

from pydantic import Field, StrictFloat, StrictInt

from gate.spec.experiment import Model
from gate.spec.loader import LoadedDoc
from gate.spec.validation import validate

Fraction = Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)]
Positive = Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[StrictInt, Field(ge=0)]


class Key(Model):
    """Which runs an entry describes; ``None`` matches any value."""

    model: str | None = None
    accelerator: str | None = None
    gpus: Annotated[StrictInt, Field(ge=1)] | None = None
    precision: str | None = None

    def describe(self) -> str:
        """``resnet18 on A100 × 1 bf16``; unset parts read ``any …``."""
        model = self.model or "any model"
        accelerator = self.accelerator or "any accelerator"
        gpus = f" × {self.gpus}" if self.gpus is not None else " × any GPUs"
        precision = f" {self.precision}" if self.precision else " any precision"
        return f"{model} on {accelerator}{gpus}{precision}"


class Stat(Model):
    """A measured quantity: how many runs, its 10th percentile, median and 90th percentile."""

    runs: Annotated[StrictInt, Field(ge=1)]
    p10: Positive
    median: Positive
    p90: Positive


class Entry(Model):
    """What the runs of one key measured."""

    key: Key
    runs: Count
    finished: Count
    failed: Count
    first: dt.date
    last: dt.date
    experiments: list[str] = Field(default_factory=list)
    epoch_minutes: Stat | None = None
    setup_minutes: Stat | None = None
    plateau_fraction: Stat | None = None
    mfu: Stat | None = None
    """Model FLOPs utilization, from runs that logged their FLOPs (or whose spec gave them)."""
    failure_rate: Fraction | None = None
    failure_point: Fraction | None = None
    retries: Count = 0
    preemptions: Count = 0
    mfu_over_peak: Count | None = None
    """Runs whose FLOPs and time give an MFU above 1, left out of ``mfu`` (unset: none)."""


class Calibration(Model):
    """A whole calibration file."""

    api_version: Literal["budget-gate/v1"] = Field(alias="apiVersion")
    kind: Literal["Calibration"]
    created: dt.date
    source: str = ""
    experiments: list[str] = Field(default_factory=list)
    runs: Count = 0
    plateau_by: str = ""
    entries: list[Entry] = Field(default_factory=list)


def parse(doc: LoadedDoc) -> Calibration:
    """Validate a loaded calibration document (errors carry file:line:col)."""
    return validate(Calibration, doc)


def dump(calibration: Calibration) -> str:
    """The file's text: stable key order, one entry per key, a trailing newline."""
    data = calibration.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
