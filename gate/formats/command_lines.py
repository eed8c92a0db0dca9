"""The command lines an engine runs, and the epochs flags in them, as a shell and argparse do.

A shell's script (``sh -c "python t.py --epochs 90"``) is split into its commands as bash
splits it (:mod:`gate.formats.command_words`: lines, separators, quotes, ``#`` comments).
In each command an epochs flag's last value counts, as argparse keeps it, under any
spelling argparse accepts for it: ``--epochs``, ``--max-epochs``, ``--num_train_epochs``,
``--trainer.max_epochs``, and their unique prefixes (``--epo``, argparse's ``allow_abbrev``),
and any flag :func:`names_epochs` reads as the epochs (``--nEpochs``, ``--epoch_count``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import takewhile
from typing import NamedTuple

from gate.errors import InputError, Location
from gate.formats.command_words import Words as Words
from gate.formats.command_words import commands_of as commands_of
from gate.formats.command_words import shell_words as shell_words
from gate.formats.epoch_names import ASSIGNMENT, FLAG, paired_epochs
from gate.formats.epoch_names import EPOCH_FLAG as EPOCH_FLAG
from gate.formats.epoch_names import names_epochs as names_epochs
from gate.formats.shell_loops import FUNCTION, TooDeep, Unreadable, simple_commands
from gate.formats.shell_programs import (
    HIDDEN,
    REPEATERS,
    SHELLS,
    harmless,
    program,
    repeated_commands,
    run_key,
    shell_script,
    without_installers,
)
from gate.spec.loader import DataPath

_MAX_RUN_DEPTH = 16
"""Scripts and repeaters read inside each other before a script is refused as too deep."""


def refuse_repeats(words: Words, where: str, locate: Callable[[DataPath], Location | None]) -> None:
    """Refuse a script that may train a number of times the file does not show.

    A command that may train where a loop or a repeater repeats it trains any number of
    times; with no epochs flag in the script, one such command run twice trains the declared
    epochs (one run's) twice. A loop of harmless commands beside the training is no repeat.
    A script the reader cannot follow is refused where it may train (fails closed).
    """
    flags = [f for part in commands_of(words) for f in epoch_flags(part)]
    try:
        found = list(_runs(words, None, 0))
    except Unreadable as error:
        _refuse_unreadable(words, error, where, locate)
        return
    again = next((run for run in found if run.repeater is not None), None)
    if again is not None:
        inner = epoch_flags([(word, again.path) for word in again.words])
        trains = inner[0].written if inner else f"`{_shown(again.words)}`"
        raise _repeated(str(again.repeater), trains, again.path, where, locate)
    seen: dict[str, _Run] = {}
    keys = ((run_key(run.words), run) for run in found)
    twice = next((run for key, run in keys if seen.setdefault(key, run) is not run), None)
    if twice is not None and not flags:  # NOTE: prep.py, then train.py: two programs, once each
        shown = _shown(twice.words)
        raise InputError(
            f"`{shown}` runs more than once in {where}, and no epochs flag: the declared epochs "
            "are one run's, so the epochs a trial trains are not in the file",
            location=locate(twice.path),
            hint="give each command that trains its epochs flag (--epochs N), so that they add "
            "up, or train once in the script",
        )


def training_runs(words: Words) -> list[tuple[tuple[str, ...], DataPath]]:
    """The commands of a script that may train, each where it is; none in one not read."""
    return [(run, path) for run, path, _ in training_scripts(words)]


def training_scripts(words: Words) -> list[tuple[tuple[str, ...], DataPath, str | None]]:
    """:func:`training_runs`, each with the text of the script a shell split it from."""
    try:
        return [(run.words, run.path, run.script) for run in _runs(words, None, 0)]
    except Unreadable:  # NOTE: refuse_repeats refused it, or it runs only harmless commands
        return []


def _refuse_unreadable(
    words: Words, error: Unreadable, where: str, locate: Callable[..., Location | None]
) -> None:
    """A script a shell would not run as written: refused for a loop word, or if it may train.

    Comments are no words here (``# 8-GPU data parallel`` runs no ``parallel``).
    """
    flags = [f for part in commands_of(words) for f in epoch_flags(part)]
    lines = [(_COMMENT.sub("", line), at) for w, at in words for line in w.splitlines()]
    bare = [(t.strip("(){}$`'\";"), at) for line, at in lines for t in line.split()]
    loop = next(((m[1] or FUNCTION, at) for t, at in bare if (m := _LOOP.match(t))), None)
    if loop is None and isinstance(error, TooDeep):
        loop = (str(error), words[0][1] if words else ())
    if loop is not None:
        flag = (flags[0].written, flags[0].path) if flags else ("a command", loop[1])
        raise _repeated(loop[0], *flag, where, locate) from None
    for line, at in lines:
        for command in commands_of([(line, at)]):
            plain = [word for word, _ in command]
            start = program(plain, 1)
            name = plain[start].rsplit("/", 1)[-1] if start is not None else ""
            if start is not None and not harmless(name, plain[start + 1 :]):
                raise InputError(
                    f"{where} is a script a shell would not run as written ({error}), and it "
                    f"runs `{_shown(tuple(plain[start:]))}`, which may train: how often it "
                    "runs cannot be read",
                    location=locate(at),
                    hint="write the script as a shell runs it (close its quotes, `fi` and "
                    "`done`), with the training command once, outside any loop",
                ) from None


_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$")
"""A ``#`` that starts a word, and the rest of its line: a comment, as a shell reads it."""

_HIDDEN_SAID = ", running a script the file does not show"


def _repeated(
    repeater: str, trains: str, path: DataPath, where: str, locate: Callable[..., Location | None]
) -> InputError:
    if repeater.endswith(_HIDDEN_SAID):  # NOTE: no loop: a script from elsewhere
        shell = repeater.removesuffix(_HIDDEN_SAID)
        return InputError(
            f"`{shell}` in {where} runs a script the file does not show (read from a pipe, "
            "stdin, `<(...)` or a command's output): what it runs, and how often, is not in "
            "the file",
            location=locate(path),
            hint="write its commands in the file itself",
        )
    return InputError(
        f"{trains} in {where}, a script that also runs `{repeater}`, which may run it a number "
        "of times the file does not show: the epochs a trial trains are not in the file",
        location=locate(path),
        hint="write the training command once, outside any loop, repeater or function of the "
        "script, or make the repeats the engine's trials",
    )


def _shown(words: tuple[str, ...]) -> str:
    """A command by its first words, up to its first option: ``python train.py``."""
    return " ".join(takewhile(lambda word: not word.startswith("-"), words[:3])) or words[0]


class _Run(NamedTuple):
    words: tuple[str, ...]
    repeater: str | None
    """What repeats it; None: it runs once."""
    path: DataPath
    script: str | None = None
    """The text of the script a shell split it from; None: an argv no shell expands."""


_RESTARTS = frozenset({"$0", "${0}", "$BASH_SOURCE", "${BASH_SOURCE}", "${BASH_SOURCE[0]}"})
_AGAIN_SIGNALS = frozenset({"DEBUG", "ERR", "RETURN"})
"""A trap on these runs its body again and again (before each command, on each failure)."""


def _runs(words: Words, repeat: str | None, depth: int) -> Iterator[_Run]:
    """The commands that may train among a command and the scripts and commands it runs."""
    if depth > _MAX_RUN_DEPTH:
        raise TooDeep(f"scripts and repeaters nested more than {_MAX_RUN_DEPTH} deep")
    plain = [word for word, _ in words]
    start = program(plain, depth)
    if start is None:
        return
    (program_word, path), args = words[start], plain[start + 1 :]
    name, command = program_word.rsplit("/", 1)[-1], tuple(plain[start:])
    if any(c.isspace() for c in program_word):  # NOTE: a script as one word: SkyPilot's run
        yield from _script(program_word, path, repeat, depth)
        return
    if name in _RESTARTS or (name in SHELLS and args[:1] and args[0] in _RESTARTS):
        yield _Run(command, "the script again (`$0`)", path)
        return
    if name == "foreach":  # NOTE: zsh's `foreach NAME (WORDS)` repeats the lines up to `end`
        raise Unreadable("zsh's `foreach`, whose body budget-gate does not read")
    if name == "alias" and any(_an_alias_repeats(arg, path, depth) for arg in args):
        yield _Run(command, "alias", path)
        return
    if name == "trap" and args and args[0] not in ("-", "-p", "-l", "--"):
        again = {s.upper().removeprefix("SIG") for s in args[1:]} & _AGAIN_SIGNALS
        yield from _script(args[0], path, f"trap {min(again)}" if again else repeat, depth)
        return
    for repeater, inner in repeated_commands(name, args):
        yield from _runs([(word, path) for word in inner], repeat or repeater, depth + 1)
    if name in REPEATERS or harmless(name, args):
        return
    yield from _shell_runs(name, words[start:], repeat, depth)


def _shell_runs(name: str, words: Words, repeat: str | None, depth: int) -> Iterator[_Run]:
    """A shell's script's commands, or the command itself (with a shell it runs, if any)."""
    command, path = tuple(word for word, _ in words), words[0][1]
    script = shell_script(name, list(command[1:]))
    if script == HIDDEN or (script and script.lstrip().startswith(("$", "`"))):
        yield _Run(command, f"{name}{_HIDDEN_SAID}", path)
        return
    if script:
        at = next((p for w, p in words[1:] if w == script), path)
        yield from _script(script, at, repeat, depth)
        return
    yield _Run(command, repeat, path)
    inner = next((i for i, w in enumerate(command) if i and w.rsplit("/", 1)[-1] in SHELLS), None)
    if inner is not None:  # NOTE: docker exec box bash -c '...', srun bash -c '...'
        nested = _runs(words[inner:], repeat, depth + 1)
        yield from (run for run in nested if run.repeater is not None)


def _script(text: str, path: DataPath, repeat: str | None, depth: int) -> Iterator[_Run]:
    for found, again in simple_commands(without_installers(text), repeat):
        for run in _runs([(word, path) for word in found], again, depth + 1):
            yield run if run.script is not None else run._replace(script=text)


def _an_alias_repeats(definition: str, path: DataPath, depth: int) -> bool:
    """Whether an alias holds a loop word, or a command with its words that may train.

    SkyPilot runs ``setup`` and ``run`` in an interactive bash (``bash -i``), which expands
    aliases: ``alias t='python train.py --epochs 1000'`` then ``t`` on a later line trains,
    as often as the script names it, what no command of the script shows. A program renamed
    (``alias python=python3``) adds no words: the commands that name it are read as written.
    """
    value = definition.partition("=")[2].strip()
    if _LOOP_WORD.search(definition):
        return True
    return any(c.isspace() for c in value) and any(True for _ in _script(value, path, None, depth))


_LOOP_WORD = re.compile(r"(?:^|[\s;&|(])(?:for|while|until|select)(?:[\s(]|$)")
"""A loop's reserved word in an alias's value (``alias loop='for i in 1 2 3; do'``)."""


_LOOP = re.compile(
    r"(?:.*/)?(for|while|until|select|repeat|foreach|xargs|parallel|watch|-exec|-execdir|-ok"
    r"|-okdir)(?:\(.*)?$"
    r"|function$|.*\(\)$"
)
"""A word that may repeat commands, in a script whose structure cannot be read."""


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
    ...``) or an override Hydra and OmegaConf read (``trainer.max_epochs=1000``); so do a
    yacs pair and a JSON override (:func:`gate.formats.epoch_names.paired_epochs`).
    """
    last: dict[str, Flag] = {}
    for i, (word, path) in enumerate(command):
        match = _epoch_flag(word) or _named_flag(word) or _assignment(word)
        previous = command[i - 1][0] if i else None
        paired = (
            None if match is not None else paired_epochs(word, previous, command[i + 1 : i + 2])
        )
        if paired is not None:  # NOTE: yacs' KEY VALUE, a JSON object's epochs
            written, value, path = paired[0], paired[1], command[i + 1][1] if paired[2] else path
        elif match is None:
            continue
        else:
            written, value = word.split("=", 1)[0], match.group(2)
        if value is None and i + 1 < len(command):
            value, path = command[i + 1]
        if value is not None:
            name = option_name(written)
            seen = last.get(name)
            last[name] = Flag(name, written, value, path, (seen.times if seen else 0) + 1, i)
    return list(last.values())


def _assignment(word: str) -> re.Match[str] | None:
    """``EPOCHS=1000`` or ``trainer.max_epochs=1000``, named in whole words, as a flag."""
    match = ASSIGNMENT.match(word)
    if match is None or not names_epochs(match.group(1), abbreviated=False):
        return None
    return match


def _epoch_flag(word: str) -> re.Match[str] | None:
    """:data:`EPOCH_FLAG` where :func:`names_epochs` agrees.

    Not ``--steps_per_epoch``, nor a point of the schedule (``--warmup-epochs``).
    """
    match = EPOCH_FLAG.match(word)
    return match if match is not None and names_epochs(match.group(1)) else None


def _named_flag(word: str) -> re.Match[str] | None:
    """A flag :func:`names_epochs` reads as the epochs (``--nEpochs``), as :data:`EPOCH_FLAG`."""
    match = FLAG.match(word)
    return match if match is not None and names_epochs(match.group(1)) else None


def option_name(flag: str) -> str:
    """The option a flag sets: dashes off, ``-`` as ``_``, a prefix of epochs as ``epochs``."""
    bare = flag.lstrip("-").replace("-", "_")
    return re.sub(r"(^|[._])ep(?:o(?:c(?:hs?)?)?)?$", r"\1epochs", bare)


def unread(flag: Flag, where: str, hint: str) -> InputError:
    """The error for an epochs flag whose value the file does not say (``--epochs $E``)."""
    return InputError(
        f"{flag.written} {quoted(flag.value)} in {where}: the epochs it trains are not in the file",
        hint=hint,
    )


def quoted(value: str) -> str:
    """A flag's value as a shell would take it, on one line: ``' 1000'`` quoted."""
    if value and not any(c.isspace() or c in "'\"" for c in value):
        return value
    return repr(value) if "\n" in value or "\t" in value else shlex.quote(value)
