"""gate.reporters.indented_json writes what json.dumps(indent=2, ensure_ascii=False) writes."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.reporters.indented_json import Raw, dumps

_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # nan and infinities too: json.dumps writes NaN and Infinity
    st.text(),
    st.sampled_from(["", "\u00d7", "\x00", "\u2028", '"\\', "é"]),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), inner, max_size=5)
        | st.tuples(inner, inner)
    ),
    max_leaves=40,
)


@settings(max_examples=800)
@given(_VALUES)
def test_it_writes_what_json_dumps_writes(value):
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize(
    "value",
    [{}, [], {"a": []}, [{}], {"a": {"b": [1, 2.5, True, None, "x"]}}, [math.inf], Decimal(1)],
)
def test_edge_cases(value):
    try:
        expected = json.dumps(value, indent=2, ensure_ascii=False)
    except TypeError:
        with pytest.raises(TypeError):
            dumps(value)
        return
    assert dumps(value) == expected


@settings(max_examples=300)
@given(st.lists(_VALUES, max_size=4), st.lists(_VALUES, max_size=4))
def test_parts_rendered_apart_stand_as_if_rendered_in_place(items, others):
    """A worker renders each result at its depth; spliced in, the document is the same."""
    document = {"head": others, "results": items, "tail": {"n": len(items)}}
    parts = [Raw(dumps(item, depth=2)) for item in items]
    assert dumps({**document, "results": parts}) == json.dumps(
        document, indent=2, ensure_ascii=False
    )
