"""A program that repeats the training itself: refused where one run is priced.

A loop or ``xargs`` around a command is the script's (:mod:`gate.formats.command_lines`);
these are the training program's own repeaters, read from its words:

- Hydra's multirun (``-m``, ``--multirun``, ``hydra.mode=MULTIRUN``) runs a job for each
  combination of its sweep's overrides (``seed='range(1,1000)'``: 999 trainings) or of the
  config's own ``hydra.sweeper.params``;
- ``wandb agent`` (``python -m wandb agent``, ``wandb launch-agent``) runs the sweep's runs
  one after another, ``--count`` of them or until the sweep ends; ``optuna study optimize``
  runs ``--n-trials`` trials;
- torchrun's ``--max-restarts N`` (``--max_restarts``, ``python -m torch.distributed.run``,
  ``accelerate launch``, the ``PET_MAX_RESTARTS`` env it reads) reruns every worker from the
  start of the script after a failure, up to N times, under one trial.

A repeat count is refused above the retries the caller prices (``restarts``; 0 where none
are: ``budget-gate check`` reads the file without the policy's ``reliability.max_retries``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from gate.errors import InputError, Location
from gate.formats.command_words import Words, commands_of
from gate.formats.shell_programs import PYTHON, harmless, program
from gate.spec.loader import DataPath

Locate = Callable[[DataPath], Location | None]

_HYDRA_VALUED = frozenset({"-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir"})
_HYDRA_FLAGS = frozenset({"--resolve", "-p", "--package", "-c", "--cfg", "--info", "-i"})
"""Hydra's own options, which may stand between ``-m`` and the overrides."""
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q"})
_MODE = re.compile(r"^\+{0,2}hydra\.mode=(.*)$", re.IGNORECASE)
_MULTIRUN_PREFIX = re.compile(r"--m(?:u(?:l(?:t(?:i(?:r(?:un?)?)?)?)?)?)?")
"""A prefix of ``--multirun`` Hydra's parser completes (``--multi``): before an override."""
_RESTARTS = re.compile(r"^--max(?:[-_]r(?:e(?:s(?:t(?:a(?:r(?:ts?)?)?)?)?)?)?)?(?:=(.*))?$")
"""torchrun's ``--max-restarts``/``--max_restarts``, or a prefix argparse completes to it."""
_LAUNCHERS = re.compile(r"^(?:torchrun|accelerate|torch\.distributed\.(?:run|launch))$")
RESTARTS_ENV = "PET_MAX_RESTARTS"
"""The env torchrun reads ``--max-restarts`` from (``PET_`` and the option's name)."""


def refuse_program_repeats(words: Words, where: str, locate: Locate, restarts: int = 0) -> None:
    """Refuse a command of ``words`` whose program repeats the training (see the module)."""
    for command in commands_of(words):
        plain = [word for word, _ in command]
        start = program(plain, 1)
        if start is None or harmless(plain[start].rsplit("/", 1)[-1], plain[start + 1 :]):
            continue  # NOTE: git commit -m "x=1" trains nothing
        found = _repeater(plain)
        if found is not None:
            at, said = found
            raise InputError(
                f"`{' '.join(plain[max(at - 2, 0) : at + 2])}` in {where}: {said}, a number "
                "of trainings the file does not price (one run is priced)",
                location=locate(command[at][1]),
                hint="run the training once in the command, and make the repeats the engine's "
                "trials (a sweep budget-gate reads: the Hydra config's sweeper, the W&B sweep "
                "file)",
            )
        for value, at, shown in _restarts(plain):
            number = _count(value)
            if number is not None and number <= restarts:
                continue
            raise InputError(
                f"`{shown}` in {where}: torchrun reruns the whole training after a failure, "
                f"up to {value} times under one trial, {_priced(restarts)}",
                location=locate(command[at][1]),
                hint=f"set --max-restarts {restarts} or less (or remove it), and let the "
                "policy's reliability.max_retries price the retries",
            )


def refuse_restarts_env(
    name: str, value: Any, where: str, location: Location | None, restarts: int = 0
) -> None:
    """Refuse ``PET_MAX_RESTARTS`` above ``restarts`` in a program's environment."""
    if name != RESTARTS_ENV:
        return
    number = _count(value)
    if number is None or number > restarts:
        raise InputError(
            f"{where} {name}: {value}: torchrun reads it as --max-restarts, rerunning the "
            f"whole training after a failure under one trial, {_priced(restarts)}",
            location=location,
            hint=f"set it to {restarts} or less, or remove it",
        )


def _priced(restarts: int) -> str:
    if restarts == 0:  # NOTE: check reads a file without the policy's retries
        return (
            "and a file read alone prices no such retries (at launch, the SkyPilot policy "
            "allows the policy's reliability.max_retries)"
        )
    return f"more than the {restarts} retries priced (the policy's reliability.max_retries)"


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return math.ceil(number) if math.isfinite(number) else None


def _repeater(words: list[str]) -> tuple[int, str] | None:
    """Where a repeater is in a command's words, and what it does; None if none."""
    for at, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        after = words[at + 1 :]
        abbreviated = _MULTIRUN_PREFIX.fullmatch(word) is not None  # NOTE: argparse's allow_abbrev
        if word == "--multirun" or ((word == "-m" or abbreviated) and _multirun(words, at)):
            return at, f"Hydra's {word} runs a job for each combination of the sweep"
        if (mode := _MODE.match(word)) and mode[1].strip("'\"").upper() == "MULTIRUN":
            return at, "hydra.mode=MULTIRUN runs a job for each combination of the sweep"
        command = [w for w in after if not w.startswith("-")][:2]
        if name == "wandb" and command[:1] in (["agent"], ["launch-agent"]):
            return at, f"`wandb {command[0]}` runs the sweep's runs one after another"
        if name == "optuna" and "optimize" in command:
            return at, "`optuna study optimize` runs --n-trials trials"
    return None


def _multirun(words: list[str], at: int) -> bool:
    """Whether ``-m`` at ``at`` is Hydra's: not Python's own, nor an option with a value.

    After it, past Hydra's own options, comes an override (``seed=1,2``), a variable that
    may be one, or nothing (the config's own sweep).
    """
    before = at - 1
    while before >= 0 and words[before].startswith("-"):
        before -= 1
        if before >= 0 and words[before] in _PYTHON_VALUED:
            before -= 1
    if before >= 0 and PYTHON.fullmatch(words[before].rsplit("/", 1)[-1]):
        return False  # NOTE: python -m module: the interpreter's
    nxt = at + 1
    while nxt < len(words) and (words[nxt] in _HYDRA_VALUED or words[nxt] in _HYDRA_FLAGS):
        nxt += 1 + (words[nxt] in _HYDRA_VALUED)
    if nxt >= len(words):
        return True
    following = words[nxt]
    return "=" in following or following.startswith(("$", "+", "~"))


def _restarts(words: list[str]) -> list[tuple[str, int, str]]:
    """The restarts of a command that runs a launcher (torchrun): each value, where, as written."""
    launches = any(_LAUNCHERS.match(word.rsplit("/", 1)[-1]) for word in words)
    found = []
    for at, word in enumerate(words):
        flag = _RESTARTS.match(word)
        if word.startswith(f"{RESTARTS_ENV}="):
            found.append((word.split("=", 1)[1], at, word))
        elif flag is not None and launches:
            if flag[1] is not None:
                found.append((flag[1], at, word))
            else:
                value = words[at + 1] if at + 1 < len(words) else "(no value)"
                found.append((value, at, f"{word} {value}"))
    return found
