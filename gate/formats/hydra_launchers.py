"""A Hydra multirun's launcher: how many jobs run at once, and the GPUs and time of each.

The basic launcher runs one job at a time; Submitit runs ``array_parallelism`` (default
256) with ``gpus_per_node`` (or ``gpus_per_task`` × ``tasks_per_node``, or Slurm's ``gres``)
× ``nodes`` GPUs each, held up to ``timeout_min`` (default 60) × (1 + ``max_num_timeout``
requeues); joblib runs ``n_jobs``; Ray gives each job ``ray.remote.num_gpus`` (a fraction as a
whole GPU), and a ``ray_aws`` cluster of the file's own is refused. Other launchers run jobs
in parallel without saying how many in the file, and one that names GPUs is refused.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gate.errors import InputError
from gate.formats.extension import COMMENT
from gate.formats.hydra_setup import refuse_setup_lines
from gate.formats.model import Draft, Origin, Source, Traced, dotted, mapping

SUBMITIT_TIMEOUT_MIN = 60
"""``BaseQueueConf.timeout_min`` (hydra_plugins/hydra_submitit_launcher/config.py)."""
SUBMITIT_ARRAY_PARALLELISM = 256
"""``SlurmQueueConf.array_parallelism``: Submitit's jobs at once unless the file says."""
SUBMITIT_MAX_NUM_TIMEOUT = 0
"""``SlurmQueueConf.max_num_timeout``: the launcher requeues no timed-out job unless told."""


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


def launcher(
    draft: Draft, hydra: dict[str, Any], chosen: dict[str, str], at: Any, notes: list[str]
) -> None:
    """What the chosen launcher gives a job: GPUs, a time limit, jobs at once."""
    config = mapping(hydra.get("launcher"))
    name = chosen.get("hydra/launcher", "basic")
    if name == "joblib":
        _joblib(draft, config, chosen, at)
        return
    if name in ("ray", "ray_aws"):
        if name == "ray_aws":
            _refuse_ray_cluster(config, at)
        _ray(draft, config, at)
        return
    if not name.startswith("submitit"):
        _refuse_unread_gpus(name, config, ("hydra", "launcher"), at)
        return
    _refuse_submitit_allocations(name, config, at)
    _refuse_unread_parameters(config, at)
    refuse_setup_lines(config, at)
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
    _held_at_most(draft, config, at, notes)
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


def _held_at_most(draft: Draft, config: dict[str, Any], at: Any, notes: list[str]) -> None:
    """The stop: ``timeout_min``, once for the job and once per requeue it times out into.

    Submitit requeues a job that times out ``max_num_timeout`` times (the launcher's job is
    checkpointable), so one trial may hold its GPUs ``timeout_min`` × (1 + requeues).
    """
    timeout = _launcher_count(config, "timeout_min", at)  # "600" too: Hydra casts it
    if timeout == 0:
        raise InputError(
            "hydra.launcher.timeout_min is 0, which Slurm takes as no time limit",
            location=at("hydra", "launcher", "timeout_min"),
            hint="write the most minutes a job may run at timeout_min",
        )
    minutes = SUBMITIT_TIMEOUT_MIN if timeout is None else timeout
    shown = (
        f"hydra.launcher.timeout_min {timeout}"
        if timeout is not None
        else f"Submitit's default timeout_min {SUBMITIT_TIMEOUT_MIN}"
    )
    requeues = _launcher_count(config, "max_num_timeout", at) or SUBMITIT_MAX_NUM_TIMEOUT
    if requeues:
        shown += f" × (1 + max_num_timeout {requeues} requeues)"
        notes.append(
            f"hydra.launcher.max_num_timeout: {requeues} requeues a job that times out, so "
            f"a trial may hold its GPUs {requeues + 1} × timeout_min: the stop priced is that "
            "long, and assumes each requeue resumes from the job's checkpoint"
        )
    where = "max_num_timeout" if requeues else "timeout_min"
    source = (
        Source(Origin.FILE, shown, at("hydra", "launcher", where))
        if timeout is not None or requeues
        else Source(Origin.ENGINE, shown, at("defaults"))
    )
    draft[("stopping", "max_trial_hours")] = Traced(minutes * (1 + requeues) / 60, source)


def _refuse_ray_cluster(config: dict[str, Any], at: Any) -> None:
    """Refuse a ``ray_aws`` cluster of the file's own: its machines are what AWS bills.

    Its node types (``InstanceType``, ``resources: {GPU: 8}``, ``min_workers``) and the head
    node run whatever each job's ``num_gpus`` asks for; budget-gate prices the declared
    accelerator × ``num_gpus`` and does not price AWS instance types.
    """
    cluster = mapping(config.get("ray")).get("cluster")
    if cluster in (None, {}):
        return
    raise InputError(
        "hydra.launcher.ray.cluster: the ray_aws launcher brings up this cluster, whose "
        "machines budget-gate does not price (it prices the declared accelerator × num_gpus)",
        location=at("hydra", "launcher", "ray", "cluster", key=True),
        hint="launch the sweep through SkyPilot (its resources are read), or use the ray "
        "launcher on a cluster you price, or write the experiment as a budget-gate spec",
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


def _refuse_unread_gpus(name: str, node: Any, path: tuple[str, ...], at: Any) -> None:
    """Refuse a launcher budget-gate does not read when it asks for GPUs.

    Read as no GPU, the declared ``gpus_per_trial`` would be believed.
    """
    for key, value in node.items() if isinstance(node, dict) else ():
        here = (*path, str(key))
        if _GPU_KEY.search(str(key)) and value not in (None, 0, "", False):
            raise InputError(
                f"{'.'.join(here)}: the {name} launcher's GPUs, which budget-gate does not read",
                location=at(*here),
                hint="use the basic, joblib, Submitit or Ray launcher, or write the experiment "
                "as a budget-gate spec",
            )
        _refuse_unread_gpus(name, value, here, at)


_ALLOCATES = re.compile(
    r"^-{0,2}(?:gpus(?:[-_]per[-_]\w+)?|gres|tres[-_]per[-_]\w+|g)(?:=.*)?$",
    re.IGNORECASE | re.DOTALL,
)
"""Slurm options that allocate GPUs: ``gpus``, ``gpus-per-task``, ``gres``, ``tres-per-task``,
``-G``; not ``gpu-bind``, ``gpu-freq``, ``mem-per-gpu`` or ``cpus-per-gpu``, which qualify."""


def _refuse_submitit_allocations(name: str, config: dict[str, Any], at: Any) -> None:
    """Refuse GPUs Submitit allocates where they are not read.

    Its ``additional_parameters`` (``gres: gpu:8``, ``tres-per-task: gres/gpu:8``) and
    ``srun_args`` (``--gpus=8``): read as no GPU, the declared ``gpus_per_trial`` would be believed.
    """
    extra = config.get("additional_parameters")
    found: list[tuple[tuple[str, str | int], Any]] = [
        (("additional_parameters", str(key)), value)
        for key, value in (extra.items() if isinstance(extra, dict) else ())
        if _ALLOCATES.match(str(key)) and value not in (None, 0, "", False)
    ]
    args = config.get("srun_args")
    found += [
        (("srun_args", i), arg)
        for i, arg in enumerate(args if isinstance(args, list) else [])
        if isinstance(arg, str) and arg.startswith("-") and _ALLOCATES.match(arg)
    ]
    if found:
        where, value = found[0]
        shown = dotted(("hydra", "launcher", *where))
        raise InputError(
            f"{shown}: {value} allocates the {name} launcher's GPUs where budget-gate does not "
            "read them",
            location=at("hydra", "launcher", *where),
            hint="ask for GPUs by gpus_per_node, gpus_per_task or gres (gpu:N), or write the "
            "experiment as a budget-gate spec",
        )


_HARMLESS_OPTIONS = (
    "account qos partition constraint exclude reservation comment job_name wckey mail_type "
    "mail_user output error open_mode chdir signal dependency begin deadline priority "
    "nice no_requeue licenses mem mem_per_cpu mem_per_gpu cpus_per_task cpus_per_gpu gpu_bind "
    "gpu_freq cpu_freq cpu_bind mem_bind hint distribution threads_per_core"
)
_HARMLESS = frozenset(_HARMLESS_OPTIONS.split())
"""sbatch options that set no node, task, GPU, array or time count: the only ones passed on.

``qos`` and ``partition`` bound the time a job may ask for; the time asked is ``--time``.
Not ``export``, which may hand the job ``EPOCHS=1000``."""
_INSTEAD = {
    "nodes": "nodes",
    "nodelist": "nodes",
    "ntasks_per_node": "tasks_per_node",
    "ntasks": "tasks_per_node",
    "time": "timeout_min",
    "array": "array_parallelism",
    "exclusive": "gpus_per_node (a whole node's GPUs)",
}


def _refuse_unread_parameters(config: dict[str, Any], at: Any) -> None:
    """Refuse an ``additional_parameters`` key that is not known to leave the cost alone.

    Submitit writes them over its own sbatch options (``parameters.update``), dashes and
    underscores alike: ``{nodes: 16}`` ran 16 nodes where ``nodes: 1`` was priced.
    """
    extra = config.get("additional_parameters")
    for key in extra if isinstance(extra, dict) else ():
        option = str(key).lstrip("-").replace("-", "_").lower()
        if option in _HARMLESS:
            continue
        field = _INSTEAD.get(option)
        raise InputError(
            f"hydra.launcher.additional_parameters.{key}: Submitit writes it over the "
            "launcher's own sbatch options, and budget-gate does not read it"
            + (f" (it sets what hydra.launcher.{field} sets)" if field else ""),
            location=at("hydra", "launcher", "additional_parameters", key, key=True),
            hint=f"write hydra.launcher.{field} instead"
            if field
            else "remove it: additional_parameters may hold only options that set no count "
            "(account, qos, mail_type, comment, job_name, …), or write the experiment as a "
            "budget-gate spec",
        )


GRES = re.compile(r"(?:^|,)gpu(?::([\w.-]+))?:(\d+)")
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
    if isinstance(gres, str) and (match := GRES.search(gres)):
        found.append((int(match.group(2)), f"gres {gres}"))
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
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
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
