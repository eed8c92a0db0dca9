"""The epochs a W&B sweep's ``command`` hands every run: its literal ``--epochs`` flags.

Read as a shell and argparse read it (:mod:`gate.formats.command_lines`); a flag of a swept
parameter that W&B's ``${args}`` repeats after it is the parameter's, read with the sweep.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import (
    Words,
    commands_of,
    epoch_flags,
    option_name,
    training_scripts,
    unread,
)
from gate.formats.command_steps import refuse_step_budgets
from gate.formats.model import mapping, whole_epochs
from gate.formats.shell_effects import refuse_unread_training
from gate.formats.shell_programs import SHELLS
from gate.formats.shell_words import expansion_problem, is_value, outside_quotes
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
    _refuse_envvars(words, at)
    refuse_unset_words(words, "", "command", lambda path: at(*path), _MACROS)
    _refuse_split_values(words, params, at)
    swept = {option_name(name) for name in params}
    refuse_unread_training(words, "command", lambda path: at(*path))
    refuse_step_budgets(words, "command", lambda path: at(*path))
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


def _refuse_split_values(words: Words, params: Found, at: Any) -> None:
    """Refuse a value with spaces that a shell may split into words of the command.

    ``[sh, -c, "python train.py $@", sh, "${args}"]``: the agent hands the script
    ``--lr=0.1 --epochs 1000`` as one word, and an unquoted ``$@`` splits it in three.
    """
    shell = any(word.rsplit("/", 1)[-1] in SHELLS for word, _ in words)
    if not shell or not any(word in _ARGS_MACROS or word in _MACROS for word, _ in words):
        return
    for name, (spec_param, _, path) in sorted(params.items()):
        for value in mapping(spec_param).get("values") or []:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            if any(c.isspace() for c in text):
                raise InputError(
                    f"parameters.{name} has the value {text!r}, which the agent hands a shell "
                    "through ${args}: split at its spaces, it may be more flags (--epochs 1000)",
                    location=at(*path),
                    hint="give values without spaces, or run the program without a shell",
                )


_ENVVAR = re.compile(r"\$\{envvar:[^}]*\}")
_IN_A_VALUE = re.compile(r"^--?[A-Za-z_][\w.-]*=[^\s]*$")
"""``--data=${envvar:DATA}``: the agent's variable inside one option's value, no more."""


def _refuse_envvars(words: Words, at: Any) -> None:
    """Refuse ``${envvar:NAME}`` where the agent's variable may add words or flags.

    The agent writes the variable's value over the macro wherever it is in a word (W&B's
    ``create_sweep_command``): a whole word (``--epochs=1000``), an option's name
    (``--${envvar:FLAG}=1000``) or a script's text is what the agent's environment says,
    not the file. In an option's value (``--data=${envvar:DATA}``) of a command that runs no
    shell, it stays that value.
    """
    shell = any(word.rsplit("/", 1)[-1] in SHELLS for word, _ in words)
    for word, path in words:
        found = _ENVVAR.search(word)
        if found is None:
            continue
        if not shell and _IN_A_VALUE.match(word) and word.index("=") < found.start():
            continue
        raise InputError(
            f"{found[0]} in command: the agent writes its environment's value there, which "
            "may be words and flags (--epochs=1000) that are not in the file",
            location=at(*path),
            hint="write the words in the command, or use the variable only inside an "
            "option's value (--data=${envvar:DATA})",
        )


_VARIABLE = re.compile(r"^\$(?:\{[A-Za-z_]\w*\}|[A-Za-z_]\w*)$")
_SUBSTITUTION = re.compile(r"^\$\((?!\()|`")
"""``$(cat args)``, backquotes: words from a command's output (not ``$((1 + 1))``)."""
_NAMED_BY = re.compile(r"^-[^=]*\$(?!\{trialParameters\.)")
"""``--${FLAG}=1000``: an option whose name a variable gives (Katib's placeholders aside)."""


_MACROS = frozenset(
    "${" + name + "}"
    for name in ("args", "args_no_hyphens", "args_no_boolean_flags", "args_json", "args_json_file")
)
"""W&B's macros, left to the shell inside a script: an unset variable there, as before."""


def refuse_unset_words(
    words: Words, known: str, where: str, locate: Any, macros: frozenset[str] = frozenset()
) -> None:
    """Refuse words of a command that may train that a script takes from outside the file.

    ``python train.py --epochs 2 $EXTRA`` in ``sh -c``: the shell splits the value into
    words (``--epochs 1000``) from an environment the file does not hold (``known`` says
    where the file's own variables are); ``$(cat args)`` and backquotes, from a command's
    output; ``--${FLAG}=1000``, an option's name. An option's value (``--data $DIR``) is no
    word of its own; an argv word no shell runs (``"$EXTRA"`` as one) is the text itself.
    """
    for run, path, text in training_scripts(words):
        if text is None:
            continue  # NOTE: no script: the program is handed the text as it is
        bare = outside_quotes(text, doubles=True)
        for before, word in pairwise(run):
            value = before.startswith("-") and "=" not in before and not word.startswith("-")
            whole = (_VARIABLE.match(word) and word not in macros) or _SUBSTITUTION.search(word)
            split = expansion_problem(word, bare, value=is_value(before, word))
            if split is not None:
                raise InputError(
                    f"{word} in {where}: {split}",
                    location=locate(path),
                    hint=f"write the words in {where} itself",
                )
            if (whole and not value) or _NAMED_BY.search(word):
                raise InputError(
                    f"{word} in {where}: the shell makes it words of the training command "
                    f"from outside the file (an environment{known}, a command's output)",
                    location=locate(path),
                    hint=f"write the words in {where} itself",
                )
