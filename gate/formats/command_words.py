"""A command line's words as bash makes them, and the scripts a shell among them runs.

A script is split as bash splits it: lines and ``;``, ``&&``, ``||``, ``|``, ``&`` apart,
quotes read (``'...'``, ``"..."``, ``$'...'`` decoded, ``$"..."`` as ``"..."``), a ``#``
that starts a word ending its line (a comment), and ``$(...)``, backticks and ``${...}``
kept whole as the words they stand in (a value they make is not in the file).

In an argv a word is a script only where a shell runs it (``bash -c SCRIPT``, ``su -c``,
``eval WORDS``, ``ssh HOST CMD``, anywhere in the command: ``docker exec box bash -c``),
or where it is the program itself (SkyPilot's ``run``, one word). Any other word stays the
one argument it is (``--epochs ' 1000'`` hands argparse ``' 1000'``, which ``int`` reads
as 1000); a program may still run it through a shell the reader does not know (``tmux new
"..."``, ``sbatch --wrap "..."``), so its commands are read beside it too (the worst case).
"""

from __future__ import annotations

import re

from gate.formats.shell_programs import (
    HIDDEN,
    SHELLS,
    SSH_VALUED,
    Unreadable,
    ansi_c,
    deeper,
    shell_script,
)
from gate.spec.loader import DataPath

Words = list[tuple[str, DataPath]]
"""Command-line words, each with the path of the file's value it comes from."""

SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;"})
"""Shell words that end one command and start the next."""
_MAX_SCRIPT_DEPTH = 4
"""Scripts read inside scripts; deeper quoting is left as words."""
_NUMBER = re.compile(r"[+-]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_OPERATORS = ("&&", "||", "|&", ";;", ";", "&", "|")
_CLOSING = {"(": ")", "{": "}"}


def commands_of(words: Words, depth: int = 0) -> list[Words]:
    """The commands an argv runs: itself, and each command of the shell scripts it holds.

    Scripts in scripts are read too (``bash -c "su -c '...'"``), a few levels deep; each word
    keeps the path of the argv element it comes from.
    """
    texts = [word for word, _ in words]
    span = script_span(texts) if depth < _MAX_SCRIPT_DEPTH else None
    plain: Words = []
    found: list[Words] = []
    for i, (word, path) in enumerate(words):
        if span is not None and span[0] <= i < span[1]:
            if i == span[0]:
                found.extend(_script(span[2], path, depth))
            continue
        spaced = depth < _MAX_SCRIPT_DEPTH and any(c.isspace() for c in word)
        if spaced and not plain:  # NOTE: the program a script: SkyPilot's run, one word
            found.extend(_script(word, path, depth))
            continue
        plain.append((word, path))
        if spaced and _may_run(word):  # NOTE: a shell it may reach, unknown to the reader
            found.extend(_script(word, path, depth))
    return [plain, *found] if plain else found


def _may_run(word: str) -> bool:
    """Whether a spaced argument may be words a shell splits: not a value (`` 1000``).

    ``"--epochs 1000"`` as one word may be split by a shell the program hands it to;
    ``--epochs=' 1000'`` is the value it is.
    """
    split = shell_words(word)
    first = split[0] if split else "="
    return split != [word] and "=" not in first and not _NUMBER.fullmatch(first)


def _script(text: str, path: DataPath, depth: int) -> list[Words]:
    found: list[Words] = []
    command: Words = []
    for token in [*shell_words(text), ";"]:
        if token in SEPARATORS:
            found.extend(commands_of(command, depth + 1))
            command = []
        else:
            command.append((token, path))
    return found


def script_span(words: list[str]) -> tuple[int, int, str] | None:
    """Where a shell's script is among ``words`` (from, to, its text), or None.

    ``bash -c SCRIPT``: the one word; ``eval`` and ``ssh HOST``: their words, joined.
    """
    for at, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if name not in SHELLS:
            continue
        args = words[at + 1 :]
        script = shell_script(name, args)
        if not script or script == HIDDEN:
            continue
        if name in ("eval", "ssh"):  # NOTE: the words that join to it, up to the end
            start = at + 1
            while name == "ssh" and words[start].startswith("-"):
                start += 1 + (words[start] in SSH_VALUED)
            return start + (name == "ssh"), len(words), script
        for i, arg in enumerate(args):
            if arg == script or (arg.startswith("--command=") and arg[10:] == script):
                return at + 1 + i, at + 2 + i, script
    return None


def shell_words(script: str) -> list[str]:
    """``script`` split as bash splits it: its words, its separators, ``;`` for a line's end.

    Unbalanced quotes: the words as they stand (whitespace-split).
    """
    try:
        return _Splitter(script).words()
    except Unreadable:
        return script.split()


class _Splitter:
    """One pass over a script, bash's quoting and comment rules."""

    def __init__(self, script: str) -> None:
        self.text, self.at = script, 0
        self.found: list[str] = []
        self.word: list[str] = []
        self.started = False
        """Whether a word is under way (a quote makes one, empty or not)."""

    def end_word(self) -> None:
        if self.started:
            self.found.append("".join(self.word))
        self.word, self.started = [], False

    def _redirecting(self) -> bool:
        """Whether the word so far ends in ``>`` or ``<``: ``2>&1`` is one word."""
        return bool(self.word) and self.word[-1][-1:] in ("<", ">")

    def words(self) -> list[str]:
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if text.startswith("\\\n", self.at):
                self.at += 2
            elif char in " \t\r":
                self.end_word()
                self.at += 1
            elif char == "\n":
                self.end_word()
                self.found.append(";")
                self.at += 1
            elif char == "#" and not self.started:
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            elif char in ";&|" and not (char == "&" and self._redirecting()):
                self.end_word()
                op = next(o for o in _OPERATORS if text.startswith(o, self.at))
                self.found.append(op)
                self.at += len(op)
            else:
                self.piece()
        self.end_word()
        return self.found

    def piece(self) -> None:
        """One character of a word, or one quoted or expanded part of it."""
        text, at = self.text, self.at
        self.started = True
        if text[at] == "\\":
            self.word.append(text[at + 1 : at + 2])
            self.at += 2
        elif text[at] == "'":
            end = self._find("'", at + 1)
            self.word.append(text[at + 1 : end])
            self.at = end + 1
        elif text.startswith("$'", at):
            end = at + 2
            while end < len(text) and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                raise Unreadable("a `$'` with no end")
            try:
                self.word.append(ansi_c(text[at + 2 : end]))
            except Unreadable:  # NOTE: kept as written: no number a reader takes
                self.word.append(text[at : end + 1])
            self.at = end + 1
        elif text.startswith('$"', at) or text[at] == '"':
            self.at = self._double(at + 1 + (text[at] == "$"))
        elif text.startswith(("$(", "${"), at) or text[at] == "`":
            end = expansion_end(text, at)
            self.word.append(text[at:end])
            self.at = end
        else:
            self.word.append(text[at])
            self.at += 1

    def _double(self, at: int) -> int:
        r"""A ``"..."`` from after its quote: ``\`` escapes ``$ ` " \``, expansions kept."""
        text = self.text
        while at < len(text) and text[at] != '"':
            if text[at] == "\\" and text[at + 1 : at + 2] in ('"', "\\", "$", "`", "\n"):
                self.word.append(text[at + 1].replace("\n", ""))
                at += 2
            elif text.startswith(("$(", "${"), at) or text[at] == "`":
                end = expansion_end(text, at)
                self.word.append(text[at:end])
                at = end
            else:
                self.word.append(text[at])
                at += 1
        if at >= len(text):
            raise Unreadable('a `"` with no end')
        return at + 1

    def _find(self, char: str, at: int) -> int:
        end = self.text.find(char, at)
        if end < 0:
            raise Unreadable(f"a `{char}` with no end")
        return end


def expansion_end(text: str, at: int, level: int = 0) -> int:
    """The end of the ``$(...)``, ``${...}`` or backtick part that starts at ``at``."""
    level = deeper(level)
    if text[at] == "`":
        end = at + 1
        while end < len(text) and text[end] != "`":
            end += 2 if text[end] == "\\" else 1
        if end >= len(text):
            raise Unreadable("a backtick with no end")
        return end + 1
    opening = text[at + 1]
    closing, depth, end = _CLOSING[opening], 1, at + 2
    while end < len(text):
        char = text[end]
        if char == "\\":
            end += 2
            continue
        if char == "'" and opening == "(":
            end = text.find("'", end + 1)
            if end < 0:
                break
        elif char == '"':
            end += 1
            while end < len(text) and text[end] != '"':
                if text.startswith(("$(", "${"), end) or text[end] == "`":
                    end = expansion_end(text, end, level)
                    continue
                end += 2 if text[end] == "\\" else 1
        elif char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return end + 1
        end += 1
    raise Unreadable(f"a `${opening}` with no end")
