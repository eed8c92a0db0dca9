"""YAML text → plain data and positions through libyaml: any text, every safety check.

The node tree from a safe compose (:mod:`gate.spec.yaml_compose`, nesting bounded) is
walked once. The walk builds plain Python values and the position of each data path,
so later stages (validation, rules) can point at the exact line and column without
marker keys in the data. Aliases are expanded under a node budget, which defuses
"billion laughs". The checks of single values (what YAML 1.1 and 1.2 read apart) are
:mod:`gate.spec.yaml_scalars`'s. A text in a spec's plain style is read a line at a time
(:mod:`gate.spec.yaml_lines`) and never comes here: this module, and PyYAML, are
imported for the others.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gate.errors import InputError, Location
from gate.spec.yaml_compose import compose
from gate.spec.yaml_scalars import BOOL, STR, TRUE, scalar_value, short_tag
from gate.spec.yaml_tags import ENGINE_FLOAT, MAX_DEPTH, MAX_NODES

DataPath = tuple[str | int, ...]
Positions = dict[DataPath, Location]
Written = dict[str, tuple[Location, Location]]
"""Each key a mapping wrote above a merge key (<<): where it stands, and where that merge does."""

_MERGE = "tag:yaml.org,2002:merge"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


def read_yaml(
    text: str, file: str
) -> tuple[dict[str, Any], Positions, Positions, tuple[InputError, ...], tuple[DataPath, ...]]:
    """The data of ``text``, where its values and keys stand, what it says ambiguously.

    Last, where a plain ``1e3`` stands: text to YAML 1.1, a number to YAML 1.2.
    """
    try:
        root = compose(text, file)
    except yaml.MarkedYAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    except yaml.reader.ReaderError as exc:
        raise InputError(
            f"invalid YAML: {exc.reason} (character 0x{exc.character:02x})",
            location=_offset_location(text, exc.position, file),
            hint="remove the control character, or quote and escape it",
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(
            f"invalid YAML: {exc}", location=Location(file, 1, 1), hint="fix the YAML syntax"
        ) from None
    if root is None:
        raise InputError(
            "file is empty", location=Location(file, 1, 1), hint="write a mapping with a kind: key"
        )
    if not isinstance(root, MappingNode):
        raise InputError(
            f"document is a {_node_kind(root)}, not a mapping",
            location=_loc(file, root),
            hint="the top level must be a mapping with apiVersion, kind and the other sections",
        )
    # NOTE: a JSON document (by its name, or on stdin by its brace) reads numbers as JSON does
    walker = _Walker(file, json=file.lower().endswith(".json") or text.lstrip().startswith("{"))
    data = walker.walk(root, ())
    return data, walker.values, walker.keys, tuple(walker.ambiguous), tuple(walker.exponents)


_HIDDEN_BREAKS = {"\x85": "U+0085 (NEXT LINE)", "\u2028": "U+2028 (LINE SEPARATOR)",
                  "\u2029": "U+2029 (PARAGRAPH SEPARATOR)"}  # fmt: skip
"""Characters YAML breaks a line at that editors show as none: libyaml's marks count them."""


def _yaml_error(exc: yaml.MarkedYAMLError, text: str, file: str) -> InputError:
    """Say what libyaml said, at the place where the broken construct starts.

    A line break no editor shows (U+2028) is named where it stands instead, when the text
    read without it is valid YAML: libyaml's complaint about the line it made is about a line
    the user cannot see.
    """
    hidden = min((i for c in _HIDDEN_BREAKS if (i := text.find(c)) >= 0), default=-1)
    if hidden >= 0:
        seen = text.translate({ord(c): " " for c in _HIDDEN_BREAKS})
        try:
            compose(seen, file)
        except yaml.MarkedYAMLError as other:  # NOTE: broken anyway: say where, as the eye sees
            return _yaml_error(other, seen, file)
        except yaml.YAMLError:
            pass
        return InputError(
            f"invalid YAML: {_HIDDEN_BREAKS[text[hidden]]} breaks the line here for YAML, "
            "though editors show no break",
            location=_offset_location(text, hidden, file),
            hint="remove it, or write it escaped in a double-quoted string",
        )
    context = exc.context or ""
    # NOTE: for an unclosed quote or bracket the problem mark is the end of the file; the
    # context mark ("while scanning a quoted scalar") is where the user must look.
    opened = context.startswith(("while scanning", "while parsing a flow"))
    mark = (exc.context_mark if opened else None) or exc.problem_mark or exc.context_mark
    where = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file, 1, 1)
    problem = exc.problem or "invalid YAML"
    message = f"{context}: {problem}" if context else problem
    hint = _yaml_hint(message, text, mark.index if mark else 0)
    tab = _INDENTING_TAB.search(text, mark.index if mark else 0) if "tab" in message else None
    if tab is not None:  # NOTE: libyaml marks the value before the tab, a line too early
        where = _offset_location(text, tab.end() - 1, file)
    return InputError(f"invalid YAML: {message}", location=where, hint=hint)


_INDENTING_TAB = re.compile(r"^[ ]*\t", re.M)
"""A tab among a line's leading spaces: what libyaml's "tab ... violates indentation" is about."""


def _offset_location(text: str, offset: int, file: str) -> Location:
    before = text[:offset]
    return Location(file, before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def _yaml_hint(problem: str, text: str, index: int) -> str:
    if "tab" in problem or text[index : index + 1] == "\t":
        return "indent with spaces, not tabs"
    if "escape" in problem:  # "\q", or "\ud800" (a surrogate PyYAML cannot decode)
        return (
            "in double quotes a backslash starts an escape: write \\\\ for a backslash, or "
            "use single quotes; write a character beyond \\uFFFF as itself or as \\UXXXXXXXX"
        )
    if "quoted scalar" in problem:
        return "close the quote that starts here"
    if "while parsing a flow" in problem:
        return "close the bracket or brace that starts here"
    if "single document" in problem or "another document" in problem:
        return (
            "a file of several documents (a SkyPilot pipeline, a list of Kubernetes objects) "
            "is not read as one spec: put each task or experiment in a file of its own"
        )
    return "check the indentation and quoting here"


def _brought_twice(name: str, first: Location, source: Node, file: str) -> InputError:
    """The error for a key two sources of one merge list bring."""
    return InputError(
        f"key {name!r} is brought by two sources of one merge (<<), the first at line "
        f"{first.line}: YAML parsers disagree on which one wins (PyYAML keeps either)",
        location=_loc(file, source),
        hint=f"write {name} in the mapping itself, or merge sources that bring different keys",
    )


def _merge_after(name: str, written: Location, merged: Location) -> InputError:
    """A merge that brings a key its mapping wrote above it: which wins is the parser's call."""
    return InputError(
        f"key {name!r} is written at line {written.line} and merged again by a << below it: "
        "YAML keeps the written value, Kubernetes' parser (kubectl) the merged one",
        location=merged,
        hint="put the merge key (<<) first in its mapping, or drop the key from one place",
    )


def _loc(file: str, node: Node) -> Location:
    return Location(file, node.start_mark.line + 1, node.start_mark.column + 1)


def _node_kind(node: Node) -> str:
    if isinstance(node, SequenceNode):
        return "list"
    return "scalar"


class _Walker:
    """Expands one node tree into plain data under a node budget, recording positions."""

    def __init__(self, file: str, *, json: bool = False) -> None:
        self.file, self.json = file, json
        self.exponents: list[DataPath] = []
        self.budget = MAX_NODES
        self.values: dict[DataPath, Location] = {}
        self.keys: dict[DataPath, Location] = {}
        self.open: set[int] = set()  # collections being walked: an alias back to one is a cycle
        self.merging = 0  # merge sources being walked, one inside another
        self.ambiguous: list[InputError] = []

    def walk(self, node: Node, path: DataPath) -> Any:
        self._spend(node)
        if len(path) > MAX_DEPTH:
            raise InputError(
                f"nesting deeper than {MAX_DEPTH} levels",
                location=_loc(self.file, node),
                hint="flatten the structure",
            )
        if path not in self.values:  # a mapping's child has its place already
            self.values[path] = _loc(self.file, node)
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        self._enter(node)
        try:
            if isinstance(node, MappingNode):
                self._plain_tag(node, _MAP)
                return self._mapping(node, path)
            assert isinstance(node, SequenceNode)
            self._plain_tag(node, _SEQ)
            return [self.walk(item, (*path, i)) for i, item in enumerate(node.value)]
        finally:
            self.open.discard(id(node))

    def _spend(self, node: Node) -> None:
        """Charge one value to the budget: a value walked, a merge source, a key it skips."""
        self.budget -= 1
        if self.budget < 0:
            raise InputError(
                f"document expands to more than {MAX_NODES:,} values",
                location=_loc(self.file, node),
                hint="write fewer values: each use of an anchor (*alias) counts its values again",
            )

    def _enter(self, node: Node, at: Node | None = None) -> None:
        """Mark ``node`` as being walked; an alias or merge (at ``at``) back into it is a cycle."""
        if id(node) in self.open:
            raise InputError(
                "an alias refers to a mapping or list that contains it (a cycle)",
                location=_loc(self.file, at or node),
                hint="an anchor cannot be used inside itself; copy the values instead",
            )
        self.open.add(id(node))

    def _plain_tag(self, node: Node, expected: str) -> None:
        if node.tag != expected:
            raise InputError(
                f"unsupported YAML tag {short_tag(node.tag)}",
                location=_loc(self.file, node),
                hint="remove the tag; only plain YAML values are allowed",
            )

    def _mapping(
        self,
        node: MappingNode,
        path: DataPath,
        skip: frozenset[str] = frozenset(),
        written: Written | None = None,
    ) -> dict[str, Any]:
        """Explicit keys first, then merge keys (<<) for the names still missing.

        ``skip`` names are left out (already set by the mapping that merges this one), so
        their positions stay those of the explicit keys. Merge sources and the keys they
        skip are charged to the budget, and a merge inside a merge counts as a level of
        nesting: anchors merged into one another, ten times over at each of seven levels
        (470 bytes), or a thousand deep, cost no more than the values they make.

        Where parsers part, the text is refused: a second ``<<`` in one mapping (PyYAML
        keeps the last one's keys, the YAML spec the first's), a key two sources of one
        ``<<: [...]`` bring (PyYAML 6 keeps the first or the last by how Python interned the
        key's text), and a ``<<`` that brings a key written above it (``written``:
        Kubernetes' parser lets the later one win).
        """
        result: dict[str, Any] = {}
        first_seen: dict[str, Location] = {}
        merges: list[tuple[Node, Node, Written]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                self._one_merge(key_node, merges)
                merge_at = _loc(self.file, key_node)
                above = {**(written or {}), **{k: (at, merge_at) for k, at in first_seen.items()}}
                merges.append((key_node, value_node, above))
                continue
            key_loc = _loc(self.file, key_node)
            name = self._key(key_node)
            if name in first_seen:
                seen = first_seen[name]
                raise InputError(
                    f"duplicate key {name!r} (first defined at line {seen.line})",
                    location=key_loc,
                    hint="remove one of them; YAML would silently keep only the last",
                )
            first_seen[name] = key_loc
            if name in skip:
                if written is not None and name in written:
                    raise _merge_after(name, *written[name])
                self._spend(value_node)
                continue
            child = (*path, name)
            self.keys[child] = key_loc
            self.values[child] = _loc(self.file, value_node)
            result[name] = self.walk(value_node, child)
        return result | self._merge_all(merges, path, skip | frozenset(result))

    def _merge_all(
        self, merges: list[tuple[Node, Node, Written]], path: DataPath, explicit: frozenset[str]
    ) -> dict[str, Any]:
        """The keys the mapping's merge sources bring, none of them brought by two."""
        result: dict[str, Any] = {}
        brought: dict[str, Node] = {}
        for key_node, merge, above in merges:
            sources = merge.value if isinstance(merge, SequenceNode) else [merge]
            for source in sources:
                merged = self._merged(key_node, source, path, explicit, above)
                # NOTE: one anchor listed twice (<<: [*d, *d]) brings one value, whoever wins
                twice = next((n for n in merged if brought.get(n, source) is not source), None)
                if twice is not None:
                    raise _brought_twice(twice, _loc(self.file, brought[twice]), source, self.file)
                brought.update((name, source) for name in merged)
                result.update(merged)
        return result

    def _one_merge(self, key_node: Node, merges: list[tuple[Node, Node, Any]]) -> None:
        if merges:
            first = _loc(self.file, merges[0][0])
            raise InputError(
                f"a second merge key (<<) in one mapping (the first at line {first.line}): "
                "YAML parsers disagree on which one's keys win",
                location=_loc(self.file, key_node),
                hint="merge once, with a list of sources that bring different keys: "
                "<<: [*first, *second]",
            )

    def _merged(
        self,
        key_node: Node,
        source: Node,
        path: DataPath,
        skip: frozenset[str],
        written: Written,
    ) -> dict[str, Any]:
        """The keys one merge source (``<<: *anchor``) brings that are not in ``skip``."""
        if not isinstance(source, MappingNode):
            raise InputError(
                "a merge key (<<) needs a mapping or a list of mappings",
                location=_loc(self.file, source),
                hint="point << at an anchored mapping, e.g. <<: *defaults",
            )
        # NOTE: a merged mapping is walked here, not through walk(): guard it too,
        # or ``r: &r {<<: *r}`` recurses until Python gives up.
        self._spend(source)
        if len(path) + self.merging >= MAX_DEPTH:
            raise InputError(
                f"nesting deeper than {MAX_DEPTH} levels, merges (<<) counted",
                location=_loc(self.file, key_node),
                hint="merge a flatter anchor, or copy the keys it brings",
            )
        self._enter(source, at=key_node)
        self.merging += 1
        try:
            return self._mapping(source, path, skip, written)
        finally:
            self.merging -= 1
            self.open.discard(id(source))

    def _key(self, node: Node) -> str:
        if isinstance(node, ScalarNode) and node.tag == STR:
            return str(node.value)
        if isinstance(node, ScalarNode) and node.tag == BOOL:
            raise InputError(
                f"key {node.value!r} is read as the boolean {node.value.lower() in TRUE}",
                location=_loc(self.file, node),
                hint=f'quote it: "{node.value}":',
            )
        shown = node.value if isinstance(node, ScalarNode) else _node_kind(node)
        raise InputError(
            f"key {shown!r} is not a string",
            location=_loc(self.file, node),
            hint=f'keys must be strings; quote it: "{shown}":',
        )

    def _scalar(self, node: ScalarNode, path: DataPath) -> Any:
        value = scalar_value(node, path, self.file, self.ambiguous, self.json)
        if isinstance(value, str) and not node.style and ENGINE_FLOAT.fullmatch(value):
            self.exponents.append(path)
        return value
