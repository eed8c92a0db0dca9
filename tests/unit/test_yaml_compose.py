"""gate.spec.yaml_compose builds the tree yaml.compose builds, or fails as it fails.

The loader composes libyaml's events itself (one pass, nesting bounded as it goes); here
every example, policy and bad-input case, and thousands of generated and mangled YAML
texts, are composed both ways and must give the same nodes (kinds, tags, values, styles,
marks, shared anchors) or the same error.
"""

from __future__ import annotations

import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.errors import InputError
from gate.spec.yaml_compose import LOADER, compose
from gate.spec.yaml_tags import MAX_DEPTH
from tests.conftest import ROOT


def _reference(text: str) -> object:
    """What the loader did before: every event read for the nesting, then yaml.compose."""
    depth = 0
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                return ("too deep", event.start_mark.line, event.start_mark.column)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
    return yaml.compose(text, Loader=LOADER)


def _outcome(build, text: str) -> object:
    try:
        node = build(text)
    except InputError as exc:
        assert exc.location is not None
        return ("too deep", exc.location.line - 1, exc.location.col - 1)
    except yaml.YAMLError as exc:
        return (type(exc).__name__, str(exc))
    if isinstance(node, tuple):
        return node
    return _shape(node, {})


def _mark(mark: yaml.Mark | None) -> object:
    return None if mark is None else (mark.index, mark.line, mark.column)


def _shape(node: yaml.Node | None, seen: dict[int, int]) -> object:
    """A node tree as plain data; a node met again is named by when it was first met."""
    if node is None:
        return None
    if id(node) in seen:
        return ("again", seen[id(node)])
    seen[id(node)] = len(seen)
    common = (type(node).__name__, node.tag, _mark(node.start_mark), _mark(node.end_mark))
    if isinstance(node, yaml.ScalarNode):
        return (*common, node.value, node.style)
    if isinstance(node, yaml.SequenceNode):
        return (*common, node.flow_style, [_shape(n, seen) for n in node.value])
    assert isinstance(node, yaml.MappingNode)
    pairs = [(_shape(k, seen), _shape(v, seen)) for k, v in node.value]
    return (*common, node.flow_style, pairs)


def _same(text: str) -> None:
    assert _outcome(lambda t: compose(t, "f.yaml"), text) == _outcome(_reference, text), text


CORPUS = sorted(
    p
    for pattern in ("examples/*.yaml", "policies/**/*.yaml", "tests/cases/**/*.yaml")
    for p in ROOT.glob(pattern)
)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_of_the_repository_composes_alike(path):
    _same(path.read_text(encoding="utf-8", errors="replace"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# a comment only\n",
        "---\n",
        "a: *x\n",
        "a: &x 1\nb: &x 2\n",
        "a: 1\n---\nb: 2\n",
        "a: 1\n---\nb: [\n",
        "a: *x\n" + "[" * 70 + "]" * 70 + "\n",
        "a: !!str 1\nb: ! 2\nc: '3'\nd: !!binary aGk=\ne: ~\nf: 0o17\ng: 1_000\n",
        "&a [1, *a]\n",
        "base: &b {x: 1}\nboth:\n  <<: [*b, {y: 2}]\n  z: 3\n",
        "? [complex, key]\n: value\n",
        "a: |\n  literal\n  text\nb: >-\n  folded\n",
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
        "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n",
        "a:\n\tb: 1\n",
        "%YAML 1.1\n---\na: 1\n",
        "!!map {a: 1}\n",
        "- !!seq [1]\n- !custom x\n",
    ],
)
def test_edge_cases_compose_alike(text):
    _same(text)


_SCALARS = st.one_of(
    st.text(alphabet=string.printable, max_size=8),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, width=32),
    st.booleans(),
    st.none(),
    st.sampled_from(["yes", "no", "on", "0100", "0b11", "1:30", "2026-01-31", ".inf", "~"]),
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
_INSERTS = st.sampled_from(
    ["&a ", "*a", "&b ", "*b", "<<: *a\n", "!!str ", "! ", "---\n", "\t", "'", '"', "[", "]",
     "{", "}", ": ", "- ", "\n  ", "? ", "|\n", "#", "%", "@"]
)  # fmt: skip


@st.composite
def _texts(draw: st.DrawFn) -> str:
    text = yaml.safe_dump(
        draw(_DATA), default_flow_style=draw(st.sampled_from([None, False, True]))
    )
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_INSERTS) + text[at:]
    return text


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts())
def test_generated_and_mangled_yaml_composes_alike(text):
    _same(text)
