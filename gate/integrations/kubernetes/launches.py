"""Where an admission is recorded: the one seam between a Ready decision and the ledger.

:func:`prepare_launch` is called once per Workload the controller admits, in decision
order: the launch counts at once in the pass's sums, so the next Workload of the same team
or approval sees it. :func:`batches` then groups the pass's launches of one spec version
into one record each (:func:`gate.ledger.launches.batched`: a record, two round trips to
the tracking server, per group of up to 40 Workloads instead of per Workload), and
:func:`write_batch` records a group *before* any of its Workloads' checks turn ``Ready``:
if recording fails none of them is admitted (fail closed) and each is decided again (the
pass kept counting the launches: it erred toward refusing). The launch key is the
Workload's uid, so deciding the same Workload again joins its launch instead of launching
twice.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from gate.admission.check_state import Decision, State
from gate.admission.workload import Workload
from gate.errors import BackendError, InputError
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import prepare_launch as prepare
from gate.ledger.launches import batched
from gate.ledger.records import LedgerRecord
from gate.ledger.signing import Signer
from gate.ledger.view import LedgerView

log = logging.getLogger(__name__)
PRINCIPAL = "kueue-admission"
"""Who the controller's launches are by, unless ``BUDGET_GATE_SIGNER`` says otherwise."""


@dataclass(frozen=True, slots=True)
class Launch:
    """A launch decided and counted in the pass, not yet written."""

    record: LedgerRecord
    signer: Signer | None
    workload: Workload
    file: str


def launch_key(workload: Workload) -> str:
    """The launch a Workload is: its uid (a deleted and recreated job is a new launch)."""
    return f"kueue-{workload.uid}"


def prepare_launch(
    ledger: LedgerView, evaluation: Evaluation, workload: Workload, evaluator: Evaluator
) -> Launch | None:
    """The launch ``workload`` makes of ``evaluation``'s spec, counted in the pass at once.

    ``None`` when there is nothing to record: no approval or budget in play, or the
    Workload's launch is already recorded. Raises :class:`gate.errors.BackendError` when
    the ledger cannot be read or the launch cannot be signed.
    """
    result = evaluation.result
    if result.approval is None and result.budget is None:
        return None
    from gate.integrations.signing import SIGNER_ENV, signer_from

    try:
        signer = signer_from(os.environ, principal=PRINCIPAL)
    except InputError as exc:
        raise BackendError(f"the launch cannot be signed ({exc})") from None
    by = signer.principal if signer else os.environ.get(SIGNER_ENV, PRINCIPAL)
    record, new = prepare(ledger, evaluation, launch_key=launch_key(workload), by=by)
    if not new:
        return None
    evaluator.remember(record)
    return Launch(record, signer, workload, result.file)


@dataclass(frozen=True, slots=True)
class Batch:
    """One record to write, and the launches it records."""

    record: LedgerRecord
    launches: tuple[Launch, ...]


def batches(launches: list[Launch]) -> list[Batch]:
    """The records that record ``launches``: one per spec version and signer, 40 at most."""
    by_signer: dict[str | None, list[Launch]] = {}
    for launch in launches:
        signer = launch.signer.principal if launch.signer is not None else None
        by_signer.setdefault(signer, []).append(launch)
    found: list[Batch] = []
    for group in by_signer.values():
        for record, places in batched(launch.record for launch in group):
            found.append(Batch(record, tuple(group[place] for place in places)))
    return found


def write_batch(ledger: LedgerView, batch: Batch) -> None:
    """Record ``batch``; :class:`gate.errors.BackendError` when the ledger cannot take it."""
    first = batch.launches[0]
    try:
        run_id = ledger.store().append(batch.record, first.signer)
    except InputError as exc:  # a signing key that cannot sign
        raise BackendError(f"the launch cannot be signed ({exc})") from None
    for launch in batch.launches:
        workload = launch.workload
        log.info(
            "admitted workload %s (uid %s) under %s (%s), launch %s",
            workload.key,
            workload.uid,
            launch.file,
            launch.record.fingerprint[:19],
            run_id,
        )


def record_batch(view: LedgerView, batch: Batch) -> BackendError | None:
    """Record ``batch``'s launches; what stopped it, or ``None``."""
    try:
        write_batch(view, batch)
    except BackendError as exc:
        return exc
    return None


def unrecorded(exc: BackendError) -> Decision:
    """A Workload cleared but not admitted: the ledger could not record its launch."""
    return Decision(
        State.PENDING,
        f"budget-gate: the ledger could not record the launch ({exc}) — "
        "admitted once it answers (fail closed)",
    )
