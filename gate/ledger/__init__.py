"""What has been approved and spent: ledger records, approvers, monthly budgets, run tags.

Owns: ``records`` (approvals, revocations and reconciliations as MLflow tags, the store
protocol, freshness and authority), ``approvers`` (who may approve), ``budget`` (a team's
spend this month, from the records), ``spend`` (the running sums those records fold into)
and ``tracking`` (the run tags that tie training runs to a spec).

Pure: the MLflow store behind :class:`gate.ledger.records.LedgerStore` lives in
:mod:`gate.integrations`. Imports :mod:`gate.spec`, :mod:`gate.errors`, :mod:`gate.money`.
"""
