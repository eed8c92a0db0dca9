"""Words of a training command that the shell makes from what the file does not show.

SkyPilot runs ``setup`` and ``run`` with bash, and a Kueue container may run ``sh -c``:
``python train.py --epochs 2 $EXTRA`` with ``EXTRA='--epochs 1000'`` (set at launch, in the
image, by a command's output) trains 1,000 epochs priced as 2; so do ``$(cat args)``,
``x$(echo ' --epochs 1000')``, ``"$@"`` after ``set --``, a brace expansion
(``{--epochs,1000}``) and a glob that matches a file named ``--epochs=1000``. Such a word of
a command that may train is refused, unless it is an option's value (``--data $DIR``) or
a variable whose value the file holds: the task's ``envs`` (whose flags
:func:`~gate.formats.shell_effects.refuse_held_commands` reads), or the script's own plain
assignments of text (``SCRIPT=train.py``, ``ARG="--bf16"``), read for flags as ``envs``
are. Text in single quotes is the text itself (a Kueue container's argv, where no shell
runs, is read quoted).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from itertools import pairwise

from gate.errors import InputError, Location
from gate.formats.command_lines import training_scripts
from gate.formats.command_words import expansion_end
from gate.formats.shell_effects import sets_the_training
from gate.formats.shell_loops import Unreadable, simple_commands
from gate.formats.shell_programs import SHELLS

SKYPILOT_VARIABLES = frozenset(
    f"SKYPILOT_{name}"
    for name in (
        *("NODE_RANK", "NODE_IPS", "NUM_NODES", "NUM_GPUS_PER_NODE", "TASK_ID", "JOB_ID"),
        *("SETUP_NODE_RANK", "SETUP_NODE_IPS", "SERVE_REPLICA_ID", "JOB_RANK", "NUM_JOBS"),
    )
)
"""What SkyPilot sets on every node: ranks, counts, addresses, ids; never flags."""

_REFERENCE = re.compile(
    r"\$(?:\{(?P<indirect>!?)(?P<braced>[A-Za-z_]\w*)[^}]*\}|(?P<plain>[A-Za-z_]\w*))"
)
"""``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``${!NAME}`` (another variable's value)."""
_SYSTEM_VARIABLES = frozenset(
    {"HOME", "USER", "LOGNAME", "PWD", "OLDPWD", "HOSTNAME", "TMPDIR", "SHELL", "PATH"}
)
"""What the system sets, a path or a name: no flags."""
_POSITIONAL = re.compile(r"^\$(?:[@*]|\d|\{(?:[@*]|\d+)\})$")
_SUBSTITUTION = re.compile(r"\$\((?!\()|`")
"""``$(cat args)``, backquotes: words from a command's output (not ``$((1 + 1))``)."""
_PLAIN_OUTPUT = re.compile(r"\$\((?:pwd|nproc|hostname|whoami)\)|`(?:pwd|nproc|hostname|whoami)`")
"""Commands with no arguments whose output is one word that is no flag."""
_NAMED_BY = re.compile(r"^-[^=\s]*\$")
"""``--${FLAG}=1000``: an option whose name a variable gives."""
_BRACES = re.compile(r"(?<!\$)\{[^\s{}]*(?:,|\.\.)[^\s{}]*\}")
"""``{--epochs,1000}``, ``--epochs{,=1000}``, ``{1..3}``: bash's brace expansion."""
_GLOB = re.compile(r"^(?:[*?\[]|-[^=]*[*?\[])")
"""A word whose match may be a file named like a flag: ``*``, ``--ep*``."""
_DECLARES = frozenset({"export", "local", "declare", "typeset", "readonly"})
_OPTION_VALUE = re.compile(r"^(?:--?|\+\+?)?[A-Za-z_][\w.-]*=")
"""``--master_addr=$(…)``, ``trainer.devices=$N``: inside a value, as ``--data $DIR`` is."""
_FROM_SKYPILOT = re.compile(
    r"\$\{?(SKYPILOT_[A-Z_]+)\}?"
    r'|\$\(echo "?\$\{?(SKYPILOT_[A-Z_]+)\}?"? \| (?:head|tail) -n ?\d+\)'
    r'|`echo "?\$\{?(SKYPILOT_[A-Z_]+)\}?"? \| (?:head|tail) -n ?\d+`'
)
"""A value SkyPilot gives (``$(echo "$SKYPILOT_NODE_IPS" | head -n1)``, the head's address)."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def refuse_hidden_words(
    script: str, known: Collection[str], where: str, at: Location | None
) -> None:
    """Refuse a word of a command that may train that the shell makes from outside the file.

    ``known`` names the variables whose values the file holds; one the script sets itself
    holds the script's value instead, read only where every setting is a plain text.
    """
    for run, _, text in training_scripts([(script, (where,))]):
        if text is None or run[0].rsplit("/", 1)[-1] in SHELLS:
            continue  # NOTE: an argv no shell expands; a shell's script is read as a script
        expanded, bare = outside_quotes(text, doubles=False), outside_quotes(text, doubles=True)
        for before, word in pairwise(run):
            value = is_value(before, word)
            problem = _hidden(word, expanded, bare, known, script, value)
            if problem is None or (value and problem[1]):
                continue
            raise InputError(
                f"{word} in {where}: {problem[0]}", location=at, hint=f"write the words in {where}"
            )


def _hidden(
    word: str, expanded: str, bare: str, known: Collection[str], script: str, value: bool
) -> tuple[str, bool] | None:
    """Why the shell makes ``word`` from outside the file, and whether a value may be; or None."""
    split = expansion_problem(word, bare, value=value)
    if split is not None:
        return split, False
    if _NAMED_BY.search(word) and "$" in expanded:
        return "a variable names the option, which is not in the file", False
    output = _SUBSTITUTION.search(_PLAIN_OUTPUT.sub("", word))
    if output and (output.start() == 0 or _stands(word, bare)) and _SUBSTITUTION.search(expanded):
        return "the shell makes it words of a command's output, which is not in the file", True
    if _POSITIONAL.match(word) and _stands(word, expanded):
        return "the shell makes it the script's arguments (`set --`, the words after `sh -c`)", True
    for reference in _REFERENCE.finditer(word):
        problem = _variable_problem(word, reference, expanded, bare, known, script)
        if problem is not None:
            return problem
    return None


def _variable_problem(
    word: str,
    reference: re.Match[str],
    expanded: str,
    bare: str,
    known: Collection[str],
    script: str,
) -> tuple[str, bool] | None:
    """Why a variable in ``word`` may make flags the file does not show; or None.

    One that starts the word (``$EXTRA``, ``"${EXTRA}0"``), or stands in a word the shell
    splits (``x$EXTRA`` unquoted), may; one inside a quoted word after its text does not.
    """
    name = reference["braced"] or reference["plain"]
    if not re.search(rf"\$(?:{name}(?!\w)|\{{!?{name}\b)", expanded):
        return None  # NOTE: quoted ('$EXTRA'): the text itself
    if reference.start() > 0 and not _stands(word, bare):
        return None
    if reference["indirect"]:
        return f"${{!{name}}} takes another variable's value, which is not in the file", True
    if script_sets(script, name):
        return _set_by_the_script(name, script)
    if name in known or name in SKYPILOT_VARIABLES or name in _SYSTEM_VARIABLES:
        return None
    return f"the shell makes it words from {name}, whose value is not in the file", True


def is_value(before: str, word: str) -> bool:
    """Whether ``word`` is an option's value: after ``--data``, or ``--out=…`` itself."""
    after = before.startswith("-") and "=" not in before and not word.startswith("-")
    return after or _OPTION_VALUE.match(word) is not None


def expansion_problem(word: str, bare: str, *, value: bool) -> str | None:
    """Why the shell may make ``word`` words that are flags; or None.

    ``bare`` is the script's text outside quotes (:func:`outside_quotes`); ``value``, that
    the word is an option's value, where a command's output is taken as one word.
    """
    braces = _BRACES.search(word)
    if braces and braces[0] in bare:
        return "bash's brace expansion makes it several words of the training command"
    if _GLOB.match(word) and _stands(word, bare):
        return "the shell puts names of files there (a file named --epochs=1000 is a flag)"
    output = _SUBSTITUTION.search(_PLAIN_OUTPUT.sub("", word))
    if output and output.start() and not value and _stands(word, bare):
        return "the shell splits a command's output in it into words, which are not in the file"
    return None


def _set_by_the_script(name: str, script: str) -> tuple[str, bool] | None:
    """None where every setting of ``name`` is a plain text with no flag that trains."""
    values = _plain_values(name, script)
    if values is None:
        return f"the script sets {name} itself, other than to a plain text", True
    for value in values:
        if sets_the_training(value):
            return f"the script sets {name} to {value!r}, an epochs flag or a step budget", False
    return None


def _plain_values(name: str, script: str) -> list[str] | None:
    """Every text the script assigns ``name``, or None where it may hold another value.

    Read: assignments of text with no expansion, or of what SkyPilot gives, alone on their
    command (``NAME=text``, ``export NAME="text"``; not ``NAME=text cmd``, which sets it for
    ``cmd`` only), the first before the script reads it. Not read: ``read``, ``for``, ``+=``,
    ``printf -v``, ``let``, ``((…))``, ``${NAME:=…}``, ``mapfile``, ``getopts``, ``eval``, an
    expansion assigned.
    """
    if _other_setters(name).search(script):
        return None
    values: list[str] = []
    seen = 0
    try:
        commands = [words for words, _ in simple_commands(script, None)]
    except Unreadable:
        return None
    for words in commands:
        if words and words[0] in _DECLARES:
            words = [w for w in words[1:] if not w.startswith("-")]
        if not words or not all(_ASSIGNMENT.match(w) for w in words):
            continue
        for word in words:
            assigned, _, value = word.partition("=")
            if assigned != name:
                continue
            seen += 1
            from_skypilot = _FROM_SKYPILOT.fullmatch(value)
            if from_skypilot and set(from_skypilot.groups()) - {None} <= SKYPILOT_VARIABLES:
                continue  # NOTE: a rank, a count, an address: no flags
            if "$" in value or "`" in value:
                return None
            values.append(value)
    first_read = re.search(rf"\$(?:{re.escape(name)}(?!\w)|\{{{re.escape(name)}\}})", script)
    first_set = re.search(rf"(?<![\w$]){re.escape(name)}=", script)
    if not seen or first_set is None or (first_read and first_read.start() < first_set.start()):
        return None
    return values


def _other_setters(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    return re.compile(
        rf"\b(?:read|mapfile|readarray|getopts|let)\b[^\n;|&]*\b{n}\b|\bfor\s+{n}\b"
        rf"|\b{n}(?:\[[^\]]*\])?\+=|\b{n}\[[^\]]*\]=|printf\s+-v\s*{n}\b|\(\([^)]*\b{n}\b"
        rf"|\$\{{{n}:?[=?]|\beval\b|\bdeclare\s+-\w*n"
    )


def script_sets(script: str, name: str) -> bool:
    """Whether the script may change ``name``: it names it other than to read it (``$NAME``).

    ``EPOCHS=``, ``EPOCHS+=00``, ``read EPOCHS``, ``let EPOCHS*=2``, ``printf -v EPOCHS``,
    ``${EPOCHS:=1000}``; not ``${EPOCHS:-10}``, ``${EPOCHS%0}``, which read it.
    """
    n = re.escape(name)
    reads = rf"\$(?:{n}\b|\{{!?{n}\}}|\{{{n}(?::?[-+?]|[#%/^,@\[])[^}}]*\}})"
    unread = re.sub(reads, "", script)
    return re.search(rf"(?<![\w$]){re.escape(name)}(?!\w)", unread) is not None


def _stands(word: str, text: str) -> bool:
    return re.search(rf"(?<!\S){re.escape(word)}(?!\S)", text) is not None


def outside_quotes(script: str, *, doubles: bool) -> str:
    """The script with quoted text blanked: single quotes, and double quotes with ``doubles``.

    What is left is what the shell expands (``$X`` inside double quotes too), or, with
    ``doubles``, what it also splits, brace-expands and globs. A command substitution is
    kept whole where it is not blanked (its own quotes are its); a backslash's character
    is blanked with it.
    """
    out: list[str] = []
    quote = ""
    at = 0
    while at < len(script):
        char = script[at]
        if char == "\\" and quote != "'":
            out.append("  ")
            at += 2
            continue
        if quote != "'" and (script.startswith("$(", at) or char == "`"):
            end = _expansion_end(script, at)
            part = script[at:end]
            out.append(" " * len(part) if quote and doubles else part)
            at = end
            continue
        if quote == "" and char in "'\"":
            quote, char = char, " "
        elif quote == char:
            quote, char = "", " "
        elif quote == "'" or (quote == '"' and doubles):
            char = " "
        out.append(char)
        at += 1
    return "".join(out)


def _expansion_end(script: str, at: int) -> int:
    """Where the ``$(…)`` or backquoted command at ``at`` ends; the script's end if never."""
    try:
        return expansion_end(script, at)
    except Unreadable:  # NOTE: unclosed, or nested past the bound: the rest is the command
        return len(script)
