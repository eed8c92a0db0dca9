"""A shell script's commands, each with the loop that repeats it, read as bash reads it.

A loop repeats what is in it, not what is beside it: quotes are kept (``echo "done"`` ends
no loop), a reserved word counts only where a command starts, and ``$(...)``, backticks,
``((...))`` and here-documents are read. A script bash would not run raises
:class:`Unreadable`, and the caller fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.formats.shell_programs import (
    MAX_DEPTH,
    TooDeep,
    Unreadable,
    ansi_c,
    deeper,
    skip_heredocs,
)

__all__ = ["MAX_DEPTH", "TooDeep", "Unreadable", "simple_commands"]

FUNCTION = "a shell function"
"""What repeats a function's body: it runs each time the function is called."""


Simple = tuple[list[str], str | None]
"""A simple command's words, unquoted, and the loop keyword that repeats it (or None)."""


def simple_commands(script: str, repeat: str | None = None) -> list[Simple]:
    """Each simple command of ``script`` (those in ``$(...)`` too), with what repeats it."""
    parser = _Parser(_tokens(script)[0], 0)
    parser.commands(repeat, frozenset())
    if (token := parser.peek()) is not None:
        raise Unreadable(f"`{token.text}` closes nothing")
    return parser.found


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    """A word without its quotes, or an operator."""
    op: bool = False
    plain: bool = False
    """A word with no quoting and no expansion: only such a word is a reserved word."""
    inner: tuple[tuple[_Token, ...], ...] = ()
    """The tokens of each ``$(...)``, backtick and ``<(...)`` in the word."""


_OPERATORS = (
    *(";;&", "&>>", "<<<", "<<-", ";;", ";&", "&&", "||", "|&", "&>", ">>", ">|", "<>"),
    *("<&", ">&", "<<", ";", "&", "|", "(", ")", "<", ">", "\n"),
)
_META = frozenset(" \t\n;&|()<>")
_ARITHMETIC = "(("


def _tokens(
    script: str, at: int = 0, nested: bool = False, level: int = 0
) -> tuple[list[_Token], int]:
    """Tokens from ``at`` to the end or (``nested``) to the ``)`` that closes a ``$(``."""
    level = deeper(level)
    found: list[_Token] = []
    depth, heredocs = 0, list[tuple[str, bool, bool]]()
    while at < len(script):
        char = script[at]
        if char in " \t" or script.startswith("\\\n", at):
            at += 1 if char in " \t" else 2
        elif char == "#":
            end = script.find("\n", at)
            at = len(script) if end < 0 else end
        elif char == "\n" and heredocs:
            at = skip_heredocs(script, at + 1, heredocs)
            heredocs = []
            found.append(_Token("\n", op=True))
        elif char in "<>" and script.startswith("(", at + 1):  # <(...): a process substitution
            inner, at = _tokens(script, at + 2, True, level)
            found.append(_Token("<(...)", inner=(tuple(inner),)))
        elif script.startswith(_ARITHMETIC, at) and (
            closed := _arithmetic(script, at + 2, runs := list[tuple[_Token, ...]](), level)
        ):
            found.append(_Token(_ARITHMETIC, op=True, inner=tuple(runs)))
            at = closed
        elif (op := next((o for o in _OPERATORS if script.startswith(o, at)), None)) is not None:
            if op == ")" and nested and depth == 0:
                return found, at + 1
            depth += (op == "(") - (op == ")")
            found.append(_Token(op, op=True))
            at += len(op)
        else:
            word, at = _word(script, at, level)
            if word.plain and word.text.isdigit() and script[at : at + 1] in ("<", ">"):
                continue  # NOTE: 2>&1: a file descriptor's number, no argument
            if found and found[-1].op and found[-1].text in ("<<", "<<-"):
                heredocs.append((word.text, word.plain, found[-1].text == "<<-"))
            found.append(word)
    if nested:
        raise Unreadable("a `$(` with no `)`")
    return found, at


def _word(script: str, at: int, level: int) -> tuple[_Token, int]:
    """One word from ``at``: quotes off, what its expansions run kept apart."""
    text: list[str] = []
    inner: list[tuple[_Token, ...]] = []
    plain = True
    while at < len(script) and script[at] not in _META:
        char = script[at]
        if char == "\\":
            text.append(script[at + 1 : at + 2].replace("\n", ""))
            at, plain = at + 2, False
        elif char == "'":
            end = script.find("'", at + 1)
            if end < 0:
                raise Unreadable("a `'` with no end")
            text.append(script[at + 1 : end])
            at, plain = end + 1, False
        elif char == '"':
            at, plain = _double(script, at + 1, text, inner, level), False
        elif char in "$`":
            at, plain = _expansion(script, at, text, inner, level), False
        else:
            text.append(char)
            at += 1
        if script.startswith("=(", at - 1) and text and text[0][:1].isalpha():  # an array
            tokens, at = _tokens(script, at + 1, True, level)
            inner.extend(t.inner[0] for t in tokens if t.inner)
            text.append("(...)")
    return _Token("".join(text), plain=plain, inner=tuple(inner)), at


def _double(
    script: str, at: int, text: list[str], inner: list[tuple[_Token, ...]], level: int
) -> int:
    r"""A ``"..."`` from after its quote: ``\\`` escapes, ``$(...)`` and backticks run."""
    while at < len(script) and script[at] != '"':
        if script[at] == "\\":
            text.append(script[at : at + 2])
            at += 2
        elif script[at] in "$`":
            at = _expansion(script, at, text, inner, level)
        else:
            text.append(script[at])
            at += 1
    if at >= len(script):
        raise Unreadable('a `"` with no end')
    return at + 1


def _expansion(
    script: str, at: int, text: list[str], inner: list[tuple[_Token, ...]], level: int
) -> int:
    """``$(...)``, backticks, ``$((...))``, ``${...}`` and ``$'...'`` from ``at``."""
    start, level = at, deeper(level)
    if script.startswith("$((", at) and (end := _arithmetic(script, at + 3, inner, level)):
        at = end
    elif script.startswith("$(", at):
        tokens, at = _tokens(script, at + 2, True, level)
        inner.append(tuple(tokens))
    elif script.startswith("${", at):
        at += 2
        while at < len(script) and script[at] != "}":
            at = _expansion(script, at, [], inner, level) if script[at] in "$`" else at + 1
        at += 1
    elif script.startswith("$'", at) or script[at] == "`":
        close = script[at + (script[at] == "$")]
        at += 1 + (script[at] == "$")
        while at < len(script) and script[at] != close:
            at += 2 if script[at] == "\\" else 1
        if close == "`":
            body = script[start + 1 : at].replace("\\`", "`").replace("\\$", "$")
            inner.append(tuple(_tokens(body, 0, False, level)[0]))
        elif at < len(script):  # NOTE: $'for\x20i': bash decodes it; so does a shell it runs
            text.append(ansi_c(script[start + 2 : at]))
            return at + 1
        at += 1
    else:
        at += 1
    if at > len(script):
        raise Unreadable(f"a `{script[start : start + 2]}` with no end")
    text.append(script[start:at])
    return at


def _arithmetic(script: str, at: int, inner: list[tuple[_Token, ...]], level: int) -> int | None:
    """The end of a ``((...))`` from after its ``((``, or None where it is two ``(`` (bash)."""
    depth = 0
    while at < len(script):
        if script[at] in "$`":
            at = _expansion(script, at, [], inner, level)
            continue
        if script[at] == ")":
            if depth == 0:
                return at + 2 if script.startswith("))", at) else None
            depth -= 1
        depth += script[at] == "("
        at += 1
    raise Unreadable("a `((` with no `))`")


class _Parser:
    """A script's simple commands, each with the loop that repeats it (a recursive descent)."""

    def __init__(self, items: list[_Token], level: int) -> None:
        self.items, self.level = items, level
        self.at = 0
        self.found: list[Simple] = []

    def peek(self) -> _Token | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def reserved(self) -> str | None:
        """The reserved word the next token is, where a command starts (else None)."""
        token = self.peek()
        return token.text if token is not None and token.plain and token.text in _RESERVED else None

    def separators(self) -> None:
        while (token := self.peek()) is not None and token.op and token.text in _SEPARATORS:
            self.at += 1

    def commands(self, repeat: str | None, stops: frozenset[str]) -> None:
        """Commands up to one of ``stops`` (``done``, ``fi``), a ``)``, a ``;;`` or the end."""
        while True:
            self.separators()
            token = self.peek()
            if token is None or (token.op and token.text in _CLOSERS) or self.reserved() in stops:
                return
            self.command(repeat)

    def substitutions(self, token: _Token, repeat: str | None) -> None:
        """What ``$(...)``, backticks and ``<(...)`` in a word run, where the word is read."""
        for inner in token.inner:
            nested = _Parser(list(inner), deeper(self.level))
            nested.commands(repeat, frozenset())
            if nested.peek() is not None:
                raise Unreadable("a `)` closes no `(`")
            self.found.extend(nested.found)

    def command(self, repeat: str | None) -> None:
        """One command: a compound one (a loop, ``if``, a group) or a simple one."""
        self.level = deeper(self.level)
        try:
            self._command(repeat)
        finally:
            self.level -= 1

    def _command(self, repeat: str | None) -> None:
        token, word = self.items[self.at], self.reserved()
        if word in ("!", "time"):
            self.at += 1
            self.at += word == "time" and self._next_is("-p")
            return
        if token.op and token.text in ("(", _ARITHMETIC):
            self.at += 1
            self.substitutions(token, repeat)
            if token.text == "(":
                self.commands(repeat, frozenset())
                self._close(")")
        elif word in ("for", "select", "while", "until"):
            self._loop(word, repeat)
        elif word in ("if", "case", "{", "[["):
            self._compound(word, repeat)
        elif word == "function":
            self.at += 2
            if self._next_is("("):
                self.at += 1
                self._close(")")
            self._body()
        elif word is not None:
            raise Unreadable(f"`{word}` where a command starts")
        else:
            self._simple(repeat)
            return
        self._redirections(repeat)

    def _next_is(self, text: str) -> bool:
        token = self.peek()
        return token is not None and token.text == text and (token.op or token.plain)

    def _close(self, text: str) -> None:
        if not self._next_is(text):
            raise Unreadable(f"no `{text}`")
        self.at += 1

    def _body(self) -> None:
        """A function's body: it runs each time the function is called."""
        self.separators()
        if self.peek() is None:
            raise Unreadable("a function with no body")
        self.command(FUNCTION)

    def _loop(self, word: str, repeat: str | None) -> None:
        """A loop's header, then ``do ... done``: its condition and its body repeat."""
        self.at += 1
        again = repeat or word
        if word in ("while", "until"):
            self.commands(again, frozenset({"do"}))
        else:
            if (header := self.peek()) is None:
                raise Unreadable(f"`{word}` with nothing after it")
            self.at += 1
            self.substitutions(header, repeat)
            if self._next_is("in"):
                self.at += 1
                while (token := self.peek()) is not None and not token.op:
                    self.substitutions(token, repeat)
                    self.at += 1
        self.separators()
        if self.reserved() == "{":
            self._compound("{", again)
            return
        self._close("do")
        self.commands(again, frozenset({"done"}))
        self._close("done")

    def _compound(self, word: str, repeat: str | None) -> None:
        """``if``, ``case``, ``{ ...; }`` and ``[[ ... ]]``: each part runs where they stand."""
        self.at += 1
        if word == "{":
            self.commands(repeat, frozenset({"}"}))
            self._close("}")
        elif word == "[[":
            while (token := self.peek()) is not None and not (token.plain and token.text == "]]"):
                self.substitutions(token, repeat)
                self.at += 1
            self._close("]]")
        elif word == "if":  # NOTE: then, elif and else as separators: each part runs once
            part = word
            while part != "fi":
                self.commands(repeat, _IF_PARTS)
                part = self.reserved() or "fi"
                self._close(part)
        else:
            self._case(repeat)

    def _case(self, repeat: str | None) -> None:
        """``case WORD in (PATTERN | PATTERN) LIST ;; ... esac``."""
        if (subject := self.peek()) is None:
            raise Unreadable("`case` with nothing after it")
        self.substitutions(subject, repeat)
        self.at += 1
        self.separators()
        self._close("in")
        while True:
            self.separators()
            if self.reserved() == "esac":
                self.at += 1
                return
            if self._next_is("("):
                self.at += 1
            while (token := self.peek()) is not None and not (token.op and token.text == ")"):
                self.at += 1
            self._close(")")
            self.commands(repeat, frozenset({"esac"}))
            if (token := self.peek()) is not None and token.op and token.text in _CASE_ENDS:
                self.at += 1

    def _simple(self, repeat: str | None) -> None:
        """Words up to an operator; ``NAME ()`` starts a function's definition."""
        words: list[str] = []
        while (token := self.peek()) is not None:
            if token.op and token.text in _REDIRECTIONS:
                self._redirections(repeat)
                continue
            if token.op:
                break
            self.substitutions(token, repeat)
            words.append(token.text)
            self.at += 1
        if len(words) == 1 and self._next_is("("):
            self.at += 1
            self._close(")")
            self._body()
            return
        if not words:
            raise Unreadable("an operator where a command starts")
        self.found.append((words, repeat))

    def _redirections(self, repeat: str | None) -> None:
        """``> file``, ``2>&1``, ``<<EOF``: each takes the word after it."""
        while (token := self.peek()) is not None and token.op and token.text in _REDIRECTIONS:
            self.at += 1
            target = self.peek()
            if target is None or target.op:
                raise Unreadable(f"`{token.text}` with no word after it")
            self.substitutions(target, repeat)
            self.at += 1


_RESERVED = frozenset(
    {"!", "time", "for", "select", "while", "until", "if", "then", "elif", "else", "fi"}
    | {"do", "done", "case", "esac", "in", "{", "}", "[[", "function"}
)
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n"})
_IF_PARTS = frozenset({"then", "elif", "else", "fi"})
_CLOSERS = frozenset({")", ";;", ";&", ";;&"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_REDIRECTIONS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})
