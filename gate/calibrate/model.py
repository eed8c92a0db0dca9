"""The calibration file: what was measured, per key, from which runs and experiments (pure).

A ``kind: Calibration`` JSON document (JSON is YAML, so it is read with the same loader
and its errors carry file:line:col). Entries are keyed by model label, accelerator, MIG
profile, GPUs per trial and precision; a key part ``null`` means "any" (a coarser key,
learned from every run that matches the rest), but for the MIG profile, where it means
whole GPUs: a slice's epoch is several times a whole GPU's, so the two never share a key.
A file whose quantiles are out of order (p10 above the median, ``first`` after ``last``)
is refused at its line: its worst case would come out below its expected.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Annotated, Literal

from gate.model import Field, Model, StrictFloat, StrictInt, model_check
from gate.spec.base import LARGEST, SMALLEST
from gate.spec.loader import LoadedDoc
from gate.spec.validation import validate

Fraction = Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)]
Positive = Annotated[StrictFloat, Field(ge=0, le=LARGEST, allow_inf_nan=False)]
"""A figure at least 0 and at most the spec's largest (setup minutes may be 0)."""
Measurable = Annotated[StrictFloat, Field(ge=SMALLEST, le=LARGEST, allow_inf_nan=False)]
"""A time the estimate divides by, bounded as the spec's epoch_minutes is."""
Share = Annotated[StrictFloat, Field(ge=SMALLEST, le=1, allow_inf_nan=False)]
"""An MFU: above 0 (epoch times divide by it) and at most 1."""
Count = Annotated[StrictInt, Field(ge=0)]


class Key(Model):
    """Which runs an entry describes; ``None`` matches any value."""

    model: str | None = None
    accelerator: str | None = None
    gpus: Annotated[StrictInt, Field(ge=1)] | None = None
    precision: str | None = None
    mig_profile: str | None = None
    """The MIG slice the runs held (``1g.10gb``); ``None``: whole GPUs (or any hardware,
    where the accelerator is unset too)."""

    def describe(self) -> str:
        """``resnet18 on A100 × 1 bf16``; unset parts read ``any …``."""
        model = self.model or "any model"
        accelerator = self.accelerator or "any accelerator"
        if self.mig_profile:
            accelerator = f"{accelerator} {self.mig_profile} MIG slice"
        gpus = f" × {self.gpus}" if self.gpus is not None else " × any GPUs"
        precision = f" {self.precision}" if self.precision else " any precision"
        return f"{model} on {accelerator}{gpus}{precision}"


class Stat(Model):
    """A measured quantity: how many runs, its 10th percentile, median and 90th percentile.

    Bounded as the spec's figures are (at most 10^12, never infinite): a hand-edited or
    corrupt file is refused at its line, never priced into an overflow.
    """

    runs: Annotated[StrictInt, Field(ge=1)]
    p10: Positive
    median: Positive
    p90: Positive

    @model_check
    def _in_order(self) -> None:
        # NOTE: inverted quantiles priced the worst case (p90) below the expected (median)
        if not self.p10 <= self.median <= self.p90:
            raise ValueError(
                f"quantiles out of order: p10 {self.p10:g}, median {self.median:g}, p90 "
                f"{self.p90:g} — they must hold p10 <= median <= p90; write the calibration "
                "again with budget-gate calibrate --write"
            )


class TimeStat(Stat):
    """An epoch time in minutes: at least the spec's smallest time, since prices divide by it."""

    p10: Measurable
    median: Measurable
    p90: Measurable


class FractionStat(Stat):
    """A fraction of max_epochs (where the metric plateaus): 0 to 1."""

    p10: Fraction
    median: Fraction
    p90: Fraction


class ShareStat(Stat):
    """A model FLOPs utilization: above 0 and at most 1."""

    p10: Share
    median: Share
    p90: Share


class Entry(Model):
    """What the runs of one key measured."""

    key: Key
    runs: Count
    finished: Count
    failed: Count
    first: dt.date
    last: dt.date
    experiments: list[str] = Field(default_factory=list)
    epoch_minutes: TimeStat | None = None
    setup_minutes: Stat | None = None
    plateau_fraction: FractionStat | None = None
    mfu: ShareStat | None = None
    """Model FLOPs utilization, from runs that logged their FLOPs (or whose spec gave them)."""
    failure_rate: Fraction | None = None
    failure_point: Fraction | None = None
    retries: Count = 0
    preemptions: Count = 0
    mfu_over_peak: Count | None = None
    """Runs whose FLOPs and time give an MFU above 1, left out of ``mfu`` (unset: none)."""
    left_out: Count | None = None
    """This entry's measurements outside what a figure holds (an epoch of 0 s, past 10^12),
    left out; an MFU above 1 is counted in ``mfu_over_peak`` instead."""

    @model_check
    def _counts_agree(self) -> None:
        # NOTE: a hand-edited epoch_minutes.runs 1e9 in an entry of 1 run loaded, and the
        # basis read "median of 1000000000 runs"; so did failed 500 of runs 20
        counts = [(f"{name}.runs", stat.runs) for name, stat in self._stats() if stat is not None]
        counts += [("finished", self.finished), ("failed", self.failed)]
        counts += [("retries", self.retries), ("mfu_over_peak", self.mfu_over_peak or 0)]
        for name, count in counts:
            if count > self.runs:
                raise ValueError(
                    f"{name} {count} is more than the entry's runs {self.runs} — each count "
                    "is of the entry's runs; write the calibration again with budget-gate "
                    "calibrate --write"
                )
        if self.finished + self.failed != self.runs or self.preemptions > self.failed:
            raise ValueError(
                f"finished {self.finished} and failed {self.failed} (of which preemptions "
                f"{self.preemptions}) do not add up to runs {self.runs} — write the "
                "calibration again with budget-gate calibrate --write"
            )

    def _stats(self) -> list[tuple[str, Stat | None]]:
        return [
            ("epoch_minutes", self.epoch_minutes),
            ("setup_minutes", self.setup_minutes),
            ("plateau_fraction", self.plateau_fraction),
            ("mfu", self.mfu),
        ]

    @model_check
    def _dates_in_order(self) -> None:
        if self.first > self.last:
            raise ValueError(
                f"first {self.first.isoformat()} is after last {self.last.isoformat()} — "
                "first is the earliest run's date and must not be after last; write the "
                "calibration again with budget-gate calibrate --write"
            )


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


_STATS = ("epoch_minutes", "setup_minutes", "plateau_fraction", "mfu")
_FRACTIONS = ("failure_rate", "failure_point")
_EXPONENT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?[eE][-+]?[0-9]+")
"""A JSON number with an exponent and no fraction (``5e-05``): YAML 1.1 reads it as text."""


def parse(doc: LoadedDoc) -> Calibration:
    """Validate a loaded calibration document (errors carry file:line:col).

    A figure written ``5e-05`` (as ``json.dumps`` wrote them before :func:`dump` added the
    ``.0``) loads as text in YAML 1.1; in the measured figures it is read as the number.
    """
    entries = doc.data.get("entries")
    # NOTE: a scalar (true, 1) is left to the validator, which says a list is wanted
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        for name in _STATS:
            stat = entry.get(name)
            if isinstance(stat, dict):
                for part in ("p10", "median", "p90"):
                    stat[part] = _number(stat.get(part))
        for name in _FRACTIONS:
            if name in entry:
                entry[name] = _number(entry[name])
    return validate(Calibration, doc)


def _number(value: object) -> object:
    return float(value) if isinstance(value, str) and _EXPONENT.fullmatch(value) else value


_FLOAT_MARK = "\x00float\x00"
_UNREADABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")
"""What YAML refuses or changes written raw and reads escaped: DEL, C1 controls, U+FFFE and
U+FFFF (refused), and the line breaks NEL, U+2028 and U+2029 (read as a space).

NOTE: a model tag holding U+007F was written raw: every ``check`` after it exited 3 at the
file's line ("control characters are not allowed"), and ``calibrate --write`` refused to
replace a file it could no longer read. ``json.dumps`` escapes C0 controls itself; only
strings hold these, so the whole text is escaped at once."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def dump(calibration: Calibration) -> str:
    """The file's text: stable key order, one entry per key, a trailing newline.

    Every float is written so YAML reads it back as a number: ``5.0e-05``, not ``5e-05``
    (the file is read with the YAML loader, whose 1.1 rules need the dot).
    """
    data = calibration.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = json.dumps(_marked(data), indent=2, ensure_ascii=False) + "\n"
    text = _UNREADABLE.sub(lambda found: f"\\u{ord(found[0]):04x}", text)
    return re.sub(r'"\\u0000float\\u0000([^"]*)"', r"\1", text)


def _marked(value: object) -> object:
    """Floats as marked strings, replaced by their YAML-safe spelling after ``json.dumps``.

    A NUL in a string (never in an MLflow name) becomes U+FFFD, so no text can pose as a mark;
    so does a lone surrogate, which YAML refuses raw and escaped alike.
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value.replace("\x00", "\ufffd"))
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.partition("e")[0]:
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}"
        return f"{_FLOAT_MARK}{text}"
    if isinstance(value, dict):
        return {key: _marked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_marked(item) for item in value]
    return value
