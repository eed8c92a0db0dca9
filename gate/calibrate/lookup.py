"""The calibration's figures for one spec: the finest key with enough runs (pure).

Epoch time comes only from keys that name the spec's accelerator (any GPUs or precision
at the coarsest, said in the basis); the plateau, the failure rate and the MFU (for the
FLOPs prior, where no epoch time was measured) are the model's and may come from the
model on any hardware. A spec without a ``model`` label, or a key with
fewer than the policy's ``calibration.min_runs`` runs, is priced from the spec, and the
estimate says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

from gate.calibrate.learn import coarser
from gate.calibrate.model import Calibration, Entry, Key, Stat
from gate.estimate.measured import EpochTime, Fraction, Measured, Utilization, failure_note
from gate.estimate.settings import Calibration as Settings
from gate.ledger.tracking import MODEL_LABEL
from gate.money import to_decimal
from gate.spec.experiment import Experiment


def spec_key(spec: Experiment) -> Key:
    """The exact key of ``spec``'s runs."""
    return Key(
        model=spec.metadata.labels.get(MODEL_LABEL),
        accelerator=spec.resources.accelerator,
        gpus=spec.resources.gpus_per_trial,
        precision=spec.resources.precision.value,
    )


EPOCH_LEVELS = 3
"""Epoch times come from the three finest keys only: those that name the accelerator."""


def by_key(calibration: Calibration) -> dict[Key, Entry]:
    """The calibration's entries by their key, the model label in lower case.

    A label's case is no other model: ``ResNet18`` is priced from the runs of ``resnet18``
    (otherwise a capital letter would set measured history aside). Of two entries that
    differ only in case, the one with more runs is taken.
    """
    found: dict[Key, Entry] = {}
    for entry in calibration.entries:
        key = folded(entry.key)
        if key not in found or entry.runs > found[key].runs:
            found[key] = entry
    return found


def folded(key: Key) -> Key:
    """``key`` with its model label in lower case (labels are matched in any case)."""
    if key.model is None or key.model == key.model.casefold():
        return key
    return key.model_copy(update={"model": key.model.casefold()})


def epoch_minutes(entry: Entry) -> Stat | None:
    """An entry's measured epoch time."""
    return entry.epoch_minutes


def finest(
    entries: Mapping[Key, Entry],
    key: Key,
    pick: Callable[[Entry], Stat | None],
    min_runs: int,
    levels: int = 4,
) -> tuple[Entry, Stat] | None:
    """The finest of ``key``'s first ``levels`` levels whose figure has ``min_runs`` runs.

    ``entries`` as :func:`by_key` gives them: model labels match in any case.
    """
    for level in coarser(folded(key))[:levels]:
        entry = entries.get(level)
        found = pick(entry) if entry is not None else None
        if entry is not None and found is not None and found.runs >= min_runs:
            return entry, found
    return None


def measured_for(
    calibration: Calibration, spec: Experiment, settings: Settings, policy_failure_rate: float
) -> Measured:
    """What the calibration measured for ``spec``'s key, with notes for what it lacks."""
    key = spec_key(spec)
    if key.model is None:
        return Measured(
            notes=(
                f"calibration not used: the spec has no {MODEL_LABEL!r} label to look its "
                "runs up by",
            )
        )
    entries = by_key(calibration)
    keys = coarser(folded(key))
    enough = settings.min_runs

    def find(pick: Callable[[Entry], Stat | None], levels: int) -> tuple[Entry, Stat] | None:
        return finest(entries, key, pick, enough, levels)

    epoch = find(epoch_minutes, EPOCH_LEVELS)
    plateau = find(lambda e: e.plateau_fraction, 4)
    mfu = find(lambda e: e.mfu, 4) if spec.workload.epoch_flops is not None else None
    failures = next((entries[k] for k in keys if k in entries and entries[k].runs >= enough), None)
    notes: list[str] = []
    if epoch is None:
        used = "the spec's epoch time" if spec.workload.declares_epoch_time else "the FLOPs prior"
        notes.append(
            f"calibration has fewer than {enough} runs of {key.describe()} with an epoch "
            f"time: {used} is used"
        )
    failure_rate = None
    if failures is not None and failures.failure_rate is not None:
        failure_rate = Fraction(
            failures.failure_rate,
            failures.failure_rate,
            f"{failures.failed} of {failures.runs} runs of {_who(failures)} failed",
        )
        notes.append(failure_note(failure_rate, policy_failure_rate))
    return Measured(
        epoch=_epoch(*epoch) if epoch is not None else None,
        plateau=_fraction(*plateau) if plateau is not None else None,
        failure_rate=failure_rate,
        failure_point=failures.failure_point if failures is not None else None,
        mfu=_utilization(*mfu) if mfu is not None else None,
        notes=tuple(notes),
    )


def _who(entry: Entry) -> str:
    first, last = entry.first, entry.last
    end = last.isoformat() if last.year != first.year else last.strftime("%m-%d")
    return f"{entry.key.describe()}, {first.isoformat()} … {end}"


def _epoch(entry: Entry, found: Stat) -> EpochTime:
    return EpochTime(
        low=_minutes(found.p10),
        median=_minutes(found.median),
        high=_minutes(found.p90),
        basis=f"{found.runs} runs of {_who(entry)}",
    )


def _fraction(entry: Entry, found: Stat) -> Fraction:
    return Fraction(found.p10, found.median, f"{found.runs} runs of {_who(entry)}")


def _utilization(entry: Entry, found: Stat) -> Utilization:
    return Utilization(found.p10, found.median, found.p90, f"{found.runs} runs of {_who(entry)}")


def _minutes(value: float) -> Decimal:
    return to_decimal(value)
