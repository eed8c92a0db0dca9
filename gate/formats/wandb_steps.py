"""A W&B sweep parameter that bounds the training by steps: refused.

W&B hands every parameter to the program as ``--NAME=VALUE`` (``${args}``), so a parameter
named as a step budget (``max_steps``, ``trainer.max_steps``, a mapping holding one) is the
program's ``--max_steps``: Hugging Face's Trainer runs it over the epochs, Lightning with no
``max_epochs`` trains to it. Any value it may take that is not off (a number of at most 0)
is refused, as in the command, a Hydra config and a SkyPilot task.
"""

from __future__ import annotations

from typing import Any

from gate.errors import InputError
from gate.formats.command_steps import names_steps, steps_off
from gate.formats.model import mapping, value_at
from gate.formats.wandb_parameters import Found

_HINT = "give the runs their epochs and drop the parameter, or set it to -1 (0 or less: off)"


def refuse_step_parameters(params: Found, data: dict[str, Any], at: Any) -> None:
    """Refuse a parameter (or a mapping a parameter hands) that sets a step budget."""
    for name, (_, _, path) in sorted(params.items()):
        config = mapping(value_at(data, path))
        given = [config.get("value"), *_listed(config.get("values"))]
        given += [config[end] for end in ("min", "max") if end in config]
        for value in given:
            for key, inner in _budgets(name, value):
                if not steps_off(inner):
                    raise InputError(
                        f"parameters.{key}: {inner!r} bounds the training by steps, past the "
                        "epochs priced: W&B hands it to the program as --"
                        f"{key.rsplit('.', 1)[-1]}, and the spec prices epochs, not steps",
                        location=at(*path),
                        hint=_HINT,
                    )


def _budgets(name: str, value: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """The step budgets a parameter's value sets: itself, or inside a mapping it hands."""
    if isinstance(value, dict) and depth < 8:
        return [
            found
            for key, inner in value.items()
            for found in _budgets(f"{name}.{key}", inner, depth + 1)
        ]
    return [(name, value)] if value is not None and names_steps(name) else []


def _listed(values: Any) -> list[Any]:
    return values if isinstance(values, list) else []
