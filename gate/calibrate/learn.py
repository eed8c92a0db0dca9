"""From observations to a calibration: per key and per coarser key, medians and spreads (pure).

Every run counts toward its exact key (model, accelerator, MIG profile, GPUs, precision)
and three coarser ones: any precision; any GPUs and precision; the model on anything. The
MIG profile stays in every key that names the accelerator: a slice's runs are never a
whole GPU's. A lookup takes the finest key with enough runs (:mod:`gate.calibrate.lookup`).
"""

from __future__ import annotations

import datetime as dt
import statistics
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from gate.calibrate.model import (
    Calibration,
    Entry,
    FractionStat,
    Key,
    ShareStat,
    Stat,
    TimeStat,
)
from gate.calibrate.observe import Observation
from gate.spec.base import LARGEST, SMALLEST


def coarser(key: Key) -> tuple[Key, ...]:
    """The key and its coarser keys, finest first (the MIG profile kept with the accelerator)."""
    mig = key.mig_profile
    return (
        key,
        Key(model=key.model, accelerator=key.accelerator, mig_profile=mig, gpus=key.gpus),
        Key(model=key.model, accelerator=key.accelerator, mig_profile=mig),
        Key(model=key.model),
    )


_Parts = tuple[str | None, str | None, str | None, int | None, str | None]
"""An exact key as plain parts: model, accelerator, MIG profile, GPUs, precision."""


def learn(
    observations: Iterable[Observation],
    created: dt.date,
    source: str = "",
    plateau_by: str = "",
    *,
    fold: Callable[[str], str],
) -> Calibration:
    """The calibration of ``observations``, one entry per key that has runs.

    ``fold`` is the lookup's (:func:`gate.calibrate.lookup.fold`, which this module cannot
    import: the lookup imports it): labels, accelerators and MIG profiles it folds alike
    are learned as one (:func:`spellings`).
    """
    every = list(observations)
    model = spellings((seen.key.model for seen in every), fold)
    accelerator = spellings((seen.key.accelerator for seen in every), fold)
    mig = spellings((seen.key.mig_profile for seen in every), fold)
    exact: dict[_Parts, list[Observation]] = defaultdict(list)
    for seen in every:  # NOTE: plain tuples: a pydantic key per run is slow in a backtest
        key = seen.key
        parts = (model(key.model), accelerator(key.accelerator), mig(key.mig_profile))
        exact[(parts[0], parts[1], parts[2], key.gpus, key.precision)].append(seen)
    groups: dict[Key, list[Observation]] = defaultdict(list)
    for (label, hardware, slice_, gpus, precision), members in exact.items():
        key = Key(
            model=label, accelerator=hardware, mig_profile=slice_, gpus=gpus, precision=precision
        )
        for level in dict.fromkeys(coarser(key)):
            groups[level].extend(members)
    entries = [_entry(key, runs) for key, runs in groups.items()]
    entries.sort(key=lambda e: _order(e.key))
    return Calibration(
        api_version="budget-gate/v1",
        kind="Calibration",
        created=created,
        source=source,
        experiments=sorted({seen.experiment for seen in every}),
        runs=len(every),
        plateau_by=plateau_by,
        entries=entries,
    )


def spellings(
    texts: Iterable[str | None], fold: Callable[[str], str]
) -> Callable[[str | None], str | None]:
    """Each of ``texts`` as one spelling of those the lookup's ``fold`` folds alike.

    The lookup matches labels, accelerators and MIG profiles folded (case, zero-width and
    format characters, no-break spaces, fullwidth letters) and takes the entry with the most
    runs of those that fold alike. NOTE: learned apart, ``ResNet18`` and ``resnet18`` (3
    runs each) never reached ``min_runs`` 5, and 21 fast runs tagged ``RESNET18`` (or with a
    zero-width space) replaced 20 real ones. Learned under one spelling, they are one
    model's runs. The spelling kept is one that folding changes in case at most (never one
    with an invisible character), of those the most runs have, the first of equals.
    """
    counts = Counter(text for text in texts if text is not None)
    best: dict[str, tuple[bool, int, str]] = {}
    for text, runs in counts.items():
        normal = unicodedata.normalize("NFKC", text)
        hidden = normal != text or fold(text) != normal.casefold()
        rank = (hidden, -runs, text)
        folded = fold(text)
        if folded not in best or rank < best[folded]:
            best[folded] = rank
    chosen = {text: best[fold(text)][2] for text in counts}
    return lambda text: None if text is None else chosen[text]


S = TypeVar("S", bound=Stat)
_BOUNDS: dict[type[Stat], tuple[float, float]] = {
    TimeStat: (SMALLEST, LARGEST),
    FractionStat: (0.0, 1.0),
    ShareStat: (SMALLEST, 1.0),
}


def stat(values: Sequence[float], kind: type[S]) -> S | None:
    """Median and the 10th and 90th percentiles (inclusive method); ``None`` for no values.

    Values outside what ``kind`` holds (an epoch of zero seconds, an MFU of 0, past 10^12)
    are no measurement and are left out.
    """
    values = _held(values, kind)
    if not values:
        return None
    if len(values) == 1:
        only = _digits(values[0])
        return kind(runs=1, p10=only, median=only, p90=only)
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return kind(
        runs=len(values),
        p10=_digits(deciles[0]),
        median=_digits(statistics.median(values)),
        p90=_digits(deciles[-1]),
    )


def outside(values: Sequence[float], kind: type[Stat]) -> int:
    """How many of ``values`` :func:`stat` leaves out: outside what ``kind`` holds."""
    return len(values) - len(_held(values, kind))


def _held(values: Sequence[float], kind: type[Stat]) -> list[float]:
    low, high = _BOUNDS.get(kind, (0.0, LARGEST))
    return [v for v in values if low <= v <= high]


def _digits(value: float) -> float:
    """Six significant digits: sub-second epochs keep their precision."""
    return float(f"{value:.6g}")


def _entry(key: Key, runs: list[Observation]) -> Entry:
    failed = [r for r in runs if r.failed]
    points = [r.failure_point for r in failed if r.failure_point is not None]
    epochs = [r.epoch_minutes for r in runs if r.epoch_minutes is not None]
    setups = [r.setup_minutes for r in runs if r.setup_minutes is not None]
    plateaus = [r.plateau_fraction for r in runs if r.plateau_fraction is not None]
    mfus = [r.mfu for r in runs if r.mfu is not None]
    left_out = (
        outside(epochs, TimeStat)
        + outside(setups, Stat)
        + outside(plateaus, FractionStat)
        + outside(mfus, ShareStat)
    )
    return Entry(
        key=key,
        runs=len(runs),
        finished=len(runs) - len(failed),
        failed=len(failed),
        first=min(r.start for r in runs).date(),
        last=max(r.start for r in runs).date(),
        experiments=sorted({r.experiment for r in runs}),
        epoch_minutes=stat(epochs, TimeStat),
        setup_minutes=stat(setups, Stat),
        plateau_fraction=stat(plateaus, FractionStat),
        mfu=stat(mfus, ShareStat),
        failure_rate=round(len(failed) / len(runs), 6),
        failure_point=round(statistics.median(points), 6) if points else None,
        retries=sum(r.retry for r in runs),
        preemptions=sum(r.preempted for r in runs),
        mfu_over_peak=sum(r.mfu_over_peak for r in runs) or None,
        left_out=left_out or None,
    )


def _order(key: Key) -> tuple[str, str, str, int, str]:
    accelerator, mig = key.accelerator or "~", key.mig_profile or ""
    return (key.model or "", accelerator, mig, key.gpus or 10**6, key.precision or "~")
