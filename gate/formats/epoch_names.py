"""What names the epochs on a command line: a flag, a variable, a yacs pair, a JSON override.

:func:`names_epochs` reads a name as argparse, an environment or a config would take it. A
command also hands epochs without a flag: yacs-based trainers (Detectron2's
``default_argument_parser``, and the many that copy it) read ``KEY VALUE`` pairs after the
flags (``SOLVER.MAX_EPOCHS 1000``: ``cfg.merge_from_list``), and AllenNLP's ``-o`` takes a
JSON object merged over its config (``{"trainer": {"num_epochs": 1000}}``):
:func:`paired_epochs` reads both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gate.spec.loader import DataPath

EPOCH_FLAG = re.compile(r"^--?((?:[\w.-]*[._-])?ep(?:o(?:c(?:hs?)?)?)?)(?:=(.*))?$")
"""A word that sets the epochs: ``--epochs 90``, ``--max-epochs=90``, ``--num_train_epochs``,
``--trainer.max_epochs``, or a prefix argparse would complete to one (``--epo``)."""


_COUNT_AFTER = (
    r"(?:count|total|num|number|n|max|limit|budget|train|training"
    r"|per[._-]?(?:trial|run|job|task|experiment|sweep|seed|config|model|worker)"
    r"|(?:to|for)[._-]?(?:train|training|run))"
)
"""A count's words after the epochs: ``epoch_count``, ``epochs_per_trial``, ``epochs_to_train``.

NOTE: only the count's words were read before; ``epochs_per_trial: 1000`` (also
``max_epochs_per_run``, ``epochs_to_train``) was no epochs, so a declared ``max_epochs: 1``
stood. A part of the schedule (``epochs_per_eval``, ``epochs_per_checkpoint``) is not one."""
_EPOCH_NAME = re.compile(
    r"(?:[\w.-]*[._-])?ep(?:o(?:c(?:hs?)?)?)?"
    rf"|(?:[\w.-]*[._-])?epochs?[._-]?{_COUNT_AFTER}"
)
_WHOLE_EPOCH_NAME = re.compile(rf"(?:[\w.-]*[._-])?epochs?(?:[._-]?{_COUNT_AFTER})?")
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
    r"|anneal|freeze|unfreeze|swa|patience|restart|offset|print|report|snapshot"
    r"|test|min)(?=[._-]|$)"
)
"""A point or a part of the schedule, not its length: ``warmup_epochs``, ``start_epoch``,
``save_every_epochs``, ``check_val_every_n_epoch``, Lightning's ``min_epochs``."""
_GLUED_SCHEDULE = re.compile(
    r"warmup|decay|anneal|freeze|patience|restart|offset|snapshot|checkpoint|resume"
    r"|save|eval|valid|logging|start|begin|first|last|every|print|report|test"
)
"""Such a word glued inside a longer one: ``lrdecayepochs`` (no short one: ``cur``, ``val``)."""
WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
"""Where camelCase starts a word: ``nEpochs`` is ``n_epochs``."""


def names_epochs(name: str, *, abbreviated: bool = True) -> bool:
    """Whether a config key, parameter or flag names the epochs.

    ``epochs``, ``max-epochs``, ``nb_epochs``, ``n_epoch``, ``EPOCHS``, ``num_train_epochs``,
    ``nEpochs``, ``maxEpochs``, ``epoch_count``, ``epochs_total``, ``epochs_per_trial``,
    ``epochs_to_train`` and a prefix argparse would complete (``epo``): a W&B parameter is
    handed to the program as ``--name=value``, so every name its flag could be counts; not
    ``abbreviated``, only whole words (an environment variable). Not ``eps``, ``step``,
    ``steps_per_epoch``, nor a point of the schedule (``warmup_epochs``, ``start_epoch``,
    ``save_every_epochs``, ``epochs_per_eval``).
    """
    lowered = WORD_START.sub("_", name).lower()
    if _PER_EPOCH.search(lowered) or _SCHEDULE.search(lowered):
        return False
    pattern = _EPOCH_NAME if abbreviated else _WHOLE_EPOCH_NAME
    if pattern.fullmatch(lowered) is not None:
        return True
    glued = _GLUED_EPOCHS.fullmatch(lowered)  # NOTE: nepochs, maxepochs, numtrainepochs
    if glued is not None and not _SCHEDULE.search(glued[1]) and not glued[1].endswith("per"):
        return _GLUED_SCHEDULE.search(glued[1]) is None
    return abbreviated and _GLUED_PREFIX.fullmatch(lowered) is not None


FLAG = re.compile(r"^--?([A-Za-z_][\w.-]*)(?:=(.*))?$", re.DOTALL)
"""An option and its value where it is glued on: ``--epochs=90``, ``--max_steps``."""
ASSIGNMENT = re.compile(r"^\+{0,2}([A-Za-z_][\w.-]*)=(.*)$", re.DOTALL)
"""``NAME=value``: a variable a command sets, or a Hydra override (``++trainer.x=1``)."""
YACS_KEY = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
"""A dotted config key as yacs reads it (``SOLVER.MAX_EPOCHS``, ``train.epochs``)."""
_PAIR_OPTIONS = frozenset({"--opts", "opts", "--cfg-options", "--options", "--set", "-o"})
"""Options whose next words are yacs pairs, not the option's one value."""
_OBJECT_ENTRY = re.compile(r"""["']?([A-Za-z_][\w.-]*)["']?\s*:\s*([^,{}\s]+)""")
"""A key and its value in an object, quoted or not (``num_epochs: 1000``, ``"a":"b"``)."""
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def paired_epochs(
    word: str, previous: str | None, following: Sequence[tuple[str, DataPath]]
) -> tuple[str, str, bool] | None:
    """The epochs a word hands without a flag, or ``None``.

    Returns how it is written, its value, and whether the value is the next word. A dotted
    key named as the epochs in whole words, followed by a value (``SOLVER.MAX_EPOCHS
    1000``), is yacs' pair; not a dotted value of the option before it (``--resume
    model.epoch --lr 0.1``): after an option that takes the next word, only a number
    makes it a pair. A word that is an object (JSON, or Jsonnet, whose keys need no quotes:
    the shell took them off ``{"trainer":{"num_epochs":1000}}``) holding epochs-named keys
    with numbers is an override, its largest number the value; a bare ``epoch`` there is a
    point (a checkpoint's), not a length.
    """
    if YACS_KEY.fullmatch(word) and names_epochs(word.rsplit(".", 1)[-1], abbreviated=False):
        value = following[0][0] if following else None
        if value is None or value.startswith("-"):
            return None
        after_option = previous is not None and previous.startswith("-") and "=" not in previous
        if after_option and previous not in _PAIR_OPTIONS and not _NUMBER.fullmatch(value):
            return None
        return (word, value, True)
    numbers = [
        (key, value)
        for key, value in object_entries(word)
        if key.lower() != "epoch" and names_epochs(key, abbreviated=False)
    ]
    if not numbers:
        return None
    key, value = max(numbers, key=lambda kv: float(kv[1]))
    return (key, value, False)


def object_entries(word: str) -> list[tuple[str, str]]:
    """The keys of an object word (``{...}``) whose values are plain numbers, quoted or not."""
    if not word.lstrip().startswith("{"):
        return []
    entries = ((key, value.strip("\"'")) for key, value in _OBJECT_ENTRY.findall(word))
    return [(key, value) for key, value in entries if _NUMBER.fullmatch(value)]
