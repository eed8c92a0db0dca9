"""The command lines an engine runs, and the epochs flags in them, as a shell and argparse do.

An argv element with whitespace in it is a script (``sh -c "python t.py --epochs 90"``):
its commands (lines, or ``;``, ``&&``, ``||``, ``&`` and pipes between them) are read as a
POSIX shell splits them, ``#`` no comment (a commented-out flag counts: the worst case).
In each command an epochs flag's last value counts, as argparse keeps it, under any
spelling argparse accepts for it: ``--epochs``, ``--max-epochs``, ``--num_train_epochs``,
``--trainer.max_epochs``, and their unique prefixes (``--epo``, argparse's ``allow_abbrev``),
and any flag :func:`names_epochs` reads as the epochs (``--nEpochs``, ``--epoch_count``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from gate.errors import InputError, Location
from gate.spec.loader import DataPath

Words = list[tuple[str, DataPath]]
"""Command-line words, each with the path of the file's value it comes from."""

_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
"""Shell words that end one command and start the next."""
_MAX_SCRIPT_DEPTH = 4
"""Scripts read inside scripts; deeper quoting is left as words."""
_NEWLINE = re.compile(r"(?<!\\)\n")


def commands_of(words: Words, depth: int = 0) -> list[Words]:
    """The commands an argv runs: itself, and each command of the shell scripts it holds.

    Scripts in scripts are read too (``bash -c "su -c '...'"``), a few levels deep; each word
    keeps the path of the argv element it comes from.
    """
    plain: Words = []
    found: list[Words] = []
    for word, path in words:
        if depth >= _MAX_SCRIPT_DEPTH or not any(c.isspace() for c in word):
            plain.append((word, path))
            continue
        command: Words = []
        for token in [*_shell_words(word), ";"]:
            if token in _SEPARATORS:
                found.extend(commands_of(command, depth + 1))
                command = []
            else:
                command.append((token, path))
    return [plain, *found] if plain else found


_LOOPS = frozenset({"for", "while", "until", "select"})
"""Shell keywords whose body runs any number of times."""
_REPEATERS = frozenset({"xargs", "parallel", "watch"})
"""Commands that run the command they are given any number of times."""
_EXECS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
"""``find``'s actions that run a command once per file found."""


def refuse_repeats(words: Words, where: str, locate: Callable[[DataPath], Location | None]) -> None:
    """Refuse a script that repeats commands and trains, at its epochs flag or its program."""
    found = _repeated_training(words)
    if found is None:
        return
    repeater, trains, path = found
    raise InputError(
        f"{trains} in {where}, a script that also runs `{repeater}`, which may run it a number "
        "of times the file does not show: the epochs a trial trains are not in the file",
        location=locate(path),
        hint="write the training command once, with no loop, repeater or function in the "
        "script (move them to a script of their own), or make the repeats the engine's trials",
    )


def _repeated_training(words: Words, depth: int = 0) -> tuple[str, str, DataPath] | None:
    """A script that repeats commands (a loop, ``xargs``) and trains, else None.

    Returns the repeater, the epochs flag (or the program that trains, where no flag is
    given: the declared epochs are then one run's) and its path: such a script trains a
    number of times the file does not show (``for i in $(seq 100); do python t.py; done``),
    so no count of its epochs is the trial's. The repeater is looked for anywhere in the
    script (``(for ...)``, ``time for``, ``nice /usr/bin/xargs``, ``find -exec``, a shell
    function called again), not only where a command starts: a word ``for`` beside a
    training command is refused, failing closed.
    """
    for word, path in words:
        if depth >= _MAX_SCRIPT_DEPTH or not any(c.isspace() for c in word):
            continue
        tokens = _shell_words(word)
        flags = [f for part in commands_of([(word, path)], depth) for f in epoch_flags(part)]
        trains = flags[0].written if flags else _trainer(tokens)
        if trains is None:
            continue
        found = next((r for token in tokens if (r := _repeater(token)) is not None), None)
        if found is not None:
            return found, trains, flags[0].path if flags else path
        inner = _repeated_training([(token, path) for token in tokens], depth + 1)
        if inner is not None:
            return inner
    return None


_TRAINERS = re.compile(
    r"python[\d.]*|pypy[\d.]*|torchrun|accelerate|deepspeed|horovodrun|mpirun|mpiexec|srun"
    r"|composer|lightning|[^\s]+\.(?:py|sh|bash)"
)
"""Programs that run a training, by their base name, and scripts by their extension."""


def _trainer(tokens: list[str]) -> str | None:
    """The first word of a script that starts a program which may train (``python``).

    ``python -m pip`` (or ``venv``) installs: a setup script's loop over packages trains
    nothing.
    """
    words = [w.strip("(){}'\"") for token in tokens for w in token.split()]
    for i, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if _TRAINERS.fullmatch(name) and words[i + 1 : i + 3] not in _INSTALLERS:
            return f"`{name}`"
    return None


_INSTALLERS = (["-m", "pip"], ["-m", "venv"], ["-m", "ensurepip"])


def _repeater(token: str) -> str | None:
    """What repeats commands in a shell word: a loop keyword, a repeater, a function."""
    bare = token.strip("(){}")
    if bare in _LOOPS:
        return bare
    if bare.rsplit("/", 1)[-1] in _REPEATERS:
        return bare.rsplit("/", 1)[-1]
    if bare in _EXECS:
        return f"find {bare}"
    if token.endswith("()") or bare == "function":
        return "a shell function"
    return None


def _shell_words(script: str) -> list[str]:
    """``script`` split as a POSIX shell splits it, lines and separators apart.

    NOTE: shlex reads a newline as a space, running a script's lines into one command, and a
    ``#`` inside a word (``--run-name=exp#2``) as a comment: lines are split first, and no
    ``#`` is a comment. Unbalanced quotes: the words as they stand.
    """
    lexer = shlex.shlex(_NEWLINE.sub(" ; ", script), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return script.split()


EPOCH_FLAG = re.compile(r"^--?((?:[\w.-]*[._-])?ep(?:o(?:c(?:hs?)?)?)?)(?:=(.*))?$")
"""A word that sets the epochs: ``--epochs 90``, ``--max-epochs=90``, ``--num_train_epochs``,
``--trainer.max_epochs``, or a prefix argparse would complete to one (``--epo``)."""


_EPOCH_NAME = re.compile(
    r"(?:[\w.-]*[._-])?ep(?:o(?:c(?:hs?)?)?)?"
    r"|(?:[\w.-]*[._-])?epochs?[._-](?:count|total|num|number|n|max|limit)"
)
_WHOLE_EPOCH_NAME = re.compile(
    r"(?:[\w.-]*[._-])?epochs?(?:[._-](?:count|total|num|number|n|max|limit))?"
)
"""The epochs named in whole words: what an environment variable or a ``key=value`` of a
command line must say (no argparse completes ``EP`` there)."""
_GLUED_EPOCHS = re.compile(r"(?:[\w.-]*[._-])?([a-z]+)epochs?")
"""The epochs with a word glued before them: ``nepochs``, ``maxepochs``, ``numtrainepochs``."""
_GLUED_PREFIX = re.compile(
    r"(?:[\w.-]*[._-])?(?:n|nb|no|num|number|max|total|train|training)+ep(?:o(?:c(?:hs?)?)?)?"
)
"""A prefix argparse would complete to a glued count of epochs (``--nep`` for ``--nepochs``);
only after a count's word, or ``step`` and ``keep`` would read as epochs."""
_PER_EPOCH = re.compile(r"(?:^|[._-])per[._-]ep(?:o(?:c(?:hs?)?)?)?$")
"""``steps_per_epoch``, ``samples_per_epoch``: a count in each epoch, not of them."""
_SCHEDULE = re.compile(
    r"(?:^|[._-])(?:warm[._-]?up|save|eval|evaluate|evaluation|val|valid|validation|log"
    r"|logging|checkpoint|ckpt|start|resume|current|cur|begin|first|last|every|decay"
    r"|anneal|freeze|unfreeze|swa|cooldown|patience|restart|offset|print|report|snapshot"
    r"|test|min)(?=[._-]|$)"
)
"""A point or a part of the schedule, not its length: ``warmup_epochs``, ``start_epoch``,
``save_every_epochs``, ``check_val_every_n_epoch``, Lightning's ``min_epochs``."""
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
"""Where camelCase starts a word: ``nEpochs`` is ``n_epochs``."""


def names_epochs(name: str, *, abbreviated: bool = True) -> bool:
    """Whether a config key, parameter or flag names the epochs.

    ``epochs``, ``max-epochs``, ``nb_epochs``, ``n_epoch``, ``EPOCHS``, ``num_train_epochs``,
    ``nEpochs``, ``maxEpochs``, ``epoch_count``, ``epochs_total`` and a prefix argparse would
    complete (``epo``): a W&B parameter is handed to the program as ``--name=value``, so every
    name its flag could be counts; not ``abbreviated``, only whole words (an environment
    variable). Not ``eps``, ``step``, ``steps_per_epoch``, nor a point of the schedule
    (``warmup_epochs``, ``start_epoch``, ``save_every_epochs``).
    """
    lowered = _WORD_START.sub("_", name).lower()
    if _PER_EPOCH.search(lowered) or _SCHEDULE.search(lowered):
        return False
    pattern = _EPOCH_NAME if abbreviated else _WHOLE_EPOCH_NAME
    if pattern.fullmatch(lowered) is not None:
        return True
    glued = _GLUED_EPOCHS.fullmatch(lowered)  # NOTE: nepochs, maxepochs, numtrainepochs
    if glued is not None and not _SCHEDULE.search(glued[1]) and not glued[1].endswith("per"):
        return True
    return abbreviated and _GLUED_PREFIX.fullmatch(lowered) is not None


@dataclass(frozen=True, slots=True)
class Flag:
    """One epochs flag of a command: its last value, where it is, how often it is given."""

    name: str
    """The option it sets (``max_epochs`` for ``--max-epochs`` and ``--max-ep``)."""
    written: str
    """The flag as its last occurrence is written."""
    value: str
    path: DataPath
    times: int
    index: int
    """Its last occurrence's place among the command's words."""


def epoch_flags(command: Words) -> list[Flag]:
    """Each epochs option of one command, with its last value (argparse keeps the last).

    A ``NAME=value`` word counts too: an environment variable the command sets for the
    program (``EPOCHS=1000 python t.py``, ``export EPOCHS=1000``, ``env NUM_EPOCHS=1000
    ...``) or an override Hydra and OmegaConf read (``trainer.max_epochs=1000``).
    """
    last: dict[str, Flag] = {}
    for i, (word, path) in enumerate(command):
        match = EPOCH_FLAG.match(word) or _named_flag(word) or _assignment(word)
        if match is None:
            continue
        written, value = word.split("=", 1)[0], match.group(2)
        if value is None and i + 1 < len(command):
            value, path = command[i + 1]
        if value is not None:
            name = option_name(written)
            seen = last.get(name)
            last[name] = Flag(name, written, value, path, (seen.times if seen else 0) + 1, i)
    return list(last.values())


_FLAG = re.compile(r"^--?([A-Za-z_][\w.-]*)(?:=(.*))?$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^\+{0,2}([A-Za-z_][\w.-]*)=(.*)$", re.DOTALL)


def _assignment(word: str) -> re.Match[str] | None:
    """``EPOCHS=1000`` or ``trainer.max_epochs=1000``, named in whole words, as a flag."""
    match = _ASSIGNMENT.match(word)
    if match is None or not names_epochs(match.group(1), abbreviated=False):
        return None
    return match


def _named_flag(word: str) -> re.Match[str] | None:
    """A flag :func:`names_epochs` reads as the epochs (``--nEpochs``), as :data:`EPOCH_FLAG`."""
    match = _FLAG.match(word)
    return match if match is not None and names_epochs(match.group(1)) else None


def option_name(flag: str) -> str:
    """The option a flag sets: dashes off, ``-`` as ``_``, a prefix of epochs as ``epochs``."""
    bare = flag.lstrip("-").replace("-", "_")
    return re.sub(r"(^|[._])ep(?:o(?:c(?:hs?)?)?)?$", r"\1epochs", bare)


def unread(flag: Flag, where: str, hint: str) -> InputError:
    """The error for an epochs flag whose value the file does not say (``--epochs $E``)."""
    return InputError(
        f"{flag.written} {flag.value} in {where}: the epochs it trains are not in the file",
        hint=hint,
    )
