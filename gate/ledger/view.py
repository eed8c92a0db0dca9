"""The ledger as one command sees it: opened on first use, each query read once (pure).

Kept apart from :mod:`gate.ledger.records` so that a command can hold a view without
importing the ledger: ``check`` makes one for every run, and a spec without a monthly
budget (and no ``--tracking-uri``) never opens it, never judges its signers and never
imports the records, the signatures or MLflow.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime as dt

    from gate.ledger.records import LedgerQuery, LedgerRecord, LedgerStore
    from gate.ledger.signing import Trust


@dataclass
class LedgerView:
    """The ledger as one command sees it: opened on first use, each query read once.

    ``approvals`` says whether recorded approvals count toward the verdict (``verify``,
    or ``check --tracking-uri``); the monthly budget reads the ledger either way, and with
    ``approvals_if_read`` (``check``) approvals count for every spec whose budget read it.
    ``where`` names the store for messages (credentials removed). ``trust`` is how records
    are judged (the signers file of the policies in force); ``judge``, when no trust is
    set, gives it on first need (the policies' signers, read only then). The store cannot be
    opened without one, so no read ever happens under a trust nobody chose.
    """

    opener: Callable[[Trust], LedgerStore]
    now: dt.datetime
    approvals: bool = False
    where: str = ""
    approvals_if_read: bool = False
    trust: Trust | None = None
    judge: Callable[[], Trust] | None = field(default=None, repr=False)
    withdrawn: Callable[[LedgerRecord], str | None] | None = field(default=None, repr=False)
    """Why a recorded approval was withdrawn, or ``None``: on a pull request, a GitHub
    approval that GitHub no longer shows (a review dismissed or changed, a comment deleted)
    counts no more, whatever the ledger's copy says."""
    history: Callable[[], frozenset[str]] | None = field(default=None, repr=False)
    """Who the policies' git history lists as approvers (asked once, on first need): their
    revocations stand after they leave the list."""
    locate: Callable[[], str | None] | None = field(default=None, repr=False)
    """Which repository (``owner/name``) this is (asked once, on first need): GitHub
    approvals count only where they were given; ``None`` when unknown (said, not checked)."""
    _here: tuple[str | None] | None = field(default=None, init=False, repr=False)
    _former: frozenset[str] | None = field(default=None, init=False, repr=False)
    _store: LedgerStore | None = field(default=None, init=False, repr=False)
    _cache: dict[LedgerQuery, list[LedgerRecord]] = field(
        default_factory=dict, init=False, repr=False
    )

    def trusted(self) -> Trust | None:
        """The trust records are judged by: the one set, else the judge's (asked once)."""
        if self.trust is None and self.judge is not None:
            self.trust = self.judge()
        return self.trust

    def former(self) -> frozenset[str]:
        """Who the policies' history lists as approvers (none without a history)."""
        if self._former is None:
            self._former = self.history() if self.history is not None else frozenset()
        return self._former

    def here(self) -> str | None:
        """The repository judged in, or ``None`` when it cannot be told."""
        if self._here is None:
            self._here = (self.locate() if self.locate is not None else None,)
        return self._here[0]

    def store(self) -> LedgerStore:
        """The underlying store, opened now if it was not yet."""
        if self._store is None:
            trust = self.trusted()
            if trust is None:
                raise AssertionError("the ledger's trust must be set before it is read")
            self._store = self.opener(trust)
        return self._store

    @property
    def opened(self) -> bool:
        """Whether the store was opened (something read or wrote the ledger)."""
        return self._store is not None

    def records(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Records matching ``query`` that count, read from the store once per command."""
        if query not in self._cache:
            self._cache[query] = self.store().query(query)
        return self._cache[query]

    def remember(self, record: LedgerRecord) -> None:
        """Count a record this command just wrote in the queries it already read.

        A command that decides many launches in one pass (the Kueue controller) sees its own
        launches without reading the ledger again; one written after the moment the view
        judges counts at that moment.
        """
        if record.recorded_at > self.now:
            record = dataclasses.replace(record, recorded_at=self.now)
        for query, records in self._cache.items():
            if query.matches(record):
                records.append(record)

    @property
    def absent(self) -> bool:
        """Whether the store was opened and was not there (read as empty)."""
        return self._store is not None and self._store.absent

    def ignored(self) -> Counter[str]:
        """How many records the reads so far left out, by reason (empty when none was read)."""
        return Counter(self._store.ignored.values()) if self._store is not None else Counter()
