"""MLflow I/O: the ledger's store, the training runs reconcile reads, the tracking URI.

``rest`` reads the ledger from a tracking server over REST without importing MLflow;
``sql_ledger`` reads it from a ``sqlite:///`` store with SQL; ``client`` is the ledger
through ``MlflowClient`` (other stores, and every write to a SQLite one); all search
through ``search`` and read a month's sums through ``snapshots``. ``runs`` reads training
runs fast (reconcile, calibrate, report), from a server over REST (``run_sources``) or a
SQLite file with SQL (``sql_source``); ``tracking_uri`` says where the ledger lives.
Importing this package imports no MLflow.
"""
