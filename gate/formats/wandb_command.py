"""The epochs a W&B sweep's ``command`` hands every run: its literal ``--epochs`` flags.

Read as a shell and argparse read it (:mod:`gate.formats.command_lines`); a flag of a swept
parameter that W&B's ``${args}`` repeats after it is the parameter's, read with the sweep.
"""

from __future__ import annotations

from typing import Any

from gate.formats.command_lines import (
    Words,
    commands_of,
    epoch_flags,
    option_name,
    unread,
)
from gate.formats.model import whole_epochs
from gate.formats.shell_effects import refuse_unread_training
from gate.formats.wandb_parameters import Found
from gate.spec.loader import DataPath

_ARGS_MACROS = ("${args}", "${args_no_boolean_flags}")
"""W&B's command macros that expand to ``--name=value`` for every swept parameter."""


def command_epochs(command: Any, params: Found, at: Any) -> list[tuple[int, str, DataPath]]:
    """The epochs a literal flag of ``command`` hands every run (``--epochs=1000``).

    A flag named as a swept parameter and followed by ``${args}`` is overruled by the
    parameter's own flag (the last counts); any other literal trains what it says, though
    the parameter says less. A value the file does not say is refused.
    """
    if not isinstance(command, list):
        return []
    words: Words = [(str(w), ("command", i)) for i, w in enumerate(command)]
    swept = {option_name(name) for name in params}
    refuse_unread_training(words, "command", lambda path: at(*path))
    found, tops = [], []
    for words_of_one in commands_of(words):
        mine: list[tuple[int, str, DataPath]] = []
        # NOTE: the agent expands a macro that is a whole argv element only: not inside a
        # word (--tag=${args}) nor in a script (sh -c "... ${args}")
        macros = [
            i
            for i, (w, path) in enumerate(words_of_one)
            if w in _ARGS_MACROS and str(command[int(path[1])]) == w
        ]
        for flag in epoch_flags(words_of_one):
            if flag.name in swept and any(i > flag.index for i in macros):
                continue
            epochs = whole_epochs(flag.value)
            if epochs is None:
                error = unread(flag, "command", "write the number, or sweep it as a parameter")
                error.location = at(*flag.path)
                raise error
            times = f" (the last of {flag.times})" if flag.times > 1 else ""
            mine.append((epochs, f"{flag.written} {flag.value} in command{times}", flag.path))
        found.extend(mine)
        if mine:
            tops.append(max(mine, key=lambda entry: entry[0]))
    if len(tops) > 1:  # NOTE: a script's commands run one after another: they add up
        detail = " + ".join(d for _, d, _ in tops) + ", one command after another"
        found.append((sum(n for n, _, _ in tops), detail, tops[0][2]))
    return found
