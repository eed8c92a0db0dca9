"""A SkyPilot task YAML → spec fields, with SkyPilot's own reading of ``resources``.

``accelerators: H100:8`` (or ``{H100: 8}``) is 8 GPUs per node, × ``num_nodes`` (default
1) per trial. A list of accelerators, ``any_of`` and ``ordered`` are candidates SkyPilot
may launch on, a set (``{A100:8, H100:8}``) too, cheapest first: the worst case prices
the dearest. ``use_spot`` is spot capacity. A task is one trial unless its envs say it runs
a sweep (``X_BUDGET_GATE_MAX_TRIALS``); the facts it cannot hold are ``X_BUDGET_GATE_<FACT>``
envs, which ``sky.Task.from_yaml`` accepts as any other env.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from gate.errors import InputError, Location
from gate.formats.candidates import refuse_instance_type
from gate.formats.command_lines import (
    commands_of,
    epoch_flags,
    names_epochs,
    quoted,
    unread,
)
from gate.formats.command_repeaters import refuse_restarts_env
from gate.formats.command_steps import refuse_task_steps
from gate.formats.extension import env_facts, skypilot_point
from gate.formats.model import Draft, Mapped, Origin, Source, Traced, mapping, whole_epochs
from gate.formats.shell_effects import refuse_held_commands, refuse_unread_training, scripts_note
from gate.formats.shell_words import refuse_hidden_words, script_sets
from gate.formats.spelling import aliased, refuse_unknown_task_keys
from gate.spec.facts import ENV_PREFIX
from gate.spec.loader import DataPath, LoadedDoc, SourceMap
from gate.spec.machine_configs import refuse_task_config


@dataclass(frozen=True, slots=True)
class Candidate:
    """One accelerator SkyPilot may launch the task on."""

    accelerator: str
    per_node: int
    spot: bool
    location: Location | None


def read(doc: LoadedDoc) -> Mapped:
    """The task's GPUs per trial (per node × nodes), spot, name, and its envs' facts.

    A key SkyPilot's task schema does not have is refused, as SkyPilot refuses it, and so is
    a step budget (:func:`gate.formats.command_steps.refuse_task_steps`).
    """
    refuse_unknown_task_keys(doc.data, doc.source_map)
    refuse_task_steps(doc.data, lambda *path: doc.source_map.locate(tuple(path)))
    mapped = read_task(doc.data, doc.file, doc.source_map)
    return replace(mapped, point=skypilot_point(doc))  # NOTE: its text: {} or not


def read_task(data: dict[str, Any], file: str, where: SourceMap) -> Mapped:
    """A task's config (a YAML file, or ``sky.Task.to_yaml_config()``) as spec fields."""

    def at(*path: str | int) -> Location | None:
        return where.locate(tuple(path))

    _refuse_beyond_the_run(data, at)
    draft: Draft = {}
    if isinstance(data.get("name"), str) and data["name"]:
        draft[("metadata", "name")] = Traced(data["name"], Source(Origin.FILE, "name", at("name")))
    nodes = data.get("num_nodes", 1)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise InputError(
            "num_nodes is not a positive whole number",
            location=at("num_nodes"),
            hint="write num_nodes: N",
        )
    candidates = _candidates(data.get("resources"), ("resources",), where)
    notes: list[str] = []
    pick = max(candidates, key=lambda c: c.per_node) if candidates else None
    if pick is not None:  # several: translate prices the dearest
        _resources(draft, pick, nodes, at)
        if len(candidates) > 1:
            names = ", ".join(f"{c.accelerator}:{c.per_node}" for c in candidates)
            notes.append(f"SkyPilot may launch on any of {names}; the dearest is priced")
    recovery = _recovery(data.get("resources"))
    if recovery:
        notes.append(recovery)
    epochs = task_epochs(data, at)
    if epochs is not None:
        draft[("workload", "max_epochs")] = Traced(
            epochs[0], Source(Origin.FILE, epochs[1], at(*epochs[2]))
        )
    facts = env_facts(data.get("envs"), file, where, ("envs",))
    if "max_trials" in facts:
        draft[("search", "strategy")] = Traced(
            "random", Source(Origin.DERIVED, "the task runs a sweep of max_trials trials")
        )
    else:
        notes.append(f"one trial: the task runs once ({ENV_PREFIX}MAX_TRIALS if it runs a sweep)")
    notes += [n for key in ("setup", "run") if (n := scripts_note(data.get(key), key))]
    return Mapped(
        draft,
        facts,
        tuple(notes),
        point=skypilot_point(LoadedDoc(file, data, where)),
        native=_NATIVE,
        spell=lambda path, value: _spell(path, value, pick, nodes),
        candidates=tuple(
            (c.accelerator, c.per_node * nodes, c.spot, c.location) for c in candidates
        ),
    )


def _refuse_beyond_the_run(data: dict[str, Any], at: Any) -> None:
    """Refuse what SkyPilot runs beyond the one run priced: a service, a pool, machine configs."""
    for kind, what in (("service", "replicas served until taken down"), ("pool", "workers")):
        if data.get(kind):
            raise InputError(
                f"{kind}: the task runs {what}, not the one run budget-gate prices",
                location=at(kind),
                hint=f"check the training task without {kind}:, or write the experiment as a "
                "budget-gate spec",
            )
    refuse_task_config(data.get("config"), at)
    for path, block in _resource_blocks(data.get("resources")):
        overrides = (*path, "_cluster_config_overrides")
        refuse_task_config(block.get("_cluster_config_overrides"), at, overrides)


def _resource_blocks(resources: Any) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """The task's resources block and each ``any_of``/``ordered`` candidate, where each is.

    NOTE: a block's ``_cluster_config_overrides`` is what a task's ``config:`` becomes in
    SkyPilot; written there, its pod config and sbatch options went unread.
    """
    if not isinstance(resources, dict):
        return []
    found: list[tuple[tuple[str | int, ...], dict[str, Any]]] = [(("resources",), resources)]
    for kind in ("any_of", "ordered"):
        items = resources.get(kind)
        for i, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict):
                found.append((("resources", kind, i), item))
    return found


def task_epochs(
    data: dict[str, Any], at: Any, *, restarts: int = 0
) -> tuple[int, str, DataPath] | None:
    """The most epochs a task hands a trial (its commands', its envs'), what says so, where.

    Raises :class:`InputError` for epochs the file does not show (a loop, a program's own
    repeater, a value set outside it), and for torchrun restarts above ``restarts`` (the
    retries priced): the SkyPilot policy reads a launched task the same way.
    """
    return max([*_run_epochs(data, at, restarts), *_env_epochs(data, at, restarts)], default=None)


def _run_epochs(data: dict[str, Any], at: Any, restarts: int) -> list[tuple[int, str, DataPath]]:
    """The most epochs the task trains, and where: of ``setup`` and ``run``'s commands.

    In each command each epochs flag's last value counts (:mod:`gate.formats.command_lines`).
    ``--epochs $EPOCHS`` takes the task's ``envs`` value; one the file does not set (set in
    the script, or at launch with ``--env``) is refused. ``setup`` runs on the task's GPU
    nodes too. Of a command's flags the largest counts; commands run one after another,
    so theirs add up.
    """
    envs = {**mapping(data.get("envs")), **mapping(data.get("secrets"))}  # secrets win
    each: list[tuple[int, str, DataPath]] = []
    for key in ("setup", "run"):
        script = data.get(key)
        if not isinstance(script, str):
            continue
        refuse_unread_training([(script, (key,))], key, lambda path: at(*path), restarts=restarts)
        refuse_held_commands(script, envs, set(mapping(data.get("secrets"))), key, at(key))
        held = {str(name) for name, value in envs.items() if value is not None}
        refuse_hidden_words(script, held, key, at(key))
        for command in commands_of([(script, (key,))]):
            best: tuple[int, str, DataPath] | None = None
            for flag in epoch_flags(command):
                number = _env_number(flag.value, envs, script)
                if number is None:
                    name = flag.value.strip("${}")
                    error = unread(
                        flag,
                        key,
                        "write the number: a command's output is not in the file"
                        if flag.value.startswith(("$(", "`"))
                        else f"the script sets {name} itself: write the number in the flag"
                        if flag.value.startswith("$") and script_sets(script, name)
                        else f"write the number, or set {name} in envs"
                        if flag.value.startswith("$")
                        else "write the number of epochs",
                    )
                    error.location = at(key)
                    raise error
                shown = f"{flag.written} {quoted(flag.value)}" + (
                    f" (envs {flag.value.strip('${}')}: {number})" if flag.value[0] == "$" else ""
                )
                if best is None or number > best[0]:
                    best = (number, f"{shown} in {key}", (key,))
            if best is not None:
                each.append(best)
    if len(each) <= 1:
        return each
    detail = " + ".join(d for _, d, _ in each) + ", one command after another"
    return [(sum(n for n, _, _ in each), detail, each[0][2])]


def _env_epochs(data: dict[str, Any], at: Any, restarts: int) -> list[tuple[int, str, DataPath]]:
    """The epochs the task's envs (and secrets) named like the epochs hand its programs.

    SkyPilot exports them to ``setup`` and ``run``, so a program may read ``EPOCHS`` from its
    environment whether or not a command names it; a value the file does not give (``null``:
    set at launch with ``--env``) is refused.
    """
    held = {name: ("envs", value) for name, value in mapping(data.get("envs")).items()}
    held |= {name: ("secrets", value) for name, value in mapping(data.get("secrets")).items()}
    found: list[tuple[int, str, DataPath]] = []
    for name, (key, value) in held.items():  # NOTE: a secret wins over an env of its name
        refuse_restarts_env(str(name), value, key, at(key, name), restarts)
        if str(name).startswith(ENV_PREFIX) or not names_epochs(str(name), abbreviated=False):
            continue
        number = whole_epochs(value)
        if number is None:
            shown = "(a secret)" if key == "secrets" else json.dumps(value, default=str)
            raise InputError(
                f"{key} {name}: {shown}: the epochs it hands the task's programs are not in "
                "the file",
                location=at(key, name),
                hint=f"write the number of epochs as {name}'s value",
            )
        found.append((number, f"{key} {name}: {number}, in the programs' environment", (key, name)))
    return found


def _env_number(value: str, envs: Any, script: str) -> int | None:
    """A literal number, or ``$NAME`` / ``${NAME}`` of the task's envs.

    Not one the script sets itself: ``export EPOCHS=1000`` overrides the envs' value.
    """
    if not value.startswith("$"):
        return whole_epochs(value)
    name = value.strip("${}")
    if script_sets(script, name):
        return None
    return whole_epochs(envs.get(name)) if isinstance(envs, dict) else None


_NATIVE = {
    "accelerator": "resources.accelerators: NAME:COUNT",
    "gpus_per_trial": "resources.accelerators: NAME:COUNT (× num_nodes)",
    "capacity": "resources.use_spot: true",
    "max_epochs": "--epochs N in run",
}


def _spell(
    path: tuple[str | int, ...], value: Any, pick: Candidate | None, nodes: int
) -> str | None:
    """A spec edit as a change of the task's own fields, where it has them."""
    match path:
        case ("resources", "gpus_per_trial") if pick and isinstance(value, int):
            if value % nodes == 0:
                return f"resources.accelerators: {pick.accelerator}:{value // nodes}"
            return f"resources.accelerators: {pick.accelerator}:{value} with num_nodes: 1"
        case ("resources", "accelerator") if pick:
            return f"resources.accelerators: {value}:{pick.per_node}"
        case ("resources", "capacity") if value in ("spot", "on-demand"):
            return f"resources.use_spot: {'true' if value == 'spot' else 'false'}"
    return None


def _resources(draft: Draft, pick: Candidate, nodes: int, at: Any) -> None:
    total = pick.per_node * nodes
    detail = f"{pick.accelerator}:{pick.per_node}" + (f" × num_nodes {nodes}" if nodes > 1 else "")
    draft[("resources", "accelerator")] = Traced(
        pick.accelerator, Source(Origin.FILE, "resources.accelerators", pick.location)
    )
    draft[("resources", "gpus_per_trial")] = Traced(
        total, Source(Origin.FILE, f"{detail} = {total} GPUs per trial", pick.location)
    )
    if pick.spot:
        draft[("resources", "capacity")] = Traced(
            "spot", Source(Origin.FILE, "resources.use_spot: true", pick.location)
        )


def _candidates(resources: Any, path: DataPath, where: SourceMap) -> list[Candidate]:
    """Every accelerator the resources name, across any_of / ordered alternatives."""
    if not isinstance(resources, dict):
        return []
    resources = aliased(resources, path, where)
    refuse_instance_type(resources, path, where)
    found: list[Candidate] = []
    for key in ("any_of", "ordered"):
        alternatives = resources.get(key)
        if alternatives is None:
            continue
        # NOTE: SkyPilot refuses anything but a list of mappings; skipped, a candidate
        # ("H100:8" as a string) would go unpriced.
        if not isinstance(alternatives, list) or not all(isinstance(a, dict) for a in alternatives):
            raise InputError(
                f"resources.{key} is not a list of resource mappings",
                location=where.locate((*path, key)),
                hint=f"write {key}: [{{accelerators: H100:8}}, {{accelerators: A100:8}}]",
            )
        for i, alternative in enumerate(alternatives):
            merged = {
                **{k: v for k, v in resources.items() if k not in ("any_of", "ordered")},
                **aliased(alternative, (*path, key, i), where),
            }
            found.extend(_candidates(merged, (*path, key, i), where))
    if found:
        return found
    spot = resources.get("use_spot", False)
    if not isinstance(spot, bool):  # "false" is true to bool(); SkyPilot refuses it
        raise InputError(
            f"resources.use_spot is {spot!r}, not true or false",
            location=where.locate((*path, "use_spot")),
            hint="write use_spot: true or use_spot: false, without quotes",
        )
    location = where.locate((*path, "accelerators"))
    return [
        Candidate(name, count, spot, location)
        for name, count in _accelerators(resources.get("accelerators"), location)
    ]


def _accelerators(value: Any, location: Location | None) -> list[tuple[str, int]]:
    """``H100:8``, ``{H100: 8}``, a list, or a set ``{A100:8, H100:8}`` as (name, count)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [_one(value, location)]
    if isinstance(value, list):
        return [_one(str(v), location) for v in value]
    if isinstance(value, dict):
        if all(v is None for v in value.values()):  # a YAML set
            return [_one(str(k), location) for k in value]
        return [_one(f"{k}:{v}", location) for k, v in value.items()]
    raise InputError(
        "resources.accelerators is not a name, list or mapping",
        location=location,
        hint="write accelerators: H100:8",
    )


def _one(text: str, location: Location | None) -> tuple[str, int]:
    name, _, count = text.strip().partition(":")
    try:
        number = float(count) if count else 1.0
    except ValueError:
        number = math.nan
    if not math.isfinite(number):  # H100:inf and H100:nan are floats, and no count
        raise InputError(
            f"accelerator {text!r} has no count SkyPilot reads",
            location=location,
            hint="write NAME:COUNT, e.g. H100:8",
        )
    if number != int(number) or number < 1:
        raise InputError(
            f"accelerator {text!r} asks for a fraction of a GPU",
            location=location,
            hint="budget-gate prices whole GPUs; use a MIG profile in a spec instead",
        )
    return name.strip(), int(number)


def _recovery(resources: Any) -> str | None:
    if not isinstance(resources, dict) or resources.get("job_recovery") is None:
        return None
    recovery = resources["job_recovery"]
    restarts = recovery.get("max_restarts_on_errors", 0) if isinstance(recovery, dict) else 0
    return (
        f"job_recovery: a managed job relaunches after preemption; up to {restarts} restarts "
        "on errors, each charged to the experiment but not priced here: the estimate prices "
        "failures by the policy's reliability settings (failure_rate, max_retries)"
    )
