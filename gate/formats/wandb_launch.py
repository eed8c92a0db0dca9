"""A W&B Launch sweep's ``launch`` and ``scheduler`` keys: what ``wandb launch-sweep`` runs.

``wandb launch-sweep`` takes ``scheduler`` and ``launch`` out of the sweep config: it
creates the sweep with ``scheduler.settings.method`` as its method when that is given (so
``method: grid`` beside ``settings: {method: random}`` runs a random sweep), and a
``scheduler.job`` of the user's replaces W&B's own scheduler (the method becomes
``custom``: that job's code decides every run). Each run is queued with
``launch.resource_args`` (a Kubernetes pod asking for ``nvidia.com/gpu: 8``, a SageMaker
``InstanceType``, a Vertex ``accelerator_count``) and ``template_variables``, and the
scheduler itself runs with ``scheduler.resource_args``: machines budget-gate does not read,
so any of them is refused, never priced as the ``# x-budget-gate:`` block's GPUs.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from gate.errors import InputError
from gate.formats.extension import COMMENT
from gate.formats.model import dotted, mapping
from gate.spec.loader import DataPath

_UNREAD = ("resource_args", "template_variables")
"""What a launch queue's run (or the scheduler) is given on top of the queue's own config."""


def refuse_launch(data: dict[str, Any], at: Any) -> None:
    """Refuse a custom scheduler job and the resources a Launch sweep's runs are given."""
    scheduler = mapping(data.get("scheduler"))
    if scheduler.get("job") not in (None, ""):
        raise InputError(
            f"scheduler.job: {scheduler['job']} replaces W&B's scheduler with a job of your "
            "own (the sweep's method becomes custom): its code decides every run, which "
            "budget-gate does not read",
            location=at("scheduler", "job"),
            hint="remove scheduler.job to let W&B's scheduler run the sweep's method, or "
            "write the experiment as a budget-gate spec",
        )
    for part in ("launch", "scheduler"):
        for key in _UNREAD:
            value = mapping(data.get(part)).get(key)
            if value in (None, {}, ""):
                continue
            whose = "each run" if part == "launch" else "the sweep's scheduler"
            raise InputError(
                f"{part}.{key} gives {whose} resources of a launch queue (GPUs, an instance "
                "type, an accelerator count) that budget-gate does not read: priced as the "
                f"{COMMENT} block's GPUs they could be many times more",
                location=at(part, key),
                hint=f"remove {part}.{key} and let the queue's own config give the resources "
                f"the {COMMENT} block names, or write the experiment as a budget-gate spec",
            )


def sweep_method(
    data: dict[str, Any], methods: Container[str], at: Any
) -> tuple[str, DataPath, str]:
    """The method the sweep runs, where it is written, and how the report says so.

    ``scheduler.settings.method`` when given (``wandb launch-sweep`` writes it over the
    file's ``method``), else ``method``; one W&B does not know is refused.
    """
    settings = mapping(mapping(data.get("scheduler")).get("settings"))
    where: DataPath = ("method",)
    if settings.get("method") is not None:
        where = ("scheduler", "settings", "method")
    method = settings["method"] if len(where) > 1 else data.get("method")
    if not isinstance(method, str) or method not in methods:
        raise InputError(
            f"{dotted(where)} {method!r} is not a W&B search method",
            location=at(*where),
            hint="use grid, random or bayes",
        )
    said = f"{dotted(where)}: {method}"
    if len(where) > 1:
        said += " (wandb launch-sweep runs it as the sweep's method)"
    return method, where, said
