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
from gate.formats.model import mapping, most_epochs, whole_epochs, within
from gate.formats.shell_effects import refuse_unread_training
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
    env = _env_of(container)
    expanded = [(_KUBE_REF.sub(lambda m: env.get(m[1], m[0]), w), path) for w, path in words]
    refuse_unread_training(
        expanded, "the trial's command", lambda path: locate(path) or locate(here)
    )
    per_command = [f for c in commands_of(words) if (f := _flags_in(c, here, spec, doc, env))]
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
        if not isinstance(name, str) or not names_epochs(name, abbreviated=False):
            continue
        path = (*here, "env", i)
        where = doc.source_map.locate((*path, "value")) or doc.source_map.locate(path)
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


def _env_of(container: dict[str, Any]) -> dict[str, str]:
    """The container's env values by name, for the ``$(NAME)`` Kubernetes expands in args."""
    listed = container.get("env")
    return {
        str(e["name"]): str(e["value"])
        for e in (listed if isinstance(listed, list) else [])
        if isinstance(e, dict) and "name" in e and "value" in e
    }


_KUBE_VAR = re.compile(r"^\$\((\w+)\)$")
_KUBE_REF = re.compile(r"(?<!\$)\$\(([-.\w]+)\)")
"""``$(NAME)`` in a command or args, which Kubernetes expands from the container's env before
the command runs (``sh -c "$(TRAIN)"`` runs TRAIN's value); an unknown one stays, as there."""


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
