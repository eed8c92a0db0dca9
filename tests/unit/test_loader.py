"""Loader: plain data plus a position for every value; unsafe YAML refused."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.errors import InputError, InputErrors, Location
from gate.spec.loader import MAX_NODES, load_bytes
from tests.conftest import ROOT

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    # NOTE: PyYAML does not round-trip C0/C1 controls or line separators; specs never hold them.
    | st.text(
        st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\x85\u2028\u2029"),
        max_size=20,
    )
)
_keys = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=25,
)


def _paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*prefix, index))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, _values, min_size=1, max_size=5))
def test_round_trip_and_every_data_path_has_a_position(data):
    text = yaml.safe_dump(data, default_flow_style=False, allow_unicode=True)
    doc = load_bytes(text.encode("utf-8"), "x.yaml")
    assert doc.data == data
    for path in _paths(data):
        loc = doc.source_map.values.get(path)
        assert loc is not None, path
        assert loc.file == "x.yaml" and loc.line >= 1 and loc.col >= 1


def test_positions_are_one_based_and_point_at_the_value():
    doc = load_bytes(b"a: 1\nb:\n  c: [x, y]\n", "f.yaml")
    assert (doc.source_map.values[("a",)].line, doc.source_map.values[("a",)].col) == (1, 4)
    assert doc.source_map.values[("b", "c", 1)].line == 3
    assert doc.source_map.values[("b", "c", 1)].col == 10
    assert doc.source_map.keys[("b", "c")].col == 3


def test_locate_falls_back_to_the_nearest_ancestor():
    doc = load_bytes(b"a:\n  b: 1\n", "f.yaml")
    assert doc.source_map.locate(("a", "missing", "deeper")).line == 2


def test_anchors_aliases_and_merge_keys_work():
    doc = load_bytes(b"base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\nagain: *b\n", "f.yaml")
    assert doc.data["use"] == {"x": 1, "y": 3}
    assert doc.data["again"] == {"x": 1, "y": 2}


def test_an_alias_bomb_is_refused_quickly():
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    with pytest.raises(InputError, match=f"more than {MAX_NODES:,} values"):
        load_bytes("\n".join(lines).encode(), "bomb.yaml")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"a: 1\na: 2\n", "duplicate key 'a' (first defined at line 1)"),
        (b"x: .nan\n", "not a finite number"),
        (b"x: -.inf\n", "not a finite number"),
        (b"on: 1\n", "read as the boolean True"),
        (b"x: no\n", "reads as a YAML 1.1 boolean"),
        (b"1: a\n", "is not a string"),
        (b"[1, 2]\n", "not a mapping"),
        (b"", "file is empty"),
        (b"a: !!binary aGk=\nb: !!python/tuple [1]\n", "unsupported YAML tag"),
        (b"a: " + b"[" * 100 + b"]" * 100, "nesting deeper than"),
        (b"a: 1\n---\nb: 2\n", "another document"),
        (b"ok: \xc3\x28\n", "not valid UTF-8"),
    ],
)
def test_unsafe_or_malformed_yaml_is_refused(raw, expected):
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_bytes(raw, "bad.yaml")


def test_quoted_yes_is_a_string_and_true_is_a_boolean():
    assert load_bytes(b'a: "yes"\nb: true\n', "f.yaml").data == {"a": "yes", "b": True}


def test_oversized_input_is_refused_before_parsing():
    with pytest.raises(InputError, match="larger than the 1024 KiB limit"):
        load_bytes(b"#" * (1024 * 1024 + 1), "big.yaml")


def _nested(depth: int, style: str) -> bytes:
    """A mapping ``a:`` over ``depth`` more levels: flow lists, block mappings, or block lists."""
    if style == "flow":
        return b"a: " + b"[" * depth + b"1" + b"]" * depth + b"\n"
    item = b"-" if style == "block-lists" else b"k:"
    lines = [b"a:", *(b" " * level + item for level in range(1, depth))]
    return b"\n".join([*lines, b" " * depth + item + b" 1"]) + b"\n"


@pytest.mark.parametrize(
    ("style", "depth"),
    [(s, d) for s in ("flow", "block", "block-lists") for d in (62, 63, 64, 65, 200, 999, 1_001)]
    + [("flow", 5_000), ("flow", 100_000)],
)
def test_nesting_past_64_levels_is_refused_at_the_65th(style, depth):
    """The 65th level (the root mapping is the first) is where the spec is refused, in every
    style; flow past libyaml's own bound of 1,000 levels gets libyaml's message instead."""
    raw = _nested(depth, style)
    if depth < 64:
        assert load_bytes(raw, "deep.yaml").data["a"]
        return
    with pytest.raises(InputError) as refused:
        load_bytes(raw, "deep.yaml")
    if style == "flow" and depth > 1_000:  # libyaml scans the whole line ahead of the parser
        assert str(refused.value).startswith("deep.yaml:1:1003: invalid YAML")
        assert "exceeded maximum nesting depth" in str(refused.value)
        return
    line, col = (1, 4 + 63) if style == "flow" else (65, 65)
    assert refused.value.location == Location("deep.yaml", line, col)
    assert "nesting deeper than 64 levels" in str(refused.value)


def _merge_chain(levels: int) -> bytes:
    """Anchors merged into one another: ``m1`` merges ``m0``, ``m2`` merges ``m1``, ..."""
    lines = [b"m0: &m0 {x: 1}"]
    lines += [b"m%d: &m%d {<<: *m%d}" % (i, i, i - 1) for i in range(1, levels + 1)]
    return b"\n".join(lines) + b"\n"


def _merge_fan(levels: int, width: int) -> bytes:
    """Each anchor merges the one before it ``width`` times: width ** levels merges."""
    lines = [b"m0: &m0 {x: 1}"]
    for i in range(1, levels + 1):
        sources = b", ".join([b"*m%d" % (i - 1)] * width)
        lines.append(b"m%d: &m%d {<<: [%s]}" % (i, i, sources))
    return b"\n".join(lines) + b"\n"


def test_merged_anchors_read_as_yaml_says_up_to_the_bound():
    data = load_bytes(_merge_chain(63) + _merge_fan(3, 10).replace(b"m", b"n"), "f.yaml").data
    assert data["m63"] == data["n3"] == {"x": 1}  # 63 merges deep; 1,110 merges


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # 470 bytes, ten million merges: the budget counts every merge and every key it skips
        (_merge_fan(7, 10), "document expands to more than 100,000 values"),
        (_merge_fan(6, 10), "document expands to more than 100,000 values"),
        # a thousand anchors merged into one another: Python's recursion limit, before
        (_merge_chain(990), "nesting deeper than 64 levels, merges (<<) counted"),
        (_merge_chain(64), "nesting deeper than 64 levels, merges (<<) counted"),
        # merges written inline nest in the text: the event check refuses them
        (b"a: " + b"{<<: " * 990 + b"{x: 1}" + b"}" * 990 + b"\n", "nesting deeper than 64 levels"),
    ],
)
def test_merge_bombs_are_refused(raw, expected):
    """Before merges were charged, the first took 166 s and the chain of 990 overflowed."""
    with pytest.raises(InputError, match=re.escape(expected)):
        load_bytes(raw, "bomb.yaml")


@pytest.mark.parametrize(
    ("text", "expected", "line"),
    [
        # PyYAML (Hydra, W&B, SkyPilot) keeps the second merge's keys; the YAML spec the first's
        (
            "a: &a {gpus: 1}\nb: &b {gpus: 8}\nm:\n  t: 1\n  <<: *a\n  <<: *b\n",
            "a second merge key (<<) in one mapping (the first at line 5)",
            6,
        ),
        # kubectl (go-yaml) lets a merge below a written key win; YAML keeps the written one
        (
            'g: &g {"nvidia.com/gpu": "8"}\nlimits:\n  nvidia.com/gpu: 1\n  <<: *g\n',
            "key 'nvidia.com/gpu' is written at line 3 and merged again by a << below it",
            4,
        ),
        # the same, the key brought by a merge inside the merged anchor
        (
            "t: &t {k: 1}\ns: &s {<<: *t, j: 2}\nm:\n  k: 0\n  <<: *s\n",
            "key 'k' is written at line 4 and merged again by a << below it",
            5,
        ),
        # a list of sources brings it as one merge does
        (
            "a: &a {x: 1}\nb: &b {k: 8}\nm:\n  k: 1\n  <<: [*a, *b]\n",
            "key 'k' is written at line 4 and merged again",
            5,
        ),
    ],
)
def test_merges_that_parsers_read_apart_are_refused(text: str, expected: str, line: int) -> None:
    """A red team priced 1 GPU where Hydra launches 8 × 16 nodes and kubectl asks for 8."""
    with pytest.raises(InputError, match=re.escape(expected)) as caught:
        load_bytes(text.encode(), "f.yaml")
    assert caught.value.location == Location("f.yaml", line, 3)


def test_merges_every_parser_reads_alike_still_work() -> None:
    """A merge first, keys written below it overriding it; a list of sources of other keys."""
    text = b"d: &d {a: 1, b: 2}\nm:\n  <<: *d\n  a: 5\nn:\n  <<: [*d, {e: 9, c: 3}]\n  c: 4\n"
    data = load_bytes(text, "f.yaml").data
    assert data["m"] == {"a": 5, "b": 2}
    assert data["n"] == {"a": 1, "b": 2, "e": 9, "c": 4}
    assert data["n"] == yaml.safe_load(text)["n"]


def test_a_plain_exponent_number_is_a_number_to_what_validates_it() -> None:
    """``1e-4`` is text to YAML 1.1 (PyYAML) and a number to YAML 1.2, JSON, OmegaConf and
    Kubernetes: a spec was told to "write a number without quotes" it had no quotes around."""
    doc = load_bytes(b"lr: 1e-4\nsteps: 1.0e+3\nname: '1e5'\n", "s.yaml")
    assert doc.data == {"lr": "1e-4", "steps": 1000.0, "name": "1e5"}  # YAML 1.1's reading
    assert doc.ambiguous == ()
    assert doc.exponent_texts == (("lr",),)
    assert doc.yaml12() == {"lr": 0.0001, "steps": 1000.0, "name": "1e5"}
    # OmegaConf and go-yaml read digits with _ too; YAML 1.1 and 1.2 read text alike
    engine = load_bytes(b"top: 1_000e0\nlow: 2_0.5e1\n", "c.yaml")
    assert engine.data == {"top": "1_000e0", "low": "2_0.5e1"} and engine.ambiguous == ()
    assert engine.yaml12() == {"top": 1000.0, "low": 205.0}


def test_a_spec_with_exponent_numbers_validates_them_as_numbers() -> None:
    from gate.evaluation.reading import parse_spec

    text = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    text = text.replace("setup_minutes: 10", "setup_minutes: 1e1")
    assert "setup_minutes: 1e1" in text
    spec = parse_spec(load_bytes(text.encode(), "spec.yaml"))
    assert spec.workload.setup_minutes == 10.0


def test_a_json_file_reads_its_numbers_as_json_does() -> None:
    for name in ("spec.json", "<stdin>"):
        doc = load_bytes(b' {"lr": 1e-05, "top": 2E+3, "name": "1e5"}', name)
        assert doc.data == {"lr": 1e-05, "top": 2000.0, "name": "1e5"}
        assert doc.ambiguous == ()


@pytest.mark.parametrize("text", [b"expires: 2026-02-30\n", b"{expires: 2026-13-01}"])
def test_a_date_no_calendar_has_is_said_so(text: bytes) -> None:
    """It was told to quote the value, and a quoted one then failed as no date either."""
    with pytest.raises(InputError, match="is no date or time in the calendar") as caught:
        load_bytes(text, "p.yaml")
    assert caught.value.hint == "write a date that exists, as YYYY-MM-DD"


def test_a_tab_that_indents_is_named_at_its_own_line() -> None:
    """libyaml marks the value before it, so the error pointed a line too early."""
    with pytest.raises(InputError, match="indent with spaces") as caught:
        load_bytes(b"a: 1\nb:\n  c: 2\n\td: 3\n", "t.yaml")
    assert caught.value.location == Location("t.yaml", 4, 1)


@pytest.mark.parametrize("key", ["x", "accelerators", "max_epochs"])
def test_a_key_two_sources_of_one_merge_bring_is_refused(key: str) -> None:
    """PyYAML 6 keeps the first source's value of a one-letter key and the last one's of a
    longer key (it compares the interned texts): ``L4:1`` for the gate, ``H200:8`` for SkyPilot."""
    text = f"a: &a {{{key}: 1}}\nb: &b {{{key}: 8}}\nm:\n  <<: [*a, *b]\n"
    read = yaml.safe_load(text)["m"][key]
    assert read == (1 if len(key) == 1 else 8)  # why neither reading can be the gate's
    with pytest.raises(InputError, match=f"key '{key}' is brought by two sources of one merge"):
        load_bytes(text.encode(), "f.yaml")
    written = f"a: &a {{{key}: 1}}\nb: &b {{{key}: 8}}\nm:\n  <<: [*a, *b]\n  {key}: 2\n"
    assert load_bytes(written.encode(), "f.yaml").data["m"] == {key: 2}  # written wins


def test_a_file_of_several_documents_says_each_goes_in_a_file_of_its_own():
    """A SkyPilot pipeline (tasks between ``---``) is valid YAML: removing the ``---`` would
    merge its tasks, so the fix is a file per task."""
    with pytest.raises(InputError) as raised:
        load_bytes(b"name: a\nrun: x\n---\nname: b\nrun: y\n", "pipeline.yaml")
    assert "put each task or experiment in a file of its own" in str(raised.value)
    assert "remove the extra ---" not in str(raised.value)


@pytest.mark.parametrize("escape", ["\\q", "\\ud800", "\\uD83D\\uDE00"])
def test_a_bad_escape_in_double_quotes_is_told_as_an_escape_not_an_unclosed_quote(escape):
    """The hint said "close the quote that starts here" of a quote that is closed."""
    with pytest.raises(InputError) as err:
        load_bytes(f'name: "x{escape}"\n'.encode(), "s.yaml")
    location = err.value.location
    assert location is not None and (location.line, location.col >= 9) == (1, True)  # the escape
    assert "close the quote" not in str(err.value)
    assert "in double quotes a backslash starts an escape: write \\\\ for a backslash" in str(
        err.value
    )


@pytest.mark.parametrize(
    ("team", "said"),
    [
        # a Cyrillic er: "write team: nl" named a team no one meant
        ("nl\u0440", "holds U+0440 CYRILLIC SMALL LETTER ER, which is not ASCII — write team: nlp"),
        ("v\u0456sion", "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, which is not"),
        ("\uff56ision", "holds U+FF56 FULLWIDTH LATIN SMALL LETTER V, which is not ASCII — "),
        ("nl\u200bp", "holds U+200B ZERO WIDTH SPACE, which is not ASCII — write team in ASCII"),
    ],
)
def test_a_name_with_a_letter_outside_ascii_is_told_so_not_mended_into_another(team, said):
    from gate.spec.experiment import Experiment
    from gate.spec.validation import validate

    text = (
        f'apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: {{name: x, team: "{team}"}}\n'
        "resources: {accelerator: A100-80GB, gpus_per_trial: 1}\n"
        "workload: {max_epochs: 3, epoch_minutes: 5}\nsearch: {strategy: random, max_trials: 2}\n"
    )
    with pytest.raises(InputErrors) as err:
        validate(Experiment, load_bytes(text.encode(), "s.yaml"))
    (error,) = err.value.errors
    assert str(error).startswith("s.yaml:3:27: metadata.team: ") and said in str(error)
    assert "write team: nl " not in str(error) + " " and "nl-p" not in str(error)


def test_a_name_with_a_control_character_is_not_mended_into_another_name():
    """``team: "vi\\e[2Jsion"`` was answered "write team: vi-2jsion", a name no one wrote."""
    from gate.spec.experiment import Experiment
    from gate.spec.validation import validate

    text = (
        'apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: {name: x, team: "vi\\e[2Jsion"}\n'
        "resources: {accelerator: A100-80GB, gpus_per_trial: 1}\n"
        "workload: {max_epochs: 3, epoch_minutes: 5}\nsearch: {strategy: random, max_trials: 2}\n"
    )
    with pytest.raises(InputErrors) as err:
        validate(Experiment, load_bytes(text.encode(), "s.yaml"))
    said = " ".join(map(str, err.value.errors))
    assert "s.yaml:3:27: metadata.team: contains a control character — remove it" in said
    assert "vi-2jsion" not in said
