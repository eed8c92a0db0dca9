"""What a SkyPilot config merged into a task's machines may ask for past its resources.

SkyPilot merges configs into what it launches: pod configs into its pods
(``kubernetes.pod_config``, a context's ``context_configs.<ctx>.pod_config``,
``ssh.pod_config``), ``slurm.sbatch_options`` (global < cluster < partition < the task's
own ``config:``) into its batch script, from the task's ``config:`` and from the request's
SkyPilot config (the client's own, merged with the server's). GPUs asked for there, or
reached past the device plugin, or a Slurm job repeated or widened there, are what
``resources.accelerators`` would not show: the gate would see a CPU task needing no spec.
The whole tree of each config is searched, whatever level SkyPilot reads it at (a
workspace's too): a level it does not read is refused with the rest (fail closed).
Reads plain data; imports no SkyPilot.
"""

from __future__ import annotations

from typing import Any

from gate.integrations.skypilot_spec import Rejection
from gate.spec.devices import devices_in
from gate.spec.machine_configs import SBATCH_ALLOWED, reaching, sbatch_options, sbatch_problem


def refuse_config_reach(name: str, configs: list[tuple[str, Any]]) -> None:
    """Refuse what each ``(where, config)`` hands the task's machines past its resources.

    Raises:
        Rejection: GPUs asked for in a pod config, a container that reaches every GPU of its
            node, or an ``#SBATCH`` option that may ask for GPUs or repeat or widen the job.
    """
    for where, config in configs:
        devices = sorted(set(devices_in(config)))
        if devices:
            raise Rejection(
                f"task {name!r} asks for {', '.join(devices)} through a pod config in "
                f"{where}, which budget-gate does not count — ask for the GPUs in "
                "resources.accelerators (e.g. H100:8) and name the spec"
            )
        for how in reaching(config):
            raise Rejection(
                f"task {name!r} has a container in a pod config in {where} that {how}, which "
                "reaches every GPU of its node without asking for them (the NVIDIA container "
                "toolkit hands them over) — drop it, and ask for the GPUs in "
                "resources.accelerators (e.g. H100:8) and name the spec"
            )
        for option, value in sbatch_options(config):
            _check_sbatch(name, where, option, value)


def _check_sbatch(name: str, where: str, option: str, value: Any) -> None:
    """Refuse an ``#SBATCH`` option not known to set no count, or a value that hides one."""
    problem = sbatch_problem(option, value)
    if problem == "unread":
        raise Rejection(
            f"task {name!r} sets slurm.sbatch_options {option} in {where}, which may ask for "
            "GPUs or run the job again or wider (budget-gate does not count it) — drop it: ask "
            "for GPUs in resources.accelerators (e.g. H100:8) and nodes in num_nodes, and name "
            f"the spec; sbatch_options may set only {', '.join(sorted(SBATCH_ALLOWED))}"
        )
    if problem == "spaced":
        raise Rejection(
            f"task {name!r} sets slurm.sbatch_options {option}: {str(value)!r} in {where}, "
            "whose space, quote or # sbatch would read as options of their own — write one "
            "word (letters, digits and . @ : , + / % = -)"
        )
