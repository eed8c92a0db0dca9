"""What a team allows, and the verdict: policy models and loading, the rules, pass or fail.

Owns: ``model`` (the ``kind: Policy`` document), ``loader`` (a team's ``extends`` chain,
deep-merged), ``rules/`` (one rule per module, an explicit registry), ``findings`` (what a
verdict is made of) and ``verdict`` (the one place pass/fail is decided).

Pure. Imports :mod:`gate.estimate` (rules read the estimate), :mod:`gate.ledger` (the
budget status and the approval a verdict applies) and :mod:`gate.spec`.
"""
