"""Where an admission is recorded: the one seam between a Ready decision and the ledger.

:func:`prepare_launch` is called once per Workload the controller admits, in decision
order: the launch counts at once in the pass's sums, so the next Workload of the same team
or approval sees it. :func:`write_launch` then records it, *before* the Workload's check
turns ``Ready``: if recording fails the Workload is not admitted (fail closed) and is
decided again (the pass kept counting the launch: it erred toward refusing). Writes of one
pass run concurrently, each a few round trips to the tracking server. The launch key is
the Workload's uid, so deciding the same Workload again joins its launch instead of
launching twice.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from gate.admission.workload import Workload
from gate.errors import BackendError, InputError
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import prepare_launch as prepare
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


def write_launch(ledger: LedgerView, launch: Launch) -> None:
    """Record ``launch``; :class:`gate.errors.BackendError` when the ledger cannot take it."""
    try:
        run_id = ledger.store().append(launch.record, launch.signer)
    except InputError as exc:  # a signing key that cannot sign
        raise BackendError(f"the launch cannot be signed ({exc})") from None
    workload = launch.workload
    log.info(
        "admitted workload %s (uid %s) under %s (%s), launch %s",
        workload.key,
        workload.uid,
        launch.file,
        launch.record.fingerprint[:19],
        run_id,
    )
