"""A W&B sweep config → spec fields, with the sweeps engine's own semantics.

Grid: one run per combination of every parameter's values, as W&B counts it (``values``:
their count; ``value``: 1; ``int_uniform``: max − min + 1; ``q_uniform``: the length of
``arange(min, max, q)``); any other distribution cannot be enumerated and W&B refuses it.
``run_cap`` stops any method after that many runs; random and bayes without it run until
stopped. ``early_terminate: hyperband`` stops weak runs at its bands (never adds runs).
The facts a sweep cannot hold come from its ``# x-budget-gate:`` comment block: the
sweeps engine's schema allows no other top-level key, and W&B's local controller refuses
one (docs/configs.md quotes it), while every loader drops a comment.
"""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import names_epochs
from gate.formats.extension import COMMENT, comment_facts, wandb_point
from gate.formats.model import (
    Draft,
    Mapped,
    Origin,
    Source,
    Traced,
    dotted,
    finite_number,
    mapping,
    most_epochs,
    value_at,
    whole_epochs,
    within,
)
from gate.formats.shell_effects import scripts_note
from gate.formats.spelling import WANDB_HYPERBAND, WANDB_METRIC, WANDB_TOP, refuse_unknown
from gate.formats.wandb_command import command_epochs
from gate.formats.wandb_launch import refuse_launch, sweep_method
from gate.formats.wandb_parameters import Found, distribution, parameters
from gate.formats.wandb_steps import refuse_step_parameters
from gate.spec.facts import EXTENSION_KEY
from gate.spec.loader import DataPath, LoadedDoc

METHODS = {"grid": "grid", "random": "random", "bayes": "bayesian"}
_DEFAULT_ETA = 3
_SKYPILOT_KEYS = ("resources", "num_nodes", "run")
"""A SkyPilot task's markers: no W&B sweep has them (its schema allows none of them)."""


def read(doc: LoadedDoc) -> Mapped:
    """The sweep's search, trial count and early termination as spec fields."""
    data = doc.data

    def at(*path: str | int) -> Any:
        return doc.source_map.locate(tuple(path))

    def traced(value: Any, detail: str, *path: str | int) -> Traced:
        return Traced(value, Source(Origin.FILE, detail, at(*path)))

    _refuse_foreign_keys(doc)
    refuse_launch(data, at)
    method, where, detail = sweep_method(data, METHODS, at)  # scheduler.settings.method too
    draft: Draft = {("search", "strategy"): traced(METHODS[method], detail, *where)}
    params = parameters(data.get("parameters"), ("parameters",), doc, method == "grid")
    grid = 1
    for name, (spec_param, count, path) in params.items():
        if spec_param is not None:
            shown = dotted(path)
            draft[("search", "parameters", name)] = traced(spec_param, shown, *path)
        grid *= count
    _name(draft, data, at)
    _epochs(draft, params, data, at)
    refuse_step_parameters(params, data, at)
    _trials(draft, data, (method, where), grid, at)
    notes = _early_terminate(draft, data, at)
    _quality_gate(draft, data, at)
    command = data.get("command")
    argv = shlex.join(map(str, command)) if isinstance(command, list) else None
    notes += [note] if (note := scripts_note(argv, "command")) else []
    notes.append(
        "W&B runs as many runs at once as agents are started; the sweep does not say "
        f"({COMMENT} {{max_concurrent_trials: N}} says it)"
    )
    return Mapped(
        draft,
        comment_facts(doc),
        tuple(notes),
        point=wandb_point(doc),
        native=_NATIVE,
        spell=lambda path, value: _spell(path, value, params, data),
    )


def _refuse_foreign_keys(doc: LoadedDoc) -> None:
    """Keys W&B's sweeps schema refuses: the extension block, a SkyPilot task's, a typo's."""
    data = doc.data
    if EXTENSION_KEY in data:
        raise InputError(
            f"a top-level {EXTENSION_KEY} key: W&B's local controller refuses it (the sweeps "
            "schema allows no other top-level key)",
            location=doc.source_map.locate((EXTENSION_KEY,), key=True),
            hint=f"make the block a comment, which every W&B loader drops: {COMMENT} "
            "then each of its lines as '#   key: value'",
        )
    for key in _SKYPILOT_KEYS:
        if key in data:
            raise InputError(
                f"a top-level {key} key beside method and parameters: a SkyPilot task's key, "
                "which W&B's sweeps schema refuses; read as a W&B sweep, the task's "
                f"{key} would go unpriced",
                location=doc.source_map.locate((key,), key=True),
                hint="keep the sweep and the SkyPilot task in two files: the task names the "
                "sweep in envs: {BUDGET_GATE_SPEC: path/to/sweep.yaml}",
            )
    where = doc.source_map
    refuse_unknown(data, WANDB_TOP, (), where, "W&B sweep")
    refuse_unknown(data.get("metric"), WANDB_METRIC, ("metric",), where, "W&B sweep")
    stop = data.get("early_terminate")
    refuse_unknown(stop, WANDB_HYPERBAND, ("early_terminate",), where, "W&B sweep")


def _quality_gate(draft: Draft, data: dict[str, Any], at: Any) -> None:
    """``metric.target`` with its goal: the bar a qualified run meets."""
    metric = data.get("metric")
    if isinstance(metric, dict) and "target" in metric and "name" in metric:
        op = ">=" if metric.get("goal") == "maximize" else "<="
        draft[("quality_gate",)] = Traced(
            [{"metric": metric["name"], "op": op, "value": metric["target"]}],
            Source(
                Origin.FILE,
                f"metric.target {metric['target']} ({metric.get('goal', 'minimize')})",
                at("metric", "target"),
            ),
        )


_NATIVE = {
    "max_epochs": "a parameter epochs: {values: [...]} or {min: ..., max: ...} (its largest value)",
    "max_trials": "run_cap: N",
    "quality_gate": "metric: {name: ..., goal: maximize, target: ...}",
}


def _spell(
    path: tuple[str | int, ...], value: Any, params: Found, data: dict[str, Any]
) -> str | None:
    """A spec edit as a change of the sweep's own keys, where it has them."""
    match path:
        case ("search", "max_trials"):
            return f"run_cap: {json.dumps(value)}"
        case ("search", "parameters", str(name), "values") if name in params:
            return f"{dotted(params[name][2])}: {{values: {json.dumps(value)}}}"
        case ("search", "strategy") if value in _METHOD_OF:
            return f"method: {_METHOD_OF[value]}"
        case ("search", "strategy") if value in ("asha", "hyperband"):
            return "early_terminate: {type: hyperband, min_iter: 1, eta: 3}"
        case ("workload", "max_epochs") if isinstance(value, int):
            edits = [
                edit
                for name, (spec_param, _, where) in sorted(params.items())
                if _is_epochs(name)
                and (
                    edit := _fewer_epochs(spec_param, mapping(value_at(data, where)), where, value)
                )
            ]
            return "; ".join(edits) or None
    return None


def _fewer_epochs(
    spec_param: dict[str, Any] | None, config: dict[str, Any], path: DataPath, value: int
) -> str | None:
    """The parameter's edit that hands no run more than ``value`` epochs."""
    values = mapping(spec_param).get("values")
    if values:
        top = most_epochs(values)
        if top is None or top <= value:
            return None
        return f"{dotted(path)}: {{values: {json.dumps(within(values, value) or [value])}}}"
    kind = distribution(config)
    low, high = config.get("min"), config.get("max")
    if kind in _UNBOUNDED or kind in _EXPONENTS or kind.startswith("q_"):
        return f"{dotted(path)}: {{value: {value}}}"
    if isinstance(high, (int, float)) and high <= value:
        return None
    if isinstance(low, (int, float)) and low <= value:
        return f"{dotted(path)}.max: {value}"
    return f"{dotted(path)}: {{value: {value}}}"


_METHOD_OF = {spec: wandb for wandb, spec in METHODS.items()}


def _name(draft: Draft, data: dict[str, Any], at: Any) -> None:
    for key in ("name", "project"):
        if isinstance(data.get(key), str) and data[key]:
            draft[("metadata", "name")] = Traced(data[key], Source(Origin.FILE, key, at(key)))
            return


def _epochs(draft: Draft, params: Found, data: dict[str, Any], at: Any) -> None:
    """max_epochs from the parameters named like epochs: the most any run is handed.

    A list's largest value; a range's top (``min``/``max``, any distribution W&B bounds),
    since the sweep may hand a run any value up to it. Every such parameter counts (a
    nested ``trainer.epochs`` too), and the largest decides: the worst case.
    """
    best: tuple[int, str, DataPath] | None = None
    for name, (spec_param, _, path) in sorted(params.items()):
        config = mapping(value_at(data, path))
        inside = _epochs_inside(name, config)  # a mapping handed as the value: trainer.max_epochs
        if inside is not None and (best is None or inside[0] > best[0]):
            best = (*inside, path)
        if not _is_epochs(name):
            continue
        found = _epoch_top(name, spec_param, config, at(*path))
        if found is not None and (best is None or found[0] > best[0]):
            best = (*found, path)
    for found_in_command in command_epochs(data.get("command"), params, at):
        if best is None or found_in_command[0] > best[0]:
            best = found_in_command
    if best is not None:
        top, detail, path = best
        draft[("workload", "max_epochs")] = Traced(top, Source(Origin.FILE, detail, at(*path)))


def _epochs_inside(name: str, config: dict[str, Any]) -> tuple[int, str] | None:
    """The most epochs a mapping a parameter hands a run holds (``value: {max_epochs: 1000}``).

    W&B hands a run the whole mapping; the program reads its keys as its own config.
    """
    found: list[tuple[int, str]] = []

    def walk(node: Any, dotted: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, dotted)
        elif isinstance(node, dict):
            for key, value in node.items():
                here = f"{dotted}.{key}"
                epochs = whole_epochs(value) if names_epochs(str(key)) else None
                if epochs is not None:
                    found.append((epochs, f"{here}: {epochs}, in a value of parameters.{name}"))
                walk(value, here)

    for key in ("value", "values"):
        walk(config.get(key), f"parameters.{name}.{key}")
    return max(found, key=lambda entry: entry[0]) if found else None


def _is_epochs(name: str) -> bool:
    return names_epochs(name.rsplit(".", 1)[-1])


_UNBOUNDED = ("normal", "q_normal", "log_normal", "q_log_normal")
_EXPONENTS = ("log_uniform", "q_log_uniform", "inv_log_uniform")
"""W&B's v1 distributions whose min and max are natural-log exponents, not values."""


def _epoch_top(
    name: str, spec_param: dict[str, Any] | None, config: dict[str, Any], where: Any
) -> tuple[int, str] | None:
    """The most epochs the parameter hands a run, and how the file says it."""
    shown = f"parameters.{name}"
    values = mapping(spec_param).get("values")
    if values is not None:
        most = most_epochs(values)
        return (most, f"the largest of {shown} ({most})") if most is not None else None
    kind = distribution(config)
    low, high = config.get("min"), config.get("max")
    if (
        kind in _UNBOUNDED
        or not isinstance(low, (int, float))
        or not isinstance(high, (int, float))
    ):
        raise InputError(
            f"{shown} is a {kind} distribution: it has no largest value, so the epochs a run "
            "trains have no bound",
            location=where,
            hint=f"give {shown} values: [...], or min and max (int_uniform)",
        )
    top: float = high
    if kind in _EXPONENTS:
        try:
            top = math.exp(-low if kind == "inv_log_uniform" else high)
        except OverflowError:
            top = math.inf
    q = config.get("q")
    if kind.startswith("q_") and isinstance(q, (int, float)) and not isinstance(q, bool) and q > 0:
        top = math.ceil(top / q) * q  # W&B rounds a sample to a multiple of q: at most this
    epochs = whole_epochs(top)
    if epochs is None:
        raise InputError(
            f"{shown}: its {kind} range has no finite top, so the epochs a run trains have no "
            "bound",
            location=where,
            hint=f"give {shown} values: [...], or min and max (int_uniform)",
        )
    return epochs, f"{shown}: {kind} from {low} to {high}, so a run may train up to {epochs}"


def _trials(
    draft: Draft, data: dict[str, Any], run: tuple[str, DataPath], grid: int, at: Any
) -> None:
    method, where = run
    cap = data.get("run_cap")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise InputError(
            "run_cap is not a positive whole number",
            location=at("run_cap"),
            hint="write run_cap: N",
        )
    if method == "grid":
        if cap is not None and cap < grid:
            draft[("search", "strategy")] = Traced(
                "random",
                Source(Origin.FILE, f"run_cap {cap} stops the grid of {grid}", at("run_cap")),
            )
            draft[("search", "max_trials")] = Traced(
                cap, Source(Origin.FILE, f"run_cap: {cap} of the grid's {grid} runs", at("run_cap"))
            )
        return
    if cap is None:
        raise InputError(
            f"{dotted(where)} {method} without run_cap runs until stopped: the worst case has "
            "no bound",
            location=at(*where),
            hint="add run_cap: N at the top level (W&B stops the sweep after N runs)",
        )
    draft[("search", "max_trials")] = Traced(
        cap, Source(Origin.FILE, f"run_cap: {cap}", at("run_cap"))
    )


def _early_terminate(draft: Draft, data: dict[str, Any], at: Any) -> list[str]:
    """Hyperband stopping: ASHA-like rungs at W&B's bands, every run counted in full."""
    config = data.get("early_terminate")
    if config is None:
        return []
    if not isinstance(config, dict) or config.get("type") != "hyperband":
        raise InputError(
            "early_terminate is not type: hyperband",
            location=at("early_terminate"),
            hint="W&B supports early_terminate: {type: hyperband, min_iter: N}",
        )
    eta = config.get("eta", _DEFAULT_ETA)
    first = config.get("min_iter")
    if "max_iter" in config and finite_number(eta) and eta > 1:
        first = _first_band(config.get("max_iter"), config.get("s", 0), eta)
    if not isinstance(first, int) or first < 1 or not finite_number(eta) or eta <= 1:
        raise InputError(
            "early_terminate has no band W&B can stop runs at",
            location=at("early_terminate"),
            hint="give min_iter: N (N >= 1), or max_iter with s so that max_iter / eta^s >= 1; "
            "eta above 1",
        )
    trials = draft.get(("search", "max_trials"))
    source = Source(
        Origin.FILE,
        f"early_terminate hyperband, first band {first}, eta {eta}",
        at("early_terminate"),
    )
    draft[("search", "scheduler")] = Traced(
        {"min_epochs": first, "reduction_factor": float(eta), "synchronous": False}, source
    )
    draft[("search", "strategy")] = Traced("asha", source)
    if trials is None:
        grid = math.prod(
            len(t.value.get("values") or [0])
            for p, t in draft.items()
            if p[:2] == ("search", "parameters")
        )
        draft[("search", "max_trials")] = Traced(
            grid, Source(Origin.FILE, f"the grid's {grid} runs", at("parameters"))
        )
    metric = data.get("metric")
    name = metric.get("name") if isinstance(metric, dict) else None
    return [f"W&B counts hyperband bands in logged steps of {name or 'the metric'}; read as epochs"]


def _first_band(max_iter: Any, brackets: Any, eta: float) -> int | None:
    """W&B's lowest band: ``max_iter / eta^k`` for the largest ``k <= s`` that keeps it >= 1.

    NOTE: computed, not looped: ``s`` is the file's number (a trillion hung the reader).
    """
    if not finite_number(max_iter) or max_iter < 1:
        return None
    if not isinstance(brackets, int) or isinstance(brackets, bool) or brackets < 1:
        return None
    k = min(brackets, math.floor(math.log(max_iter) / math.log(eta)))
    while k > 0 and max_iter / eta**k < 1:  # the logarithm's rounding, either way
        k -= 1
    while k < brackets and max_iter / eta ** (k + 1) >= 1:
        k += 1
    return int(max_iter / eta**k) if k > 0 else None
