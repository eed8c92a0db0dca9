"""An engine's file → a spec document, each field traced to its line or a named default.

Order of sources, first wins: the engine's own fields (and what the engine does when they
are absent), the file's extension point, the launching task (a SkyPilot task that runs the
sweep), the team policy's ``defaults:``, the calibration (epoch time only), the spec
model's own defaults. A fact the file's extension point writes over a field the engine
sets is an error, not a silent override. What no source gives is an error that names the
key to add and where.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Protocol

from gate.calibrate.lookup import by_key, epoch_minutes, finest
from gate.calibrate.model import Calibration, Key
from gate.errors import InputError, InputErrors, Location
from gate.formats import Format
from gate.formats.candidates import dearest, refuse_unjudged
from gate.formats.katib_nodes import refuse_other_models
from gate.formats.model import (
    Draft,
    FactMap,
    Imported,
    ImportSummary,
    Mapped,
    Origin,
    Provenance,
    Source,
    Spell,
    Traced,
    dotted,
)
from gate.formats.spelling import EngineWords
from gate.spec.facts import FACT_PATHS, Facts
from gate.spec.loader import DataPath, LoadedDoc, SourceMap

MODEL_LABEL = "model"


class Mapper(Protocol):
    """A format's module: ``read(doc) -> Mapped``."""

    def read(self, doc: LoadedDoc) -> Mapped:
        """Map the engine's fields (pure; no engine library is imported)."""
        ...


_MODULES = {
    Format.WANDB: "gate.formats.wandb",
    Format.KATIB: "gate.formats.katib",
    Format.SKYPILOT: "gate.formats.skypilot",
    Format.HYDRA: "gate.formats.hydra",
}


@dataclass(frozen=True, slots=True)
class Team:
    """What the team's policy lends an imported file: its defaults, calibration and prices."""

    defaults: Facts = field(default_factory=Facts)
    """The policy's ``defaults:``."""
    policy: str = ""
    """The policy's name as a report shows it (its file, or the built-in default)."""
    calibration: Calibration | None = None
    """The calibration, when the team's policy uses one (``calibration.use``)."""
    min_runs: int = 5
    """The team policy's ``calibration.min_runs``."""
    price: Callable[[str, bool], Decimal | None] | None = None
    """Price per GPU-hour of an accelerator (on spot or not) under the team's policy, to
    find the dearest candidate."""
    canonical: Callable[[str], str] = str
    """An accelerator's catalog spelling (SkyPilot reads ``a10g`` as ``A10G``); the name
    itself where no other case of it is known."""
    needs_approval: frozenset[str] = frozenset()
    """The accelerators the team's policy approves each use of (``approval.accelerators``)."""


def _no_team(team: str | None) -> Team:
    return Team()


@dataclass(frozen=True, slots=True)
class Context:
    """What the translation may fill from besides the file."""

    team: Callable[[str | None], Team] = _no_team
    """The settings of the policy that judges ``metadata.team`` (``None``: the default)."""
    launch: FactMap = field(default_factory=dict)
    """Facts of the task that launches this file (its accelerator, GPUs, spot)."""


_SHAPE_FAILURES = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    ArithmeticError,  # OverflowError, ZeroDivisionError, decimal's Overflow
)
"""What a mapper raises on a value of a shape it does not read (a list where a number goes)."""


def _catalog_names(mapped: Mapped, draft: Draft, canonical: Callable[[str], str]) -> Mapped:
    """The task's accelerators as the catalog spells them: SkyPilot reads names in any case.

    ``draft``'s accelerator is renamed in place; each renaming is a note.
    """
    key = ("resources", "accelerator")
    priced = draft[key].value if key in draft and isinstance(draft[key].value, str) else None
    names = dict.fromkeys([*(c[0] for c in mapped.candidates), *([priced] if priced else [])])
    renamed = {name: canonical(name) for name in names if canonical(name) != name}
    if priced in renamed:
        draft[key] = replace(draft[key], value=renamed[priced])
    said = [f"accelerator {a} read as {b}, as SkyPilot reads it" for a, b in renamed.items()]
    candidates = tuple(
        (renamed.get(name, name), count, spot, at) for name, count, spot, at in mapped.candidates
    )
    return replace(mapped, candidates=candidates, notes=(*mapped.notes, *said))


def read(doc: LoadedDoc, fmt: Format) -> Mapped:
    """The format's mapper applied to ``doc`` (its module is imported only now).

    NOTE: a mapper refuses the values it knows to be wrong at their line; one of a shape it
    never expected (a mapping for ``eta``, NaN for a count) is refused too, at the file,
    rather than crash the gate (exit 70) on a file its author controls.
    """
    module: Mapper = importlib.import_module(_MODULES[fmt])
    try:
        return module.read(doc)
    except _SHAPE_FAILURES as exc:
        raise InputError(
            f"a value of this {fmt.value} has a shape budget-gate does not read "
            f"({type(exc).__name__}: {exc})",
            location=Location(doc.file, 1, 1),
            hint=f"check the file against the {fmt.value}'s own schema: numbers where numbers "
            "go, lists and mappings where they go",
        ) from None


def translate(doc: LoadedDoc, fmt: Format, context: Context) -> Imported:
    """The spec document ``doc`` stands for, with the source of every field."""
    mapped = read(doc, fmt)
    draft = dict(mapped.draft)
    team = context.team(_team(mapped.facts, context.launch))
    if fmt is Format.SKYPILOT:
        mapped = _catalog_names(mapped, draft, team.canonical)
    dearest(draft, mapped, team.price)
    refuse_unjudged(draft, mapped, team.needs_approval)
    _merge_facts(draft, mapped.facts, doc.file, mapped.spell)
    _fill(draft, context.launch)
    _fill(draft, _policy_facts(team.defaults, team.policy))
    refuse_other_models(draft, mapped.pinned)
    _fill_calibration(draft, team)
    _fill_name(draft, doc.file)
    _require(draft, mapped, doc, team)
    fields = _provenance(draft)
    data, source_map = _assemble(draft, doc)
    summary = ImportSummary(fmt, fields, mapped.notes)
    words = EngineWords(fmt, draft, mapped, doc.file)
    return Imported(LoadedDoc(doc.file, data, source_map, doc.text), summary, words)


def _team(facts: FactMap, launch: FactMap) -> str | None:
    """The team whose policy judges the file: its extension point's, else the launcher's.

    No engine field names a team and a policy's ``defaults:`` cannot, so it is known before
    anything is filled, and the same policy lends the defaults, calibration and prices.
    """
    found = facts.get("team") or launch.get("team")
    return str(found.value) if found is not None else None


def _merge_facts(draft: Draft, facts: FactMap, file: str, spell: Spell) -> None:
    """The extension facts fill what the engine leaves open; overruling it is an error.

    Where the fact asks for fewer epochs than the engine may run, the hint also names the
    engine's own edit that runs no more than that (``parameters.epochs.max: 10``).
    """
    errors = []
    for name, traced in facts.items():
        path = FACT_PATHS[name]
        have = draft.get(path)
        if have is None:
            draft[path] = traced
        elif have.value != traced.value:
            hint = f"remove {traced.source.detail}; the engine's own setting decides"
            fewer = _fewer(path, traced.value, have.value, spell)
            if fewer:
                hint += f", or, for at most {traced.value} epochs, make it {fewer}"
            errors.append(
                InputError(
                    f"{traced.source.detail} is {traced.value!r}, but the engine runs "
                    f"{have.value!r} ({have.source.detail})",
                    location=traced.source.location,
                    hint=hint,
                )
            )
    if errors:
        raise InputErrors(errors)


def _fewer(path: DataPath, wanted: Any, engine: Any, spell: Spell) -> str | None:
    """The engine's edit to train at most ``wanted`` epochs, where it runs more."""
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (wanted, engine))
    if path != FACT_PATHS["max_epochs"] or not numbers or wanted >= engine:
        return None
    return spell(path, wanted)


def _fill(draft: Draft, facts: Mapping[str, Traced]) -> None:
    for name, traced in facts.items():
        draft.setdefault(FACT_PATHS[name], traced)


def _policy_facts(defaults: Facts, policy: str) -> FactMap:
    return {
        name: Traced(value, Source(Origin.POLICY, f"defaults.{name} in {policy}"))
        for name, value in defaults.model_dump(exclude_none=True, mode="json").items()
    }


def _fill_calibration(draft: Draft, team: Team) -> None:
    """The measured epoch time of the spec's own key, when the file and policy give none.

    NOTE: the key itself only (its GPU count, precision and MIG slice): a coarser key's runs
    (on 8 GPUs, in bf16) may raise a declared epoch time, never stand in for a missing one.
    """
    if team.calibration is None or _has_epoch_time(draft):
        return
    labels = draft.get(("metadata", "labels"))
    accelerator = draft.get(("resources", "accelerator"))
    gpus = draft.get(("resources", "gpus_per_trial"))
    model = labels.value.get(MODEL_LABEL) if labels and isinstance(labels.value, dict) else None
    if model is None or accelerator is None or gpus is None:
        return
    precision = draft.get(("resources", "precision"))
    mig = draft.get(("resources", "mig_profile"))
    key = Key(
        model=str(model),
        accelerator=str(accelerator.value),
        gpus=gpus.value if isinstance(gpus.value, int) else None,
        precision=str(precision.value) if precision else "fp32",
        mig_profile=str(mig.value) if mig else None,
    )
    found = finest(by_key(team.calibration), key, epoch_minutes, team.min_runs, levels=1)
    if found is None:
        return
    entry, stat = found
    draft[("workload", "epoch_minutes")] = Traced(
        {"low": stat.p10, "high": stat.p90},
        Source(Origin.CALIBRATION, f"p10–p90 of {stat.runs} runs of {entry.key.describe()}"),
    )


def _has_epoch_time(draft: Draft) -> bool:
    return any(
        ("workload", name) in draft for name in ("epoch_minutes", "samples_per_second", "model")
    )


def _fill_name(draft: Draft, file: str) -> None:
    if ("metadata", "name") not in draft:
        name = PurePath(file).stem or "experiment"
        draft[("metadata", "name")] = Traced(
            name, Source(Origin.DERIVED, "the file's name (the file names no experiment)")
        )


_REQUIRED: tuple[tuple[str, str], ...] = (
    ("accelerator", "which GPU a trial runs on"),
    ("gpus_per_trial", "how many GPUs a trial holds"),
    ("max_epochs", "how many epochs a trial trains at most"),
)


def _require(draft: Draft, mapped: Mapped, doc: LoadedDoc, team: Team) -> None:
    """An error for each fact no source gave, naming the key to add and where.

    Where the file has no extension point yet, each hint writes one that holds every fact
    missing: a hint per fact, each followed, would write the point twice.
    """
    missing = [(name, why) for name, why in _REQUIRED if FACT_PATHS[name] not in draft]
    if not _has_epoch_time(draft):
        missing.append(("epoch_minutes", "how long one epoch takes"))
    if not missing:
        return
    top = doc.source_map.locate(()) or Location(doc.file, 1, 1)
    every = {name: "..." for name, _ in missing}
    errors = []
    for name, why in missing:
        native = mapped.native.get(name)
        ways = [mapped.point.add({name: "..."} if mapped.point.exists else every)]
        ways += [native] if native else []
        if team.policy and not team.policy.startswith("the built-in"):
            given = team.defaults.model_dump(exclude_none=True)
            ways.append(
                f"{name}: ... under defaults: in {team.policy}"
                if given
                else f"defaults: {{{', '.join(f'{n}: ...' for n in every)}}} in {team.policy}"
            )
        errors.append(
            InputError(
                f"the file does not say {why}", location=top, hint="add " + ", or ".join(ways)
            )
        )
    raise InputErrors(errors)


_GATE_DEFAULTS: tuple[tuple[DataPath, str], ...] = (
    (("resources", "capacity"), "on-demand"),
    (("resources", "precision"), "fp32"),
    (("workload", "setup_minutes"), "0"),
    (("workload", "eval_overhead"), "0"),
    (("search", "seeds"), "[0] (one seed)"),
    (("search", "max_concurrent_trials"), "1"),
)
_SHOWN: tuple[DataPath, ...] = (
    ("metadata", "name"),
    ("metadata", "team"),
    ("resources", "accelerator"),
    ("resources", "gpus_per_trial"),
    ("resources", "capacity"),
    ("resources", "precision"),
    ("workload", "max_epochs"),
    ("workload", "epoch_minutes"),
    ("workload", "setup_minutes"),
    ("workload", "eval_overhead"),
    ("search", "strategy"),
    ("search", "parameters"),
    ("search", "max_trials"),
    ("search", "max_concurrent_trials"),
    ("search", "seeds"),
    ("search", "scheduler"),
    ("stopping", "early_stopping"),
    ("stopping", "max_trial_hours"),
    ("quality_gate",),
)


def _provenance(draft: Draft) -> tuple[Provenance, ...]:
    """One line per spec field: set ones first, then the defaults and what nothing set."""
    rows = [Provenance(dotted(p), _shown(t.value), t.source) for p, t in sorted(draft.items())]
    defaults = dict(_GATE_DEFAULTS)
    for path in _SHOWN:
        if any(p[: len(path)] == path for p in draft):
            continue
        if path in defaults:
            source = Source(Origin.GATE, "no source gives it; the spec's default applies")
            rows.append(Provenance(dotted(path), defaults[path], source))
        elif path != ("workload", "epoch_minutes"):
            rows.append(Provenance(dotted(path), "not set", Source(Origin.GATE, "no source")))
    return tuple(rows)


def _shown(value: Any) -> str:
    if isinstance(value, dict) and set(value) <= {"values", "low", "high", "log"}:
        if "values" in value:
            return f"{len(value['values'])} values"
        return f"{value.get('low')}…{value.get('high')}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_shown(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


def _assemble(draft: Draft, doc: LoadedDoc) -> tuple[dict[str, Any], SourceMap]:
    """The nested spec data, and a source map from its paths into the original file."""
    top = doc.source_map.locate(()) or Location(doc.file, 1, 1)
    data: dict[str, Any] = {"apiVersion": "budget-gate/v1", "kind": "Experiment"}
    values: dict[DataPath, Location] = {(): top}
    for path, traced in draft.items():
        node = data
        for part in path[:-1]:
            node = node.setdefault(str(part), {})
        node[str(path[-1])] = traced.value
        where = traced.source.location or top
        values[path] = where
        for end in range(1, len(path)):
            values.setdefault(path[:end], where)
    return data, SourceMap(values, dict(values))
