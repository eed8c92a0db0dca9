"""The month's team report: spend against budget, return, waste, spot, approvals (pure).

Owns ``period`` (which months), ``commitments`` (what the ledger's records commit: the one
place that interprets record kinds), ``runs`` (each run priced and judged by reconcile's
own code, per spec version and month), ``teams`` (each team's figures), ``compute``
(the rest of the figures) and ``model`` (the values the reporters render). The command
(:mod:`gate.commands.report`) reads MLflow and the ledger; nothing here does I/O or reads
the clock.

Pure. Imports :mod:`gate.reconcile`, :mod:`gate.calibrate`, :mod:`gate.ledger`,
:mod:`gate.estimate` and :mod:`gate.spec`.
"""
