"""What a config merged into a task's machines hands them past its resources (pure).

SkyPilot merges configs into what it launches: pod configs into its pods
(``kubernetes.pod_config``, ``context_configs.<ctx>.pod_config``, ``ssh.pod_config``) and
``slurm.sbatch_options`` (global < cluster < partition < the task's ``config:``) into its
batch script. A container there that reaches every GPU of its node, or an ``#SBATCH`` option
that asks for GPUs or repeats or widens the job, is what ``resources.accelerators`` would not
show. The whole tree is searched, whatever level SkyPilot reads it at: a level it does not
read is refused with the rest (fail closed). Shared by ``budget-gate check`` of a task file
and the SkyPilot admin policy, which words the refusals each its own way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gate.errors import InputError
from gate.spec.devices import devices_in, reaches_every_gpu

SBATCH_KEY = "sbatch_options"
"""``slurm.sbatch_options``, at any level: each entry is written as an ``#SBATCH`` line."""
SBATCH_ALLOWED = frozenset(
    {
        "account",
        "A",
        "qos",
        "q",
        "comment",
        "mail-type",
        "mail-user",
        "wckey",
        "nice",
        "job-name",
        "output",
        "error",
        "open-mode",
        "no-requeue",
    }
)
"""``#SBATCH`` options that set no count: no GPUs, nodes, tasks, time, array or repeat.

NOTE: an allow-list, so that an option not known here (``--gpus-per-node``, ``--array``,
``--exclusive``, a GRES or TRES spelling, a long option's unique prefix such as ``--arr``,
which sbatch reads as ``--array``) is refused. sbatch reads an exact name before a prefix.
"""
_PLAIN_VALUE = re.compile(r"[\w.@:,+/%=-]*")
"""A value sbatch reads as one word: no space, quote or ``#`` that starts another option."""
_DEEPEST = 64
"""Deeper than any config; refused rather than read on."""


def reaching(node: Any, depth: int = 0) -> Iterator[str]:
    """How each mapping in a config tree (a container, wherever it is) reaches every GPU."""
    if depth > _DEEPEST:
        yield "is nested too deeply to read"
        return
    if isinstance(node, list):
        for item in node:
            yield from reaching(item, depth + 1)
    elif isinstance(node, dict):
        how = reaches_every_gpu(node)
        if how is not None:
            yield how
        for value in node.values():
            yield from reaching(value, depth + 1)


def sbatch_options(node: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every entry of every ``sbatch_options`` mapping in a config tree."""
    if depth > _DEEPEST:
        yield "(nested too deeply to read)", None
        return
    if isinstance(node, list):
        for item in node:
            yield from sbatch_options(item, depth + 1)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == SBATCH_KEY:
                options = value if isinstance(value, dict) else {"(not a mapping)": value}
                yield from ((str(k), v) for k, v in options.items())
            else:
                yield from sbatch_options(value, depth + 1)


def sbatch_problem(option: str, value: Any) -> str | None:
    """What is wrong with one ``#SBATCH`` option, or ``None`` (it sets no count)."""
    if value is None or value is False:
        return None  # NOTE: SkyPilot writes no line for these
    if option.replace("_", "-") not in SBATCH_ALLOWED:  # as SkyPilot writes it
        return "unread"
    if value is not True and not _PLAIN_VALUE.fullmatch(str(value)):
        return "spaced"
    return None


def refuse_task_config(config: Any, at: Any, path: tuple[str | int, ...] = ("config",)) -> None:
    """Refuse what a task's ``config:`` hands its machines past its resources.

    The same searches as the SkyPilot admission policy's: GPUs a pod config asks for
    (:func:`gate.spec.devices.devices_in`), a container that reaches every GPU of its node,
    an ``#SBATCH`` option that may ask for GPUs or repeat the job
    (above). ``path`` is where the config is: ``config``, or a resources block's
    ``_cluster_config_overrides``, which SkyPilot merges the same way.
    """
    where = ".".join(str(part) for part in path)
    devices = sorted(set(devices_in(config)))
    if devices:
        raise InputError(
            f"{where}: {', '.join(devices)}: GPUs asked for in the task's config (a pod config), "
            "which budget-gate does not read",
            location=at(*path),
            hint="ask for GPUs in resources.accelerators",
        )
    for how in reaching(config):
        raise InputError(
            f"{where}: a container in a pod config {how}, which reaches every GPU of its node "
            "without asking for them (the NVIDIA container toolkit hands them over)",
            location=at(*path),
            hint="drop it, and ask for GPUs in resources.accelerators",
        )
    for option, value in sbatch_options(config):
        if sbatch_problem(option, value) is not None:
            raise InputError(
                f"{where}: slurm.sbatch_options {option}: {str(value)[:40]!r} may ask for GPUs "
                "or run the job again or wider, which budget-gate does not count",
                location=at(*path),
                hint="ask for GPUs in resources.accelerators and nodes in num_nodes; "
                f"sbatch_options may set only {', '.join(sorted(SBATCH_ALLOWED))}, one word each",
            )
