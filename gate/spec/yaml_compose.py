"""libyaml's events composed into PyYAML's node tree in one pass, nesting bounded.

``yaml.compose`` with the C loader resolves every plain scalar's tag in Python and builds
each node through the C-to-Python boundary twice over; :func:`compose` reads the C parser's
events once and builds the same tree (the same tags, values, styles and marks), refusing
nesting deeper than :data:`MAX_DEPTH` at the first level too deep. Where ``yaml.compose``
would fail (an undefined alias, a duplicate anchor, a second document), the same
``ComposerError`` is raised, after the whole stream is read: a syntax error or a nesting
too deep anywhere in the file is reported first, as it was when the events were read once
to check the nesting and once more to compose them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gate.errors import InputError, Location
from gate.spec.yaml_tags import MAP, MAX_DEPTH, SEQ, STR, resolve

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def compose(text: str, file: str) -> Node | None:
    """The first document's node tree, or ``None`` for a stream without one.

    Raises yaml's errors as ``yaml.compose`` does, and :class:`InputError` for nesting
    deeper than :data:`MAX_DEPTH`.
    """
    tree = _Tree()
    depth = 0
    # NOTE: typed loosely: the C parser's marks are yaml._yaml.Mark, the nodes' stubs want
    # yaml.error.Mark (the same fields)
    events: Iterator[Any] = yaml.parse(text, Loader=LOADER)
    for event in events:
        kind = type(event)
        if kind is ScalarEvent or kind is AliasEvent:
            if tree.failed is None:
                tree.add(event, kind)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise InputError(
                    f"nesting deeper than {MAX_DEPTH} levels",
                    location=Location(file, mark.line + 1, mark.column + 1) if mark else None,
                    hint="flatten the structure",
                )
            if tree.failed is None:
                tree.add(event, kind)
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            depth -= 1
            if tree.failed is None:
                tree.close(event)
        elif kind is DocumentStartEvent:
            tree.document(event)
    if tree.failed is not None:
        raise tree.failed
    return tree.root


class _Tree:
    """The node tree as it is composed: the open collections, the anchors, the first failure."""

    __slots__ = ("anchors", "documents", "failed", "keys", "open", "root")

    def __init__(self) -> None:
        self.root: Node | None = None
        self.anchors: dict[str, Node] = {}
        self.open: list[Node] = []
        self.keys: list[Node | None] = []  # each open mapping's key awaiting its value
        self.failed: ComposerError | None = None
        self.documents = 0

    def add(self, event: Any, kind: type) -> None:
        """A scalar, an alias or a collection's start, placed in the collection open."""
        anchors = self.anchors
        if kind is AliasEvent:
            node = anchors.get(event.anchor)
            if node is None:
                self.failed = ComposerError(None, None, "found undefined alias", event.start_mark)
                return
        else:
            anchor = event.anchor
            if anchor is not None and anchor in anchors:
                self.failed = ComposerError(
                    "found duplicate anchor; first occurrence",
                    anchors[anchor].start_mark,
                    "second occurrence",
                    event.start_mark,
                )
                return
            node = _node(event, kind)
            if anchor is not None:
                anchors[anchor] = node
        if not self.open:
            self.root = node
        else:
            parent, keys = self.open[-1], self.keys
            if type(parent) is SequenceNode:
                parent.value.append(node)
            elif keys[-1] is None:
                keys[-1] = node
            else:
                parent.value.append((keys[-1], node))
                keys[-1] = None
        if kind is MappingStartEvent or kind is SequenceStartEvent:
            self.open.append(node)
            self.keys.append(None)

    def close(self, event: Any) -> None:
        """A collection's end."""
        self.open.pop().end_mark = event.end_mark
        self.keys.pop()

    def document(self, event: Any) -> None:
        """A document's start: a second one fails, as ``yaml.compose`` fails."""
        self.documents += 1
        if self.documents > 1 and self.failed is None:
            self.failed = ComposerError(
                "expected a single document in the stream",
                self.root.start_mark if self.root is not None else None,
                "but found another document",
                event.start_mark,
            )


def _node(event: Any, kind: type) -> Node:
    tag = event.tag
    if kind is ScalarEvent:
        if tag is None or tag == "!":
            tag = resolve(event.value) if event.implicit[0] else STR
        return ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    if kind is MappingStartEvent:
        tag = MAP if tag is None or tag == "!" else tag
        return MappingNode(tag, [], event.start_mark, None, event.flow_style)
    tag = SEQ if tag is None or tag == "!" else tag
    return SequenceNode(tag, [], event.start_mark, None, event.flow_style)
