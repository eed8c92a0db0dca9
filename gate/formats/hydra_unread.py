"""What Hydra resolves or instantiates in a sweep that budget-gate does not read: refused.

Hydra instantiates ``hydra.sweeper`` and ``hydra.launcher`` by their ``_target_`` class
(``Plugins._instantiate``), so a ``_target_`` other than the chosen sweeper's or launcher's
runs a class budget-gate does not read (a sweeper of 5 jobs priced as the basic grid of 2).
It resolves the sweeper's node against the whole config first (``instantiate`` calls
``OmegaConf.resolve``), so ``lr: ${lrs}`` with ``lrs: range(1,1000)`` sweeps 999 jobs: an
interpolation in a swept value, or in a sweeper or launcher setting budget-gate reads, is
refused, as one in an epochs key is.
"""

from __future__ import annotations

import re
from typing import Any

from gate.errors import InputError
from gate.formats.model import dotted, mapping

SWEEPER_CLASSES = {
    "basic": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
    "optuna": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper",
}
"""The ``_target_`` of each sweeper budget-gate reads (``BasicSweeperConf``, Optuna's)."""
_SUBMITIT = "hydra_plugins.hydra_submitit_launcher.submitit_launcher"
_RAY = "hydra_plugins.hydra_ray_launcher"
LAUNCHER_CLASSES = {
    "basic": "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
    "submitit_slurm": f"{_SUBMITIT}.SlurmLauncher",
    "submitit_local": f"{_SUBMITIT}.LocalLauncher",
    "joblib": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
    "ray": f"{_RAY}.ray_launcher.RayLauncher",
    "ray_aws": f"{_RAY}.ray_aws_launcher.RayAWSLauncher",
}
"""The ``_target_`` of each launcher's config (``SlurmQueueConf``, ``RayLauncherConf``, …)."""

_TEXT_KEY_NAMES = (
    "submitit_folder name comment job_name mail_user output error chdir study_name storage "
    "address seed"
)
_TEXT_KEYS = frozenset(_TEXT_KEY_NAMES.split())
"""Settings whose text names a place or a label and sets no count: an interpolation there
(Submitit's own ``submitit_folder: ${hydra.sweep.dir}/.submitit/%j``) is left alone."""
_INTERPOLATION = re.compile(r"(?<!\\)\$\{")
"""An interpolation OmegaConf resolves (``\\${X}`` is the text ``${X}``)."""


def refuse_unread(hydra: Any, chosen: dict[str, str], at: Any) -> None:
    """Refuse a ``_target_`` other than the chosen plugin's, and interpolations Hydra resolves."""
    if not isinstance(hydra, dict):
        _refuse_node(hydra, ("hydra",), at)
        return
    _refuse_overrides(hydra.get("overrides"), at)
    for part in ("sweeper", "launcher"):
        _refuse_node(hydra.get(part), ("hydra", part), at)
        _refuse_values(hydra.get(part), ("hydra", part), at)
    _refuse_node(mapping(hydra.get("sweeper")).get("params"), ("hydra", "sweeper", "params"), at)
    for part, classes in (("sweeper", SWEEPER_CLASSES), ("launcher", LAUNCHER_CLASSES)):
        target = mapping(hydra.get(part)).get("_target_")
        name = chosen.get(f"hydra/{part}", "basic")
        if target is None or target == classes.get(name):
            continue
        raise InputError(
            f"hydra.{part}._target_ is {target}: Hydra instantiates that class as the "
            f"{part}, not the {name} {part} budget-gate reads"
            + (f" ({classes[name]})" if name in classes else ""),
            location=at("hydra", part, "_target_"),
            hint=f"remove hydra.{part}._target_ and choose the {part} in the defaults list "
            f"(override hydra/{part}: ...), or write the experiment as a budget-gate spec",
        )


def _refuse_overrides(overrides: Any, at: Any) -> None:
    """Refuse overrides the file writes where Hydra keeps the command line's.

    NOTE: Hydra appends the command line's overrides to ``hydra.overrides.task``, and a
    sweeper sweeps that list: ``["seed=range(0,5)", "trainer.max_epochs=1000"]`` there ran
    10 jobs of 1,000 epochs where the file's sweep priced 2 of 2.
    """
    for key in ("task", "hydra"):
        if mapping(overrides).get(key) or (
            overrides is not None and not isinstance(overrides, dict)
        ):
            raise InputError(
                f"hydra.overrides.{key} holds overrides Hydra applies (and sweeps) as if given on "
                "the command line, which budget-gate does not read",
                location=at("hydra", "overrides", key) or at("hydra", "overrides"),
                hint="write them in the config (a swept value under hydra.sweeper.params), "
                "not under hydra.overrides",
            )


def _refuse_node(node: Any, path: tuple[str | int, ...], at: Any) -> None:
    """A node Hydra reads as a mapping, written as text: an interpolation it resolves."""
    if node is None or isinstance(node, dict):
        return
    raise InputError(
        f"{dotted(path)} is {node!r}, not a mapping: Hydra resolves an interpolation "
        "there, which budget-gate does not resolve",
        location=at(*path),
        hint=f"write {dotted(path)} as a mapping of its own keys in the file",
    )


def _refuse_values(
    node: Any, path: tuple[str | int, ...], at: Any, exempt: frozenset[str] = _TEXT_KEYS
) -> None:
    """Each value of the sweeper's or launcher's node that holds an interpolation."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _refuse_values(item, (*path, i), at, exempt)
        return
    for key, value in node.items() if isinstance(node, dict) else ():
        here: tuple[str | int, ...] = (*path, str(key))
        if key == "runtime_env":
            continue  # NOTE: its env_vars are read as the job's environment (epochs, steps)
        if isinstance(value, (dict, list)):  # NOTE: a swept value's key is no text setting
            _refuse_values(
                value, here, at, frozenset() if here[1:] == ("sweeper", "params") else exempt
            )
        elif isinstance(value, str) and _INTERPOLATION.search(value) and key not in exempt:
            shown = dotted(here)
            raise InputError(
                f"{shown} is {value}, an interpolation budget-gate does not resolve: Hydra "
                "resolves it against the whole config as it instantiates the sweeper or the "
                "launcher (lr: ${lrs} with lrs: range(1,1000) sweeps 999 jobs)",
                location=at(*here),
                hint=f"write the value itself at {shown}",
            )
