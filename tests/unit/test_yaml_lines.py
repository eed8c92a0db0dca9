"""The line reader reads a text as libyaml's compose and the loader's walk read it, or not at all.

Whenever :func:`read_lines` gives a reading, it must be the full loader's to the type and
the position: the same data, the same place for every value and key, nothing ambiguous
left unsaid. Checked on every YAML file of the project, on generated documents in the
styles specs are written in, and on soups of lines that are often not YAML at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.errors import InputError
from gate.spec import loader
from gate.spec.yaml_lines import read_lines

ROOT = Path(__file__).resolve().parents[2]


def _full(text: str) -> loader.LoadedDoc:
    """The loader's reading through libyaml, the line reader left out."""
    saved = loader.read_lines
    loader.read_lines = lambda text, file: None  # type: ignore[assignment]
    try:
        return loader.load_bytes(text.encode("utf-8"), "f.yaml")
    finally:
        loader.read_lines = saved  # type: ignore[assignment]


def _typed(value: Any) -> Any:
    """``value`` with each leaf's type spelled out: True is not 1, -0.0 is not 0.0."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, repr(value))


def _agree(text: str) -> bool:
    """Assert the two readings agree where the line reader reads; whether it read."""
    read = read_lines(text, "f.yaml")
    try:
        doc = _full(text)
    except InputError as exc:
        assert read is None, f"libyaml refuses what the line reader read: {exc}"
        return False
    if read is None:
        return False
    data, values, keys = read
    assert _typed(data) == _typed(doc.data)
    assert values == doc.source_map.values
    assert keys == doc.source_map.keys
    assert doc.ambiguous == ()
    return True


def _project_yaml() -> list[Path]:
    skip = {".git", ".venv", "site", "node_modules"}
    return sorted(
        path
        for pattern in ("*.yaml", "*.yml")
        for path in ROOT.rglob(pattern)
        if not skip & set(path.relative_to(ROOT).parts)
    )


def test_every_yaml_file_of_the_project_reads_alike() -> None:
    read = [path for path in _project_yaml() if _agree(path.read_text(encoding="utf-8-sig"))]
    # the examples and policies are the style the reader is for: it must read most of them
    assert any(path.parent.name == "examples" for path in read)
    assert len(read) > len(_project_yaml()) // 2


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n  b\n",  # a plain value continued on the next line
        "a:\nb: 1\n",  # an empty value (null)
        "a: 010\n",  # YAML 1.1 octal
        "a: yes\n",  # YAML 1.1 boolean
        "a: 1:30\n",  # base 60
        "a: .inf\n",
        "a: 2026-02-30\n",  # not a date
        "a: 1_000\n",
        "a: +1\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: |\n  text\n",
        "a: 'it''s'\n",
        'a: "tab\\t"\n',
        "a: [1,\n  2]\n",
        "a: {b: 1,}\n",
        "a: [1, 2\n",
        "a: b: c\n",
        "a: x #\n  y\n",
        "on: 1\n",
        "1: x\n",
        "a: 1\na: 2\n",
        "---\na: 1\n",
        "a: 1\n---\nb: 2\n",
        "a:\r\n  b: 1\r\n",
        "a:\n\tb: 1\n",
        "\ufeffa: 1\n",
        "a: x\u2028y\n",
        "- a\n- b\n",
        "a:\n  - b\n   - c\n",
        "a:\n  b: 1\n c: 2\n",
        "a: {b: [1, {c: 2}]}\n",
        "a: [1,\n 2]\n",
        "a: [1,\n2]\n",
        "a: [\n  1, 2,\n  3]\nb: 1\n",
        "a: [1\n  , 2]\n",
        "a: [1, # c\n  2]\n",
        "a: [1,\n  # c\n  2]\n",
        "a: [1,\n\n  2]\n",
        "a: {b: [1,\n    2], c: 3}\n",
        "a: [\n]\n",
        "- [1,\n  2]\n",
        "a:\n- [1,\n 2]\n",
        "a: [[1, 2], [3]]\n",
        "a:\n- b: 1\n  c: [x, 'y z', \"w\"]\n- 2\nd: é\n",
    ],
)
def test_edge_cases_read_alike_or_go_to_libyaml(text: str) -> None:
    _agree(text)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1025 + ": 1\n",  # libyaml takes a plain key of 1,024 characters at most
        "x: {" + "a" * 1025 + ": 1}\n",
        "x:\n  " + "b" * 1025 + ": 1\n",
        "a: " + "1" * 1001 + "\n",  # longer than any number read (4,301 digits: no int)
        "a: [" + "1" * 4301 + "]\n",
    ],
)
def test_what_libyaml_or_the_loader_refuses_is_not_read_by_lines(text: str) -> None:
    assert not _agree(text)


def test_the_longest_key_and_number_are_read_by_lines() -> None:
    assert _agree("a" * 1024 + ": 1\n")
    assert _agree("x: {" + "a" * 1024 + ": 1}\n")
    assert _agree("a: " + "1" * 1000 + "\n")


def test_the_styles_specs_use_are_read_by_lines() -> None:
    for path in ("examples/cifar-sweep.yaml", "policies/vision.yaml"):
        assert _agree((ROOT / path).read_text(encoding="utf-8"))
    assert _agree("a:\n- b: 1\n  c: [x, 'y z', \"w\"]\n- 2\nd: Zoë  # comment\n")


_SCALARS = st.sampled_from(
    [
        "1", "0", "-0", "-0.0", "01", "0x1F", "0o7", "1_000", "1.0e4", "1.0e-4", ".5", "-.5",
        "1.", "+1", "-1", "1e5", "12:30", "yes", "no", "on", "off", "y", "true", "True",
        "FALSE", "null", "Null", "~", "2026-01-01", "2026-02-30", "2026-1-1", "a:b", "a: b",
        "a #b", "a#b", "-", "- a", "-a", "?", "? a", "&a", "*a", "!x", "|", ">", "%x",
        "@x", "`x", "a,b", "[a]", "{a}", "[]", "{}", "'q'", '"q"', "'it''s'", '"a\\nb"',
        '"#x: y"', ".inf", ".nan", "=", "<<", "é", "Zoë", "a  b", "a ", "", "x/y.z",
        "http://h:5000", "A100-80GB", "val_*", "a\tb", "\u2028", "\x85", "\ufeff",
    ]
)  # fmt: skip
_USUAL = st.sampled_from(
    ["1", "0.5", "-3", "1.0e-4", "abc", "a b", "A100-80GB", "'q z'", '"q"', "true", "null",
     "2026-01-01", "é", "x/**"]
)  # fmt: skip
"""Values as specs hold them: documents of these alone are read by lines."""
_KEYS = st.sampled_from(
    ["a", "b", "c", "d", "key_1", "x.y", "a-b", "a", "b", "1", "on", "<<", "a b", "é", "?"]
)
_COMMENTS = st.sampled_from(["", " # c", "  #c", "#c", " #", " # a: b"])
_USUAL_COMMENTS = st.sampled_from(["", " # c", "  #c", " #", " # a: b"])


_PLAIN_KEYS = st.sampled_from(["a", "b", "c", "d", "e", "k_1", "x.y", "a-b"])


def _flow(depth: int, usual: bool = False) -> st.SearchStrategy[str]:
    scalar = _USUAL if usual else st.one_of(_USUAL, _USUAL, _SCALARS)
    if depth <= 0:
        return scalar
    inner = _flow(depth - 1, usual)
    seq = st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]")
    keys = _PLAIN_KEYS if usual else _KEYS
    pairs = st.lists(st.tuples(keys, inner), max_size=3, unique_by=lambda kv: kv[0])
    mapping = pairs.map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}")
    return st.one_of(scalar, seq, mapping)


@st.composite
def _block(
    draw: st.DrawFn, indent: int = 0, depth: int = 0, usual: bool = False, mapping: bool = False
) -> list[str]:
    """A block mapping (or list, unless ``mapping``) at ``indent``, as specs are written."""
    lines: list[str] = []
    pad = " " * indent
    if mapping or depth == 0 or depth >= 3 or draw(st.booleans()):
        keys = _PLAIN_KEYS if usual else st.one_of(_PLAIN_KEYS, _KEYS)
        comments = _USUAL_COMMENTS if usual else _COMMENTS
        for key in draw(st.lists(keys, min_size=1, max_size=4, unique=True)):
            if depth < 3 and draw(st.integers(0, 3)) == 0:
                lines.append(f"{pad}{key}:{draw(comments)}")
                step = draw(st.sampled_from([0, 1, 2, 4]))
                lines += (
                    draw(_block(indent + step, depth + 1, usual))
                    if step
                    else draw(_items(indent, depth + 1, usual))
                )
            else:
                flow = draw(_flow(2, usual))
                if draw(st.integers(0, 3)) == 0:  # broken after its commas, onto deeper lines
                    deeper = draw(st.sampled_from([1, 2, 4] if usual else [0, 1, 2, 4]))
                    flow = flow.replace(", ", ",\n" + " " * (indent + deeper))
                lines += f"{pad}{key}: {flow}{draw(comments)}".split("\n")
        return lines
    return draw(_items(indent, depth, usual))


@st.composite
def _items(draw: st.DrawFn, indent: int, depth: int, usual: bool) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for _ in range(draw(st.integers(1, 3))):
        gap = " " * draw(st.integers(1, 3))
        if depth < 3 and draw(st.booleans()):
            # NOTE: a list right in a list's item (- - 1) is left to libyaml
            inner = draw(_block(indent + 1 + len(gap), depth + 1, usual, mapping=usual))
            inner[0] = f"{pad}-{gap}{inner[0].lstrip(' ')}"
            lines += inner
        else:
            comment = draw(_USUAL_COMMENTS if usual else _COMMENTS)
            lines.append(f"{pad}-{gap}{draw(_flow(2, usual))}{comment}")
    return lines


@settings(max_examples=400, deadline=None)
@given(_block())
def test_generated_documents_read_alike(lines: list[str]) -> None:
    _agree("\n".join(lines) + "\n")


@settings(max_examples=300, deadline=None)
@given(_block(usual=True))
def test_documents_of_usual_values_are_read_by_lines(lines: list[str]) -> None:
    assert _agree("\n".join(lines) + "\n")


_LINE = st.one_of(
    st.builds(lambda i, k, v, c: f"{' ' * i}{k}: {v}{c}", st.integers(0, 5), _KEYS, _flow(1),
              _COMMENTS),
    st.builds(lambda i, k, c: f"{' ' * i}{k}:{c}", st.integers(0, 5), _KEYS, _COMMENTS),
    st.builds(lambda i, v, c: f"{' ' * i}- {v}{c}", st.integers(0, 5), _flow(1), _COMMENTS),
    st.builds(lambda i, k, v: f"{' ' * i}- {k}: {v}", st.integers(0, 5), _KEYS, _flow(1)),
    st.sampled_from(["", "# c", "  # c", "---", "...", "%YAML 1.1", "-", "- ", " ", "a"]),
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=8))
def test_line_soups_read_alike_or_go_to_libyaml(lines: list[str]) -> None:
    _agree("\n".join(lines))


_EDITED = [
    (ROOT / "examples" / "cifar-sweep.yaml").read_text(encoding="utf-8"),
    (ROOT / "policies" / "vision.yaml").read_text(encoding="utf-8"),  # a list over two lines
]
_EDITS = st.sampled_from(
    [*" \n\t:-#,[]{}'\"&*!|>?%@`~.0aé\u2028\ufeff", "", "  ", ": ", " #", ",\n", ",\n  "]
)


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(_EDITED),
    st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 2), _EDITS), max_size=3),
)
def test_a_file_edited_reads_alike_or_goes_to_libyaml(
    text: str, edits: list[tuple[int, int, str]]
) -> None:
    """A file a few keystrokes from a good one: inserted, deleted or replaced characters."""
    for at, cut, new in edits:
        at %= len(text) + 1
        text = text[:at] + new + text[at + cut :]
    _agree(text)
