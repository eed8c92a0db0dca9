"""A ``sqlite:///`` ledger whose file is not there: read as empty, said, made on first write.

MLflow's client makes an empty store wherever a ``sqlite:///`` URI points, so a mistyped
path read as a ledger with nothing approved and nothing spent, and left a stray file behind:
a monthly budget passed on a month that looked empty, without a word. A read makes nothing
now, and the command says the ledger was not there (:attr:`absent`); the first write (an
approval, a launch) makes the store through MLflow's client, as before, and what follows
in the same command reads it.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from gate.integrations.mlflow.sql_ledger import mlflow_ledger
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.encoding import seal
from gate.ledger.records import LedgerQuery, LedgerRecord
from gate.ledger.signing import Signer, Trust

if TYPE_CHECKING:
    from gate.integrations.mlflow.client import MlflowLedger


class AbsentLedger:
    """A :class:`gate.ledger.records.LedgerStore` for a sqlite file that does not exist yet."""

    absent = True

    def __init__(self, tracking_uri: str, trust: Trust) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self.trust = trust
        self.ignored: dict[str, str] = {}
        self._writer: MlflowLedger | None = None

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Make the store through MLflow's client and record ``record`` in it."""
        if self._writer is None:
            # NOTE: a record that cannot be signed is refused before a store is made: an
            # empty file left there would read as a ledger, without this warning, next time
            seal(record, now=dt.datetime.now(dt.timezone.utc), record_id="-", signer=signer,
                 trust=self.trust)  # fmt: skip
            self._writer = mlflow_ledger(self.tracking_uri, self.trust)
            self.ignored = self._writer.ignored
        return self._writer.append(record, signer)

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Nothing before the first write; what the store holds after it."""
        return [] if self._writer is None else self._writer.query(query)
