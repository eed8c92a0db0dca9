"""The GPU model a Hydra launcher pins its jobs to, and the reruns Ray adds: read or refused.

Submitit: a typed ``gres`` (``gpu:h200:1``), and a node feature or a partition that names a
GPU model (``constraint: h100``, ``partition: gpu-h100``: ``sbatch -C h100``). Ray:
``ray.remote.accelerator_type`` ("requires that the task run on a node with the specified
type of accelerator") and the custom resource it stands for, ``resources:
{"accelerator_type:H100": 0.001}``. Each pin must be the accelerator priced
(:func:`gate.formats.katib_nodes.refuse_other_models`). Ray reruns a task whose worker died
up to ``max_retries`` times (3 unless told), and with ``retry_exceptions`` one that raised:
more than Ray's default, for ever (-1), or a rerun of a job that raised, is refused.
"""

from __future__ import annotations

import re
from typing import Any

from gate.errors import InputError
from gate.formats.hydra_launchers import GRES
from gate.formats.model import mapping

"""Slurm's generic resources: ``gpu:8`` or ``gpu:a100:8`` (per node)."""
_MODEL_NAMES = (
    "A10 A10G A16 A30 A40 A100 A800 A6000 H20 H100 H200 H800 GH200 B100 B200 B300 GB200 GB300 "
    "L4 L20 L40 L40S T4 T4G V100 P100 P40 P4 K80 M60 MI100 MI210 MI250 MI250X MI300 MI300X "
    "MI325X MI355X RTX6000 RTX8000"
)
_MODELS = frozenset(_MODEL_NAMES.split())
"""GPU models a site's node feature or partition may name (a word of its own: ``gpu-h100``)."""
_WORDS = re.compile(r"[A-Za-z0-9]+")
RAY_MAX_RETRIES = 3
"""Ray's default ``max_retries`` for a task (``ray.remote``). It reruns a job only when its
worker dies (a node lost, as a spot preemption), not when the program fails: the estimate
prices neither (the policy's ``reliability`` stands for failures), so the default is left
as Ray's; more reruns, or reruns of a job that raises, are refused."""

Pin = tuple[str, str, Any]


def launcher_pins(config: dict[str, Any], at: Any, notes: list[str]) -> tuple[Pin, ...]:
    """The GPU models the launcher pins its jobs to, each with where the file says it."""
    pins: list[Pin] = []
    gres = config.get("gres")
    if isinstance(gres, str) and (match := GRES.search(gres)) and match.group(1):
        pins.append(("hydra.launcher.gres", match.group(1), at("hydra", "launcher", "gres")))
    extra = mapping(config.get("additional_parameters"))
    for key in ("constraint", "partition"):
        for path, value in (
            ((key,), config.get(key)),
            (("additional_parameters", key), extra.get(key)),
        ):
            if value in (None, ""):
                continue
            shown = "hydra.launcher." + ".".join(path)
            named = [w for w in _WORDS.findall(str(value)) if w.upper() in _MODELS]
            pins.extend((shown, model, at("hydra", "launcher", *path)) for model in named)
            notes.append(
                f"{shown}: {value} picks the nodes, which budget-gate does not price"
                + (": the accelerator priced must be theirs" if not named else "")
            )
    pins.extend(_ray_pins(config, at))
    return tuple(pins)


def _ray_pins(config: dict[str, Any], at: Any) -> list[Pin]:
    """Ray's ``accelerator_type``, as an option or as the custom resource it stands for."""
    remote = mapping(mapping(config.get("ray")).get("remote"))
    where = ("hydra", "launcher", "ray", "remote")
    pins: list[Pin] = []
    kind = remote.get("accelerator_type")
    if kind not in (None, ""):
        pins.append(
            (
                "hydra.launcher.ray.remote.accelerator_type",
                str(kind),
                at(*where, "accelerator_type"),
            )
        )
    for name in mapping(remote.get("resources")):
        if str(name).startswith("accelerator_type:"):
            model = str(name).split(":", 1)[1]
            pins.append(
                ("hydra.launcher.ray.remote.resources", model, at(*where, "resources", name))
            )
    _refuse_reruns(remote, where, at)
    return pins


def _refuse_reruns(remote: dict[str, Any], where: tuple[str, ...], at: Any) -> None:
    """Refuse Ray reruns past its default: each reruns the whole job from its start."""
    retries = remote.get("max_retries", RAY_MAX_RETRIES)
    counted = isinstance(retries, int) and not isinstance(retries, bool)
    if counted and 0 <= retries <= RAY_MAX_RETRIES:
        on_raise = remote.get("retry_exceptions") not in (None, False, [], 0) and retries > 0
        if not on_raise:
            return
        key, said = (
            "retry_exceptions",
            (f"reruns a job that raises up to {retries} times (max_retries), each from its start"),
        )
    else:
        key, said = (
            "max_retries",
            (
                f"is {retries!r}: Ray reruns a job whose worker dies that often"
                + (" (-1: for ever)" if retries == -1 else "")
                + f", each from its start, past the {RAY_MAX_RETRIES} Ray's default allows"
            ),
        )
    raise InputError(
        f"hydra.launcher.ray.remote.{key} {said}; budget-gate prices failures by the policy's "
        "reliability settings, not these reruns",
        location=at(*where, key),
        hint=f"set max_retries to at most {RAY_MAX_RETRIES} and retry_exceptions: false (or "
        "max_retries: 0), or write the experiment as a budget-gate spec",
    )
