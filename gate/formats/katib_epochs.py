"""The epochs a Katib trial trains, from its containers' ``--epochs`` flags and epochs env.

A flag's value is a literal number or ``${trialParameters.NAME}``, the top of the swept
parameter that trial parameter references (``feasibleSpace.max``, or the largest of its
``list``). Each command counts (the container's command and args, and the shell scripts
they run), and in each, a repeated flag's last value, as argparse keeps it. A container's
env variable named like the epochs (``EPOCHS``, ``NUM_EPOCHS``) counts too, whether or not a
command names it: the program may read it from its environment.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gate.errors import InputError, Location
from gate.formats.command_lines import (
    Words,
    commands_of,
    epoch_flags,
    names_epochs,
    unread,
)
from gate.formats.command_repeaters import refuse_restarts_env
from gate.formats.command_steps import refuse_step_budgets, refuse_steps_env
from gate.formats.katib_env import env_of, expand, refuse_outside_refs
from gate.formats.model import mapping, most_epochs, whole_epochs, within
from gate.formats.shell_effects import refuse_unread_training
from gate.formats.wandb_command import refuse_unset_words
from gate.spec.loader import DataPath, LoadedDoc

_PLACEHOLDER = re.compile(r"^\$\{trialParameters\.([^}]+)\}$")


@dataclass(frozen=True, slots=True)
class Epochs:
    """The most epochs one ``--epochs`` flag of a trial's command hands the trial."""

    top: int
    detail: str
    location: Location | None
    flag: str
    parameter: tuple[int, dict[str, Any]] | None = None
    """The swept parameter it takes (its index in spec.parameters, its feasibleSpace)."""
    summed: bool = False
    """The epochs of several commands, one after another (no one flag to lower)."""
    in_env: bool = False
    """Set by the container's env variable ``flag``, not by a command's flag."""


def epochs_in(
    container: dict[str, Any], here: DataPath, spec: dict[str, Any], doc: LoadedDoc
) -> list[Epochs]:
    """Each epochs flag's value in each command: the flag's last one there counts.

    See :func:`epoch_flags`. The value is a literal number or ``${trialParameters.NAME}``,
    the top of the parameter that trial parameter references. The commands are the
    container's command and args, and those of the scripts they hold
    (``sh -c "python train.py --epochs 90"``, :func:`commands_of`).
    """
    words = [
        (str(w), (*here, key, i))
        for key in ("command", "args")
        for i, w in enumerate(container.get(key) or [])
    ]
    locate = doc.source_map.locate
    env = env_of(container)
    refuse_outside_refs(words, container, env, lambda path: locate(path) or locate(here))
    # NOTE: Kubernetes expands $(NAME) before the command runs, a shell $NAME and ${NAME} in
    # its script (word-split: ARGS="--epochs 1000"); read as both would, from the env
    expanded = [(expand(w, env), path) for w, path in words]
    refuse_unread_training(
        expanded, "the trial's command", lambda path: locate(path) or locate(here)
    )
    refuse_unset_words(
        expanded,
        " the container's env does not set",
        "the trial's command",
        lambda path: locate(path) or locate(here),
    )
    refuse_step_budgets(expanded, "the trial's command", lambda path: locate(path) or locate(here))
    _refuse_hooks(container, here, locate)
    per_command = [f for c in commands_of(expanded) if (f := _flags_in(c, here, spec, doc, env))]
    found = [entry for flags in per_command for entry in flags]
    if len(per_command) > 1:  # NOTE: a script's commands run one after another: they add up
        tops = [max(flags, key=lambda e: e.top) for flags in per_command]
        detail = " + ".join(e.detail for e in tops) + ", one command after another"
        found.append(Epochs(sum(e.top for e in tops), detail, tops[0].location, "", summed=True))
    return found + _env_epochs(container, here, spec, doc)


def _env_epochs(
    container: dict[str, Any], here: DataPath, spec: dict[str, Any], doc: LoadedDoc
) -> list[Epochs]:
    """The epochs the container's env variables named like the epochs hand the program."""
    listed = container.get("env")
    found = []
    for i, entry in enumerate(listed if isinstance(listed, list) else []):
        name = entry.get("name") if isinstance(entry, dict) else None
        path = (*here, "env", i)
        where = doc.source_map.locate((*path, "value")) or doc.source_map.locate(path)
        if isinstance(name, str):  # NOTE: a valueFrom's value is not in the file: not off
            value = entry.get("value", entry.get("valueFrom"))
            refuse_steps_env(name, value, "env of the trial's container:", where)
            refuse_restarts_env(name, value, "env of the trial's container:", where)
        if not isinstance(name, str) or not names_epochs(name, abbreviated=False):
            continue
        value = str(entry.get("value", ""))
        if (literal := whole_epochs(value)) is not None:
            detail = f"env {name}={literal} in the trial's container"
            found.append(Epochs(literal, detail, where, name, in_env=True))
        elif (swept := _swept_epochs(value, spec)) is not None:
            top, index, space = swept
            detail = (
                f"env {name}={value} in the trial's container: spec.parameters[{index}] goes "
                f"up to {top}, so a trial may train {top} epochs"
            )
            found.append(Epochs(top, detail, where, name, (index, space), in_env=True))
        else:
            raise InputError(
                f"env {name} of the trial's container: the epochs it hands the program are "
                "not in the file" + (" (valueFrom)" if "valueFrom" in entry else ""),
                location=where,
                hint="write the number as its value, or ${trialParameters.NAME} of a swept "
                "parameter",
            )
    return found


_HOOKS = (
    ("lifecycle", "postStart"),
    ("lifecycle", "preStop"),
    ("livenessProbe",),
    ("readinessProbe",),
    ("startupProbe",),
)
"""Where a container runs commands of its own beside its command: hooks and probes."""


def _refuse_hooks(container: dict[str, Any], here: DataPath, locate: Any) -> None:
    """Refuse an epochs flag in a hook's or a probe's command: training the trial runs unread.

    A ``postStart`` hook runs beside the command, a probe again and again.
    """
    for keys in _HOOKS:
        node: Any = container
        for key in (*keys, "exec", "command"):
            node = mapping(node).get(key)
        path = (*here, *keys, "exec", "command")
        words = [(str(w), (*path, i)) for i, w in enumerate(node if isinstance(node, list) else [])]
        flags = [flag for c in commands_of(words) for flag in epoch_flags(c)]
        if flags:
            raise InputError(
                f"{'.'.join(keys)} runs a command with {flags[0].written} {flags[0].value}: "
                "training a hook or a probe runs is not priced",
                location=locate(flags[0].path) or locate(path),
                hint="train in the container's command, not in a hook or a probe",
            )


_KUBE_VAR = re.compile(r"^\$\((\w+)\)$")


def _flags_in(
    words: Words, here: DataPath, spec: dict[str, Any], doc: LoadedDoc, env: dict[str, str]
) -> list[Epochs]:
    found = []
    for read in epoch_flags(words):
        flag, path, times = read.written, read.path, read.times
        value = read.value
        if (var := _KUBE_VAR.match(value.strip())) and var.group(1) in env:
            value = env[var.group(1)]  # Kubernetes expands $(NAME) from the container's env
        where = doc.source_map.locate(path) or doc.source_map.locate((*here, "command"))
        repeated = f" (the last of {times})" if times > 1 else ""
        literal = whole_epochs(value)
        if literal is not None:
            detail = f"{flag} {literal} in the trial's command{repeated}"
            found.append(Epochs(literal, detail, where, flag))
            continue
        swept = _swept_epochs(value, spec)
        if swept is not None:
            top, index, space = swept
            name = mapping(spec["parameters"][index]).get("name")
            detail = (
                f"{flag} {value} in the trial's command{repeated}: spec.parameters[{index}] "
                f"{name} goes up to {top}, so a trial may train {top} epochs"
            )
            found.append(Epochs(top, detail, where, flag, (index, space)))
            continue
        error = unread(
            read,
            "the trial's command",
            "write the number, or ${trialParameters.NAME} of a swept parameter",
        )
        error.location = where
        raise error
    return found


def _swept_epochs(value: str, spec: dict[str, Any]) -> tuple[int, int, dict[str, Any]] | None:
    """The top of the parameter ``${trialParameters.NAME}`` takes, its index and space."""
    match = _PLACEHOLDER.match(value.strip())
    if match is None:
        return None
    template = mapping(spec.get("trialTemplate"))
    references = {
        str(t.get("name")): t.get("reference")
        for t in template.get("trialParameters") or []
        if isinstance(t, dict)
    }
    reference = references.get(match.group(1))
    for index, param in enumerate(spec.get("parameters") or []):
        if isinstance(param, dict) and param.get("name") == reference:
            space = mapping(param.get("feasibleSpace"))
            listed = space.get("list")
            top = most_epochs(listed if isinstance(listed, list) and listed else [space.get("max")])
            return (top, index, space) if top is not None else None
    return None


_JSON_BREAKING = re.compile(r'["\\\x00-\x1f]')
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
MAX_SUBSTITUTIONS = 512
"""Variants of the trial read for the values (not numbers) of its trial parameters' lists."""


def listed_values(spec: dict[str, Any], doc: LoadedDoc) -> dict[str, list[str]]:
    """Each trial parameter whose parameter is a list: the values Katib writes for it.

    Katib writes a value into the trial's JSON text where ``${trialParameters.NAME}`` is:
    a quote or a backslash in it could add keys or argv words, so it is refused.
    """
    template = mapping(spec.get("trialTemplate"))
    lists = {}
    for i, param in enumerate(spec.get("parameters") or []):
        listed = mapping(mapping(param).get("feasibleSpace")).get("list")
        if isinstance(listed, list) and isinstance(mapping(param).get("name"), str):
            lists[param["name"]] = (i, [str(v) for v in listed])
    found = {}
    for trial_param in template.get("trialParameters") or []:
        reference = mapping(trial_param).get("reference")
        if not isinstance(reference, str) or reference not in lists:
            continue
        i, values = lists[reference]
        for j, value in enumerate(values):
            if _JSON_BREAKING.search(value):
                space: DataPath = ("spec", "parameters", i, "feasibleSpace")
                raise InputError(
                    f"spec.parameters[{i}] {reference} has the value {value!r}: Katib writes "
                    "it into the trial's JSON text, where a quote or a backslash may add "
                    "fields or command words that budget-gate does not read",
                    location=doc.source_map.locate((*space, "list", j))
                    or doc.source_map.locate(space),
                    hint="give the list values without quotes or backslashes",
                )
        found[str(mapping(trial_param).get("name"))] = values
    return found


def substituted(
    trial: dict[str, Any], values: dict[str, list[str]], location: Location | None
) -> list[tuple[dict[str, Any], str]]:
    """The trial as Katib writes it for each value of each list parameter it names.

    A value may be a whole flag (``--epochs=1000``), a flag's name, a script's words or a
    resource's name (``nvidia.com/gpu``): the variants are read as the trial is, one value
    at a time; other placeholders stay, read as before.
    """
    text = json.dumps(trial, default=str)  # NOTE: a date, as Kubernetes writes it: text
    _refuse_joined(text, {n for n, v in values.items() if any(map(_words, v))}, location)
    found: list[tuple[dict[str, Any], str]] = []
    for name, listed in values.items():
        mark = "${trialParameters." + name + "}"
        if mark not in text:
            continue
        # NOTE: a number makes no flag nor resource name; as a flag's value it is read already
        for value in dict.fromkeys(v for v in listed if not _NUMBER.fullmatch(v)):
            if len(found) >= MAX_SUBSTITUTIONS:
                raise InputError(
                    f"the trial takes over {MAX_SUBSTITUTIONS} values of listed "
                    "parameters, too many to read each",
                    location=location,
                    hint="list fewer values, or write the experiment as a budget-gate spec",
                )
            variant = json.loads(text.replace(mark, value))
            found.append((variant, f" (with {mark} = {value!r})"))
    return found


def _words(value: str) -> bool:
    return not _NUMBER.fullmatch(value)


_MARK = re.compile(r"\$\{trialParameters\.([^}]+)\}")


def _refuse_joined(text: str, worded: set[str], location: Location | None) -> None:
    """Refuse a string of the trial that joins the values of two listed parameters.

    Each listed value is read in the trial one at a time; ``--${trialParameters.a}${
    trialParameters.b}=1000`` with ``a: [ep]``, ``b: [ochs]`` makes ``--epochs`` only
    when both are written at once.
    """
    for string in re.findall(r'"((?:[^"\\]|\\.)*)"', text):
        joined = sorted({m for m in _MARK.findall(string) if m in worded})
        if len(joined) > 1:
            raise InputError(
                f"{string!r} joins the listed values of trial parameters "
                f"{' and '.join(joined)}: budget-gate reads one listed value at a time",
                location=location,
                hint="give each listed value a word of its own, or write the experiment as a "
                "budget-gate spec",
            )


def pod_epochs(
    listed: list[tuple[str, dict[str, Any], DataPath]], spec: dict[str, Any], doc: LoadedDoc
) -> list[Epochs]:
    """The epochs each container of a pod trains (``listed``: :func:`containers`' entries).

    A plain init container runs to its end before the next and before the main containers:
    their epochs add up (the most of the main containers, which run side by side).
    """
    found: list[Epochs] = []
    before: list[Epochs] = []
    beside: list[Epochs] = []
    for key, container, here in listed:
        mine = epochs_in(container, here, spec, doc)
        found.extend(mine)
        if mine:
            top = max(mine, key=lambda e: e.top)
            plain = key == "initContainers" and container.get("restartPolicy") != "Always"
            (before if plain else beside).append(top)
    tops = [*before, max(beside, key=lambda e: e.top)] if beside else before
    if before and len(tops) > 1:
        detail = " + ".join(e.detail for e in tops) + ", init containers first, one by one"
        found.append(Epochs(sum(e.top for e in tops), detail, tops[0].location, "", summed=True))
    return found


def fewer_epochs(found: list[Epochs], value: Any) -> str | None:
    """The edits that hand no trial more than ``value`` epochs."""
    if not isinstance(value, int):
        return None
    edits = []
    for entry in found:
        if entry.top <= value:
            continue
        if entry.summed:
            edits.append(f"at most {value} epochs over the trial's commands together")
            continue
        if entry.parameter is None:
            edits.append(
                f'env {entry.flag}: "{value}" in the trial\'s container'
                if entry.in_env
                else f"{entry.flag}={value} as the last {entry.flag} in the trial's command"
            )
            continue
        index, space = entry.parameter
        listed = space.get("list")
        if isinstance(listed, list) and listed:
            kept = [str(v) for v in within(listed, value)]
            shown = json.dumps(kept or [str(value)])
            edits.append(f"spec.parameters[{index}].feasibleSpace: {{list: {shown}}}")
        elif (low := whole_epochs(space.get("min"))) is not None and low <= value:
            edits.append(f'spec.parameters[{index}].feasibleSpace.max: "{value}"')
        else:
            edits.append(f'spec.parameters[{index}].feasibleSpace: {{list: ["{value}"]}}')
    return "; ".join(edits) or None
