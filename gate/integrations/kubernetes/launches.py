"""Where an admission is recorded: the one seam between a Ready decision and the ledger.

:func:`record_launch` is called once per Workload the controller admits, *before* its
check turns ``Ready``: if recording fails the Workload is not admitted (fail closed) and
is decided again, so a launch record is written at least once per admission. The
Workload's uid makes a repeated record of the same admission recognisable.
"""

from __future__ import annotations

import logging

from gate.admission.workload import Workload
from gate.evaluation.evaluate import Evaluation
from gate.ledger.records import LedgerView

log = logging.getLogger(__name__)


def record_launch(ledger: LedgerView, evaluation: Evaluation, workload: Workload) -> None:
    """Record that ``workload`` launches ``evaluation``'s spec.

    NOTE: the ledger has no launch records yet (they come with signed records, issue 21);
    until then an admission is logged, and the approval's worst case stays what the month
    commits. Raises :class:`gate.errors.BackendError` when the ledger cannot take it.
    """
    result = evaluation.result
    log.info(
        "admitted workload %s (uid %s) under %s (%s)",
        workload.key,
        workload.uid,
        result.file,
        (result.fingerprint or "")[:19],
    )
