"""The copied table of YAML 1.1's implicit tags resolves every value as PyYAML does."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.spec.yaml_tags import RESOLVERS, resolve

_LOADER = yaml.SafeLoader("")


def _pyyaml(value: str) -> str:
    return str(_LOADER.resolve(yaml.ScalarNode, value, (True, False)))


def test_the_table_is_pyyamls() -> None:
    """The same tags for the same first characters, in the same order."""
    ours: dict[str, list[str]] = {"": ["tag:yaml.org,2002:null"]}
    for tag, firsts, _ in RESOLVERS:
        for first in firsts:
            ours.setdefault(first, []).append(tag)
    theirs = {
        first: [tag for tag, _ in resolvers]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    assert ours == theirs


_WORDS = [
    "yes", "No", "TRUE", "false", "on", "OFF", "y", "null", "Null", "~", "", "<<", "=",
    "!", "&", "*", ".inf", "-.Inf", ".NaN", "2026-01-01", "2026-1-1 1:02:03", "0b101",
    "0o17", "0x1F", "017", "1_000", "1:30", "190:20:30.15", "1.0e+4", "1e4", "-.5", ".5",
]  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.sampled_from(_WORDS),
        st.text(alphabet="0123456789-+._:eExXbBoO abTtZ~nulyesfaNI", max_size=14),
        st.text(max_size=6),
    )
)
def test_every_value_resolves_as_pyyaml_resolves_it(value: str) -> None:
    assert resolve(value) == _pyyaml(value)


def test_the_words_resolve_as_pyyaml_resolves_them() -> None:
    assert {w: resolve(w) for w in _WORDS} == {w: _pyyaml(w) for w in _WORDS}
