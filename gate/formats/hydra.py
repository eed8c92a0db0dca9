"""A Hydra multirun config → spec fields: the Optuna sweeper, the basic sweeper, Submitit.

Optuna sweeper (``override hydra/sweeper: optuna``): ``n_trials`` trials (default 20),
``n_jobs`` at once (default 2), its sampler (``grid`` stops at the grid's size). Basic
sweeper: one job per combination of ``hydra.sweeper.params`` (comma lists, ``range``,
``choice``), one at a time unless the launcher runs them in parallel. Any other sweeper
(Nevergrad, Ax) is refused: its trial count is in a form of its own, and read as the basic
sweeper's grid it would be a guess. Submitit's ``gpus_per_node`` × ``nodes`` are a trial's
GPUs, and ``timeout_min`` (default 60) ends a trial; ``hydra.job.env_set``'s epochs count.
A step budget (:mod:`gate.formats.hydra_steps`), an interpolation Hydra resolves in the
sweep or a ``_target_`` class (:mod:`gate.formats.hydra_unread`), and a Ray or Slurm pin to
another GPU model (:mod:`gate.formats.hydra_pins`) are refused.
Facts go in an ``x-budget-gate:``
block, which Hydra keeps as any other key, or in a ``# x-budget-gate:`` comment block (for a
config checked against a structured schema, which refuses unknown keys).
"""

from __future__ import annotations

import math
from typing import Any

from gate.errors import InputError
from gate.formats.extension import COMMENT, block_facts, comment_facts, hydra_point
from gate.formats.hydra_defaults import chosen as chosen_groups
from gate.formats.hydra_defaults import refuse_unread_groups
from gate.formats.hydra_epochs import epochs as epochs_of
from gate.formats.hydra_epochs import fewer_epochs
from gate.formats.hydra_launchers import launcher
from gate.formats.hydra_pins import launcher_pins
from gate.formats.hydra_steps import refuse_step_budgets
from gate.formats.hydra_sweepers import sweeper_trials
from gate.formats.hydra_sweeps import sweep
from gate.formats.hydra_unread import refuse_unread
from gate.formats.model import (
    Draft,
    FactMap,
    Mapped,
    Origin,
    Source,
    Traced,
    mapping,
)
from gate.spec.facts import EXTENSION_KEY
from gate.spec.loader import LoadedDoc


def read(doc: LoadedDoc) -> Mapped:
    """The sweeper's trial count and parallelism, its params, the launcher's GPUs."""
    data = doc.yaml12()  # NOTE: as OmegaConf reads it: a plain 1e3 is 1000.0

    def at(*path: str | int, key: bool = False) -> Any:
        return doc.source_map.locate(tuple(path), key=key)

    refuse_unread_groups(doc)
    chosen = chosen_groups(data.get("defaults"))
    refuse_unread(data.get("hydra"), chosen, at)
    hydra = mapping(data.get("hydra"))
    sweeper = mapping(hydra.get("sweeper"))
    draft: Draft = {}
    params = mapping(sweeper.get("params"))
    counts: dict[str, int] = {}
    for name, text in params.items():
        value, count = sweep(str(text), name, at("hydra", "sweeper", "params", name))
        counts[name] = count
        draft[("search", "parameters", name)] = Traced(
            value,
            Source(
                Origin.FILE,
                f"hydra.sweeper.params.{name}: {text}",
                at("hydra", "sweeper", "params", name),
            ),
        )
    notes = ["command-line overrides (python app.py -m x=1,2) are not in the file: not counted"]
    refuse_step_budgets(draft, data, at)
    if "method" in data and "parameters" in data:
        notes.append(
            "method and parameters are read as the app's own keys, not as a W&B sweep (a "
            "sweep has no top-level hydra or defaults): keep a W&B sweep in a file of its own"
        )
    sweeper_trials(draft, sweeper, chosen, counts, at, notes, data.get("defaults"))
    launcher(draft, hydra, chosen, at, notes)
    pins = launcher_pins(mapping(hydra.get("launcher")), at, notes)
    inclusive = chosen.get("hydra/sweeper") == "optuna" and (
        chosen.get("hydra/sweeper/sampler") != "grid"
    )
    epochs = epochs_of(draft, data, params, at, inclusive)
    study = sweeper.get("study_name") or mapping(hydra.get("job")).get("name")
    if isinstance(study, str) and study:
        draft[("metadata", "name")] = Traced(
            study, Source(Origin.FILE, "the study or job name", at("hydra"))
        )
    return Mapped(
        draft,
        _facts(doc),
        tuple(notes),
        point=hydra_point(doc),
        native=_NATIVE,
        spell=lambda path, value: (
            fewer_epochs(epochs, value)
            if path == ("workload", "max_epochs")
            else _spell(path, value, chosen, mapping(hydra.get("launcher")))
        ),
        pinned=pins,
    )


def _facts(doc: LoadedDoc) -> FactMap:
    """The ``x-budget-gate:`` key or the ``# x-budget-gate:`` comment block, not both."""
    key, comment = block_facts(doc), comment_facts(doc)
    if key and comment:
        raise InputError(
            f"both an {EXTENSION_KEY} key and a {COMMENT} comment block",
            location=doc.source_map.locate((EXTENSION_KEY,), key=True),
            hint="keep one of them",
        )
    return key or comment


_NATIVE = {
    "gpus_per_trial": "hydra.launcher.gpus_per_node: N with the Submitit launcher",
    "max_epochs": "trainer.max_epochs: N (or epochs: N)",
}


def _spell(
    path: tuple[str | int, ...], value: Any, chosen: dict[str, str], launcher: dict[str, Any]
) -> str | None:
    """A spec edit as a change of the config's own keys, where it has them."""
    optuna = chosen.get("hydra/sweeper") == "optuna"
    submitit = chosen.get("hydra/launcher", "").startswith("submitit")
    nodes = launcher.get("nodes", 1) if isinstance(launcher.get("nodes", 1), int) else 1
    match path:
        case ("search", "max_trials") if optuna:
            return f"hydra.sweeper.n_trials: {value}"
        case ("search", "max_concurrent_trials") if optuna:
            return f"hydra.sweeper.n_jobs: {value}"
        case ("search", "max_concurrent_trials") if submitit:
            return f"hydra.launcher.array_parallelism: {value}"
        case ("search", "parameters", str(name), "values") if isinstance(value, list):
            return f"hydra.sweeper.params.{name}: {','.join(str(v) for v in value)}"
        case ("search", "strategy") if optuna and value in _SAMPLER_OF:
            return f"override hydra/sweeper/sampler: {_SAMPLER_OF[value]} in defaults"
        case ("resources", "gpus_per_trial") if submitit and value % nodes == 0:
            return f"hydra.launcher.gpus_per_node: {value // nodes}"
        case ("stopping", "max_trial_hours") if submitit:
            requeues = str(launcher.get("max_num_timeout", 0)).strip()  # held once per requeue
            held = 1 + (int(requeues) if requeues.isascii() and requeues.isdigit() else 0)
            return f"hydra.launcher.timeout_min: {math.floor(value * 60 / held)}"
    return None


_SAMPLER_OF = {"random": "random", "bayesian": "tpe", "grid": "grid"}
