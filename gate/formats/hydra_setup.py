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
    shell_words,
)
from gate.formats.shell_effects import (
    COMMAND_ENDS,
    command_args,
    epochs_variable_set,
    refuse_unread_training,
    written_files,
)

_SBATCH = re.compile(r"^\s*#\s*SBATCH", re.IGNORECASE)


def refuse_setup_lines(config: dict[str, Any], at: Any) -> None:
    """Refuse a ``setup`` line that sets resources or epochs budget-gate does not read.

    Lines that may train in a loop are refused as a SkyPilot ``run`` is; so are a name the
    line computes (``export $E=1000``: fail closed) and an edit of a file in place (the
    config Submitit reloads on the node).
    """
    lines = config.get("setup")
    lines = lines if isinstance(lines, list) else []
    where = "hydra.launcher.setup"
    script: Words = [(str(line), (i,)) for i, line in enumerate(lines)]
    refuse_unread_training(script, where, lambda path: at("hydra", "launcher", "setup", *path))
    for i, line in enumerate(lines):
        text = str(line)
        if _SBATCH.match(text):
            said = "is an #SBATCH option, which sbatch reads over the launcher's own"
        elif (name := epochs_set(text)) is not None:
            said = f"sets the epochs ({name}) where budget-gate does not read them"
        elif (said_here := _unread_effect(text)) is not None:
            said = said_here
        else:
            continue
        raise InputError(
            f"hydra.launcher.setup[{i}]: {text.strip()} {said}",
            location=at("hydra", "launcher", "setup", i),
            hint="ask for nodes, GPUs and time by the launcher's own keys (nodes, "
            "gpus_per_node, timeout_min) and set the epochs in the config",
        )


def epochs_set(line: str) -> str | None:
    """The epochs a shell line may set: a flag, an assignment, a variable a builtin sets, or None.

    ``export EPOCHS=1000``, ``printf -v EPOCHS``, ``read EPOCHS``, ``EPOCHS+=0``
    (:func:`gate.formats.shell_effects.epochs_variable_set`); ``$EPOCHS`` (a read) and
    ``export EPOCHS`` (what sbatch already hands the job) set nothing.
    """
    words: Words = [(word, ()) for word in shell_words(line)]
    for command in commands_of(words):
        flags = epoch_flags(command)
        if flags:
            return flags[0].written
        name = epochs_variable_set([word for word, _ in command])
        if name is not None:
            return name
    return None


_SETS = frozenset({"export", "declare", "typeset", "readonly", "local"})
_CONFIGS = re.compile(r"\.(?:ya?ml|json)['\"]?$", re.IGNORECASE)


def _unread_effect(line: str) -> str | None:
    """What a line does that budget-gate cannot follow, or None.

    NOTE: fail closed. ``export $E=1000`` and ``export EPOCH{S,}=1000`` name a variable the
    shell computes; ``sed -i`` (any, budget-gate cannot tell which file is the config) and
    ``>``/``tee``/``cp`` onto a YAML file rewrite what Submitit reloads on the node.
    """
    words: Words = [(word, ()) for word in shell_words(line)]
    for command in commands_of(words):
        plain = [word for word, _ in command]
        for at, word in enumerate(plain):
            before = plain[at - 1] if at else ";"
            tool = word.rsplit("/", 1)[-1]
            if tool in _SETS and before in COMMAND_ENDS | {"builtin", "command"}:
                computed = next((w for w in command_args(plain, at) if _computed(w)), None)
                if computed is not None:
                    return f"sets a variable whose name the shell computes ({computed})"
            if tool in ("sed", "perl") and any(_in_place(w) for w in command_args(plain, at)):
                return (
                    f"edits a file in place ({tool} -i): it may rewrite the config Submitit "
                    "reloads on the node, so no sed -i or perl -i runs in setup"
                )
            target = next((t for t in written_files(plain, at) if _CONFIGS.search(t)), None)
            if target is not None:
                return f"writes {target}, a config the job may read on the node"
    return None


def _computed(word: str) -> bool:
    name = word.split("=", 1)[0] if "=" in word else word
    return any(char in name for char in "${}`") and not name.startswith("-")


def _in_place(word: str) -> bool:
    return word.startswith("--in-place") or bool(re.fullmatch(r"-[A-Za-z]*i.*", word))
