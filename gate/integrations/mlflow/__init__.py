"""MLflow I/O: the ledger's store, the training runs reconcile reads, the tracking URI.

``rest`` reads the ledger from a tracking server over REST without importing MLflow;
``client`` is the ledger through ``MlflowClient`` (``sqlite:///`` stores, and every write);
both search through ``search`` and read a month's sums through ``snapshots``. ``runs``
reads an experiment's training runs fast (reconcile, calibrate); ``tracking_uri`` says
where the ledger lives. Importing this package imports no MLflow.
"""
