"""What a script does that its commands' flags do not show: scripts it writes, epochs it sets.

A job's script may write a script from its own text and run it (``cat > loop.sh <<EOF ...
EOF; bash loop.sh``, ``echo ... > l.sh; ./l.sh``), set the epochs' variable with a builtin
no ``NAME=value`` word shows (``printf -v EPOCHS``, ``read EPOCHS``, ``EPOCHS+=00``,
``(( EPOCHS = 1000 ))``), or run commands from Python code written in it (``python -c
"...subprocess..."``, ``python - <<EOF``). budget-gate reads the file's commands, not what
those make at run time, so each is refused at its line (fail closed), after the repeats
:func:`gate.formats.command_lines.refuse_repeats` refuses.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

from gate.errors import InputError, Location
from gate.formats.command_lines import (
    Words,
    commands_of,
    epoch_flags,
    names_epochs,
    refuse_repeats,
    shell_words,
    training_runs,
)
from gate.formats.command_repeaters import refuse_program_repeats
from gate.formats.command_steps import step_budgets
from gate.formats.shell_programs import PYTHON, SHELLS, program, run_key
from gate.spec.loader import DataPath

Locate = Callable[[DataPath], Location | None]


def refuse_unread_training(
    words: Words, where: str, locate: Locate, depth: int = 0, *, restarts: int = 0
) -> None:
    """Refuse a script whose training budget-gate cannot read from the file.

    Repeats first (:func:`refuse_repeats`, and a program's own:
    :func:`gate.formats.command_repeaters.refuse_program_repeats`, torchrun's restarts above
    ``restarts``); then a script the job writes and runs (one written from a here-document
    is read as the script itself is), the epochs set by a builtin, and commands run from
    Python (or Perl, Ruby, Node) code in the script.
    """
    refuse_repeats(words, where, locate)
    refuse_program_repeats(words, where, locate, restarts)
    commands = commands_of(words)
    written = _written_scripts(commands)
    bodies = {
        _norm(m["file"]): m["body"]
        for text, _ in words
        for pattern in _WRITTEN_HEREDOCS
        for m in pattern.finditer(text)
    }
    for run, path in training_runs(words):
        script = _script_run(run)
        if script is None or _norm(script) not in written:
            continue
        if _norm(script) in bodies and depth < _MAX_DEPTH:  # NOTE: its text is in the file
            body = [(bodies[_norm(script)], path)]
            written_by = f"{script} (written by {where})"
            refuse_unread_training(body, written_by, locate, depth + 1, restarts=restarts)
            continue
        raise InputError(
            f"{where} runs {script}, a script it writes itself: budget-gate reads the "
            "commands in the file, not those of a script the job makes",
            location=locate(path),
            hint=f"write the commands in {where} itself",
        )
    for command in commands:
        plain = [word for word, _ in command]
        name = epochs_variable_set(plain)
        if name is not None:
            raise InputError(
                f"`{' '.join(plain)}` in {where} sets {name}, a variable named like the "
                "epochs, where budget-gate does not read the number it holds",
                location=locate(command[0][1]),
                hint=f"write it as {name}=N or give the training command its epochs flag "
                "(--epochs N)",
            )
    for code, path, python in _inline_code(words):
        if (runs := (_RUNS_COMMANDS if python else _OTHER_RUNS).search(code)) is not None:
            raise InputError(
                f"{'Python' if python else 'Perl, Ruby or Node'} code in {where} runs commands "
                f"({runs[0].strip()}), which budget-gate "
                "does not read: how often it trains and for how many epochs are not in the file",
                location=locate(path),
                hint=f"write the commands it runs in {where} itself",
            )


_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "1>", "2>"})
_COPIES = frozenset({"cp", "mv", "install", "ln", "dd"})


def written_files(words: list[str], at: int, *, copies: bool = True) -> list[str]:
    """The files ``words[at]`` writes: after ``>``, in ``a>f``, tee's, and (``copies``) cp's.

    A copy's words are all given, its sources too (a target may be a folder).

    Without ``copies``, only what the script writes from its own text (``echo ... > f``,
    ``cat > f <<EOF``, ``tee f``): a copied or downloaded file holds what any file of the
    repository may hold, which budget-gate does not read either.
    """
    word = words[at]
    if word in _REDIRECTS:
        return words[at + 1 : at + 2]
    if ">" in word and not word.startswith(("'", '"')):
        return [target] if (target := word.rsplit(">", 1)[1]) else []
    tool, args = word.rsplit("/", 1)[-1], command_args(words, at)
    if tool == "tee" or (copies and tool in _COPIES):
        # NOTE: a copy's sources too: ``cp big.yaml conf/`` writes a config into a folder
        return [a.removeprefix("of=") for a in args if not a.startswith(("-", "<", ">"))]
    return []


COMMAND_ENDS = frozenset({";", "|", "||", "&&", "&", "(", ")", "{", "}", "do", "then", "else"})
"""Words that end a command's arguments in a split line (a separator, a group, a keyword)."""
_MOVES = frozenset({"cp", "mv", "install", "ln"})
_TARGET = r"(?:>>?\s*|\btee\s+(?:-a\s+)?)(?P<q1>['\"]?)(?P<file>[\w./~-]+)(?P=q1)"
_OPENS = r"<<-?\s*(?P<q2>['\"]?)(?P<word>\w+)(?P=q2)"
_BODY = r"[^\n]*\n(?P<body>.*?)^\t*(?P=word)[ \t]*$"
_WRITTEN_HEREDOCS = tuple(
    re.compile(pattern, re.MULTILINE | re.DOTALL)
    for pattern in (
        rf"^[^\n]*?{_TARGET}[^\n]*?{_OPENS}{_BODY}",
        rf"^[^\n]*?{_OPENS}[^\n]*?{_TARGET}{_BODY}",
    )
)
"""``cat > f <<EOF`` or ``cat <<EOF > f`` (``tee f`` too): its file and its body."""


def _norm(path: str) -> str:
    return posixpath.normpath(path)


def _written_scripts(commands: list[Words]) -> set[str]:
    """The files the script writes from its own text (``>``, ``tee``), and where it moves them."""
    written: set[str] = set()
    for command in commands:
        plain = [word for word, _ in command]
        for at, word in enumerate(plain):
            written.update(_norm(t) for t in written_files(plain, at, copies=False))
            if word.rsplit("/", 1)[-1] not in _MOVES:
                continue
            args = [a for a in command_args(plain, at) if not a.startswith(("-", "<", ">"))]
            moved = [a for a in args[:-1] if _norm(a) in written]
            if len(args) >= 2 and moved:
                target = _norm(args[-1])
                written.add(target)
                written.update(_norm(posixpath.join(target, posixpath.basename(a))) for a in moved)
    return written


def command_args(words: list[str], at: int) -> list[str]:
    """The words after ``words[at]`` up to the command's end."""
    out = []
    for word in words[at + 1 :]:
        if word in COMMAND_ENDS:
            break
        out.append(word)
    return out


_RUNNERS = frozenset({"python", "torchrun", "source", "."}) | SHELLS
"""Programs whose first word is the script they run (``bash loop.sh``, ``python l.py``)."""


def scripts_not_read(words: Words) -> list[str]:
    """The shell scripts a script runs from files it does not write (``bash train.sh``).

    Their commands are in the repository or the image, not in the file: a loop there repeats
    the training unpriced, so the readers say so beside the price. A Python program is the
    training itself; a script the job writes is refused (:func:`refuse_unread_training`).
    """
    written = _written_scripts(commands_of(words))
    found: list[str] = []
    for run, _ in training_runs(words):
        script, at = _script_run(run), program(list(run), 1)
        runner = run[at].rsplit("/", 1)[-1] if at is not None else ""
        if script is None or _norm(script) in written or PYTHON.fullmatch(runner):
            continue
        if script.endswith(".py"):  # NOTE: a launcher's program (deepspeed train.py)
            continue
        if runner != "torchrun" and script not in found:
            found.append(script)
    return found


def scripts_note(script: object, where: str) -> str | None:
    """What to say of the scripts ``script`` (text at ``where``) runs unread, or None."""
    scripts = scripts_not_read([(script, (where,))]) if isinstance(script, str) else []
    if not scripts:
        return None
    return (
        f"{where}: runs {', '.join(scripts)}, whose commands budget-gate does not read: a loop "
        "or a sweep there is not priced (write them in the file, or rely on the runtime "
        "guard's ceiling)"
    )


def _script_run(words: tuple[str, ...]) -> str | None:
    """The script file a command runs: ``bash loop.sh``'s, ``./loop.sh`` itself, else None."""
    at = program(list(words), 1)
    if at is None:
        return None
    key = run_key(words).split(" ", 1)
    if len(key) == 2 and key[0] in _RUNNERS:
        return key[1]
    return words[at] if "/" in words[at] else None


_SETTERS = frozenset({"read", "mapfile", "readarray", "getopts", "for", "select", "let", "(("})
"""Builtins whose words name the variables they set (``read EPOCHS``, ``for EPOCHS in``)."""
_DECLARES = frozenset({"declare", "typeset", "local"})
_NAME = re.compile(r"(?:-\w*v)?([A-Za-z_]\w*)(?:\[[^\]]*\])?")
_ASSIGNS = re.compile(r"([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*(?:\*\*|<<|>>|[-+*/%^|&])?=(?!=)")
"""A word that is an assignment (``EPOCHS+=00``, ``EPOCHS[0]=``, ``((EPOCHS*=2))``)."""
_DEFAULTS = re.compile(r"\$\{([A-Za-z_]\w*):?=")
"""``${EPOCHS:=1000}`` anywhere in a word: sets it where unset."""


def epochs_variable_set(command: list[str]) -> str | None:
    """The variable named like the epochs a command sets other than by ``NAME=value``, or None.

    ``NAME=value`` words are epochs flags (:func:`gate.formats.command_lines.epoch_flags`),
    read where they stand; ``export EPOCHS`` and ``$EPOCHS`` set nothing.
    """
    at = program(command, 1)
    name = command[at].rsplit("/", 1)[-1] if at is not None else ""
    args = command[at + 1 :] if at is not None else []
    named: list[str] = []
    if name in ("for", "select"):  # NOTE: the name before ``in``; its words are values
        named = [m[1] for m in [_NAME.fullmatch(args[0] if args else "")] if m]
    elif name in _SETTERS:
        named = [m[1] for word in args if (m := _NAME.fullmatch(word))]
    elif name == "printf":
        values = [w[2:] for w in args if w.startswith("-v") and len(w) > 2]
        values += [w for before, w in pairwise(args) if before == "-v"]
        named = [m[1] for value in values if (m := _NAME.fullmatch(value))]
    elif name in _DECLARES and any(w.startswith("-") and "n" in w for w in args):
        named = [part for word in args for part in re.findall(r"[A-Za-z_]\w*", word)]
    for word in command:
        if not epoch_flags([(word, ())]):
            assigns = _ASSIGNS.match(word.lstrip("("))
            named += [assigns[1]] if assigns else []
            named += _DEFAULTS.findall(word)
    return next((n for n in named if names_epochs(n, abbreviated=False)), None)


_PYTHON_HEREDOC = re.compile(
    r"^[^\n]*\b(?:python|pypy)[\d.]*\b[^\n]*?<<-?\s*(['\"]?)(\w+)\1[^\n]*\n(.*?)^\t*\2[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_RUNS_COMMANDS = re.compile(
    r"\b(?:subprocess|importlib|runpy|pty|multiprocessing|plumbum|__import__"
    r"|os\s*\.\s*(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*|fork\w*)"
    r"|(?:exec|eval|compile)\s*\(|getattr\s*\(\s*os\b"
    r"|from\s+os\s+import\b[^\n;]*\b(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*|fork\w*|\*))"
)
"""Python that runs other programs or code, out of the reader's sight."""
_OTHER_RUNS = re.compile(r"\b(?:system|exec|spawn\w*|popen|qx|child_process)\b|`|%x")
"""The same in Perl, Ruby or Node code (``perl -e 'system(...) for 1..9'``)."""
_INTERPRETERS = {"perl": "-e", "ruby": "-e", "node": "-e"}


def _inline_code(words: Words, depth: int = 0) -> Iterator[tuple[str, DataPath, bool]]:
    """Code a script holds, and whether it is Python.

    ``python -c CODE``'s, a here-document fed to python, ``perl -e``'s (Ruby's, Node's).
    """
    plain = [word for word, _ in words]
    for i, (word, path) in enumerate(words):
        if word in ("-c", "-e") and i + 1 < len(words):
            start = max((j + 1 for j in range(i) if plain[j] in _SEPARATORS), default=0)
            at = program(plain[start:i], 1)
            name = plain[start + at].rsplit("/", 1)[-1] if at is not None else ""
            python = word == "-c" and PYTHON.fullmatch(name) is not None
            if python or _INTERPRETERS.get(name) == word:
                yield words[i + 1][0], words[i + 1][1], python
        if depth < _MAX_DEPTH and any(char.isspace() for char in word):
            yield from ((m[3], path, True) for m in _PYTHON_HEREDOC.finditer(word))
            yield from _inline_code([(w, path) for w in shell_words(word)], depth + 1)


_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&"})
_MAX_DEPTH = 4


def sets_the_training(text: str) -> bool:
    """Whether the words of ``text`` hold an epochs flag or a step budget."""
    words: Words = [(word, ()) for word in text.split()]
    return bool(epoch_flags(words) or step_budgets(words))


def refuse_held_commands(
    script: str, envs: dict[str, Any], secret: set[str], key: str, location: Location | None
) -> None:
    """Refuse an env the script runs whose value holds an epochs or steps flag (``$TRAIN``).

    A secret's value is not shown (it may hold a token beside the flag).
    """
    for name, value in envs.items():
        if not isinstance(value, str) or not re.search(rf"\$\{{?{re.escape(str(name))}\b", script):
            continue
        if sets_the_training(value):
            shown = "a secret" if name in secret else value
            raise InputError(
                f"{key} runs ${name}, whose value holds an epochs flag or a step budget "
                f"({shown}): the shell expands it, budget-gate does not",
                location=location,
                hint=f"write the training command in {key} itself",
            )
