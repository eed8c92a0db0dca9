"""What the runs really cost and achieved: actuals, the quality gate, waste, variance (pure).

Owns: ``actuals`` (one run's cost from plain facts), ``quality`` (the quality gate and the
plateau), ``waste`` (where money went, with advice), ``notes`` (what the estimate priced
against what the runs took) and ``reconciler`` (runs → report).
MLflow is read by :mod:`gate.integrations.mlflow.runs`, which hands over plain facts.

Pure. Imports :mod:`gate.estimate`, :mod:`gate.ledger` and :mod:`gate.spec`.
"""
