"""One launch record for several launches of one spec version (pure).

A controller that admits many jobs at once (the Kueue admission check) would write one
ledger run per job, each two requests to the tracking server: 505 admissions cost 15 s of
MLflow's time. Launches that differ only in their launch key are written as one record
whose ``launch_keys`` name them all (:func:`batched`), and every reader sees one launch
record per key (:func:`launches_in`), so spend, approval uses and the report count each
launch as before. The keys are in the signed payload: a batch is signed once, and a key
cannot be added to or taken out of it without breaking the signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gate.ledger.records import LedgerRecord, RecordKind

MAX_LAUNCHES_PER_RECORD = 40
"""Keys one record carries: 40 of the longest (128 characters) keep its payload under
MLflow's 8,000-character limit on a tag value."""


def launches_in(record: LedgerRecord) -> tuple[LedgerRecord, ...]:
    """The launch records ``record`` stands for: itself, or one per key of a batch.

    Each has the batch's fields, one key, and an id of its own (the batch's id, ``/`` and
    the key's place), the same in every copy of the run.
    """
    if not record.launch_keys:
        return (record,)
    assert record.record_id is not None, "a batch read from the ledger has its id"
    return tuple(
        dataclasses.replace(
            record, launch_key=key, launch_keys=(), record_id=f"{record.record_id}/{i}"
        )
        for i, key in enumerate(record.launch_keys)
    )


def batched(launches: Iterable[LedgerRecord]) -> list[tuple[LedgerRecord, tuple[int, ...]]]:
    """The records to write for ``launches``, each with the places of the launches it holds.

    Launch records equal but for their key become one record with ``launch_keys`` (at most
    :data:`MAX_LAUNCHES_PER_RECORD`); a launch alone keeps its own form. Order is kept: a
    group is written where its first launch was.
    """
    groups: dict[LedgerRecord, list[int]] = {}
    kept = list(launches)
    for place, record in enumerate(kept):
        assert record.kind is RecordKind.LAUNCH and record.launch_key is not None
        groups.setdefault(dataclasses.replace(record, launch_key=None), []).append(place)
    written: list[tuple[LedgerRecord, tuple[int, ...]]] = []
    for common, places in groups.items():
        for start in range(0, len(places), MAX_LAUNCHES_PER_RECORD):
            chunk = tuple(places[start : start + MAX_LAUNCHES_PER_RECORD])
            if len(chunk) == 1:
                written.append((kept[chunk[0]], chunk))
            else:
                keys = tuple(kept[place].launch_key or "" for place in chunk)
                written.append((dataclasses.replace(common, launch_keys=keys), chunk))
    return written
