"""A Hydra multirun's launcher: how many jobs run at once, and the GPUs and time of each.

The basic launcher runs one job at a time; Submitit runs ``array_parallelism`` (default
256) with ``gpus_per_node`` (or ``gpus_per_task`` × ``tasks_per_node``, or Slurm's ``gres``)
× ``nodes`` GPUs each, ended after ``timeout_min`` (default 60); joblib runs ``n_jobs``; Ray
gives each job ``ray.remote.num_gpus`` (a fraction as a whole GPU). Other launchers run jobs
in parallel without saying how many in the file, and one that names GPUs is refused.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gate.errors import InputError
from gate.formats.extension import COMMENT
from gate.formats.model import Draft, Origin, Source, Traced, mapping

SUBMITIT_TIMEOUT_MIN = 60
"""``BaseQueueConf.timeout_min`` (hydra_plugins/hydra_submitit_launcher/config.py)."""
SUBMITIT_ARRAY_PARALLELISM = 256
"""``SlurmQueueConf.array_parallelism``: Submitit's jobs at once unless the file says."""


def basic_sweeper(draft: Draft, chosen: dict[str, str], at: Any, notes: list[str]) -> None:
    """The basic sweeper: every combination of params, as many at once as its launcher runs."""
    where = at("hydra", "sweeper")
    draft[("search", "strategy")] = Traced(
        "grid", Source(Origin.FILE, "the basic sweeper: every combination of params", where)
    )
    chosen_launcher = chosen.get("hydra/launcher", "basic")
    if chosen_launcher == "basic":
        draft[("search", "max_concurrent_trials")] = Traced(
            1, Source(Origin.ENGINE, "the basic launcher runs one job at a time", where)
        )
        notes.append("the basic launcher runs one job at a time")
    elif chosen_launcher.startswith("submitit"):
        draft[("search", "max_concurrent_trials")] = Traced(
            SUBMITIT_ARRAY_PARALLELISM,
            Source(
                Origin.ENGINE,
                f"Submitit's default array_parallelism {SUBMITIT_ARRAY_PARALLELISM}",
                at("defaults"),
            ),
        )
    elif chosen_launcher != "joblib":  # joblib's n_jobs is read with the launcher
        notes.append(
            f"the {chosen_launcher} launcher runs jobs in parallel, and the file does not say "
            f"how many at once ({COMMENT} {{max_concurrent_trials: N}} says it)"
        )


def launcher(draft: Draft, hydra: dict[str, Any], chosen: dict[str, str], at: Any) -> None:
    """What the chosen launcher gives a job: GPUs, a time limit, jobs at once."""
    config = mapping(hydra.get("launcher"))
    name = chosen.get("hydra/launcher", "basic")
    if name == "joblib":
        _joblib(draft, config, chosen, at)
        return
    if name in ("ray", "ray_aws"):
        _ray(draft, config, at)
        return
    if not name.startswith("submitit"):
        _refuse_unread_gpus(name, config, ("hydra", "launcher"), at)
        return
    unread = {k: v for k, v in config.items() if k not in _SUBMITIT_READ}
    _refuse_unread_gpus(name, unread, ("hydra", "launcher"), at)
    nodes = _launcher_count(config, "nodes", at) or 1
    per_node, shown = _gpus_per_node(config, at)
    if per_node:
        draft[("resources", "gpus_per_trial")] = Traced(
            per_node * nodes,
            Source(
                Origin.FILE,
                f"hydra.launcher {shown} × nodes {nodes}",
                at("hydra", "launcher", shown.split()[0]),
            ),
        )
    timeout = config.get("timeout_min")
    source = (
        Source(
            Origin.FILE,
            f"hydra.launcher.timeout_min {timeout}",
            at("hydra", "launcher", "timeout_min"),
        )
        if timeout is not None
        else Source(
            Origin.ENGINE, f"Submitit's default timeout_min {SUBMITIT_TIMEOUT_MIN}", at("defaults")
        )
    )
    minutes = timeout if isinstance(timeout, (int, float)) else SUBMITIT_TIMEOUT_MIN
    draft[("stopping", "max_trial_hours")] = Traced(minutes / 60, source)
    parallel = _launcher_count(config, "array_parallelism", at)
    if (
        parallel is not None
        and ("search", "max_concurrent_trials") in draft
        and draft[("search", "max_concurrent_trials")].source.origin is Origin.ENGINE
        and chosen.get("hydra/sweeper") != "optuna"
    ):
        draft[("search", "max_concurrent_trials")] = Traced(
            parallel,
            Source(
                Origin.FILE,
                "hydra.launcher.array_parallelism",
                at("hydra", "launcher", "array_parallelism"),
            ),
        )


def _ray(draft: Draft, config: dict[str, Any], at: Any) -> None:
    """Ray's launcher gives each job the GPUs of ``ray.remote`` (Ray's ``num_gpus``)."""
    where = ("hydra", "launcher", "ray", "remote", "num_gpus")
    value = mapping(mapping(config.get("ray")).get("remote")).get("num_gpus")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e6:
        raise InputError(
            f"hydra.launcher.ray.remote.num_gpus is {value!r}, not a number of GPUs",
            location=at(*where),
            hint="write num_gpus: N",
        )
    if value > 0:
        gpus = math.ceil(value)  # NOTE: a share of a GPU still holds one: the worst case
        draft[("resources", "gpus_per_trial")] = Traced(
            gpus, Source(Origin.FILE, f"hydra.launcher.ray.remote.num_gpus {value}", at(*where))
        )


_GPU_KEY = re.compile(r"gpu|gres", re.IGNORECASE)
_SUBMITIT_READ = frozenset(
    {"gpus_per_node", "gpus_per_task", "tasks_per_node", "gres", "cpus_per_gpu", "mem_per_gpu"}
)
"""Submitit's keys that are read (or only qualify the GPUs read: CPUs and memory per GPU);
GPUs asked for anywhere else (``additional_parameters: {gres: gpu:8}``, ``srun_args``) are
refused."""


def _refuse_unread_gpus(name: str, node: Any, path: tuple[str | int, ...], at: Any) -> None:
    """Refuse GPUs a launcher asks for where budget-gate does not read them.

    A key that names GPUs, or a string in a list that does (``srun_args: [--gpus=8]``): read
    as no GPU, the declared ``gpus_per_trial`` would be believed.
    """
    if isinstance(node, dict):
        items: list[tuple[str | int, Any]] = [(str(k), v) for k, v in node.items()]
    else:
        items = list(enumerate(node)) if isinstance(node, list) else []
    for key, value in items:
        here = (*path, key)
        named = _GPU_KEY.search(key) if isinstance(key, str) else None
        said = isinstance(key, int) and isinstance(value, str) and _GPU_KEY.search(value)
        if (named and value not in (None, 0, "", False)) or said:
            raise InputError(
                f"{'.'.join(map(str, here))}: the {name} launcher's GPUs, asked for where "
                "budget-gate does not read them",
                location=at(*here),
                hint="ask for GPUs by gpus_per_node, gpus_per_task or gres with the Submitit "
                "launcher (or use the basic, joblib or Ray launcher), or write the experiment "
                "as a budget-gate spec",
            )
        _refuse_unread_gpus(name, value, here, at)


_GRES = re.compile(r"(?:^|,)gpu(?::[\w.-]+)?:(\d+)")
"""Slurm's generic resources: ``gpu:8`` or ``gpu:a100:8`` (per node)."""


def _gpus_per_node(launcher: dict[str, Any], at: Any) -> tuple[int, str]:
    """A node's GPUs, the most of what Submitit asks for them by: and how the file says it."""
    found = [(0, "")]
    gpus = _launcher_count(launcher, "gpus_per_node", at)
    if gpus:
        found.append((gpus, f"gpus_per_node {gpus}"))
    per_task = _launcher_count(launcher, "gpus_per_task", at)
    if per_task:
        tasks = _launcher_count(launcher, "tasks_per_node", at) or 1
        found.append((per_task * tasks, f"gpus_per_task {per_task} × tasks_per_node {tasks}"))
    gres = launcher.get("gres")
    if isinstance(gres, str) and (match := _GRES.search(gres)):
        found.append((int(match.group(1)), f"gres {gres}"))
    elif gres not in (None, "") and _GPU_KEY.search(str(gres)):
        raise InputError(
            f"hydra.launcher.gres is {gres!r}: its GPUs are not in a form budget-gate reads",
            location=at("hydra", "launcher", "gres"),
            hint="write gres: gpu:N (or gpu:TYPE:N), or gpus_per_node: N",
        )
    return max(found)


def _launcher_count(launcher: dict[str, Any], key: str, at: Any) -> int | None:
    """A whole number the launcher config gives (``"8"`` too, as Hydra's schema casts it)."""
    value = launcher.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InputError(
        f"hydra.launcher.{key} is {value!r}, not a whole number",
        location=at("hydra", "launcher", key),
        hint=f"write {key}: N",
    )


def _joblib(draft: Draft, launcher: dict[str, Any], chosen: dict[str, str], at: Any) -> None:
    """The joblib launcher runs ``n_jobs`` jobs at once (default -1: one per CPU)."""
    n_jobs = launcher.get("n_jobs", -1)
    if not isinstance(n_jobs, int) or isinstance(n_jobs, bool) or n_jobs < 1:
        raise InputError(
            f"hydra.launcher.n_jobs is {n_jobs!r}{' (as many as CPUs)' if n_jobs == -1 else ''}"
            ": the jobs at once cannot be read",
            location=at("hydra", "launcher", "n_jobs") or at("defaults"),
            hint="give hydra.launcher.n_jobs: N",
        )
    if chosen.get("hydra/sweeper") != "optuna":
        draft[("search", "max_concurrent_trials")] = Traced(
            n_jobs,
            Source(Origin.FILE, "hydra.launcher.n_jobs", at("hydra", "launcher", "n_jobs")),
        )
