"""What an experiment will cost before it runs: the worst and the expected case (pure).

Owns: ``trials`` (how many, never enumerated), ``schedule`` and ``plans`` (epochs per rung
and scenario; ASHA's promotions of trials that keep their ranks), ``caps`` (where per-trial
caps stop trials), ``reliability`` (retries, preemptions), ``prices`` (catalog and overrides),
``accounting`` (GPU-hour arithmetic shared with reconcile), ``settings`` (the assumptions a
policy may set), ``assumptions`` (the words behind each figure) and ``scenarios`` (the
estimate itself). ``prices_build`` regenerates the packaged catalog.

Pure. Imports :mod:`gate.spec`, :mod:`gate.errors` and :mod:`gate.money`; it reads a policy
only through :class:`gate.estimate.settings.PricingPolicy`.
"""
