"""A launched task that bounds its training by steps, which no spec prices (refused).

Hugging Face's ``Trainer`` runs ``max_steps > 0`` over ``num_train_epochs`` ("overrides
num_train_epochs"), its example scripts' ``--max_train_steps`` likewise, and Lightning with
``trainer.max_steps`` and no ``max_epochs`` trains to the steps: a task that names a spec of
10 epochs and passes ``--max_steps 10000000`` trains past what was priced. A steps budget
(``--max_steps``, ``--max_train_steps``, ``--num_train_steps``, ``--total_steps``,
``trainer.max_steps=``, ``MAX_STEPS=``, iterations alike) in ``setup`` or ``run``, or an env
or secret named so, is refused unless it is a number of at most 0 (``-1``: off), written
where it is read. The names and the commands are read as ``budget-gate check`` reads them
(:mod:`gate.formats.command_steps`, :mod:`gate.formats.command_lines`: bash's quotes and
comments); imports no SkyPilot.
"""

from __future__ import annotations

from typing import Any

from gate.integrations.skypilot_spec import Rejection


def check_steps(task: Any, relative: str, epochs: int) -> None:
    """Refuse a task whose ``setup``, ``run``, envs or secrets set a positive steps budget."""
    from gate.formats.command_steps import names_steps, steps_off

    config = task.to_yaml_config()
    name = task.name or "(unnamed)"
    found = None
    for key in ("setup", "run"):
        script = config.get(key)
        if isinstance(script, str) and found is None:
            found = _in_script(script, key)
    for key in ("envs", "secrets"):
        values = config.get(key)
        for var, value in (values if isinstance(values, dict) else {}).items():
            if found is None and names_steps(str(var)) and not steps_off(value):
                shown = "(a secret)" if key == "secrets" else value
                found = f"{key} {var}: {shown}"
    if found is not None:
        raise Rejection(
            f"task {name!r} bounds its training by steps ({found}), but {relative} prices "
            f"epochs, not steps (workload.max_epochs: {epochs}) — a positive steps budget "
            "trains past the epochs (Hugging Face's Trainer and Lightning stop at the steps): "
            "drop it, or set it to -1, and bound the training by its epochs"
        )


def _in_script(script: str, key: str) -> str | None:
    """The first steps budget a script sets that is not off, said; None if there is none."""
    from gate.formats.command_lines import commands_of  # NOTE: only where a task names a spec
    from gate.formats.command_steps import step_budgets

    for command in commands_of([(script, (key,))]):
        for shown, _ in step_budgets(command):
            return f"{shown} in {key}"
    return None
