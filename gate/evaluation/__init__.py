"""One spec through the pipeline, and what reporters see of it.

Owns: ``evaluate`` (load → validate → price → estimate → rules → verdict, with the ledger
read through a store it is given), ``reading`` (a document read as a spec, or the INVALID
result), ``ledger_checks`` (the month's budget and the approval that counts, read only when
a ledger is in play), ``report`` (per-spec results and the whole report) and
``diff`` (a spec's cost change between two versions, by driver).

Imports the pure core (:mod:`gate.policy`, :mod:`gate.ledger`, :mod:`gate.estimate`,
:mod:`gate.spec`); never :mod:`gate.integrations`, MLflow or GitHub.
"""
