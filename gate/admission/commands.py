"""What a Workload's containers run, read as ``budget-gate check`` reads a task's commands.

Kueue admits pods, not programs: a container cleared for a spec of 10 epochs may run
``python train.py --epochs 1000``, a step budget, a repeater (Hydra's multirun, ``wandb
agent``) or ``torchrun --max-restarts 1000``. Each container's ``command`` and ``args`` (an
argv, a script where a shell runs one) and its plain ``env`` values are read with the
readers of a SkyPilot task (:func:`gate.formats.skypilot.task_epochs`,
:func:`gate.formats.command_steps.refuse_task_steps`); the kubelet's ``$(NAME)`` is that
``env``'s value, as the kubelet expands it. What they refuse, or epochs past the spec's, is
a reason to reject the Workload.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

from gate.errors import InputError
from gate.spec.experiment import Experiment

Run = tuple[str, str, tuple[tuple[str, str], ...]]
"""One container's run: its name, its argv as a shell line, its plain ``env`` values."""
_KUBELET_VARIABLE = re.compile(r"(\$+)\(([A-Za-z_][A-Za-z0-9_]*)\)")


def container_runs(pod: Mapping[str, Any]) -> tuple[Run, ...]:
    """Each container's and init container's run (a template with none: nothing)."""
    return tuple(
        _run(container)
        for key in ("initContainers", "containers")
        for container in _listed(pod.get(key))
        if isinstance(container, Mapping)
    )


def _run(container: Mapping[str, Any]) -> Run:
    env = {
        str(e["name"]): str(e["value"])
        for e in _listed(container.get("env"))
        if isinstance(e, Mapping) and "name" in e and isinstance(e.get("value"), str | int)
    }
    argv = [str(w) for w in (*_listed(container.get("command")), *_listed(container.get("args")))]
    words = [_KUBELET_VARIABLE.sub(lambda m: _expand(m, env), word) for word in argv]
    return str(container.get("name", "(unnamed)")), shlex.join(words), tuple(env.items())


def _expand(match: re.Match[str], env: Mapping[str, str]) -> str:
    """``$(NAME)`` as the kubelet expands it: the env's value; ``$$(NAME)`` stays literal."""
    dollars, name = match.group(1), match.group(2)
    if len(dollars) % 2 == 0 or name not in env:
        return match.group(0)
    return dollars[:-1] + env[name]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def command_refusal(
    key: str, runs: Iterator[tuple[str, Run]], spec: Experiment, relative: str, retries: int
) -> str | None:
    """Why a container runs more than ``spec`` was priced with, or ``None``.

    ``runs`` pairs each pod set's name with a container's run; ``retries`` is the policy's
    ``reliability.max_retries`` (torchrun's restarts up to it are priced).
    """
    from gate.formats.command_steps import refuse_task_steps
    from gate.formats.skypilot import task_epochs

    most = spec.workload.max_epochs
    for pod_set, (name, script, env) in runs:
        data = {"run": script, "envs": dict(env)}
        where = f"workload {key}: container {name} of pod set {pod_set}"
        try:
            refuse_task_steps(data, _nowhere)
            found = task_epochs(data, _nowhere, restarts=retries)
        except InputError as exc:
            return f"{where}: {exc.problem.message} — {exc.problem.hint}"
        if found is not None and found[0] > most:
            return (
                f"{where} trains {found[0]} epochs ({found[1]}), but {relative} is cleared for "
                f"{most} (workload.max_epochs) — train at most {most} epochs, or change the spec "
                f"and clear it again (budget-gate check {relative})"
            )
    return None


def _nowhere(*path: object) -> None:
    """No file position: a Workload is no file (the container is named instead)."""
    return None
