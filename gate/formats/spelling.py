"""Edits and missing fields of an imported file, in the engine file's own words.

A fix such as ``resources.gpus_per_trial: 8`` names a spec path that a W&B sweep or a Katib
Experiment does not have. For an imported file each edit is written as the engine's key
(``run_cap: 12``, ``spec.parallelTrialCount: 4``), or, for a fact the engine cannot hold,
as the file's extension point (``# x-budget-gate: {gpus_per_trial: 8}``), or, where the
engine itself sets the value some other way, as the place that sets it.

The engine's keys are spelt as its schema has them: a key the engine does not have is not
read (``num_node: 4``, ``n_trial: 500`` leave the engine's default in force), and a budget-gate
spec without its ``apiVersion``/``kind`` lines read as a SkyPilot task drops every field of
its own. Where the engine refuses such a key (SkyPilot's task schema, W&B's sweeps schema,
Hydra's structured sweeper configs), so does budget-gate, with a did-you-mean; where it drops
it unread (Katib's CRD keeps any field, its controller reads only its Go types'), a near miss
of a known key is refused. So is a near miss of an extension point's prefix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from gate.errors import InputError, InputErrors, Location
from gate.formats import SPEC_HINT, Format
from gate.formats.model import Draft, Mapped, Origin
from gate.spec.facts import FACT_PATHS
from gate.spec.loader import DataPath, SourceMap

_FACT_AT: dict[DataPath, str] = {path: name for name, path in FACT_PATHS.items()}


def flow(value: Any) -> str:
    """A value as YAML flow reads it (JSON is YAML)."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class EngineWords:
    """How to write a change to one imported file (:class:`gate.formats.model.Words`)."""

    format: Format
    draft: Draft
    mapped: Mapped
    file: str = ""
    """The imported file: a value set in another (the launching task) names its file."""

    def edit(self, path: DataPath, value: Any) -> str:
        """The edit ``path: value`` as a change to the engine's file."""
        own = self.mapped.spell(path, value)
        if own is not None:
            return own
        have = self.draft.get(path)
        fact = _FACT_AT.get(path)
        if have is not None and have.source.origin in _WRITTEN:
            where = self._line(have.source.location)
            return f"{have.source.detail}{where} gives {flow(have.value)}: make it {flow(value)}"
        if fact is not None:
            return self.mapped.point.add({fact: flow(value)})
        dotted = ".".join(str(p) for p in path)
        return (
            f"{dotted}: {flow(value)} has no key in a {self.format.value}: write a budget-gate "
            "spec for it (budget-gate import FILE --write SPEC)"
        )

    def missing(self, path: DataPath) -> str | None:
        """Where to add a field no source set (a required label, a quality gate)."""
        if any(p[: len(path)] == path for p in self.draft):
            return None
        for end in range(len(path), 0, -1):
            fact = _FACT_AT.get(path[:end])
            if fact is None:
                continue
            rest = path[end:]
            native = self.mapped.native.get(fact)
            said = self._within(fact, str(rest[0])) if rest else None
            said = said or self.mapped.point.add({fact: _EXAMPLES.get(fact, "...")})
            return said + (f" (or {native})" if native else "")
        return None

    def _within(self, fact: str, key: str) -> str:
        """Where to add ``key`` to the mapping ``fact`` (a label), keeping the keys it has.

        Each missing label is its own finding: a hint that wrote the whole mapping anew
        with one label would, followed for each, keep only the last.
        """
        have = self.draft.get(FACT_PATHS[fact])
        given = have.value if have is not None and isinstance(have.value, dict) else None
        if have is None or given is None:
            return self.mapped.point.add(
                {fact: flow({key: "..."})}, f"every missing one goes in this one {fact} value"
            )
        line = self._line(have.source.location)
        if have.source.origin is Origin.EXTENSION and "(line" in line:
            if key in given:
                return f"a value for {flow(key)} in {have.source.detail}{line}"
            return f"{flow({key: '...'})[1:-1]} to {have.source.detail}{line}"
        merged = self.mapped.point.add({fact: flow({**given, key: "..."})})
        return f"{merged} (the file's {fact} replace those of {have.source.detail})"

    def _line(self, at: Location | None) -> str:
        """`` (line 7)`` in the imported file, `` (task.yaml line 7)`` in another."""
        if at is None:
            return ""
        return f" (line {at.line})" if at.file == self.file else f" ({at.file} line {at.line})"


_WRITTEN = (Origin.FILE, Origin.ENGINE, Origin.EXTENSION)
"""Sources written in a file: an edit changes the value where it stands."""
_EXAMPLES = {
    "quality_gate": '[{"metric": "...", "op": ">=", "value": ...}]',
    "labels": '{"...": "..."}',
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


SKYPILOT_TASK = _words(
    "_metadata api_server_access config envs event_callback file_mounts file_mounts_mapping "
    "inputs managed_secrets name num_nodes outputs pool resources run secrets service setup "
    "volume_mounts volumes workdir"
)
"""``sky.utils.schemas.get_task_schema()`` of SkyPilot 0.14.1 (``additionalProperties: false``)."""
SKYPILOT_RESOURCES = _words(
    "_cluster_config_overrides _docker_login_config _is_image_managed "
    "_no_missing_accel_warnings _requires_fuse accelerator_args accelerators any_of "
    "autostop cloud cpus disk_size disk_tier ephemeral_storage image_id infra instance_type "
    "job_recovery labels local_disk max_hourly_cost memory network_tier ordered ports "
    "priority priority_class region use_spot volumes zone"
)
"""``get_resources_schema()`` of SkyPilot 0.14.1 (an ``any_of``/``ordered`` item: a subset)."""
SKYPILOT_ALIASES = {"gpus": "accelerators"}
"""``sky.resources.RESOURCE_CONFIG_ALIASES``: renamed before SkyPilot checks the schema."""
SPEC_TOP = ("metadata", "workload", "search", "stopping", "quality_gate")
SPEC_RESOURCES = ("gpus_per_trial", "accelerator")
"""A budget-gate spec's own keys: a file with them is a spec that lost its first lines."""

WANDB_TOP = _words(
    "apiVersion kind controller description program job image_uri entity project method "
    "command name run_cap metric metrics scheduler early_terminate parameters launch"
)
"""The sweeps engine's ``config/schema.json`` top level (``additionalProperties: false``)."""
WANDB_PARAMETER = _words(
    "values value distribution probabilities min max q mu sigma a b parameters"
)
"""Every key of any of the schema's parameter kinds (each one ``additionalProperties: false``)."""
WANDB_METRIC = _words("name goal target impute impute_while_running")
WANDB_HYPERBAND = _words("type min_iter max_iter s eta strict")

KATIB_TOP = _words("apiVersion kind metadata spec status")
KATIB_METADATA = _words(
    "name generateName namespace selfLink uid resourceVersion generation creationTimestamp "
    "deletionTimestamp deletionGracePeriodSeconds labels annotations ownerReferences "
    "finalizers managedFields"
)
KATIB_SPEC = _words(
    "parameters objective algorithm earlyStopping trialTemplate parallelTrialCount "
    "maxTrialCount maxFailedTrialCount metricsCollectorSpec nasConfig resumePolicy"
)
"""``ExperimentSpec`` (pkg/apis/controller/experiments/v1beta1/experiment_types.go)."""
KATIB_PARAMETER = _words("name parameterType feasibleSpace")
KATIB_FEASIBLE = _words("max min list step distribution")
KATIB_TEMPLATE = _words(
    "retain trialSpec configMap trialParameters primaryPodLabels primaryContainerName "
    "successCondition failureCondition"
)

OPTUNA_SWEEPER = _words(
    "_target_ defaults sampler direction storage study_name n_trials n_jobs "
    "max_failure_rate search_space params custom_search_space"
)
"""``OptunaSweeperConf`` (hydra_optuna_sweeper/config.py; ``search_space`` in 1.2)."""
BASIC_SWEEPER = _words("_target_ max_batch_size params")
"""``BasicSweeperConf`` (hydra/_internal/core_plugins/basic_sweeper.py)."""


def did_you_mean(name: str, known: Collection[str], cutoff: float = 0.6) -> str | None:
    """``did you mean 'x'?`` (or ``'x' or 'y'?``) for the known keys close to ``name``."""
    import difflib  # NOTE: here, not at the top: only a mistake needs it

    close = difflib.get_close_matches(name, sorted(known), n=2, cutoff=cutoff)
    return f"did you mean {' or '.join(map(repr, close))}?" if close else None


def refuse_unknown(
    node: Any,
    known: Collection[str],
    path: DataPath,
    where: SourceMap | Callable[..., Location | None],
    engine: str,
    *,
    near_only: bool = False,
) -> None:
    """Refuse the keys of ``node`` (at ``path``) the engine does not have, each at its line.

    ``near_only``: only a near miss of a known key (an engine that drops unknown keys).
    A key whose value is null holds nothing to read, so it is passed over.
    """
    if not isinstance(node, Mapping):
        return
    errors = []
    for key in node:
        if key in known:
            continue
        close = did_you_mean(str(key), known, cutoff=0.8 if near_only else 0.6)
        if near_only and close is None:
            continue
        shown = ".".join(str(p) for p in (*path, key))
        errors.append(
            InputError(
                f"{shown} is not a key of a {engine}: it would not be read",
                location=where.locate((*path, key), key=True)
                if isinstance(where, SourceMap)
                else where(*path, key, key=True),
                hint=close or f"remove {key}",
            )
        )
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)


def aliased(resources: dict[str, Any], path: DataPath, where: SourceMap) -> dict[str, Any]:
    """``resources`` with SkyPilot's aliases renamed (``gpus: H100:8`` is ``accelerators``).

    NOTE: SkyPilot renames them before it reads the resources, at the top and in each
    alternative, and refuses a mapping that gives both names.
    """
    found = {k: v for k, v in resources.items() if k in SKYPILOT_ALIASES and v is not None}
    if not found:
        return resources
    renamed = {k: v for k, v in resources.items() if k not in SKYPILOT_ALIASES}
    for alias, value in found.items():
        canonical = SKYPILOT_ALIASES[alias]
        if renamed.get(canonical) is not None:
            raise InputError(
                f"resources gives both {alias} and {canonical}, which SkyPilot refuses",
                location=where.locate((*path, alias), key=True),
                hint=f"keep one: {alias} is another name for {canonical}",
            )
        renamed[canonical] = value
    return renamed


def refuse_unknown_task_keys(data: Mapping[str, Any], where: SourceMap) -> None:
    """A SkyPilot task's keys as SkyPilot's schema has them; a spec's keys say it is one."""
    resources = data.get("resources")
    marked: list[DataPath] = [(k,) for k in data if k in SPEC_TOP]
    if isinstance(resources, Mapping):
        marked += [("resources", k) for k in resources if k in SPEC_RESOURCES]
    marked.sort(key=lambda p: where.locate(p, key=True) or ("", 0, 0))
    if marked:
        raise InputError(
            f"{'.'.join(map(str, marked[0]))} is not a key of a SkyPilot task, but of a "
            "budget-gate spec",
            location=where.locate(marked[0], key=True),
            hint=SPEC_HINT,
        )
    if "defaults" in data:  # NOTE: a Hydra group file (trainer/ddp.yaml: num_nodes, run)
        raise InputError(
            "defaults is not a key of a SkyPilot task, but of a Hydra config",
            location=where.locate(("defaults",), key=True),
            hint="check the Hydra config that composes this file; budget-gate reads a group "
            "file through it",
        )
    present = {k: v for k, v in data.items() if v is not None}  # NOTE: a null sets nothing
    refuse_unknown(present, SKYPILOT_TASK, (), where, "SkyPilot task")
    if not isinstance(resources, Mapping):
        return
    live = {k: v for k, v in resources.items() if v is not None}
    known = SKYPILOT_RESOURCES | set(SKYPILOT_ALIASES)
    refuse_unknown(live, known, ("resources",), where, "SkyPilot task's resources")
    for key in ("any_of", "ordered"):
        for i, item in enumerate(resources.get(key) or []):
            path = ("resources", key, i)
            refuse_unknown(item, known, path, where, "SkyPilot task's resources")


def refuse_katib_near_misses(data: Mapping[str, Any], where: SourceMap) -> None:
    """An Experiment's near misses of Katib's fields (``parallelTrialCont``, ``metdata``).

    Katib's CRD keeps any field (``x-kubernetes-preserve-unknown-fields``) and its
    controller reads only its Go types' fields, so a misspelt one is dropped in silence.
    """
    engine = "Katib Experiment"
    refuse_unknown(data, KATIB_TOP, (), where, engine, near_only=True)
    refuse_unknown(
        data.get("metadata"), KATIB_METADATA, ("metadata",), where, engine, near_only=True
    )
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return
    refuse_unknown(spec, KATIB_SPEC, ("spec",), where, engine, near_only=True)
    template = spec.get("trialTemplate")
    refuse_unknown(
        template, KATIB_TEMPLATE, ("spec", "trialTemplate"), where, engine, near_only=True
    )
    params = spec.get("parameters")
    for i, param in enumerate(params if isinstance(params, list) else []):
        here = ("spec", "parameters", i)
        refuse_unknown(param, KATIB_PARAMETER, here, where, engine, near_only=True)
        space = param.get("feasibleSpace") if isinstance(param, Mapping) else None
        refuse_unknown(
            space, KATIB_FEASIBLE, (*here, "feasibleSpace"), where, engine, near_only=True
        )


def _squeezed(text: str) -> str:
    """Lower case without ``-``, ``_``, ``.`` and ``/``: the confusions a prefix suffers."""
    return re.sub(r"[-_./]", "", text.lower())


def near_prefix(key: str, prefix: str) -> bool:
    """Whether ``key`` starts with a near miss of ``prefix`` (not the prefix itself).

    ``budget_gate/team``, ``budget-gate.io/team`` for ``budget-gate/``; ``x_budget_gate_team``,
    ``X_BUDGETGATE_TEAM`` for ``X_BUDGET_GATE_``: the same letters once case and the
    separators are set aside, the leading ``x`` of an extension key optional. Only those
    confusions: ``BUDGET_CATEGORY`` or ``budget-rate/x`` are names of their own.
    """
    if key.startswith(prefix):
        return False
    want, have = _squeezed(prefix), _squeezed(key)
    return have.startswith(want) or (want.startswith("x") and have.startswith(want[1:]))
