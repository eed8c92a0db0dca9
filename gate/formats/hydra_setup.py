"""Submitit's ``setup`` lines: the shell that runs before a job's first command.

sbatch still reads an ``#SBATCH`` line there (``--nodes=16`` over the launcher's own), and a
variable set there is the program's environment (``export EPOCHS=1000``). Lines are split as
a POSIX shell splits them, scripts inside (``bash -c``, ``eval``) too.
"""

from __future__ import annotations

import re
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import (
    Words,
    commands_of,
    epoch_flags,
    names_epochs,
    shell_words,
)

_SBATCH = re.compile(r"^\s*#\s*SBATCH", re.IGNORECASE)
_ASSIGNED = re.compile(r"(?<![\w$])([A-Za-z_]\w*)(?:\[[^\]]*\])?[+:]?=")
"""``NAME=``, ``NAME+=``, ``NAME[i]=``, ``${NAME:=v}``/``${NAME=v}``, ``((NAME=v))``: set."""
_NAMED = re.compile(r"(?:-\w*v)?([A-Za-z_]\w*)(?:\[[^\]]*\])?")
"""A word that is a variable's name (``export EPOCHS``, ``read EPOCHS``, ``printf -vEPOCHS``)."""


def refuse_setup_lines(config: dict[str, Any], at: Any) -> None:
    """Refuse a ``setup`` line that sets resources or epochs budget-gate does not read."""
    lines = config.get("setup")
    for i, line in enumerate(lines if isinstance(lines, list) else []):
        text = str(line)
        if _SBATCH.match(text):
            said = "is an #SBATCH option, which sbatch reads over the launcher's own"
        elif (name := epochs_set(text)) is not None:
            said = f"sets the epochs ({name}) where budget-gate does not read them"
        else:
            continue
        raise InputError(
            f"hydra.launcher.setup[{i}]: {text.strip()} {said}",
            location=at("hydra", "launcher", "setup", i),
            hint="ask for nodes, GPUs and time by the launcher's own keys (nodes, "
            "gpus_per_node, timeout_min) and set the epochs in the config",
        )


def epochs_set(line: str) -> str | None:
    """The epochs a shell line may set: a flag, or a variable named like them, or None.

    NOTE: fail closed. Any spelling that sets a variable (``export``, ``declare -x``,
    ``printf -v``, ``read``, ``eval``, ``for``) names it as a word or assigns it: a word
    that is the name, or assigns it, counts; only ``$NAME`` (a read) does not.
    """
    words: Words = [(word, ()) for word in shell_words(line)]
    for command in commands_of(words):
        flags = epoch_flags(command)
        if flags:
            return flags[0].written
        for word, _ in command:
            named = _NAMED.fullmatch(word)
            names = [named.group(1)] if named else []
            names += [m.group(1) for m in _ASSIGNED.finditer(word)]
            for name in names:
                if names_epochs(name, abbreviated=False):
                    return name
    return None
