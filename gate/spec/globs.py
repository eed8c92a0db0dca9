"""One glob dialect for spec paths: gitignore's, as ``pathspec`` implements it (pure).

Every place that matches a spec path against a pattern uses this module: the Action's
``specs`` input, a waiver's ``specs``, a team policy's ``owns.specs`` and a quoted glob
given to ``budget-gate check``. The rules (those of ``.gitignore``):

- paths are relative to the repository root (to the current directory for the CLI), with
  ``/`` between directories, and matched case-sensitively, as git does on Linux;
- ``*`` matches within one directory, ``?`` one character, ``[abc]`` one of a set;
  ``**`` spans directories (``experiments/**/*.yaml``; ``experiments/**`` is everything
  below ``experiments/``);
- a pattern without a ``/`` (other than a trailing one) matches a name at any depth:
  ``*.yaml`` matches ``experiments/a.yaml``; a pattern with a ``/`` is anchored at the root;
- a pattern ending in ``/`` matches a directory and everything under it;
- in a list, ``!pattern`` takes back what an earlier pattern matched (not in a waiver).

A spec file is one whose name ends in ``.yaml``, ``.yml`` or ``.json`` in any case
(:func:`is_spec_file`): what ``check DIR`` reads, and what the Action judges under its
patterns.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

from gate.errors import InputError

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

SPEC_SUFFIXES = (".yaml", ".yml", ".json")
"""The file name endings of a spec, compared in any case (``c.YAML`` is one)."""
_MAGIC = re.compile(r"[*?\[]")


def is_spec_file(path: str) -> bool:
    """Whether ``path`` has a spec's name ending (``.yaml``, ``.yml``, ``.json``, any case)."""
    return path.lower().endswith(SPEC_SUFFIXES)


def normalized(path: str) -> str:
    r"""A path as patterns see it: no ``.`` or ``..`` parts, no leading ``./``.

    A backslash is a character of the name, as it is to git and Linux: read as a separator,
    ``experiments/nlp/a\..\..\vision\b.yaml`` (a file in nlp's directory) would match
    vision's ``experiments/vision/**``.
    """
    return posixpath.normpath(path).removeprefix("./")


def matches(patterns: Iterable[str], path: str) -> bool:
    """Whether the patterns (gitignore rules, in order) select ``path``."""
    return _matches(tuple(patterns), path)


def matches_in_repository(patterns: Iterable[str], path: str) -> bool:
    """:func:`matches` for a policy's patterns, which name files of the repository only.

    A spec outside the repository is named by its absolute path (``RepoPaths``): a pattern
    without a ``/`` (``*.yaml``) would match its name at any depth, and so apply a waiver or
    an ``owns.specs`` of the repository to a copy elsewhere.
    """
    outside = path.startswith(("/", "../")) or path == ".."
    return not outside and matches(patterns, path)


@lru_cache(maxsize=4096)
def _matches(patterns: tuple[str, ...], path: str) -> bool:
    """:func:`matches`, once per patterns and path (every rule run of every fix asks again)."""
    cleaned = tuple(_pattern(p) for p in patterns if p.strip())
    target = normalized(path)
    plain = _plain(cleaned)
    relative = target.removeprefix("/")  # as pathspec reads a path
    if plain is not None and not relative.startswith("/"):
        return _plain_match(plain, relative)
    return _compiled(cleaned).match_file(target)


_NAME = r"[A-Za-z0-9_+=,@%-][A-Za-z0-9_.+=,@%-]*"  # no wildcard, escape, blank or leading dot
_PLAIN = re.compile(rf"/?(?:{_NAME}/)*{_NAME}(?:/|/\*\*)?")


def _plain(patterns: tuple[str, ...]) -> tuple[tuple[str, bool, bool], ...] | None:
    """The patterns as (path, anchored, under only), when every one is a plain path.

    A plain path (``examples/a.yaml``, ``experiments/vision/**``, ``shared/``) needs no
    pattern engine: gitignore matches it as that path or anything under it. ``None`` when a
    pattern has a wildcard elsewhere, a negation or an odd character: :mod:`pathspec`
    judges those (it costs tens of milliseconds to import; most policies list plain paths).
    """
    plain = []
    for pattern in patterns:
        if _PLAIN.fullmatch(pattern) is None:
            return None
        under = pattern.endswith(("/", "/**"))
        body = pattern.removesuffix("/**").strip("/")
        anchored = pattern.startswith("/") or "/" in body or pattern.endswith("/**")
        plain.append((body, anchored, under))
    return tuple(plain)


def _plain_match(plain: tuple[tuple[str, bool, bool], ...], path: str) -> bool:
    """Whether a plain pattern names ``path`` or a directory above it (unanchored: any depth)."""
    rooted = f"/{path}"
    for body, anchored, under in plain:
        if anchored:
            hit = path.startswith(f"{body}/") or (not under and path == body)
        else:
            hit = f"/{body}/" in rooted or (not under and rooted.endswith(f"/{body}"))
        if hit:
            return True
    return False


def _pattern(pattern: str) -> str:
    """A pattern without blanks around it or a leading ``./`` (the same as none)."""
    body = pattern.strip()
    negated = body.startswith("!")
    body = body.removeprefix("!").removeprefix("./")
    return f"!{body}" if negated else body


def literal_root(pattern: str) -> str:
    """The directory a pattern is confined to: its part before the first wildcard.

    ``experiments/**/*.yaml`` → ``experiments``; ``*.yaml`` (any depth) → ``""``, the root.
    """
    body = pattern.strip().removeprefix("!")
    anchored = body.startswith("/") or "/" in body.rstrip("/")
    body = body.removeprefix("/")
    if not anchored:
        return ""  # a bare name matches at any depth
    magic = _MAGIC.search(body)
    return posixpath.dirname(body if magic is None else body[: magic.start()]).strip("/")


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> GitIgnoreSpec:
    # NOTE: imported here: pathspec costs ~30 ms to import, and most checks match no glob.
    from pathspec import GitIgnoreSpec

    try:
        return GitIgnoreSpec.from_lines(patterns)
    except ValueError as exc:  # a trailing lone backslash, a bare "!"
        raise InputError(
            f"not a usable glob: {exc}",
            hint="write a path pattern: no lone '!', no trailing lone backslash",
        ) from None
