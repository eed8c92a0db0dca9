"""A step budget in a Hydra config, which trains past the epochs priced: refused.

Hugging Face's ``Trainer`` runs ``max_steps > 0`` over ``num_train_epochs`` ("overrides
num_train_epochs"), and Lightning with ``max_steps`` and no ``max_epochs`` trains until the
steps: ``training_args: {num_train_epochs: 1, max_steps: 10000000}`` trains thousands of
epochs where one was priced. A key named as a step budget
(:func:`gate.formats.command_steps.names_steps`: ``max_steps``, ``max_train_steps``,
``num_train_steps``, ``total_steps``, iterations alike; not a learning-rate schedule's,
``lr_scheduler.total_steps``) anywhere in the config, swept by
the sweeper (its every value, or inside a swept dict), or handed the job in its environment
(``hydra.job.env_set``, Ray's ``runtime_env``), is refused unless it is off: a number of at
most 0 (``-1``), in any spelling (``-1``, ``"-1"``, ``-1e0``), or null. Every other value is
refused, ``1e7``, ``'10000000'`` and an interpolation (``${steps}``, whose value budget-gate
does not resolve) alike.
"""

from __future__ import annotations

from typing import Any

from gate.errors import InputError
from gate.formats.command_steps import names_steps, steps_off
from gate.formats.hydra_sweeps import swept_dicts
from gate.formats.model import Draft, dotted, mapping, value_at
from gate.spec.facts import EXTENSION_KEY
from gate.spec.loader import DataPath

_MAX_DEPTH = 8
_SKIPPED = frozenset({"hydra", "defaults", EXTENSION_KEY})
_ENVS = (
    ("hydra", "job", "env_set"),
    ("hydra", "launcher", "ray", "remote", "runtime_env", "env_vars"),
    ("hydra", "launcher", "ray", "init", "runtime_env", "env_vars"),
)
_SAID = (
    "bounds the training by steps, past the epochs priced: the spec prices epochs, not "
    "steps (Hugging Face's Trainer runs max_steps over num_train_epochs; Lightning with "
    "max_steps and no max_epochs trains to the steps)"
)
_HINT = "give the training its epochs and remove the step budget, or set it to -1 (0 or less: off)"


def _off(value: Any) -> bool:
    """Whether a step budget's value turns it off: null, or a number of at most 0."""
    return value is None or steps_off(value)


def refuse_step_budgets(draft: Draft, data: dict[str, Any], at: Any) -> None:
    """Refuse a step budget the config, its sweep or the job's environment sets."""
    _refuse_keys(data, (), at)
    params = mapping(mapping(mapping(data.get("hydra")).get("sweeper")).get("params"))
    for name, text in params.items():
        key = f"hydra.sweeper.params.{name}"
        where = draft[("search", "parameters", name)].source.location
        swept = draft[("search", "parameters", name)].value
        path = tuple(str(name).lstrip("~+").split("."))
        if names_steps(".".join(path)) and not str(name).startswith("~"):
            given = [*swept.get("values", ()), *(swept[e] for e in ("low", "high") if e in swept)]
            for value in given:
                if not _off(value):
                    _refuse(f"{key}: {text} (the value {value!r})", where)
        for found in swept_dicts(str(text)):
            for inner, value in _leaves(found, path):
                if names_steps(".".join(inner)) and not _off(value):
                    _refuse(f"{'.'.join(inner)}: {value!r} in {key}, a swept dict,", where)
    _refuse_envs(data, at)


_OWN_ITERATIONS = ("sklearn.", "scipy.", "torch.optim.")
"""Classes whose ``max_iter`` bounds their own solver, not the training's epochs."""


def _refuse_keys(node: Any, path: tuple[str, ...], at: Any) -> None:
    """Each key of the config named as a step budget, at any depth (``hydra`` aside).

    An object a config instantiates from a solver's class (``_target_:
    sklearn.cluster.KMeans``, ``torch.optim.LBFGS``) keeps its iterations to itself.
    """
    if not isinstance(node, dict) or len(path) >= _MAX_DEPTH:
        return
    if str(node.get("_target_", "")).startswith(_OWN_ITERATIONS):
        return
    for key, value in node.items():
        here = (*path, str(key))
        if not path and str(key) in _SKIPPED:
            continue
        if names_steps(".".join(here)) and not isinstance(value, dict) and not _off(value):
            _refuse(f"{'.'.join(here)}: {value!r}", at(*here))
        _refuse_keys(value, here, at)


def _refuse_envs(data: dict[str, Any], at: Any) -> None:
    """A step budget the job's environment hands the program, or copies from the shell."""
    for where in _ENVS:
        for name, value in mapping(value_at(data, where)).items():
            if names_steps(str(name)) and not _off(value):
                _refuse(f"{'.'.join((*where, str(name)))}: {value!r}", at(*where, str(name)))
    copied = mapping(mapping(data.get("hydra")).get("job")).get("env_copy")
    for i, name in enumerate(copied if isinstance(copied, list) else []):
        if names_steps(str(name)):
            raise InputError(
                f"hydra.job.env_copy copies {name} from the launching shell, a step budget "
                "whose value is not in the file",
                location=at("hydra", "job", "env_copy", i),
                hint=_HINT,
            )


def refuse_group_step(path: DataPath, value: Any, where: Any, label: str) -> None:
    """Refuse a step budget a config group of the defaults list sets (``trainer: long``)."""
    if path[:1] != ("hydra",) and path and names_steps(dotted(path)) and not _off(value):
        _refuse(f"{label} in the defaults list sets {dotted(path)}: {value!r}, which", where)


def _leaves(given: dict[str, Any], path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    found: list[tuple[tuple[str, ...], Any]] = []
    for key, value in given.items():
        here = (*path, *str(key).split("."))
        found.extend(_leaves(value, here) if isinstance(value, dict) else [(here, value)])
    return found


def _refuse(shown: str, where: Any) -> None:
    raise InputError(f"{shown} {_SAID}", location=where, hint=_HINT)
