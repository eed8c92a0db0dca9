"""Where an admission is recorded: the one seam between a Ready decision and the ledger.

:func:`record_launch` is called once per Workload the controller admits, *before* its
check turns ``Ready``: if recording fails the Workload is not admitted (fail closed) and
is decided again. The launch key is the Workload's uid, so deciding the same Workload
again joins its launch instead of launching twice, and the pass's sums count the launch
at once, so the next Workload of the same team sees it.
"""

from __future__ import annotations

import logging
import os

from gate.admission.workload import Workload
from gate.errors import BackendError, InputError
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import record_launch as record
from gate.ledger.view import LedgerView

log = logging.getLogger(__name__)
PRINCIPAL = "kueue-admission"
"""Who the controller's launches are by, unless ``BUDGET_GATE_SIGNER`` says otherwise."""


def launch_key(workload: Workload) -> str:
    """The launch a Workload is: its uid (a deleted and recreated job is a new launch)."""
    return f"kueue-{workload.uid}"


def record_launch(
    ledger: LedgerView, evaluation: Evaluation, workload: Workload, evaluator: Evaluator
) -> None:
    """Record that ``workload`` launches ``evaluation``'s spec, when the ledger is in play.

    Raises :class:`gate.errors.BackendError` when the ledger cannot take it (a signing
    failure included: the admission must not happen unrecorded).
    """
    result = evaluation.result
    if result.approval is None and result.budget is None:
        return
    from gate.integrations.signing import SIGNER_ENV, signer_from

    try:
        signer = signer_from(os.environ, principal=PRINCIPAL)
        by = signer.principal if signer else os.environ.get(SIGNER_ENV, PRINCIPAL)
        launch = record(ledger, evaluation, launch_key=launch_key(workload), by=by, signer=signer)
    except InputError as exc:
        raise BackendError(f"the launch cannot be signed ({exc})") from None
    evaluator.remember(launch)
    log.info(
        "admitted workload %s (uid %s) under %s (%s), launch %s",
        workload.key,
        workload.uid,
        result.file,
        (result.fingerprint or "")[:19],
        launch.run_id or "already recorded",
    )
