"""Safe Markdown for GitHub: escaping of untrusted strings, links, and comment size.

Anything that comes from a spec (names, paths, labels, messages that quote spec values)
goes through :func:`escape` before it is placed in Markdown. The result is inert text:

- ``&``, ``<`` and ``>`` become HTML entities, so no tag or autolink can open;
- Markdown punctuation that starts inline markup (emphasis, code, links, images, tables,
  strikethrough, math, heading closers) is backslash-escaped;
- ``@`` is followed by a zero-width space, so ``@org/team`` does not notify anyone;
- line breaks and other control characters become spaces, so a value stays on its line
  (escaped values are always placed inline, never at the start of a line);
- bidirectional overrides become U+FFFD, so text cannot be displayed reversed;
- ``www.`` and ``://`` get a zero-width space, so no bare URL becomes a live link.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from urllib.parse import quote

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_BACKSLASHED = frozenset("\\`*_[]|~$#")
_MENTION = "@&#8203;"
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_NO_BIDI = dict.fromkeys(map(ord, _BIDI), "\ufffd")
_WWW = re.compile(r"(?i)(www)\.")
_URL_SAFE = ":/?#[]@!$&'*+,;=%-._~"


def escape(value: str) -> str:
    """Render an untrusted string as literal inline Markdown text."""
    text = "".join(_escape_char(ch) for ch in value)
    # NOTE: GitHub's autolink extension turns bare www. and scheme:// text into live links;
    # www. opens one after an underscore too, a word character, so every www. is broken.
    return _WWW.sub(r"\1&#8203;.", text.replace("://", ":&#8203;//"))


def _escape_char(ch: str) -> str:
    if ch in _ENTITIES:
        return _ENTITIES[ch]
    if ch in _BACKSLASHED:
        return "\\" + ch
    if ch == "@":
        return _MENTION
    if ch in _BIDI:
        return "\ufffd"
    if ch in "\u2028\u2029" or unicodedata.category(ch) == "Cc":
        return " "
    return ch


def without_bidi(value: str) -> str:
    """``value`` with its bidirectional overrides as U+FFFD: shown as written, never reversed.

    For the formats that escape their own way (the HTML page, the SVG charts) but must not
    let a spec's label reorder what a reader sees around it.
    """
    return value.translate(_NO_BIDI)


def code(value: str, *, in_table: bool = False) -> str:
    r"""An untrusted string as an inline code span, shown as written.

    Inside a code span Markdown interprets nothing (no emphasis, links, HTML, entities or
    mentions), so only what would end the span is handled: the fence is one backtick longer
    than any run in the value, line breaks and control characters become spaces,
    bidirectional overrides U+FFFD, and in a table cell ``|`` is escaped (GitHub splits
    cells on it even there, and shows ``\|`` as ``|``).
    """
    text = "".join(_code_char(ch) for ch in value)
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _code_char(ch: str) -> str:
    if ch in _BIDI:
        return "\ufffd"
    if ch in "\u2028\u2029" or unicodedata.category(ch) == "Cc":
        return " "
    return ch


def link(text: str, url: str) -> str:
    """A Markdown link to a trusted URL; spaces and brackets are percent-encoded."""
    return f"[{escape(text)}]({quote(url, safe=_URL_SAFE)})"


def utf16_length(text: str) -> int:
    """Length as GitHub counts it (UTF-16 code units: an emoji can count twice)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def hidden_marker(kind: str, *identity: str | None) -> str:
    """The hidden first line naming what a comment or issue is for (``kind``, hashed identity).

    The tool finds its own post again by it, and edits it instead of adding another.
    """
    digest = hashlib.sha256(json.dumps(list(identity)).encode("utf-8")).hexdigest()[:16]
    return f"<!-- budget-gate:{kind}:{digest} -->"
