"""What finished runs measured, learned for the estimate (pure).

``model`` is the calibration file, ``observe`` one run's measurements, ``learn`` the
figures per key, ``lookup`` a spec's figures for the estimate, ``backtest`` their
accuracy. It imports the estimate, reconcile's run facts and the spec; never MLflow:
``budget-gate calibrate`` reads the runs through gate.integrations.mlflow.runs, and
``check`` prices with the committed file alone.
"""
