"""The runtime guard: hold a running search to its approval, red lines and returns.

The pure core: ``model`` holds the values (reports in, decisions out), ``limits`` builds the
thresholds from a spec, its policy and its approval (or worst-case estimate), and ``core``
decides; none of them imports MLflow, an engine or I/O. The adapters are the guard's
public face, each importing its engine: ``optuna`` (:class:`~gate.guard.optuna.OptunaGuard`),
``ray`` (:class:`~gate.guard.ray.RayGuard`), ``loop`` (:class:`~gate.guard.loop.LoopGuard`)
``ledger`` (the approved amount, re-read from the ledger while the search runs) and
``marks`` (what a guarded run logs to MLflow).
"""
