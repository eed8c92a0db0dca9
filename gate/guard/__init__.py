"""The runtime guard's pure core: hold a running search to its approval, red lines and returns.

``model`` holds the values (reports in, decisions out), ``limits`` builds the thresholds
from a spec, its policy and its approval (or worst-case estimate), and ``core`` decides.
The engines' adapters live in :mod:`gate.integrations` (``guard_optuna``, ``guard_ray``,
``guard_loop``); nothing here imports them, MLflow or an engine.
"""
