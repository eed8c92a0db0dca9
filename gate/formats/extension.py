"""The facts a file carries in its engine's own extension point, validated where they stand.

Hydra keeps unknown top-level keys, so an ``x-budget-gate:`` block holds them. W&B's local
controller refuses them (the sweeps schema allows no other top-level key), so a W&B sweep
writes the same block as a YAML comment (``# x-budget-gate:``), which every loader drops;
a Hydra config may too. Kubernetes keeps any ``metadata.annotations`` (Katib:
``budget-gate/<fact>``); SkyPilot refuses unknown keys but passes ``envs`` to the job
(``X_BUDGET_GATE_<FACT>``). Annotation and env values are strings: JSON when they parse as
JSON (``3.5``, ``[0, 1]``), else text. A hint to add a fact names the point the file has
and its line (:class:`gate.formats.model.Point`): written anew, it would be a second one.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from gate.errors import InputError, InputErrors, Location
from gate.formats.model import FactMap, Origin, Point, Source, Traced, has_path, value_at
from gate.formats.spelling import near_prefix
from gate.spec.facts import ANNOTATION_PREFIX, ENV_PREFIX, EXTENSION_KEY, FACT_PATHS, Facts
from gate.spec.loader import DataPath, LoadedDoc, SourceMap, load_bytes
from gate.spec.validation import validate

COMMENT = f"# {EXTENSION_KEY}:"
"""How the comment block starts (at the start of a line)."""
_HEADER = re.compile(rf"^#( *){re.escape(EXTENSION_KEY)}:")
_LINE = re.compile(r"^#( *)\S")
_NAMED = re.compile(r"^#( *)([\w.-]+) *: *(?:\{.*)?$")
"""A comment line that opens a block (`# name:`, `# name: {...}`), not prose."""


def comment_doc(doc: LoadedDoc) -> LoadedDoc | None:
    """The ``# x-budget-gate:`` comment block as YAML, at its own lines and columns.

    The block is its header line and the comment lines after it indented deeper, each
    ``#`` at the start of the line; the ``#`` become spaces, so YAML reads the block in
    place and each error and fact points at the file's own line and column.
    """
    lines = doc.text.splitlines()
    for i, line in enumerate(lines):
        named = _NAMED.match(line)
        if named and named.group(2) != EXTENSION_KEY and near_prefix(named.group(2), EXTENSION_KEY):
            raise InputError(
                f"a comment block # {named.group(2)}: is not read: its name is not {EXTENSION_KEY}",
                location=Location(doc.file, i + 1, named.start(2) + 1),
                hint=f"did you mean {COMMENT!r}?",
            )
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    if not starts:
        return None
    if len(starts) > 1:
        raise InputError(
            f"a second {COMMENT} comment block",
            location=Location(doc.file, starts[1] + 1, 1),
            hint=f"keep one {COMMENT} block; move these lines into the first",
        )
    first = starts[0]
    header = _HEADER.match(lines[first])
    assert header is not None
    block = [" " + lines[first][1:]]
    for line in lines[first + 1 :]:
        deeper = _LINE.match(line)
        if deeper is None or len(deeper.group(1)) <= len(header.group(1)):
            break
        block.append(" " + line[1:])
    text = "\n" * first + "\n".join(block) + "\n"
    return load_bytes(text.encode("utf-8"), doc.file)


def comment_facts(doc: LoadedDoc) -> FactMap:
    """The facts of the ``# x-budget-gate:`` comment block (empty when there is none)."""
    block = comment_doc(doc)
    return {} if block is None else block_facts(block, spelled=f"# {EXTENSION_KEY}")


def block_facts(doc: LoadedDoc, *, spelled: str = EXTENSION_KEY) -> FactMap:
    """The ``x-budget-gate:`` block of a Hydra config (empty when there is none)."""
    _refuse_near_misses(
        {k: v for k, v in doc.data.items() if k != EXTENSION_KEY}, EXTENSION_KEY, doc.source_map, ()
    )
    block = doc.data.get(EXTENSION_KEY)
    if block is None:
        return {}
    prefix: DataPath = (EXTENSION_KEY,)
    if not isinstance(block, dict):
        raise InputError(
            f"{spelled} is not a mapping",
            location=doc.source_map.locate(prefix),
            hint=f"write {spelled}: {{accelerator: A100-80GB, epoch_minutes: 3.5}}",
        )
    sub = _rooted(doc.source_map, prefix)
    _validate(block, doc.file, sub, spelled)
    return {
        name: Traced(value, Source(Origin.EXTENSION, f"{spelled}.{name}", sub.locate((name,))))
        for name, value in block.items()
    }


def annotation_facts(annotations: Any, file: str, where: SourceMap, path: DataPath) -> FactMap:
    """``budget-gate/<fact>`` annotations of a Kubernetes object at ``path``."""
    if not isinstance(annotations, dict):
        return {}
    _refuse_near_misses(annotations, ANNOTATION_PREFIX, where, path)
    named = {
        key.removeprefix(ANNOTATION_PREFIX): (value, (*path, key))
        for key, value in annotations.items()
        if key.startswith(ANNOTATION_PREFIX)
    }
    return _flat(named, file, where, "metadata.annotations." + ANNOTATION_PREFIX)


def env_facts(envs: Any, file: str, where: SourceMap, path: DataPath) -> FactMap:
    """``X_BUDGET_GATE_<FACT>`` envs of a SkyPilot task at ``path``."""
    if not isinstance(envs, dict):
        return {}
    own = {k: v for k, v in envs.items() if not _runtime_setting(str(k))}
    _refuse_near_misses(own, ENV_PREFIX, where, path)
    named = {
        key.removeprefix(ENV_PREFIX).lower(): (value, (*path, key))
        for key, value in envs.items()
        if isinstance(key, str) and key.startswith(ENV_PREFIX)
    }
    return _flat(named, file, where, "envs." + ENV_PREFIX)


RUNTIME_PREFIX = "BUDGET_GATE_"
"""budget-gate's own settings of a launched task (``BUDGET_GATE_SPEC``), not facts."""


def _runtime_setting(key: str) -> bool:
    """``BUDGET_GATE_SPEC``, ``BUDGET_GATE_LAUNCH_KEY``: a setting, not a fact's near miss.

    ``BUDGET_GATE_TEAM`` names a fact without its ``X_``: a near miss, not a setting.
    """
    return key.startswith(RUNTIME_PREFIX) and key[len(RUNTIME_PREFIX) :].lower() not in FACT_PATHS


def _refuse_near_misses(
    keys: Mapping[Any, Any], prefix: str, where: SourceMap, path: DataPath
) -> None:
    """Refuse a key whose prefix is a near miss of ``prefix``: its fact would go unread.

    ``budget_gate/team`` or ``X_BUDGETGATE_TEAM`` leaves the team unset, and the default
    policy would judge the file in silence.
    """
    for key in keys:
        if not isinstance(key, str) or not near_prefix(key, prefix):
            continue
        fixed = _fixed(key, prefix)
        raise InputError(
            f"{key} is not read: its prefix is not {prefix}",
            location=where.locate((*path, key), key=True),
            hint=f"did you mean {fixed!r}?" if fixed else f"write the fact as {prefix}<fact>",
        )


def _fixed(key: str, prefix: str) -> str | None:
    """The key with its prefix spelled right, where the near miss is one it can see."""
    if prefix == EXTENSION_KEY:
        return prefix
    if prefix.endswith("/"):
        return prefix + key.rsplit("/", 1)[1] if "/" in key else None
    rest = re.sub(r"^(?i:x?[-_.]?budget[-_.]?gate[-_.]?)", "", key)
    return prefix + rest.upper() if rest != key and rest else None


def _flat(
    named: Mapping[str, tuple[Any, DataPath]], file: str, where: SourceMap, spelled: str
) -> FactMap:
    """Facts written one per string (an annotation, an env): parse, check names, validate."""
    data: dict[str, Any] = {}
    values: dict[DataPath, Location] = {}
    for name, (raw, at) in named.items():
        location = where.locate(at)
        if name not in FACT_PATHS:
            close = difflib.get_close_matches(name, list(FACT_PATHS), n=1, cutoff=0.6)
            shown = f"{spelled}{name}" if spelled.endswith("/") else f"{spelled}{name.upper()}"
            raise InputError(
                f"{shown} is not a budget-gate fact",
                location=location,
                hint=f"did you mean {close[0]!r}?"
                if close
                else "see docs/configs.md for the facts",
            )
        data[name] = _parse(raw)
        if location is not None:
            values[(name,)] = location
    sub = SourceMap(values, dict(values))
    _validate(data, file, sub, spelled)
    return {
        name: Traced(value, Source(Origin.EXTENSION, _spelling(spelled, name), sub.locate((name,))))
        for name, value in data.items()
    }


def _spelling(spelled: str, name: str) -> str:
    return f"{spelled}{name}" if spelled.endswith("/") else f"{spelled}{name.upper()}"


def _parse(raw: Any) -> Any:
    """A string fact as JSON when it is JSON (``3.5``, ``[0, 1]``), else the text itself."""
    if not isinstance(raw, str):
        return raw  # SkyPilot envs may be written as YAML numbers
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # NOTE: "[" * 1100 raised past the limit
        return raw


_LEADING_NAME = re.compile(r"[a-z_]+(?=[:.\[])")
"""The fact an error's path starts with: ``max_trials`` of ``max_trials: input should…``."""


def _validate(data: dict[str, Any], file: str, where: SourceMap, spelled: str) -> None:
    """The facts' types, located at the fact; each error names the extension point."""
    try:
        validate(Facts, LoadedDoc(file, data, where))
    except InputErrors as exc:
        label = spelled.rstrip("./")
        for error in exc.errors:
            name = _LEADING_NAME.match(error.message)
            if "the top level" in error.message:
                error.message = error.message.replace("the top level", label)
            elif spelled.endswith(("_", "/")) and name is not None and name[0] in data:
                # NOTE: a flat point (an env, an annotation) is named whole: the prefix glued
                # to the fact's path read "envs.X_BUDGET_GATE_: max_trials", no key of the file
                error.message = _spelling(spelled, name[0]) + error.message[name.end() :]
            else:
                error.message = f"{label}: {error.message}"
        raise


def _rooted(source_map: SourceMap, prefix: DataPath) -> SourceMap:
    """The positions under ``prefix``, with ``prefix`` taken off their paths."""
    cut = len(prefix)
    return SourceMap(
        {p[cut:]: loc for p, loc in source_map.values.items() if p[:cut] == prefix},
        {p[cut:]: loc for p, loc in source_map.keys.items() if p[:cut] == prefix},
    )


# How a hint adds to the point a file has, rather than writing a second one: a second
# comment block is refused, a second envs: key is a duplicate.

Pairs = Callable[[Mapping[str, str]], str]


def _pairs(key: Callable[[str], str], quote: Callable[[str], str]) -> Pairs:
    """Facts as ``key: value`` entries, each key and value as the point spells them."""
    return lambda facts: ", ".join(f"{key(n)}: {quote(v)}" for n, v in facts.items())


def _same(text: str) -> str:
    return text


def comment_at(doc: LoadedDoc) -> str | None:
    """Where the ``# x-budget-gate:`` comment block stands, or None when there is none."""
    for number, line in enumerate(doc.text.splitlines(), 1):
        header = _HEADER.match(line)
        if header is None:
            continue
        if line[header.end() :].strip().startswith("{"):
            return f"inside the {{...}} of the {COMMENT} line (line {number})"
        return f"to the {COMMENT} block at line {number}"
    return None


def key_at(doc: LoadedDoc, path: DataPath, said: str) -> str | None:
    """Where the mapping at ``path`` stands (``under envs: (line 4)``), or None when absent."""
    if not has_path(doc.data, path):
        return None
    key = doc.source_map.locate(path, key=True)
    line = f" (line {key.line})" if key else ""
    value = doc.source_map.values.get(path)
    lines = doc.text.splitlines()
    flow = (
        value is not None
        and value_at(doc.data, path) is not None
        and value.line <= len(lines)
        and lines[value.line - 1][value.col - 1 :].startswith("{")
    )
    return f"{'inside the {...} of' if flow else 'under'} {said}{line}"


def wandb_point(doc: LoadedDoc) -> Point:
    """A W&B sweep's point: the comment block (W&B's schema refuses any other key)."""
    return _block_point(comment_at(doc), f"the comment line {COMMENT} {{}}", f"{COMMENT} block")


def hydra_point(doc: LoadedDoc) -> Point:
    """A Hydra config's point: its ``x-budget-gate:`` key, or the comment block it has."""
    at = comment_at(doc) or key_at(doc, (EXTENSION_KEY,), f"{EXTENSION_KEY}:")
    return _block_point(at, f"{EXTENSION_KEY}: {{}} at the top level", f"{EXTENSION_KEY}:")


def _block_point(at: str | None, written: str, one: str) -> Point:
    """A point whose facts are plain ``name: value`` pairs; ``written`` holds them at ``{}``."""
    plain = _pairs(_same, _same)
    return Point(
        lambda f: written.replace("{}", "{" + plain(f) + "}"),
        plain,
        at,
        exists=at is not None,
        once=f"one {one} holds every fact",
    )


def _env_text(value: str) -> str:
    """An env's value: a number or a quoted string as it is, else YAML-quoted text."""
    plain = re.fullmatch(r'-?[\d.]+|".*"', value)
    return value if plain else "'" + value.replace("'", "''") + "'"


def skypilot_point(doc: LoadedDoc) -> Point:
    """A SkyPilot task's point: ``X_BUDGET_GATE_*`` entries of its ``envs``."""
    envs = _pairs(lambda n: ENV_PREFIX + n.upper(), _env_text)
    at = key_at(doc, ("envs",), "envs:")
    return Point(
        lambda f: f"envs: {{{envs(f)}}}",
        envs,
        at,
        exists=at is not None,
        once="one envs: holds every fact",
    )


def _annotation_text(value: str) -> str:
    """An annotation's value: a string, so anything but a quoted one is YAML-quoted."""
    return value if value.startswith('"') else "'" + value.replace("'", "''") + "'"


def katib_point(doc: LoadedDoc) -> Point:
    """A Katib Experiment's point: ``budget-gate/*`` annotations in its ``metadata``."""
    notes = _pairs(lambda n: ANNOTATION_PREFIX + n, _annotation_text)
    at = key_at(doc, ("metadata", "annotations"), "metadata.annotations:")
    if at is not None:
        return Point(entries=notes, at=at, exists=True)

    def annotations(facts: Mapping[str, str]) -> str:
        return f"annotations: {{{notes(facts)}}}"

    return Point(
        lambda f: f"metadata: {{{annotations(f)}}}",
        annotations,
        key_at(doc, ("metadata",), "metadata:"),
        once="one annotations: holds every fact",
    )
