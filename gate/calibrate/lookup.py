"""The calibration's figures for one spec: the finest key with enough runs (pure).

Epoch time comes only from keys that name the spec's accelerator and MIG profile (a
slice's runs are never a whole GPU's), save that a slice is never faster than its whole GPU:
where its own keys have too few runs, its whole GPUs' runs may raise its epoch time, never
lower it. Only the spec's own key may lower its declared epoch time: a coarser key's runs
(another GPU count or precision) may raise it, never lower it, so a worst case never drops
below what was declared. A spec that gives its model size instead has its FLOPs prior
raised to them alike, never lowered. The plateau, the failure rate and the MFU (for the
FLOPs prior, where no epoch time was measured) are the model's and may come from the model
on any hardware. A spec without a ``model`` label, or a key with fewer than the policy's
``calibration.min_runs`` runs, is priced from the spec, and the estimate says so.

Labels match folded (:func:`fold`): a trailing space, a zero-width or other format
character, a no-break space or a fullwidth letter is the same model, so it cannot set
measured history (and BG308) aside. A label with no runs that is a measured one spelt
otherwise (``resnet-18``, ``resnet18-v2`` for ``resnet18``) is priced from the spec, but
BG308 holds it to that model's measured epoch time too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import replace
from decimal import Decimal

from gate.calibrate.learn import coarser
from gate.calibrate.model import Calibration, Entry, Key, Stat
from gate.estimate.measured import (
    COARSER,
    WHOLE_GPU,
    EpochTime,
    Fraction,
    Measured,
    Utilization,
    failure_note,
    minutes_text,
    raise_to,
)
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
        mig_profile=spec.resources.mig_profile,
    )


EPOCH_LEVELS = 3
"""Epoch times come from the three finest keys only: those that name the accelerator (and
the MIG profile); the two coarser ones only ever raise a declared epoch time."""


def by_key(calibration: Calibration) -> dict[Key, Entry]:
    """The calibration's entries by their :func:`folded` key.

    A label's case or an invisible character is no other model: ``ResNet18`` and
    ``resnet18\u200b`` are priced from the runs of ``resnet18`` (otherwise a capital letter
    or a zero-width space would set measured history aside). Of two entries that fold
    alike, the one with more runs is taken.
    """
    found: dict[Key, Entry] = {}
    for entry in calibration.entries:
        key = folded(entry.key)
        if key not in found or entry.runs > found[key].runs:
            found[key] = entry
    return found


def folded(key: Key) -> Key:
    """``key`` with its label, accelerator and MIG profile folded (:func:`fold`)."""
    parts = {"model": key.model, "accelerator": key.accelerator, "mig_profile": key.mig_profile}
    update = {name: fold(value) for name, value in parts.items() if value is not None}
    if all(update[name] == parts[name] for name in update):
        return key
    return key.model_copy(update=update)


def fold(text: str) -> str:
    """``text`` as the lookup compares it, so a lookalike label is the same model.

    NFKC (a fullwidth letter is the letter), in lower case, without format or space
    characters (U+200B, U+2060, U+FEFF, a soft hyphen, a no-break or trailing space).
    """
    normal = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in normal if not _invisible(c))


def _invisible(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) in ("Cf", "Zs", "Zl", "Zp", "Cc")


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

    ``entries`` as :func:`by_key` gives them: model labels match folded.
    """
    found = _finest_level(entries, key, pick, min_runs, levels)
    return None if found is None else found[1:]


def _finest_level(
    entries: Mapping[Key, Entry],
    key: Key,
    pick: Callable[[Entry], Stat | None],
    min_runs: int,
    levels: int,
) -> tuple[int, Entry, Stat] | None:
    """:func:`finest`, with its level: 0 is ``key`` itself, above 0 a coarser key."""
    for level, at in enumerate(coarser(folded(key))[:levels]):
        entry = entries.get(at)
        found = pick(entry) if entry is not None else None
        if entry is not None and found is not None and found.runs >= min_runs:
            return level, entry, found
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

    epoch, floor, notes = _epoch_for(spec, entries, key, enough)
    near = _near_label(entries, key, enough) if epoch is None else None
    plateau = find(lambda e: e.plateau_fraction, 4)
    mfu = find(lambda e: e.mfu, 4) if spec.workload.epoch_flops is not None else None
    failures = next((entries[k] for k in keys if k in entries and entries[k].runs >= enough), None)
    failure_rate = None
    if failures is not None and failures.failure_rate is not None:
        failure_rate = Fraction(
            failures.failure_rate,
            failures.failure_rate,
            f"{failures.failed} of {failures.runs} runs of {_who(failures)} failed",
        )
        notes.append(failure_note(failure_rate, policy_failure_rate))
    return Measured(
        epoch=epoch,
        plateau=_fraction(*plateau) if plateau is not None else None,
        failure_rate=failure_rate,
        failure_point=failures.failure_point if failures is not None else None,
        mfu=_utilization(*mfu) if mfu is not None else None,
        notes=tuple(notes),
        floor=floor,
        near=near,
    )


def _epoch_for(
    spec: Experiment, entries: Mapping[Key, Entry], key: Key, enough: int
) -> tuple[EpochTime | None, EpochTime | None, list[str]]:
    """The epoch time for ``spec``, the floor under its FLOPs prior, and notes on them.

    Only the spec's own key may lower a declared epoch time. A coarser key's runs (another
    GPU count or precision), or for a MIG slice its whole GPUs' (:func:`_epoch_levels`), may
    raise it, never lower it: each case prices the larger of the two, and where the spec's
    is larger in both, the runs are not used. A spec that gives its model size gets them as
    its floor: its FLOPs prior is raised to them alike
    (:func:`gate.estimate.flops.with_prior`), since the model size is the author's word too.
    """
    found = _finest_epoch(entries, key, enough)
    if found is None:
        used = "the spec's epoch time" if spec.workload.declares_epoch_time else "the FLOPs prior"
        return None, None, [f"{_too_few(key, enough)}: {used} is used"]
    why, entry, stat = found
    epoch = replace(_epoch(entry, stat), floor=why)
    if not why:
        return epoch, None, []
    if not spec.workload.declares_epoch_time:
        return None, epoch, []
    expected = spec.workload.epoch_minutes_for("expected")
    worst = spec.workload.epoch_minutes_for("worst")
    raised = raise_to(epoch, expected, worst)
    if raised is not None:
        return raised, None, []
    unused = (
        f"calibration's epoch time of {_who(entry)} (median {minutes_text(epoch.median)}, "
        f"90th percentile {minutes_text(epoch.high)} min) not used: "
    )
    if why == WHOLE_GPU:
        note = f"{_too_few(key, enough)}; the {unused}{why}, and the spec's is higher"
    else:
        note = (
            f"{unused}runs on another GPU count or precision than {key.describe()} may raise "
            "the spec's epoch time, never lower it"
        )
    return None, None, [note]


def _too_few(key: Key, enough: int) -> str:
    return f"calibration has fewer than {enough} runs of {key.describe()} with an epoch time"


def _epoch_levels(key: Key) -> list[tuple[Key, str]]:
    """The keys whose runs give ``key`` its epoch time, finest first, and why each floors it.

    The reason is empty for the spec's own key, whose runs may lower its figure too. A MIG
    slice's own keys come first, then the same keys on whole GPUs: N slices hold at most the
    compute of N whole GPUs of the same model, so the whole GPUs' epoch time at the same
    count and precision is a floor for the slice's, never its price (a slice is not priced
    at its share of the GPU's time: a small model need not fill the whole GPU).
    """
    levels = coarser(folded(key))[:EPOCH_LEVELS]
    found = [(level, COARSER if i else "") for i, level in enumerate(levels)]
    if key.mig_profile is not None:
        whole = [level.model_copy(update={"mig_profile": None}) for level in levels]
        found.extend((level, WHOLE_GPU) for level in whole)
    return found


def _finest_epoch(
    entries: Mapping[Key, Entry], key: Key, enough: int
) -> tuple[str, Entry, Stat] | None:
    """The finest of :func:`_epoch_levels` with ``enough`` runs, and why it only floors."""
    for level, why in _epoch_levels(key):
        entry = entries.get(level)
        stat = entry.epoch_minutes if entry is not None else None
        if entry is not None and stat is not None and stat.runs >= enough:
            return why, entry, stat
    return None


def _near_label(
    entries: Mapping[Key, Entry], key: Key, enough: int
) -> tuple[str, EpochTime] | None:
    """Another label's epoch time on the spec's very hardware, the spec's label spelt otherwise.

    ``resnet-18``, ``ResNet_18`` or ``resnet18-v2`` for ``resnet18``: separators and case
    aside, the same label, or it and more. A size apart (``llama-7b`` beside ``llama-8b``)
    is a model of its own. NOTE: a label a hyphen off, or with a suffix, found no runs:
    the spec's own epoch time priced it, and BG308 never compared it with the model meant.
    """
    own = folded(key)
    spelt = _bare(own.model or "")
    near = [
        k
        for k in entries
        if k.model
        and k.model != own.model
        and k.model_copy(update={"model": own.model}) == own
        and spelt.startswith(_bare(k.model))
        and _bare(k.model)
    ]
    if not near:
        return None
    entry = entries[max(near, key=lambda k: len(_bare(k.model or "")))]
    stat = entry.epoch_minutes
    if stat is None or stat.runs < enough:
        return None
    return entry.key.model or "", _epoch(entry, stat)


def _bare(label: str) -> str:
    """A label without its separators and case: ``ResNet_18`` is ``resnet18``."""
    return re.sub(r"[\W_]+", "", label).casefold()


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
