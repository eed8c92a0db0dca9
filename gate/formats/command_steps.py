"""A step budget on a command line, which trains past the epochs priced: refused.

Hugging Face's ``Trainer`` runs ``max_steps > 0`` over ``num_train_epochs`` ("overrides
num_train_epochs"), as its example scripts' ``--max_train_steps`` do, and Lightning with
``max_steps`` and no ``max_epochs`` trains until the steps (``max_epochs`` -1): a command
that says ``--epochs 1 --max_steps 10000000`` trains far more than the one epoch priced.
A step budget (``--max_steps``, ``--max-steps``, ``--max_train_steps``, ``--num_train_steps``,
``--total_steps``, iterations alike, fairseq's ``--max-update``, an argparse prefix such as
``--max_st``;
``trainer.max_steps=N``, ``MAX_STEPS=N``, Lightning's ``PL_TRAINER_MAX_STEPS``) in a command
the gate prices, or an environment variable named so, is refused unless its value is a
number of at most 0 (``-1``: off), written where it is read. Points of the schedule
(``warmup_steps``, ``save_steps``, ``steps_per_epoch``) are no budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from gate.errors import InputError, Location
from gate.formats.command_lines import quoted
from gate.formats.command_words import Words, commands_of
from gate.formats.epoch_names import ASSIGNMENT, FLAG, WORD_START, YACS_KEY, object_entries
from gate.formats.model import mapping
from gate.spec.loader import DataPath

_BUDGET = r"(?:max|num|total|train(?:ing)?)[._-]?(?:number[._-]?of[._-]?)?(?:train(?:ing)?[._-]?)?"
_NAME = re.compile(
    rf"(?:^|[._-])(?:{_BUDGET}(?:(?:time)?steps?|iters?|iterations?)|max[._-]?updates?)$"
)
"""A name that bounds training by steps, iterations or updates (fairseq's ``--max-update``),
in whole words (an env, an override)."""
_PREFIX = re.compile(
    rf"(?:^|[._-])(?:{_BUDGET}(?:(?:time)?st(?:e(?:ps?)?)?|it(?:e(?:r(?:s|ations?)?)?)?)"
    r"|max[._-]?upd(?:a(?:t(?:es?)?)?)?)$"
)
"""The same, or a prefix argparse would complete to one (``--max_st``): a flag's name."""
_NOT_TRAINING = (
    "sched", "finder", "eval", "test", "valid", "runner", "rollout", "episode", "diffusion",
    "ddpm", "ddim", "noise", "denois", "sampl", "inference", "generat", "predict", "bench",
    "every", "log", "save", "warm", "checkpoint", "ckpt", "print", "report", "decay",
    "anneal", "accum", "gradient", "optim", "lbfgs",
)  # fmt: skip
"""Words that start a word of a name whose steps are not the training's length: a
learning-rate schedule (OneCycleLR's ``lr_scheduler.total_steps``), a checkpoint or log
cadence (Lightning's ``every_n_train_steps``), an evaluation or rollout
(``env_runner.max_steps``), a diffusion model's noise steps (``ddpm_num_steps``), an
optimizer's own iterations (LBFGS' ``max_iter``). ``val`` counts as a whole word only."""
_SERVING = frozenset({"vllm", "sglang", "lm_eval", "lm-eval", "text-generation-launcher"})
"""Programs that serve or benchmark a model: their iterations train nothing."""


def names_steps(name: str, *, abbreviated: bool = False) -> bool:
    """Whether a flag, override or variable names a step budget (``maxSteps`` too).

    A name that says its steps are not the training's length (:data:`_NOT_TRAINING`: a
    schedule, a cadence, an evaluation, noise steps), in any of its dotted parts, is none.
    """
    lowered = WORD_START.sub("_", name).lower()
    words = re.split(r"[._-]", lowered)
    if "val" in words or any(w.startswith(_NOT_TRAINING) for w in words):
        return False
    return (_PREFIX if abbreviated else _NAME).search(lowered) is not None


def steps_off(value: Any) -> bool:
    """Whether a step budget's value turns it off: a number of at most 0 (``-1``, ``0``)."""
    if isinstance(value, bool) or value is None:
        return False
    try:
        number = float(str(value).strip())
    except ValueError:
        return False
    return math.isfinite(number) and number <= 0


def step_budgets(command: Words) -> list[tuple[str, DataPath]]:
    """Each step budget a command sets that is not off: how it is written, where."""
    found: list[tuple[str, DataPath]] = []
    words = [word for word, _ in command]
    if any(word.rsplit("/", 1)[-1] in _SERVING for word in words[:3]):
        return found  # NOTE: vllm bench latency --num-iters 100 times inference
    own = next((names for program, names in _OWN_NAMES if any(program in w for w in words[:3])), ())
    for i, (word, path) in enumerate(command):
        budget = _budget(word, own)
        if budget is None:
            continue
        value, shown = budget, word
        if value is _NEXT:
            value = command[i + 1][0] if i + 1 < len(command) else None
            if not word.startswith("-") and (value is None or value.startswith("-")):
                continue  # NOTE: a dotted name with no value after it is no yacs pair
            shown = f"{word} {quoted(value)}" if value is not None else f"{word} (no value)"
        if not steps_off(value):
            found.append((shown, path))
    return found


_NEXT = object()
"""A flag whose value is the next word."""


_OWN_NAMES = (("lerobot", ("steps", "offline.steps")),)
"""Programs whose own flag names a step budget no general name covers (LeRobot's
``--steps=100000``: its training runs that many updates, whatever epochs are said)."""


def _budget(word: str, own: tuple[str, ...] = ()) -> object | None:
    """The value a step budget's word sets (:data:`_NEXT`: the next word's), or None.

    ``own`` names the program's own step budgets, besides the general names.
    """
    flag = FLAG.match(word)
    if flag is not None and (names_steps(flag[1], abbreviated=True) or flag[1] in own):
        return _NEXT if flag[2] is None else flag[2]
    assignment = ASSIGNMENT.match(word)
    if assignment is not None and names_steps(assignment[1]):
        return assignment[2]
    if YACS_KEY.fullmatch(word) and names_steps(word):
        return _NEXT
    budgets = [value for key, value in object_entries(word) if names_steps(key)]
    return max(budgets, key=float) if budgets else None  # NOTE: --trainer '{"max_steps": 9}'


_HINT = (
    "give the training its epochs (--epochs N) and remove the step budget, or set it to -1 "
    "(0 or less: off)"
)


def refuse_step_budgets(
    words: Words, where: str, locate: Callable[[DataPath], Location | None]
) -> None:
    """Refuse a command of ``words`` (and the scripts it runs) that sets a step budget."""
    for command in commands_of(words):
        for shown, path in step_budgets(command):
            raise InputError(
                f"{shown} in {where} bounds the training by steps, past the epochs priced: "
                "the spec prices epochs, not steps (Hugging Face's Trainer runs max_steps "
                "over the epochs; Lightning with max_steps and no max_epochs trains to the "
                "steps)",
                location=locate(path),
                hint=_HINT,
            )


def refuse_steps_env(name: str, value: Any, where: str, location: Location | None) -> None:
    """Refuse an environment variable named as a step budget, unless it is off."""
    if not names_steps(name) or steps_off(value):
        return
    raise InputError(
        f"{where} {name} bounds the training by steps, past the epochs priced: the spec "
        "prices epochs, not steps (a program may read it from its environment)",
        location=location,
        hint=_HINT,
    )


def refuse_task_steps(data: dict[str, Any], at: Any) -> None:
    """Refuse a step budget in a SkyPilot task's ``setup``, ``run``, envs or secrets."""
    for key in ("setup", "run"):
        if isinstance(script := data.get(key), str):
            refuse_step_budgets([(script, (key,))], key, lambda path: at(*path))
    for key in ("envs", "secrets"):
        for name, value in mapping(data.get(key)).items():
            refuse_steps_env(str(name), value, key, at(key, name))
