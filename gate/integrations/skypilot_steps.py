"""A launched task that bounds its training by steps, which no spec prices (refused).

Hugging Face's ``Trainer`` runs ``max_steps > 0`` over ``num_train_epochs`` ("overrides
num_train_epochs"), its example scripts' ``--max_train_steps`` likewise, and Lightning with
``trainer.max_steps`` and no ``max_epochs`` trains to the steps: a task that names a spec of
10 epochs and passes ``--max_steps 10000000`` trains past what was priced. A steps budget
(``--max_steps``, ``--max_train_steps``, ``--num_train_steps``, ``--total_steps``,
``trainer.max_steps=``, ``MAX_STEPS=``, iterations alike) in ``setup`` or ``run``, or an env
or secret named so, is refused unless it is a number of at most 0 (``-1``: off), written
where it is read. A mention the command reader cannot account for (a comment, a quote it
does not read) is refused too (fail closed). Commands are read by
:mod:`gate.formats.command_lines`, as the epochs are; imports no SkyPilot.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gate.integrations.skypilot_spec import Rejection

_BUDGET = r"(?:max|num|total|train(?:ing)?)[._-](?:train(?:ing)?[._-])?"
STEPS_NAME = re.compile(
    rf"(?:^|[._-]){_BUDGET}(?:st(?:e(?:ps?)?)?|it(?:e(?:r(?:s|ations?)?)?)?)$", re.IGNORECASE
)
"""An option, override or variable that bounds training by steps or iterations, or a unique
prefix argparse would take for one (``--max_st``)."""
_MENTION = re.compile(
    rf"(?<![A-Za-z0-9]){_BUDGET}(?:steps?|iters?|iterations?)(?![A-Za-z0-9_])", re.IGNORECASE
)
"""A steps budget named anywhere in a script's text, read or not."""
_FLAG = re.compile(r"^(?:--?|\+{0,2})([A-Za-z_][\w.-]*)(?:=(.*))?$", re.DOTALL)
"""``--max_steps``, ``--max_steps=N``, ``trainer.max_steps=N``, ``MAX_STEPS=N``."""


def check_steps(task: Any, relative: str, epochs: int) -> None:
    """Refuse a task whose ``setup``, ``run``, envs or secrets set a positive steps budget."""
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
            if found is None and STEPS_NAME.search(str(var)) and not _off(value):
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

    mentions = _MENTION.findall(script)
    off = 0
    for command in commands_of([(script, (key,))]):
        words = [word for word, _ in command]
        for i, word in enumerate(words):
            match = _FLAG.match(word)
            if match is None or not STEPS_NAME.search(match[1]):
                continue
            if match[2] is not None:
                value, shown = match[2], word
            else:
                value = words[i + 1] if i + 1 < len(words) else None
                shown = f"{word} {value}" if value is not None else f"{word} (its value unread)"
            if value is None or not _off(value):
                return f"{shown} in {key}"
            off += 1
    if off < len(mentions):
        return f"{mentions[0]} in {key}, where budget-gate cannot read its value"
    return None


def _off(value: Any) -> bool:
    """Whether a steps budget's value turns it off: a number of at most 0 (``-1``, ``0``)."""
    if isinstance(value, bool):
        return False
    try:
        number = float(str(value).strip())
    except ValueError:
        return False
    return math.isfinite(number) and number <= 0
