"""One Optuna worker process of the guard test: run trials on a shared sqlite storage.

``python -m tests.optuna_guard_worker STORAGE_URL STUDY [LAUNCH_KEY]`` (the study is created
if missing) runs up to 50 trials of 12
epochs, each epoch reported to the guard as 6 minutes on 8 GPUs at 2 USD (1.60 USD), until
the guard stops the search at the approved amount of a spec of 4 trials × 10 epochs
(its worst case, 64 USD), which falls inside a running trial.
"""

from __future__ import annotations

import os
import sys
import time

import optuna

from gate.guard.core import Guard
from gate.guard.optuna import OptunaGuard
from tests.guard_kit import approved_limits

EPOCHS = 12


def main(url: str, name: str, launch_key: str | None = None) -> int:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
    guard = OptunaGuard(Guard(approved_limits(), clock=time.monotonic, launch_key=launch_key))
    study = optuna.create_study(study_name=name, storage=storage, load_if_exists=True)

    def objective(trial: optuna.Trial) -> float:
        trial.set_user_attr("worker", os.getpid())
        guard.admit(trial)
        x = trial.suggest_float("x", 0.0, 1.0)
        for epoch in range(1, EPOCHS + 1):
            time.sleep(0.01)
            guard.step(trial, epoch, {"val_loss": x + 1.0 / epoch}, held_seconds=epoch * 360.0)
        return x

    study.optimize(objective, n_trials=50, callbacks=[guard.callback])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:4]))
