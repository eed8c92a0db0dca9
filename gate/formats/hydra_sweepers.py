"""A Hydra multirun's sweeper: how many trials it runs, and how it picks them.

The Optuna sweeper (``override hydra/sweeper: optuna``) runs ``n_trials`` (default 20),
``n_jobs`` at once (default 2), its sampler the strategy (``grid`` stops at the grid's
size); its ``search_space`` and ``custom_search_space`` are refused. The basic sweeper
runs one job per combination of ``hydra.sweeper.params``. Any other sweeper (Nevergrad, Ax)
is refused: its trial count is in a form of its own, and read as the basic sweeper's grid it
would be a guess.
"""

from __future__ import annotations

import math
from typing import Any

from gate.errors import InputError
from gate.formats.hydra_defaults import picked
from gate.formats.hydra_launchers import basic_sweeper
from gate.formats.model import Draft, Origin, Source, Traced
from gate.formats.spelling import BASIC_SWEEPER, OPTUNA_SWEEPER, refuse_unknown

OPTUNA_DEFAULTS = {"n_trials": 20, "n_jobs": 2}
"""``OptunaSweeperConf`` (hydra_plugins/hydra_optuna_sweeper/config.py)."""
SAMPLERS = {
    "tpe": "bayesian",
    "cmaes": "bayesian",
    "gp": "bayesian",
    "nsgaii": "bayesian",
    "qmc": "random",
    "random": "random",
    "grid": "grid",
}


def sweeper_trials(
    draft: Draft,
    sweeper: dict[str, Any],
    chosen: dict[str, str],
    counts: dict[str, int],
    at: Any,
    notes: list[str],
    defaults: Any,
) -> None:
    """The chosen sweeper's trials: Optuna's, the basic sweeper's grid; any other refused."""
    kind = chosen.get("hydra/sweeper", "basic")
    known = {"optuna": OPTUNA_SWEEPER, "basic": BASIC_SWEEPER}.get(kind)
    if known is not None:  # NOTE: Hydra merges into the sweeper's dataclass: it refuses others
        refuse_unknown(sweeper, known, ("hydra", "sweeper"), at, f"Hydra {kind} sweeper")
    if kind == "optuna":
        _optuna(draft, sweeper, chosen, counts, at)
    elif kind == "basic":
        basic_sweeper(draft, chosen, at, notes)
    else:
        raise InputError(
            f"hydra/sweeper: {kind} is a sweeper budget-gate does not read: its trials are not "
            "the basic sweeper's grid of params, and their count is not in a form it knows",
            location=at("defaults", picked(defaults, "hydra/sweeper")),
            hint="use the basic or the Optuna sweeper, or write the experiment as a budget-gate "
            "spec",
        )


def _refuse_unread_spaces(sweeper: dict[str, Any], at: Any) -> None:
    """Refuse a search space the Optuna sweeper draws from and budget-gate does not read.

    hydra-optuna-sweeper 1.2 still draws from the deprecated ``search_space`` when ``params``
    is unset, and calls ``custom_search_space`` (a Python function) to suggest more of each
    trial's parameters: ``trainer.max_epochs`` up to 1,000 where 10 was priced.
    """
    for key, said in (
        ("custom_search_space", "names a Python function that suggests each trial's values"),
        ("search_space", "is the deprecated search space Optuna draws from when params is unset"),
    ):
        value = sweeper.get(key)
        if value in (None, "", {}):
            continue
        shown = f"{key}: {value}" if isinstance(value, str) else key
        raise InputError(
            f"hydra.sweeper.{shown} {said}, which budget-gate does not read",
            location=at("hydra", "sweeper", key, key=True),
            hint="write the search space as hydra.sweeper.params (interval(), range(), "
            "choice()), or write the experiment as a budget-gate spec",
        )


def _optuna(
    draft: Draft, sweeper: dict[str, Any], chosen: dict[str, str], counts: dict[str, int], at: Any
) -> None:
    _refuse_unread_spaces(sweeper, at)
    for key, path in (
        ("n_trials", ("search", "max_trials")),
        ("n_jobs", ("search", "max_concurrent_trials")),
    ):
        if key in sweeper:
            if not isinstance(sweeper[key], int) or isinstance(sweeper[key], bool):
                raise InputError(
                    f"hydra.sweeper.{key} is {sweeper[key]!r}, not a whole number",
                    location=at("hydra", "sweeper", key),
                    hint=f"write {key}: N",
                )
            draft[path] = Traced(
                sweeper[key],
                Source(Origin.FILE, f"hydra.sweeper.{key}", at("hydra", "sweeper", key)),
            )
        else:
            default = OPTUNA_DEFAULTS[key]
            draft[path] = Traced(
                default,
                Source(
                    Origin.ENGINE,
                    f"the Optuna sweeper's default {key} {default}",
                    at("hydra", "sweeper"),
                ),
            )
    sampler = chosen.get("hydra/sweeper/sampler", "tpe")
    strategy = SAMPLERS.get(sampler, "bayesian")
    where = at("defaults")
    if strategy == "grid":
        grid = math.prod(counts.values())
        trials = draft[("search", "max_trials")]
        if grid < trials.value:
            draft[("search", "max_trials")] = Traced(
                grid,
                Source(
                    Origin.ENGINE,
                    f"the grid sampler stops after {grid} points (n_trials {trials.value})",
                    where,
                ),
            )
        strategy = "random"  # n_trials or the grid, whichever is smaller: a count, not a product
    draft[("search", "strategy")] = Traced(
        strategy, Source(Origin.FILE, f"sampler {sampler}", where)
    )
    if (n_jobs := draft.get(("search", "max_concurrent_trials"))) and n_jobs.value == -1:
        raise InputError(
            "hydra.sweeper.n_jobs is -1 (as many as CPUs): the wall-clock cannot be read",
            location=at("hydra", "sweeper", "n_jobs"),
            hint="give n_jobs: N",
        )
