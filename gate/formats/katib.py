"""A Katib ``Experiment`` (kubeflow.org/v1beta1) → spec fields, with Katib's semantics.

Katib runs ``maxTrialCount`` trials, failed ones included (they count as completed), at
most ``parallelTrialCount`` at once (default 3, ``DefaultTrialParallelCount``); it fails
the experiment once ``maxFailedTrialCount`` trials failed. Its grid refuses a
``maxTrialCount`` above the grid's combinations. A trial's GPUs are the
``nvidia.com/gpu`` limits of every pod of the ``trialSpec`` (a Job, a PyTorchJob's
replicas, a TrainJob's nodes). Facts go in ``metadata.annotations`` as ``budget-gate/<fact>``.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import replace
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import names_epochs
from gate.formats.extension import annotation_facts, katib_point
from gate.formats.katib_epochs import Epochs, fewer_epochs, listed_values, substituted
from gate.formats.katib_nodes import INSTANCE_LABEL
from gate.formats.katib_pods import GPU, containers, trial_pods, trial_reading
from gate.formats.model import (
    Draft,
    Mapped,
    Origin,
    Source,
    Traced,
    mapping,
    whole_epochs,
)
from gate.formats.shell_effects import scripts_note
from gate.formats.spelling import refuse_katib_near_misses
from gate.spec.loader import DataPath, LoadedDoc

API_VERSION = "kubeflow.org/v1beta1"
DEFAULT_PARALLEL = 3
"""Katib's ``DefaultTrialParallelCount`` (pkg/apis/controller/experiments/v1beta1)."""
MEDIANSTOP_DEFAULTS = {"min_trials_required": 3, "start_step": 4}
"""Katib's medianstop service defaults (pkg/earlystopping/v1beta1/medianstop)."""
BAYESIAN = frozenset({"bayesianoptimization", "tpe", "multivariate-tpe", "cmaes", "sobol"})


def read(doc: LoadedDoc) -> Mapped:
    """The Experiment's trials, parallelism, search space and trial GPUs as spec fields."""
    data = doc.yaml12()  # NOTE: as Kubernetes reads it: a plain 1e3 is 1000.0

    def at(*path: str | int) -> Any:
        return doc.source_map.locate(tuple(path))

    def file(value: Any, detail: str, *path: str | int) -> Traced:
        return Traced(value, Source(Origin.FILE, detail, at(*path)))

    if data.get("apiVersion") != API_VERSION:
        raise InputError(
            f"apiVersion {data.get('apiVersion')!r} is not Katib's {API_VERSION}",
            location=at("apiVersion"),
            hint=f"budget-gate reads Katib Experiments of {API_VERSION}",
        )
    refuse_katib_near_misses(data, doc.source_map)
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise InputError("the Experiment has no spec", location=at(), hint="add spec:")
    draft: Draft = {}
    metadata = mapping(data.get("metadata"))
    if isinstance(metadata.get("name"), str):
        draft[("metadata", "name")] = file(metadata["name"], "metadata.name", "metadata", "name")
    _trial_counts(draft, spec, at)
    notes = [_failure_note(spec)]
    _search(draft, spec, doc, notes)
    notes.extend(_early_stopping(spec))
    _objective(draft, spec, at)
    epochs, labels = _trial(draft, spec, doc)
    notes.extend(_scripts(spec, doc))
    notes.extend(
        dict.fromkeys(
            f"the pods are pinned to {label}: {model}, whose GPU model budget-gate does not "
            "read: the accelerator priced must be that machine's"
            for label, model, _ in labels
            if INSTANCE_LABEL.search(label)
        )
    )
    annotations = metadata.get("annotations")
    facts = annotation_facts(annotations, doc.file, doc.source_map, ("metadata", "annotations"))
    names = [p.get("name") if isinstance(p, dict) else None for p in spec.get("parameters") or []]
    return Mapped(
        draft,
        facts,
        tuple(n for n in notes if n),
        point=katib_point(doc),
        native=_NATIVE,
        spell=lambda path, value: (
            fewer_epochs(epochs, value)
            if path == ("workload", "max_epochs")
            else _spell(path, value, names)
        ),
        pinned=tuple(
            (label, model, doc.source_map.locate(at))
            for label, model, at in labels
            if not INSTANCE_LABEL.search(label)
        ),
    )


def _trial_counts(draft: Draft, spec: dict[str, Any], at: Any) -> None:
    """``maxTrialCount`` (required: without it Katib runs on) and ``parallelTrialCount``."""
    limit = spec.get("maxTrialCount")
    if limit is None:
        raise InputError(
            "spec has no maxTrialCount: Katib runs trials until stopped, the worst case has "
            "no bound",
            location=at("spec"),
            hint="add maxTrialCount: N under spec (Katib then stops after N trials)",
        )
    draft[("search", "max_trials")] = Traced(
        limit, Source(Origin.FILE, f"spec.maxTrialCount: {limit}", at("spec", "maxTrialCount"))
    )
    parallel = spec.get("parallelTrialCount")
    draft[("search", "max_concurrent_trials")] = (
        Traced(
            parallel,
            Source(
                Origin.FILE,
                f"spec.parallelTrialCount: {parallel}",
                at("spec", "parallelTrialCount"),
            ),
        )
        if parallel is not None
        else Traced(
            DEFAULT_PARALLEL,
            Source(Origin.ENGINE, "Katib's default parallelTrialCount 3", at("spec")),
        )
    )


_NATIVE = {
    "gpus_per_trial": f"{GPU} limits on the containers of spec.trialTemplate.trialSpec",
    "max_epochs": "--epochs N in the trial container's command",
    "max_trials": "spec.maxTrialCount: N",
    "max_concurrent_trials": "spec.parallelTrialCount: N",
    "quality_gate": "spec.objective.goal: N",
}


def _spell(path: tuple[str | int, ...], value: Any, names: list[Any]) -> str | None:
    """A spec edit as a change of the Experiment's own fields, where it has them."""
    match path:
        case ("search", "max_trials"):
            return f"spec.maxTrialCount: {json.dumps(value)}"
        case ("search", "max_concurrent_trials"):
            return f"spec.parallelTrialCount: {json.dumps(value)}"
        case ("search", "parameters", str(name), "values") if name in names:
            listed = json.dumps([str(v) for v in value])
            return f"spec.parameters[{names.index(name)}].feasibleSpace: {{list: {listed}}}"
        case ("search", "strategy") if value in _ALGORITHM_OF:
            return f"spec.algorithm.algorithmName: {_ALGORITHM_OF[value]}"
        case ("search", "strategy"):
            return (
                f"no Katib algorithm runs {value} as budget-gate prices it: keep "
                "spec.algorithm and lower spec.maxTrialCount instead"
            )
    return None


_ALGORITHM_OF = {"random": "random", "grid": "grid", "bayesian": "bayesianoptimization"}


def _failure_note(spec: dict[str, Any]) -> str:
    failed = spec.get("maxFailedTrialCount")
    if failed is None:
        return "no maxFailedTrialCount: Katib goes on through any number of failed trials"
    return (
        f"failure budget: Katib fails the experiment after {failed} failed trials "
        "(maxFailedTrialCount); failed trials count toward maxTrialCount"
    )


def _refuse_unread_settings(
    algorithm: dict[str, Any], name: str, spec: dict[str, Any], doc: LoadedDoc
) -> None:
    """Refuse an algorithm setting that sets the epochs a trial trains past what is read.

    DARTS's ``num_epochs``; Hyperband's ``r_l``, which sets the ``resource_name`` parameter
    up to ``r_l`` whatever that parameter's ``feasibleSpace`` says.
    """
    listed = algorithm.get("algorithmSettings")
    settings = {
        str(item.get("name")): (item.get("value"), i)
        for i, item in enumerate(listed if isinstance(listed, list) else [])
        if isinstance(item, dict)
    }
    for key, (value, i) in settings.items():
        if names_epochs(key):
            raise InputError(
                f"algorithm {name}'s setting {key}: {value} sets the epochs a trial trains, "
                "which budget-gate does not read",
                location=doc.source_map.locate(("spec", "algorithm", "algorithmSettings", i)),
                hint="give the epochs in the trial's command or as a parameter, or write the "
                "experiment as a budget-gate spec",
            )
    resource, top = settings.get("resource_name"), settings.get("r_l")
    if name != "hyperband" or resource is None or top is None:
        return
    spaces = {
        p.get("name"): mapping(p.get("feasibleSpace")).get("max")
        for p in spec.get("parameters") or []
        if isinstance(p, dict)
    }
    try:
        within = float(top[0]) <= float(spaces.get(resource[0]))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        within = False
    if not within:
        raise InputError(
            f"hyperband's r_l {top[0]} sets {resource[0]} per trial past (or without) its "
            "feasibleSpace max, which is what budget-gate prices",
            location=doc.source_map.locate(("spec", "algorithm", "algorithmSettings", top[1])),
            hint=f"raise feasibleSpace.max of {resource[0]} to r_l, or lower r_l",
        )


def _search(draft: Draft, spec: dict[str, Any], doc: LoadedDoc, notes: list[str]) -> None:
    algorithm = mapping(spec.get("algorithm"))
    name = str(algorithm.get("algorithmName", "random"))
    where = doc.source_map.locate(("spec", "algorithm", "algorithmName"))
    _refuse_unread_settings(algorithm, name, spec, doc)
    strategy = "bayesian" if name in BAYESIAN else "random"
    draft[("search", "strategy")] = Traced(
        strategy, Source(Origin.FILE, f"algorithm {name}: maxTrialCount trials", where)
    )
    combinations = 1
    for i, param in enumerate(spec.get("parameters") or []):
        if not isinstance(param, dict) or not isinstance(param.get("name"), str):
            continue
        path: DataPath = ("spec", "parameters", i)
        value, count = _parameter(param, path, doc)
        combinations *= count
        draft[("search", "parameters", param["name"])] = Traced(
            value,
            Source(
                Origin.FILE, f"spec.parameters[{i}] {param['name']}", doc.source_map.locate(path)
            ),
        )
    limit = spec.get("maxTrialCount")
    if name == "grid" and isinstance(limit, int):
        if limit > combinations:
            raise InputError(
                f"maxTrialCount {limit} is above the grid's {combinations} combinations (Katib "
                "refuses it)",
                location=doc.source_map.locate(("spec", "maxTrialCount")),
                hint=f"set maxTrialCount: {combinations} or less",
            )
        notes.append(
            f"Katib's grid runs maxTrialCount ({limit}) of its {combinations} combinations"
        )


def _parameter(param: dict[str, Any], path: DataPath, doc: LoadedDoc) -> tuple[dict[str, Any], int]:
    """A feasibleSpace as a spec Parameter, and its count in Katib's grid (its arange)."""
    space = mapping(param.get("feasibleSpace"))
    if isinstance(space.get("list"), list) and space["list"]:
        return {"values": space["list"]}, len(space["list"])
    try:
        low, high = float(space["min"]), float(space["max"])
        step = float(space["step"]) if space.get("step") not in (None, "") else None
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"spec.parameters {param.get('name')!r}: feasibleSpace needs min and max (or list)",
            location=doc.source_map.locate(path),
            hint='write feasibleSpace: {min: "0.01", max: "0.05"}',
        ) from None
    if step is not None and step > 0 and param.get("parameterType") == "int":
        count = len(range(int(low), int(high) + 1, int(step)))
    elif step is not None and step > 0:
        count = math.ceil((high + step - low) / step)  # numpy.arange(min, max + step, step)
        if low + (count - 1) * step > high:
            count -= 1
    else:
        count = 1  # continuous: Katib's grid refuses it; other algorithms sample it
    log = space.get("distribution") == "logUniform"
    return {"low": low, "high": high, "log": log}, count


def _early_stopping(spec: dict[str, Any]) -> list[str]:
    early = spec.get("earlyStopping")
    if not isinstance(early, dict):
        return []
    name = early.get("algorithmName")
    settings = dict(MEDIANSTOP_DEFAULTS)
    listed = early.get("algorithmSettings")
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, dict) and item.get("name") in settings:
            value = whole_epochs(item.get("value", settings[item["name"]]))
            if value is not None:  # a note only: the worst case counts every trial in full
                settings[item["name"]] = value
    if name != "medianstop":
        return [f"early stopping {name}: the worst case counts every trial in full"]
    return [
        f"medianstop stops a trial after step {settings['start_step']} once "
        f"{settings['min_trials_required']} trials completed, if it is below their median; "
        "the worst case counts every trial in full"
    ]


def _objective(draft: Draft, spec: dict[str, Any], at: Any) -> None:
    objective = spec.get("objective")
    if not isinstance(objective, dict) or objective.get("goal") is None:
        return
    metric, goal = objective.get("objectiveMetricName"), objective["goal"]
    try:
        value = float(goal)
    except (TypeError, ValueError):
        raise InputError(
            f"objective.goal {goal!r} is not a number",
            location=at("spec", "objective", "goal"),
            hint="write the metric's target as a number, e.g. goal: 0.99",
        ) from None
    op = ">=" if objective.get("type") == "maximize" else "<="
    draft[("quality_gate",)] = Traced(
        [{"metric": metric, "op": op, "value": value}],
        Source(Origin.FILE, f"objective.goal {goal} of {metric}", at("spec", "objective", "goal")),
    )


def _scripts(spec: dict[str, Any], doc: LoadedDoc) -> list[str]:
    """Say the shell scripts the trial's containers hand their work to (unread, unpriced)."""
    base: DataPath = ("spec", "trialTemplate", "trialSpec")
    trial = mapping(mapping(spec.get("trialTemplate")).get("trialSpec"))
    notes: dict[str, None] = {}
    for pod in trial_pods(trial, base, doc.source_map.locate):
        for _, container, _ in containers(pod.spec, pod.path):
            argv = [str(w) for key in ("command", "args") for w in container.get(key) or []]
            note = scripts_note(shlex.join(argv), "the trial's command")
            notes.update({note: None} if note else {})
    return list(notes)


def _trial(
    draft: Draft, spec: dict[str, Any], doc: LoadedDoc
) -> tuple[list[Epochs], list[tuple[str, str, DataPath]]]:
    """GPUs per trial (its pods' GPUs × pods at once), epochs, the GPU models pods pick.

    Read for the trial as written and as Katib writes each value of a listed parameter
    into it (:func:`substituted`): the most GPUs of any, every epochs flag of any.
    """
    base: DataPath = ("spec", "trialTemplate", "trialSpec")
    trial = mapping(mapping(spec.get("trialTemplate")).get("trialSpec"))
    gpus, gpu_at, epochs, labels = trial_reading(trial, spec, doc)
    gpu_note = ""
    variants = substituted(trial, listed_values(spec, doc), doc.source_map.locate(base))
    for variant, note in variants:
        more, more_at, more_epochs, more_labels = trial_reading(variant, spec, doc)
        if more > gpus:
            gpus, gpu_at, gpu_note = more, more_at, note
        most = max((e.top for e in epochs), default=0)
        # NOTE: summed: no one flag of the file to lower; the value is the parameter's
        epochs.extend(
            replace(e, detail=e.detail + note, summed=True) for e in more_epochs if e.top > most
        )
        labels.extend(label for label in more_labels if label not in labels)
    if gpus:
        kinds = "+".join(sorted({str(trial.get("kind"))}))
        detail = f"{GPU} limits of the {kinds}'s pods × replicas{gpu_note}"
        draft[("resources", "gpus_per_trial")] = Traced(gpus, Source(Origin.FILE, detail, gpu_at))
    if epochs:
        best = max(epochs, key=lambda e: e.top)
        draft[("workload", "max_epochs")] = Traced(
            best.top, Source(Origin.FILE, best.detail, best.location)
        )
    return epochs, labels
